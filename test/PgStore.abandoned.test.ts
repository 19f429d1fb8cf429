/**
 * Calls abandoned while they wait for a pool connection (their operation
 * timeout fired first) must not take the process down when a connection
 * frees up. pg-pool keeps such a waiter queued and, on the next release,
 * hands it the connection, which the store gives straight back, which hands
 * it to the next abandoned waiter: released synchronously, thousands of them
 * in a row overflowed the stack (seen in `bench:scale`, 1,000 elections x 3,
 * as "RangeError: Maximum call stack size exceeded" in pg-pool's release).
 */
import { Duration, Effect } from "effect"
import pg from "pg"
import { afterAll, describe, expect, it } from "vitest"
import * as PgStore from "../src/stores/PgStore.js"
import { directUrl, uniqueTable } from "./support/databases.js"
import { dropPgTables } from "./support/tables.js"

const table = uniqueTable("abandoned")
const pool = new pg.Pool({ connectionString: directUrl, max: 1 })

afterAll(async () => {
  await dropPgTables(table)
  await pool.end()
})

describe("PgStore, calls abandoned while waiting for a connection", () => {
  it("hands the freed connection on without recursing, and the next call succeeds", async () => {
    const patient = await Effect.runPromise(PgStore.makeFromPool(pool, { table, ensureSchema: true }))
    const store = await Effect.runPromise(PgStore.makeFromPool(pool, { table, operationTimeout: Duration.millis(20) }))
    const held = await pool.connect()
    const abandoned = 10_000
    const outcomes = await Promise.all(
      Array.from({ length: abandoned }, () => Effect.runPromise(Effect.either(store.inspect("nobody"))))
    )
    expect(outcomes.every((outcome) => outcome._tag === "Left" && outcome.left._tag === "StoreError")).toBe(true)
    // Every waiter has given up; freeing the one connection walks them all.
    expect(() => held.release()).not.toThrow()
    const lease = await Effect.runPromise(Effect.either(patient.inspect("nobody")))
    expect(lease._tag === "Left" && lease.left._tag).toBe("NoLease")
  })
})
