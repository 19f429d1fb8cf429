/**
 * A statement whose call gave up is cancelled on the server. Found by the
 * soak's "broken neighbour" (test/soak/README.md): one election's row held
 * `FOR UPDATE` by a foreign transaction, every timed-out statement of that
 * election left a backend waiting on the lock (PostgreSQL does not notice a
 * destroyed client while it waits on a lock); through PgBouncer those
 * backends filled the server and the healthy election, on the same pooler,
 * lost its leader. With the CancelRequest sent on abandonment, the blocked
 * statements end at once (57014), their connections go back to the pool,
 * and no backend stays waiting while the lock is still held.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Duration, Effect } from "effect"
import pg from "pg"
import { startPgBouncer, type ThrowawayPgBouncer } from "./chaos/harness/ThrowawayPgBouncer.js"
import * as PgStore from "../src/stores/PgStore.js"
import { directUrl, uniqueTable } from "./support/databases.js"

const ttl = Duration.seconds(30)
const calls = 10

let bouncer: ThrowawayPgBouncer
const admin = new pg.Client({ connectionString: directUrl })

beforeAll(async () => {
  const upstream = new URL(directUrl)
  // As many server connections as the store's pool has: the pooler passes
  // every blocked statement on to PostgreSQL, as in the soak.
  bouncer = await startPgBouncer({ targetHost: upstream.hostname, targetPort: Number(upstream.port || "5432"), poolSize: 6 })
  await admin.connect()
})

afterAll(async () => {
  await admin.end()
  await bouncer.destroy()
})

/** Backends waiting on a lock while running a statement on `table`. */
const waiting = async (table: string): Promise<number> => {
  const result = await admin.query<{ n: string }>(
    `SELECT count(*)::text AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE $1`,
    [`%${table}%`]
  )
  return Number(result.rows[0]?.n)
}

const eventually = async (check: () => Promise<boolean>, within: Duration.Duration): Promise<boolean> => {
  const until = performance.now() + Duration.toMillis(within)
  while (performance.now() < until) {
    if (await check()) return true
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return check()
}

describe.each([
  ["direct", () => directUrl],
  ["through PgBouncer", () => bouncer.url("test")]
])("PgStore, a statement abandoned while blocked on a row lock (%s)", (_, url) => {
  it("is cancelled: no backend stays waiting, the connections are kept, the other election goes on", async () => {
    const table = uniqueTable("cancel")
    const pool = new pg.Pool({ connectionString: url(), max: 4 })
    let removed = 0
    pool.on("remove", () => removed++)
    const holder = new pg.Client({ connectionString: directUrl })
    await holder.connect()
    try {
      const setup = await Effect.runPromise(PgStore.makeFromPool(pool, { table, ensureSchema: true }))
      await Effect.runPromise(setup.acquire("locked", "a", ttl, null))
      const healthy = await Effect.runPromise(setup.acquire("healthy", "a", ttl, null))
      const store = await Effect.runPromise(
        PgStore.makeFromPool(pool, { table, operationTimeout: Duration.millis(300) })
      )

      await holder.query("BEGIN")
      await holder.query(`SELECT * FROM "${table}" WHERE name = 'locked' FOR UPDATE`)
      const outcomes = await Promise.all(
        Array.from({ length: calls }, () => Effect.runPromise(Effect.either(store.acquire("locked", "b", ttl, null))))
      )
      expect(outcomes.every((outcome) => outcome._tag === "Left" && outcome.left._tag === "StoreError")).toBe(true)

      // The lock is still held: only the cancel can end the waits.
      expect(await eventually(async () => (await waiting(table)) === 0, Duration.seconds(3))).toBe(true)
      expect(await eventually(async () => pool.idleCount === pool.totalCount, Duration.seconds(3))).toBe(true)
      expect(removed).toBe(0)
      const renewed = await Effect.runPromise(store.renew("healthy", "a", healthy.fence, ttl, null))
      expect(renewed.fence).toBe(healthy.fence)
      expect(removed).toBe(0)
    } finally {
      await holder.query("ROLLBACK").catch(() => undefined)
      await holder.end()
      await pool.query(`DROP TABLE IF EXISTS "${table}"`).catch(() => undefined)
      await pool.end()
    }
  })
})
