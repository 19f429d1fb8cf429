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
import { Cause, Config, ConfigError, ConfigProvider, Duration, Effect, Exit, Layer, Logger, Redacted, Schedule } from "effect"
import * as Mysql from "mysql2"
import * as MysqlPromise from "mysql2/promise"
import * as Store from "../src/Store.js"
import * as MysqlStore from "../src/stores/MysqlStore.js"
import { uniqueName } from "./storetest/suite.js"
import { Mode } from "./chaos/harness/FaultProxy.js"
import { proxyScoped } from "./chaos/harness/scoped.js"

const server = { host: "127.0.0.1", port: 3306, user: "root", database: "test" }
const url = "mysql://root@127.0.0.1:3306/test"
const runId = `${process.pid}_${Date.now().toString(36)}`
let counter = 0
const tables: Array<string> = []
const freshTable = (label: string) => {
  const name = `ctor_${runId}_${label}_${counter++}`
  tables.push(name)
  return name
}
afterAll(async () => {
  const connection = await MysqlPromise.createConnection(server)
  for (const name of tables) await connection.query(`DROP TABLE IF EXISTS ${MysqlStore.quoteIdentifier(name)}`)
  await connection.end()
})

/** A password no error, log line or cause may ever contain. */
const secret = `s3cret-${process.pid}-pw`

/** Acquires then inspects one lease through the `Store` in context. */
const roundTrip = Effect.gen(function*() {
  const store = yield* Store.Store
  const name = uniqueName("ctor")
  const lease = yield* store.acquire(name, "a", Duration.seconds(30), null)
  expect(lease.fence).toBe(1n)
  expect((yield* store.inspect(name)).holder).toBe("a")
})

/** Every line logged while `effect` runs, the failure's full cause included. */
const logged = <A, E>(effect: Effect.Effect<A, E>) =>
  Effect.gen(function*() {
    const lines: Array<string> = []
    const capture = Logger.make(({ cause, message }) => {
      lines.push(`${String(message)} ${Cause.pretty(cause)}`)
    })
    const exit = yield* effect.pipe(
      Effect.tapErrorCause((cause) => Effect.logError("store failed", cause)),
      Effect.exit,
      Effect.provide(Logger.replace(Logger.defaultLogger, capture))
    )
    return { exit, text: [...lines, Exit.isFailure(exit) ? Cause.pretty(exit.cause) : ""].join("\n") }
  })

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

describe("MysqlStore.makeFromUrl / layerFromUrl", () => {
  it.live("take a plain or a Redacted URL", () =>
    Effect.gen(function*() {
      yield* Effect.provide(roundTrip, MysqlStore.layerFromUrl(url, { table: freshTable("url"), ensureSchema: true }))
      const table = freshTable("redacted")
      yield* Effect.provide(roundTrip, MysqlStore.layerFromUrl(Redacted.make(url), { table, ensureSchema: true }))
      const store = yield* MysqlStore.makeFromUrl(Redacted.make(url), { table })
      expect(store.table).toBe(MysqlStore.quoteIdentifier(table))
      expect((yield* store.list).length).toBe(1)
    }).pipe(Effect.scoped))

  it.live("a Redacted URL's password shows in no error, cause or log line", () =>
    Effect.gen(function*() {
      // The server refuses the credentials: the failure comes from the driver.
      const denied = yield* logged(
        Effect.provide(roundTrip, MysqlStore.layerFromUrl(Redacted.make(`mysql://nobody_${process.pid}:${secret}@127.0.0.1:3306/test`)))
      )
      expect(denied.exit).toMatchObject({ _tag: "Failure" })
      expect(denied.text).toContain("Access denied")
      expect(denied.text).not.toContain(secret)

      const refused = yield* logged(
        Effect.provide(Effect.void, MysqlStore.layerFromUrl(Redacted.make(`postgres://app:${secret}@db/app`)))
      )
      expect(refused.text).toContain("scheme must be mysql: or mariadb:")
      expect(refused.text).not.toContain(secret)
      const parameters = yield* logged(
        Effect.provide(Effect.void, MysqlStore.layerFromUrl(Redacted.make(`mysql://app:${secret}@db/app?password=${secret}`)))
      )
      expect(parameters.text).toContain("query parameters are not supported: password")
      expect(parameters.text).not.toContain(secret)
    }))
})

