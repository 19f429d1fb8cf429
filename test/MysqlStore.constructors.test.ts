/**
 * The four ways to build the MySQL / MariaDB store, each against the shared
 * MariaDB: from a URL (plain or `Redacted`), from `Config`, over the app's own
 * mysql2 pool, and from the app's `MysqlClient`. A `Redacted` URL's password
 * must not show in any error or log, a pool the caller owns must outlive the
 * store, and every call returns at `operationTimeout` over either kind of
 * pool, destroying the wedged connection.
 */
import { MysqlClient } from "@effect/sql-mysql2"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Exit, Layer, Redacted, Schedule } from "effect"
import * as Mysql from "mysql2"
import * as MysqlPromise from "mysql2/promise"
import type * as Store from "../src/Store.js"
import * as MysqlStore from "../src/stores/MysqlStore.js"
import { uniqueName } from "../src/testing/StoreSuite.js"
import { Mode } from "./chaos/harness/FaultProxy.js"
import { proxyScoped } from "./chaos/harness/scoped.js"
import { describeConstructors, roundTrip, secret, tableTracker, whileClientBusy } from "./support/constructors.js"
import { dropMysqlTables } from "./support/tables.js"

const server = { host: "127.0.0.1", port: 3306, user: "root", database: "test" }
const url = "mysql://root@127.0.0.1:3306/test"
const tables = tableTracker("ctor")
afterAll(() => dropMysqlTables(...tables.names))

/** A mysql2 pool the test (the "app") owns and ends. */
const callerPool = (options: Mysql.PoolOptions) =>
  Effect.acquireRelease(
    Effect.sync(() => Mysql.createPool({ ...server, connectionLimit: 2, ...options })),
    (pool) => Effect.async<void>((resume) => pool.end(() => resume(Effect.void)))
  )

const selectOne = (pool: Mysql.Pool) =>
  Effect.async<unknown, Error>((resume) => {
    pool.query("SELECT 1 AS one", (error, rows) => resume(error ? Effect.fail(error) : Effect.succeed(rows)))
  })

describeConstructors({
  name: "MysqlStore",
  url,
  configErrorTag: "InvalidConfig",
  layerFromUrl: MysqlStore.layerFromUrl,
  makeFromUrl: MysqlStore.makeFromUrl,
  quoteIdentifier: MysqlStore.quoteIdentifier,
  layerConfig: MysqlStore.layerConfig,
  layerFromClient: (url, options) => MysqlStore.layer(options).pipe(Layer.provide(MysqlClient.layer({ url }))),
  // The server refuses the credentials: the failure comes from the driver.
  failing: [Redacted.make(`mysql://nobody_${process.pid}:${secret}@127.0.0.1:3306/test`), "Access denied"],
  refused: [
    [Redacted.make(`postgres://app:${secret}@db/app`), "scheme must be mysql: or mariadb:"],
    [Redacted.make(`mysql://app:${secret}@db/app?password=${secret}`), "query parameters are not supported: password"]
  ],
  fresh: tables.fresh
})

const sessionOf = (pool: Mysql.Pool) =>
  Effect.async<{ readonly id: number; readonly tx: number }, Error>((resume) => {
    pool.query("SELECT CONNECTION_ID() AS id, @@in_transaction AS tx", (error, rows) =>
      resume(error ? Effect.fail(error) : Effect.succeed((rows as Array<{ id: number; tx: number }>)[0]!)))
  })

describe("MysqlStore: a transaction sent as one request", () => {
  it.scoped("that fails mid-way never gives its connection back inside the transaction", () =>
    Effect.gen(function*() {
      // One connection that allows several statements per request, as the store's own pools do.
      const pool = yield* callerPool({ connectionLimit: 1, multipleStatements: true })
      const table = tables.fresh("midway")
      const store = yield* MysqlStore.makeFromPool(pool, { table, ensureSchema: true })
      const name = uniqueName("midway")
      const lease = yield* store.acquire(name, "a", Duration.seconds(30), null)
      const before = yield* sessionOf(pool)
      // START TRANSACTION succeeds, then the UPDATE fails: the table is gone.
      yield* Effect.promise(async () => {
        const connection = await MysqlPromise.createConnection(server)
        await connection.query(`DROP TABLE ${MysqlStore.quoteIdentifier(table)}`).finally(() => connection.end())
      })
      const error = yield* Effect.flip(store.renew(name, "a", lease.fence, Duration.seconds(30), null))
      expect(error).toMatchObject({ _tag: "StoreError", retryable: false, code: "1146" })
      // The pool's only connection is a new one, outside any transaction.
      const after = yield* sessionOf(pool)
      expect(after.id).not.toBe(before.id)
      expect(after.tx).toBe(0)
    }))
})

