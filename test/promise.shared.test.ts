/**
 * One store, one pool, many Promise electors: `openStore`, over the shared
 * PostgreSQL.
 */
import { Effect, Fiber, Option } from "effect"
import pg from "pg"
import { afterAll, describe, expect, it } from "vitest"
import { createElector, openStore } from "../src/promise.js"
import * as PgStore from "../src/stores/PgStore.js"
import { directUrl, uniqueTable } from "./support/databases.js"
import { dropPgTables } from "./support/tables.js"

// Quick polls and renewals; the default lease and timeout, so that a loaded machine does not make a leader step down.
const timing = { renewInterval: "200 millis", retryPeriod: "100 millis" } as const

const eventually = async (condition: () => boolean, what: string) => {
  const deadline = performance.now() + 15_000
  while (!condition()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

const table = uniqueTable("shared")

afterAll(() => dropPgTables(table))

describe("openStore (Promise API)", () => {
  it("runs many elections over one pool, one leader each, and stays open until closed", async () => {
    const pool = new pg.Pool({ connectionString: directUrl, max: 2 })
    let opened = 0
    pool.on("connect", () => opened++)
    const store = await openStore(PgStore.layerFromPool(pool, { table, ensureSchema: true }))
    const elections = ["a", "b", "c"].map((name) => `shared-${process.pid}-${name}`)
    // Two participants per election, six electors, one pool of two connections.
    const electors = elections.flatMap((name) =>
      ["x", "y"].map((identity) => ({
        name,
        elector: createElector({ ...timing, store, name, identity, logLevel: "None" })
      }))
    )
    await Promise.all(electors.map(({ elector }) => elector.start()))
    const leaders = (name: string) => electors.filter((e) => e.name === name && e.elector.isLeader())
    await eventually(() => elections.every((name) => leaders(name).length === 1), "a leader in every election")
    expect(opened).toBeLessThanOrEqual(2)
    await Promise.all(electors.map(({ elector }) => elector.stop()))
    // Stopping the electors leaves the shared store open.
    const lease = await Effect.runPromise(store.inspect(elections[0]!))
    expect(lease.name).toBe(elections[0])
    await store.close()
    await store.close()
    expect(pool.totalCount).toBeGreaterThan(0)
    await pool.end()
  })

  it("keeps the store's promise to answer in time: the loops make their calls on their own fibers", async () => {
    const pool = new pg.Pool({ connectionString: directUrl, max: 2 })
    // The gate asks for a connection on the calling fiber's stack: record
    // that fiber. An elector makes its calls on its loops' fibers (the
    // follow loop, a term's renewals) when the store promises to answer in
    // time; otherwise each call runs in a fiber of its own.
    const fibers: Array<number | undefined> = []
    const connect = pool.connect.bind(pool)
    pool.connect = ((callback: Parameters<typeof connect>[0]) => {
      fibers.push(Option.getOrUndefined(Option.map(Fiber.getCurrentFiber(), (fiber) => fiber.id().id)))
      return connect(callback)
    }) as typeof pool.connect
    const store = await openStore(PgStore.layerFromPool(pool, { table, ensureSchema: true }))
    // The schema's call, made as the store was opened, is not a loop's.
    fibers.length = 0
    const name = `fast-${process.pid}`
    const elector = createElector({ ...timing, store, name, identity: "only", logLevel: "None" })
    await elector.start()
    await eventually(() => elector.isLeader() && fibers.length >= 10, "a leader and ten calls")
    await elector.stop()
    await store.close()
    await pool.end()
    expect(fibers).not.toContain(undefined)
    expect(new Set(fibers).size).toBeLessThanOrEqual(2)
  })

  it("closes the pool a URL store owns", async () => {
    const store = await openStore(PgStore.layerFromUrl(directUrl, { table, ensureSchema: true, maxConnections: 1 }))
    await store.close()
    await expect(Effect.runPromise(store.inspect("gone"))).rejects.toThrow()
  })

  it("rejects with the layer's error, naming it", async () => {
    await expect(openStore(PgStore.layerFromUrl("mysql://nope"))).rejects.toMatchObject({
      _tag: "InvalidConfig",
      field: "url"
    })
  })
})
