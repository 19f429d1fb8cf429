/**
 * The elector itself, once over each real store: a small fleet on real time
 * elects exactly one leader, hands over on a clean shutdown under the next
 * fence, and never shows two leaders at any sample.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer } from "effect"
import { inject } from "vitest"
import * as Elector from "../src/Elector.js"
import type * as Store from "../src/Store.js"
import * as MysqlStore from "../src/stores/MysqlStore.js"
import * as PgStore from "../src/stores/PgStore.js"
import { directUrl, mysqlUrl, uniqueTable } from "./support/databases.js"
import { dropMysqlTables, dropPgTables } from "./support/tables.js"

const timings = {
  name: "fleet",
  leaseDuration: "2 seconds",
  renewInterval: "300 millis",
  retryPeriod: "200 millis",
  operationTimeout: "300 millis",
  safetyMargin: "500 millis"
} as const

interface Target {
  readonly store: (table: string) => Layer.Layer<Store.Store, unknown>
  readonly drop: (table: string) => Promise<void>
}

const targets: ReadonlyArray<readonly [string, Target]> = [
  ["PostgreSQL direct", {
    store: (table) => PgStore.layerFromUrl(directUrl, { table, ensureSchema: true, maxConnections: 2 }),
    drop: dropPgTables
  }],
  ["PostgreSQL via PgBouncer", {
    store: (table) => PgStore.layerFromUrl(inject("pgbouncerUrl"), { table, ensureSchema: true, maxConnections: 2 }),
    drop: dropPgTables
  }],
  ["MariaDB", {
    store: (table) => MysqlStore.layerFromUrl(mysqlUrl, { table, ensureSchema: true }),
    drop: dropMysqlTables
  }]
]

describe.each(targets)("Elector over %s", (_, target) => {
  it.scopedLive(
    "elects one leader, hands over cleanly under the next fence, never two at once",
    () =>
      Effect.gen(function*() {
        const table = uniqueTable("fleet")
        yield* Effect.addFinalizer(() => Effect.promise(() => target.drop(table)))
        const terms: Array<readonly [string, bigint]> = []
        // Each participant has a store of its own (its own pool), as separate processes would.
        const fleet = yield* Effect.forEach(["a", "b", "c"], (identity) =>
          Effect.gen(function*() {
            const context = yield* Layer.build(target.store(table))
            const elector = yield* Elector.make({
              ...timings,
              identity,
              onStartedLeading: (fence) => Effect.sync(() => terms.push([identity, fence]))
            }).pipe(Effect.provide(context))
            const fiber = yield* Effect.fork(elector.run)
            return { identity, elector, fiber, context }
          }))

        const sampleUntil = (done: (leading: ReadonlyArray<typeof fleet[number]>) => boolean) =>
          Effect.gen(function*() {
            for (let i = 0; i < 500; i++) {
              const leading = (yield* Effect.all(fleet.map((p) => p.elector.isLeader))).flatMap((leads, j) =>
                leads ? [fleet[j]!] : []
              )
              expect(leading.length).toBeLessThanOrEqual(1)
              if (done(leading)) return leading
              yield* Effect.sleep("20 millis")
            }
            throw new Error("condition not reached within 10s")
          })

        const [first] = yield* sampleUntil((leading) => leading.length === 1)
        yield* Effect.sleep("1 second") // several renewals: the same term goes on
        const stillFirst = yield* sampleUntil((leading) => leading.length === 1)
        expect(stillFirst[0]!.identity).toBe(first!.identity)
        yield* Fiber.interrupt(first!.fiber)
        const [second] = yield* sampleUntil((leading) => leading.length === 1 && leading[0] !== first)
        expect(second!.identity).not.toBe(first!.identity)
        const fences = terms.map(([, fence]) => fence)
        expect(fences).toEqual([...fences].sort((x, y) => (x < y ? -1 : 1)))
        expect(new Set(fences).size).toBe(fences.length)
        for (const p of fleet) yield* Fiber.interrupt(p.fiber)
      }),
    30_000
  )
})