describe("MysqlStore.makeFromPool / layerFromPool", () => {
  it.live("run on the caller's pool and never end it", () =>
    Effect.gen(function*() {
      const pool = yield* callerPool({})
      const table = tables.fresh("pool")
      yield* Effect.provide(roundTrip, MysqlStore.layerFromPool(pool, { table, ensureSchema: true }))
      yield* Effect.scoped(Effect.flatMap(MysqlStore.makeFromPool(pool, { table }), (store) => store.list))
      // Both stores are gone; the pool is still the caller's, open and working.
      expect(yield* selectOne(pool)).toEqual([{ one: 1 }])
    }).pipe(Effect.scoped))

  it.live("take a mysql2/promise pool through its callback pool", () =>
    Effect.gen(function*() {
      const promisePool = yield* Effect.acquireRelease(
        Effect.sync(() => MysqlPromise.createPool({ ...server, connectionLimit: 2 })),
        (pool) => Effect.promise(() => pool.end())
      )
      yield* Effect.provide(
        roundTrip,
        MysqlStore.layerFromPool(promisePool.pool, { table: tables.fresh("promise"), ensureSchema: true })
      )
      const [rows] = yield* Effect.promise(() => promisePool.query("SELECT 1 AS one"))
      expect(rows).toEqual([{ one: 1 }])
    }).pipe(Effect.scoped))

  it.live("decode their rows whatever the pool's row options", () =>
    Effect.gen(function*() {
      const pool = yield* callerPool({ rowsAsArray: true, nestTables: true })
      yield* Effect.provide(
        roundTrip,
        MysqlStore.layerFromPool(pool, { table: tables.fresh("rows"), ensureSchema: true })
      )
    }).pipe(Effect.scoped))

  it.live("refuse a pool whose connections would garble identities or count changed rows", () =>
    Effect.gen(function*() {
      const latin1 = yield* callerPool({ charset: "LATIN1_SWEDISH_CI" })
      expect(yield* Effect.flip(MysqlStore.makeFromPool(latin1))).toMatchObject({
        _tag: "InvalidConfig",
        field: "pool",
        reason: "its connections must use a utf8mb4 charset (mysql2's default)"
      })
      const changedRows = yield* callerPool({ flags: ["-FOUND_ROWS"] })
      expect(yield* Effect.flip(MysqlStore.makeFromPool(changedRows))).toMatchObject({
        field: "pool",
        reason: "its connections must keep the FOUND_ROWS flag (mysql2's default)"
      })
      const pool = yield* callerPool({})
      expect(yield* Effect.flip(MysqlStore.makeFromPool(pool, { operationTimeout: "-1 seconds" }))).toMatchObject({
        field: "operationTimeout"
      })
    }).pipe(Effect.scoped))
})

describe("MysqlStore.make from the MysqlClient in context", () => {
  it.live("run on a pool of their own", () =>
    Effect.gen(function*() {
      const store = yield* MysqlStore.make({ table: tables.fresh("client_own"), ensureSchema: true, maxConnections: 1 })
      return yield* whileClientBusy(yield* MysqlClient.MysqlClient, store)
    }).pipe(
      Effect.scoped,
      Effect.provide(MysqlClient.layer({ url: Redacted.make(url), maxConnections: 1 })),
      Effect.map((lease) => expect(lease.holder).toBe("a"))
    ))
})

const timeout = Duration.seconds(1)
/** Generous: the point is "about the timeout", not "whenever the server answers". */
const slackMillis = 1500

const elapsed = <A, E>(effect: Effect.Effect<A, E>) =>
  Effect.gen(function*() {
    const start = performance.now()
    const result = yield* effect
    return [result, Math.round(performance.now() - start)] as const
  })

