/**
 * A row that another transaction holds locked (a broken neighbour election,
 * an operator's open transaction) must fail the store's calls within the store's lock wait bound, not
 * leave server backends waiting on the lock after the calls have timed out:
 * through PgBouncer such waits, one per timed-out call, filled every server
 * connection and left the healthy elections of the same table leaderless
 * (found by the soak layer's broken-neighbour scenario).
 */
import { Duration, Effect } from "effect"
import pg from "pg"
import { afterAll, describe, expect, it } from "vitest"
import * as PgStore from "../src/stores/PgStore.js"
import { directUrl, uniqueTable } from "./support/databases.js"
import { dropPgTables } from "./support/tables.js"

const table = uniqueTable("locked")
const pool = new pg.Pool({ connectionString: directUrl, max: 4 })
const admin = new pg.Pool({ connectionString: directUrl, max: 2 })

afterAll(async () => {
  await dropPgTables(table)
  await Promise.all([pool.end(), admin.end()])
})

const waitingOnLocks = async (): Promise<number> => {
  const { rows } = await admin.query<{ n: string }>(
    `SELECT count(*)::text AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE $1`,
    [`%${table}%`]
  )
  return Number(rows[0]?.n)
}

describe("PgStore, an election whose row another transaction holds locked", () => {
  it("fails acquire, renew and release as retryable before they time out, leaves no backend waiting, spares the neighbour", async () => {
    const store = await Effect.runPromise(
      PgStore.makeFromPool(pool, { table, ensureSchema: true, operationTimeout: Duration.seconds(2) })
    )
    const ttl = Duration.seconds(30)
    const lease = await Effect.runPromise(store.acquire("broken", "a", ttl, null))
    const holder = await admin.connect()
    try {
      await holder.query("BEGIN")
      await holder.query(`SELECT 1 FROM "${table}" WHERE name = 'broken' FOR UPDATE`)
      // Each call fails (a success would fail the flip) with the server's lock timeout, within half the call's time.
      const errors = await Effect.runPromise(Effect.all([
        Effect.flip(store.acquire("broken", "b", ttl, null)),
        Effect.flip(store.renew("broken", "a", lease.fence, ttl, null)),
        Effect.flip(store.release("broken", "a", lease.fence))
      ], { concurrency: "unbounded" }))
      for (const error of errors) expect(error).toMatchObject({ _tag: "StoreError", retryable: true, code: "55P03" })
      expect(await waitingOnLocks()).toBe(0)
      // The neighbour in the same table is untouched.
      const healthy = await Effect.runPromise(store.acquire("healthy", "c", ttl, null))
      expect(healthy.holder).toBe("c")
      expect((await Effect.runPromise(store.renew("healthy", "c", healthy.fence, ttl, null))).fence).toBe(healthy.fence)
    } finally {
      await holder.query("ROLLBACK")
      holder.release()
    }
    // Once the lock is gone, the broken election works again.
    const renewed = await Effect.runPromise(store.renew("broken", "a", lease.fence, ttl, null))
    expect(renewed.fence).toBe(lease.fence)
  })
})
