/**
 * Overload must degrade gracefully, never into a reconnect storm (issue 15).
 *
 * A slow path (the chaos proxy adding latency in each direction, so every
 * round trip takes longer than the operation timeout) drives a store past its
 * capacity. The store must keep its connections: a call that overran gives
 * control back at its deadline, but its connection waits for the late answer
 * and goes back to the pool instead of being destroyed and replaced. So the
 * proxy never accepts more connections than the pool's size, however many
 * calls time out. When every connection is busy, renewals wait and a poll
 * that would wait behind twice the pool's size is shed at once with a retryable `Saturated` error.
 * And when the load drops, every election has a leader again.
 */
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Context, Duration, Effect, Either, Fiber, Layer } from "effect"
import * as Elector from "../src/Elector.js"
import * as Store from "../src/Store.js"
import * as MysqlStore from "../src/stores/MysqlStore.js"
import * as PgStore from "../src/stores/PgStore.js"
import { uniqueName } from "../src/testing/StoreSuite.js"
import { type FaultProxy, Mode } from "./chaos/harness/FaultProxy.js"
import { proxyScoped } from "./chaos/harness/scoped.js"
import { directUrl, mysqlUrl, uniqueTable } from "./support/databases.js"
import { dropMysqlTables, dropPgTables } from "./support/tables.js"

const table = uniqueTable("overload")
afterAll(async () => {
  await dropPgTables(table)
  await dropMysqlTables(table)
})

// Generous, so that the test holds on a crowded machine: every margin below
// is hundreds of milliseconds.
const operationTimeout = Duration.seconds(1)
/**
 * Each way: a round trip takes 1.2 s, past the timeout but well within the
 * grace (twice the timeout) even for a call admitted just before its deadline.
 */
const slow = Mode.latency(600)
const lease = Duration.seconds(30)

interface Target {
  readonly port: number
  readonly store: (
    proxy: FaultProxy,
    maxConnections: number,
    ensureSchema?: boolean
  ) => Layer.Layer<Store.Store, unknown>
}

const targets: ReadonlyArray<readonly [string, Target]> = [
  ["PostgreSQL", {
    port: Number(new URL(directUrl).port),
    store: (proxy, maxConnections, ensureSchema = true) =>
      PgStore.layerFromUrl(proxy.via(directUrl), { table, ensureSchema, maxConnections, operationTimeout })
  }],
  ["MariaDB", {
    port: Number(new URL(mysqlUrl).port),
    store: (proxy, maxConnections, ensureSchema = true) =>
      MysqlStore.layerFromUrl(`mysql://root@127.0.0.1:${proxy.port}/test`, {
        table,
        ensureSchema,
        maxConnections,
        operationTimeout
      })
  }]
]

const storeVia = (target: Target, maxConnections: number) =>
  Effect.gen(function*() {
    const proxy = yield* proxyScoped({ targetPort: target.port })
    const store = yield* Effect.map(Layer.build(target.store(proxy, maxConnections)), Context.get(Store.Store))
    return { proxy, store }
  })

const shed = (result: Either.Either<unknown, unknown>): boolean =>
  Either.isLeft(result) && Store.isRetryable(result.left) && Store.isStoreError(result.left) &&
  (result.left.cause as { readonly _tag?: string } | undefined)?._tag === "Saturated"

