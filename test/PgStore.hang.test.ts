/**
 * A server that stops answering without closing its connections (a hung
 * database, a silent partition), simulated by the chaos harness's proxy in
 * `sinkhole` mode: it drops every byte while keeping the sockets open. The store must give control back at its
 * operation timeout or on interruption, not seconds later, and must throw the
 * wedged connection away so that the next call, once the path heals, gets a
 * working one. Every pool here has ONE connection, so a wedged connection
 * that went back to the pool would make that next call hang too. The store
 * keeps a connection whose caller gave up out of the pool for twice its
 * operation timeout more (the grace: a late answer would let it keep it), then
 * destroys it; the next call here comes after that grace.
 */
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Clock, Context, Duration, Effect, Fiber, Layer } from "effect"
import pg from "pg"
import { inject } from "vitest"
import * as Store from "../src/Store.js"
import * as PgStore from "../src/stores/PgStore.js"
import { uniqueName } from "../src/testing/StoreSuite.js"
import { type FaultProxy, Mode } from "./chaos/harness/FaultProxy.js"
import { proxyScoped } from "./chaos/harness/scoped.js"
import { directUrl, uniqueTable } from "./support/databases.js"
import { dropPgTables } from "./support/tables.js"

const table = uniqueTable("hang")
afterAll(() => dropPgTables(table))

const timeout = Duration.seconds(1)
/** Generous: the point is "about the timeout", not "the timeout plus a 5 s cancel". */
const slack = Duration.millis(1500)

/** A little longer than the grace the store gives a connection whose caller gave up. */
const pastGrace = Duration.times(timeout, 2.5)

const elapsed = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const start = yield* Clock.currentTimeMillis
    const result = yield* effect
    return [result, Duration.millis((yield* Clock.currentTimeMillis) - start)] as const
  })

/** The store over its own pool, or over a `pg.Pool` of the caller's, as an app would configure it. */
const kinds = ["its own pool", "the caller's pool"] as const

const withProxy = <A, E>(
  target: string,
  kind: typeof kinds[number],
  options: PgStore.PgStoreOptions,
  f: (store: Store.StoreShape, proxy: FaultProxy) => Effect.Effect<A, E>
) =>
  Effect.gen(function*() {
    const proxy = yield* proxyScoped({ targetPort: Number(new URL(target).port) })
    const layer = kind === "its own pool"
      ? PgStore.layerFromUrl(proxy.via(target), { table, maxConnections: 1, ...options })
      : PgStore.layerFromPool(yield* callerPool(proxy, target), { table, ...options })
    const store = yield* Effect.map(Layer.build(layer), Context.get(Store.Store))
    return yield* f(store, proxy)
  }).pipe(Effect.scoped)

/** One connection, and a connect timeout as short as the store's own pools use. */
const callerPool = (proxy: FaultProxy, target: string) =>
  Effect.acquireRelease(
    Effect.sync(() =>
      new pg.Pool({
        connectionString: proxy.via(target),
        max: 1,
        connectionTimeoutMillis: 2 * Duration.toMillis(timeout)
      })
    ),
    (pool) => Effect.promise(() => pool.end())
  )

// Behind PgBouncer too: the store never relies on a cancel key (which there
// names no backend); it destroys the client connection.
const targets = [["PostgreSQL direct", directUrl], ["via PgBouncer", inject("pgbouncerUrl")]] as const
const cases = targets.flatMap(([label, target]) => kinds.map((kind) => [label, kind, target] as const))