describe("MysqlStore against a hung server: operationTimeout over either pool", () => {
  it.live("over its own pool, a call returns at operationTimeout with a retryable OperationTimeout", () =>
    Effect.gen(function*() {
      const proxy = yield* proxyScoped({ targetPort: 3306 })
      const store = yield* MysqlStore.makeFromUrl(`mysql://root@127.0.0.1:${proxy.port}/test`, {
        table: tables.fresh("hang_own"),
        ensureSchema: true,
        maxConnections: 1,
        operationTimeout: timeout
      })
      const name = uniqueName("hang-own")
      const lease = yield* store.acquire(name, "a", Duration.seconds(30), null)
      proxy.setMode(Mode.sinkhole)
      const [error, took] = yield* elapsed(Effect.flip(store.renew(name, "a", lease.fence, Duration.seconds(30), null)))
      console.log(`[hang, own pool] timed-out renew gave control back after ${took} ms`)
      expect(error).toMatchObject({ _tag: "StoreError", operation: "renew", retryable: true })
      expect((error as Store.StoreError).cause).toMatchObject({ _tag: "OperationTimeout" })
      expect(took).toBeLessThan(Duration.toMillis(timeout) + slackMillis)
      proxy.setMode(Mode.pass)
      // The store keeps the silent connection out of the pool for its grace
      // (twice the timeout), then destroys it.
      yield* Effect.sleep(Duration.times(timeout, 2.5))
      // One connection in the pool: had the wedged one gone back, this would hang.
      const renewed = yield* store.renew(name, "a", lease.fence, Duration.seconds(30), null).pipe(
        Effect.timeout("5 seconds")
      )
      expect(renewed.fence).toBe(lease.fence)
    }).pipe(Effect.scoped))

  it.live("over the caller's pool, too; the pool stays open and the app gets a fresh connection", () =>
    Effect.gen(function*() {
      const proxy = yield* proxyScoped({ targetPort: 3306 })
      // A connection still in its handshake when its call gave up holds its
      // slot until the pool's connectTimeout: the app keeps that short.
      const pool = yield* callerPool({ port: proxy.port, connectionLimit: 1, connectTimeout: 2000 })
      const name = uniqueName("hang-pool")
      const renewed = yield* Effect.scoped(Effect.gen(function*() {
        const store = yield* MysqlStore.makeFromPool(pool, {
          table: tables.fresh("hang_pool"),
          ensureSchema: true,
          operationTimeout: timeout
        })
        const lease = yield* store.acquire(name, "a", Duration.seconds(30), null)
        proxy.setMode(Mode.sinkhole)
        const [error, took] = yield* elapsed(
          Effect.flip(store.renew(name, "a", lease.fence, Duration.seconds(30), null))
        )
        const [interrupted, interruptTook] = yield* elapsed(
          Effect.exit(store.inspect(name).pipe(Effect.timeout("300 millis")))
        )
        console.log(
          `[hang, caller's pool] timed-out renew: ${took} ms; externally interrupted inspect: ${interruptTook} ms`
        )
        expect(error).toMatchObject({ _tag: "StoreError", operation: "renew", retryable: true })
        expect(took).toBeLessThan(Duration.toMillis(timeout) + slackMillis)
        expect(Exit.isFailure(interrupted)).toBe(true)
        expect(interruptTook).toBeLessThan(slackMillis)
        proxy.setMode(Mode.pass)
        // One connection in the pool: had a wedged one gone back, every retry would hang.
        const [renewed, recovery] = yield* elapsed(
          store.renew(name, "a", lease.fence, Duration.seconds(30), null).pipe(
            Effect.retry({ schedule: Schedule.spaced("100 millis"), times: 20 })
          )
        )
        console.log(`[hang, caller's pool] first renew after healing succeeded ${recovery} ms later`)
        return renewed
      }))
      expect(renewed.holder).toBe("a")
      // The store is gone; the app's pool (one connection) is open and answers.
      expect(yield* selectOne(pool).pipe(Effect.timeout("5 seconds"))).toEqual([{ one: 1 }])
    }).pipe(Effect.scoped))
})