describe.each(targets)("%s store past its capacity", (label, target) => {
  it.scopedLive(
    "closing the store while a silent connection is still out does not wait for it",
    () =>
      Effect.gen(function*() {
        const proxy = yield* proxyScoped({ targetPort: target.port })
        const name = uniqueName("overload-close")
        const closed = yield* Effect.gen(function*() {
          const store = yield* Effect.map(Layer.build(target.store(proxy, 1)), Context.get(Store.Store))
          const held = yield* store.acquire(name, "a", lease, null)
          proxy.setMode(Mode.sinkhole)
          // Gives up at its deadline; its connection stays out, waiting for an answer that never comes.
          yield* Effect.flip(store.renew(name, "a", held.fence, lease, null))
        }).pipe(Effect.scoped, Effect.timeout("5 seconds"), Effect.option)
        expect(closed._tag).toBe("Some")
      }),
    30_000
  )

  it.scopedLive(
    "a connection that opens after its caller gave up goes into the pool, not away",
    () =>
      Effect.gen(function*() {
        const proxy = yield* proxyScoped({ targetPort: target.port })
        // The table first, on a pool that is gone again before the test starts.
        yield* Effect.scoped(Layer.build(target.store(proxy, 1)))
        const store = yield* Effect.map(Layer.build(target.store(proxy, 1, false)), Context.get(Store.Store))
        const name = uniqueName("overload-late-connect")
        // The handshake's bytes are held, then delivered: the call gives up
        // while connecting, and the connection opens after it did.
        proxy.setMode(Mode.blackhole)
        const gaveUp = yield* Effect.flip(store.inspect(name))
        expect(gaveUp).toMatchObject({ _tag: "StoreError", retryable: true })
        proxy.setMode(Mode.pass)
        yield* Effect.sleep(operationTimeout)
        for (let i = 0; i < 3; i++) {
          expect(yield* Effect.flip(store.inspect(name))).toMatchObject({ _tag: "NoLease" })
        }
        // One for the table, one that opened late and serves every call since.
        expect(proxy.stats().connectionsAccepted).toBe(2)
      }),
    30_000
  )

  it.scopedLive(
    "calls that overrun keep their connections; polls are shed, renewals are not",
    () =>
      Effect.gen(function*() {
        const { proxy, store } = yield* storeVia(target, 1)
        const name = uniqueName("overload-shed")
        const held = yield* store.acquire(name, "a", lease, null)
        proxy.setMode(slow)
        // One connection: one claim runs and two wait; a poll that would
        // wait behind them is shed at once (polls that meet in flight go as
        // one request, so claims of other elections fill the queue); the
        // renewal waits ahead of the waiting claims.
        const results = yield* Effect.all(
          [
            ...Array.from({ length: 3 }, (_, i) => Effect.either(store.acquire(`${name}-${i}`, "a", lease, null))),
            Effect.either(store.inspect(name)),
            Effect.either(store.renew(name, "a", held.fence, lease, null))
          ],
          { concurrency: "unbounded" }
        )
        expect(results.map(shed)).toEqual([false, false, false, true, false])
        // Round after round of calls that all overrun their deadline.
        for (let round = 0; round < 5; round++) {
          const overran = yield* Effect.all(
            Array.from({ length: 3 }, () => Effect.either(store.renew(name, "a", held.fence, lease, null))),
            { concurrency: "unbounded" }
          )
          expect(overran.every(Either.isLeft)).toBe(true)
        }
        proxy.setMode(Mode.pass)
        // The late answers arrive within the grace and the connection goes back to the pool.
        yield* Effect.sleep(Duration.times(operationTimeout, 3))
        const renewed = yield* store.renew(name, "a", held.fence, lease, null)
        expect(renewed.fence).toBe(held.fence)
        expect(proxy.stats().connectionsAccepted).toBe(1)
      }),
    30_000
  )

  it.scopedLive(
    "elections sharing one store lose no connection to overload and all recover when it ends",
    () =>
      Effect.gen(function*() {
        const maxConnections = 2
        const { proxy, store } = yield* storeVia(target, maxConnections)
        const elections = Array.from({ length: 4 }, (_, i) => uniqueName(`overload-${i}`))
        const fleet = yield* Effect.forEach(elections, (name) =>
          Effect.forEach(["a", "b", "c"], (identity) =>
            Effect.gen(function*() {
              const elector = yield* Elector.make({
                name,
                identity,
                leaseDuration: "5 seconds",
                renewInterval: "1 second",
                retryPeriod: "500 millis",
                operationTimeout,
                safetyMargin: "1 second"
              }).pipe(Effect.provideService(Store.Store, store))
              yield* Effect.forkScoped(elector.run)
              return elector
            })))
        // Samples every election until `done` holds for all, checking that
        // none ever has two leaders.
        const sampleUntil = (done: (leaders: number) => boolean, label: string) =>
          Effect.gen(function*() {
            for (let i = 0; i < 750; i++) {
              const leaders = yield* Effect.forEach(fleet, (electors) =>
                Effect.map(
                  Effect.all(electors.map((e) =>
                    e.isLeader
                  )),
                  (leads) => leads.filter(Boolean).length
                ))
              expect(Math.max(...leaders)).toBeLessThanOrEqual(1)
              if (leaders.every(done)) {
                return
              }
              yield* Effect.sleep("20 millis")
            }
            throw new Error(`${label}: not reached within 15s`)
          })
        yield* sampleUntil((leaders) => leaders === 1, "every election led")
        proxy.setMode(slow)
        // Every call overruns now; hold it long enough for the terms to end.
        const overload = yield* Effect.fork(sampleUntil(() => false, "overload"))
        yield* Effect.sleep("6 seconds")
        yield* Fiber.interrupt(overload)
        proxy.setMode(Mode.pass)
        const healed = performance.now()
        yield* sampleUntil((leaders) => leaders === 1, "every election led again")
        const { connectionsAccepted } = proxy.stats()
        console.log(
          `[${label}] overload: ${connectionsAccepted} connections opened (pool of ${maxConnections}); every election led again ${
            Math.round(performance.now() - healed)
          } ms after the load dropped`
        )
        expect(connectionsAccepted).toBeLessThanOrEqual(maxConnections)
      }),
    60_000
  )
})