describe.each(cases)("PgStore against a hung server (%s, over %s)", (label, kind, target) => {
  it.live("a timed-out call returns at about its timeout, and the next call, after the grace, gets a fresh connection", () =>
    withProxy(
      target,
      kind,
      { operationTimeout: timeout, ensureSchema: true },
      (store, proxy) =>
        Effect.gen(function*() {
          const name = uniqueName("hang-timeout")
          const lease = yield* store.acquire(name, "a", Duration.seconds(30), null)
          proxy.setMode(Mode.sinkhole)
          const [error, took] = yield* elapsed(
            Effect.flip(store.renew(name, "a", lease.fence, Duration.seconds(30), null))
          )
          console.log(
            `[${label}, ${kind}] timed-out renew gave control back after ${Duration.format(took)} (timeout ${
              Duration.format(timeout)
            })`
          )
          expect(error).toMatchObject({ _tag: "StoreError", operation: "renew", retryable: true })
          expect(Duration.lessThan(took, Duration.sum(timeout, slack))).toBe(true)
          proxy.setMode(Mode.pass)
          yield* Effect.sleep(pastGrace)
          const [renewed, next] = yield* elapsed(store.renew(name, "a", lease.fence, Duration.seconds(30), null))
          console.log(
            `[${label}, ${kind}] the next renew, after the path healed, succeeded in ${Duration.format(next)}`
          )
          expect(renewed.fence).toBe(lease.fence)
        })
    ))

  it.live("an interrupted call gives control back at once, and the next call, after the grace, gets a fresh connection", () =>
    withProxy(
      target,
      kind,
      { operationTimeout: timeout, ensureSchema: true },
      (store, proxy) =>
        Effect.gen(function*() {
          const name = uniqueName("hang-interrupt")
          yield* store.acquire(name, "a", Duration.seconds(30), null)
          proxy.setMode(Mode.sinkhole)
          const fiber = yield* Effect.fork(store.inspect(name))
          yield* Effect.sleep("300 millis")
          const [, took] = yield* elapsed(Fiber.interrupt(fiber))
          console.log(`[${label}, ${kind}] interrupting a hung inspect took ${Duration.format(took)}`)
          expect(Duration.lessThan(took, slack)).toBe(true)
          proxy.setMode(Mode.pass)
          yield* Effect.sleep(pastGrace)
          const lease = yield* store.inspect(name).pipe(Effect.timeout("5 seconds"))
          expect(lease.holder).toBe("a")
        })
    ))

  it.live("a call stuck while connecting returns at its timeout; the abandoned connect is cleaned up", () =>
    withProxy(target, kind, { operationTimeout: timeout }, (store, proxy) =>
      Effect.gen(function*() {
        proxy.setMode(Mode.sinkhole)
        const [error, took] = yield* elapsed(Effect.flip(store.inspect(uniqueName("hang-connect"))))
        console.log(`[${label}, ${kind}] inspect stuck in connect gave control back after ${Duration.format(took)}`)
        expect(error).toMatchObject({ _tag: "StoreError", retryable: true })
        expect(Duration.lessThan(took, Duration.sum(timeout, slack))).toBe(true)
        // The pool gives the abandoned attempt up at twice the timeout.
        yield* Effect.sleep(Duration.times(timeout, 1.5))
        proxy.setMode(Mode.pass)
        const name = uniqueName("hang-connect")
        const lease = yield* store.acquire(name, "a", Duration.seconds(30), null).pipe(Effect.timeout("5 seconds"))
        expect(lease.holder).toBe("a")
      })))
})

// The same guarantee over a pool the application owns: the store destroys the
// wedged connection (the app's next query does not queue behind it) and
// leaves the pool itself open.
describe.each(targets)("PgStore over the caller's pool, against a hung server (%s)", (label, target) => {
  it.live("a timed-out call returns at its timeout; the app's pool stays open and gets a fresh connection", () =>
    Effect.gen(function*() {
      const proxy = yield* proxyScoped({ targetPort: Number(new URL(target).port) })
      const pool = yield* callerPool(proxy, target)
      const name = uniqueName("hang-pool")
      const lease = yield* Effect.scoped(Effect.gen(function*() {
        const store = yield* PgStore.makeFromPool(pool, { table, operationTimeout: timeout, ensureSchema: true })
        const lease = yield* store.acquire(name, "a", Duration.seconds(30), null)
        proxy.setMode(Mode.sinkhole)
        const [error, took] = yield* elapsed(
          Effect.flip(store.renew(name, "a", lease.fence, Duration.seconds(30), null))
        )
        console.log(`[${label}, caller's pool] timed-out renew gave control back after ${Duration.format(took)}`)
        expect(error).toMatchObject({ _tag: "StoreError", operation: "renew", retryable: true })
        expect(error.cause).toMatchObject({ _tag: "OperationTimeout" })
        expect(Duration.lessThan(took, Duration.sum(timeout, slack))).toBe(true)
        // The wedged connection stays out of the pool (checked out, not idle)
        // for the grace, then leaves it rather than going back to it.
        expect([pool.totalCount, pool.idleCount]).toEqual([1, 0])
        yield* Effect.sleep(pastGrace)
        expect(pool.totalCount).toBe(0)
        proxy.setMode(Mode.pass)
        return yield* store.renew(name, "a", lease.fence, Duration.seconds(30), null)
      }))
      expect(lease.holder).toBe("a")
      // The store is gone; the app's pool (max 1) is open and answers at once.
      expect(pool.ended).toBe(false)
      const { rows } = yield* Effect.promise(() => pool.query<{ one: number }>("select 1 as one")).pipe(
        Effect.timeout("5 seconds")
      )
      expect(rows[0]?.one).toBe(1)
    }).pipe(Effect.scoped))
})