describe("MysqlStore.layerConfig", () => {
  const provider = (entries: ReadonlyArray<readonly [string, string]>) =>
    Layer.setConfigProvider(ConfigProvider.fromMap(new Map(entries)))

  const fromEnv = MysqlStore.layerConfig({
    url: Config.redacted("DATABASE_URL"),
    table: Config.string("ELECTION_TABLE"),
    maxConnections: Config.integer("ELECTION_POOL_SIZE").pipe(Config.withDefault(2)),
    ensureSchema: Config.boolean("ELECTION_ENSURE_SCHEMA")
  })

  it.live("reads the URL and the options from Config", () =>
    Effect.provide(
      roundTrip,
      fromEnv.pipe(Layer.provide(provider([
        ["DATABASE_URL", url],
        ["ELECTION_TABLE", freshTable("config")],
        ["ELECTION_ENSURE_SCHEMA", "true"]
      ])))
    ))

  it.live("a missing variable fails with effect's ConfigError; a bad option with the store's", () =>
    Effect.gen(function*() {
      const missing = yield* Effect.flip(Effect.provide(Effect.void, fromEnv.pipe(Layer.provide(provider([])))))
      expect(ConfigError.isConfigError(missing)).toBe(true)
      expect(String(missing)).toContain("Missing data at DATABASE_URL")
      const bad = yield* Effect.flip(Effect.provide(
        Effect.void,
        fromEnv.pipe(Layer.provide(provider([
          ["DATABASE_URL", `mysql://root:${secret}@127.0.0.1:3306/test`],
          ["ELECTION_TABLE", "t"],
          ["ELECTION_POOL_SIZE", "0"],
          ["ELECTION_ENSURE_SCHEMA", "false"]
        ])))
      ))
      expect(bad).toMatchObject({ _tag: "MysqlStoreConfigError", field: "maxConnections" })
      expect(Cause.pretty(Cause.fail(bad))).not.toContain(secret)
    }))
})

describe("MysqlStore.makeFromPool / layerFromPool", () => {
  it.live("run on the caller's pool and never end it", () =>
    Effect.gen(function*() {
      const pool = yield* callerPool({})
      const table = freshTable("pool")
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
      yield* Effect.provide(roundTrip, MysqlStore.layerFromPool(promisePool.pool, { table: freshTable("promise"), ensureSchema: true }))
      const [rows] = yield* Effect.promise(() => promisePool.query("SELECT 1 AS one"))
      expect(rows).toEqual([{ one: 1 }])
    }).pipe(Effect.scoped))

  it.live("decode their rows whatever the pool's row options", () =>
    Effect.gen(function*() {
      const pool = yield* callerPool({ rowsAsArray: true, nestTables: true })
      yield* Effect.provide(roundTrip, MysqlStore.layerFromPool(pool, { table: freshTable("rows"), ensureSchema: true }))
    }).pipe(Effect.scoped))

  it.live("refuse a pool whose connections would garble identities or count changed rows", () =>
    Effect.gen(function*() {
      const latin1 = yield* callerPool({ charset: "LATIN1_SWEDISH_CI" })
      expect(yield* Effect.flip(MysqlStore.makeFromPool(latin1))).toMatchObject({
        _tag: "MysqlStoreConfigError",
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

describe("MysqlStore.make / layer from the MysqlClient in context", () => {
  it.live("take the client's URL", () =>
    Effect.provide(
      roundTrip,
      MysqlStore.layer({ table: freshTable("client_url"), ensureSchema: true }).pipe(
        Layer.provide(MysqlClient.layer({ url: Redacted.make(url) }))
      )
    ))

  it.live("run on a pool of their own", () =>
    Effect.gen(function*() {
      const table = freshTable("client_own")
      const lease = yield* Effect.gen(function*() {
        const store = yield* MysqlStore.make({ table, ensureSchema: true, maxConnections: 1, operationTimeout: "5 seconds" })
        const sql = yield* MysqlClient.MysqlClient
        const name = uniqueName("client")
        // The client's only connection stays busy in a transaction: a store
        // that borrowed the client's pool could not run at all.
        return yield* sql.withTransaction(
          Effect.zipRight(sql`SELECT 1`, Effect.zipRight(store.acquire(name, "a", Duration.seconds(30), null), store.inspect(name)))
        )
      }).pipe(Effect.scoped, Effect.provide(MysqlClient.layer({ url: Redacted.make(url), maxConnections: 1 })))
      expect(lease.holder).toBe("a")
    }))
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
        table: freshTable("hang_own"),
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
      // One connection in the pool: had the wedged one gone back, this would hang.
      const renewed = yield* store.renew(name, "a", lease.fence, Duration.seconds(30), null).pipe(Effect.timeout("5 seconds"))
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
          table: freshTable("hang_pool"),
          ensureSchema: true,
          operationTimeout: timeout
        })
        const lease = yield* store.acquire(name, "a", Duration.seconds(30), null)
        proxy.setMode(Mode.sinkhole)
        const [error, took] = yield* elapsed(Effect.flip(store.renew(name, "a", lease.fence, Duration.seconds(30), null)))
        const [interrupted, interruptTook] = yield* elapsed(Effect.exit(store.inspect(name).pipe(Effect.timeout("300 millis"))))
        console.log(`[hang, caller's pool] timed-out renew: ${took} ms; externally interrupted inspect: ${interruptTook} ms`)
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
