/**
 * The four ways to build the PostgreSQL store, each against the shared
 * server: from a URL (plain or `Redacted`), from `Config`, over the app's own
 * `pg.Pool`, and from the app's `PgClient`. A `Redacted` URL's password must
 * not show in any error or log, and a pool the caller owns must outlive the
 * store.
 */
import { PgClient } from "@effect/sql-pg"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Cause, Config, ConfigError, ConfigProvider, Duration, Effect, Exit, Layer, Logger, Redacted } from "effect"
import pg from "pg"
import * as Store from "../src/Store.js"
import * as PgStore from "../src/stores/PgStore.js"
import { uniqueName } from "./storetest/suite.js"
import { directUrl, uniqueTable } from "./support/databases.js"

const tables: Array<string> = []
const freshTable = (label: string) => {
  const table = uniqueTable(`ctor_${label}`)
  tables.push(table)
  return table
}
afterAll(async () => {
  const client = new pg.Client({ connectionString: directUrl })
  await client.connect()
  for (const table of tables) await client.query(`DROP TABLE IF EXISTS ${PgStore.quoteIdentifier(table)}`)
  await client.end()
})

/** A password no error, log line or cause may ever contain. */
const secret = `s3cret-${process.pid}-pw`
const withPassword = (url: string, password: string) => {
  const parsed = new URL(url)
  parsed.password = password
  return parsed.toString()
}

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

describe("PgStore.makeFromUrl / layerFromUrl", () => {
  it.live("take a plain or a Redacted URL", () =>
    Effect.gen(function*() {
      yield* Effect.provide(roundTrip, PgStore.layerFromUrl(directUrl, { table: freshTable("url"), ensureSchema: true }))
      const table = freshTable("redacted")
      yield* Effect.provide(roundTrip, PgStore.layerFromUrl(Redacted.make(directUrl), { table, ensureSchema: true }))
      const store = yield* PgStore.makeFromUrl(Redacted.make(directUrl), { table })
      expect(store.table).toBe(PgStore.quoteIdentifier(table))
      expect((yield* store.list).length).toBe(1)
    }).pipe(Effect.scoped))

  it.live("a Redacted URL's password shows in no error, cause or log line", () =>
    Effect.gen(function*() {
      // Nothing listens on port 1: the failure comes from the driver.
      const unreachable = Redacted.make(`postgres://app:${secret}@127.0.0.1:1/test`)
      const failed = yield* logged(
        Effect.provide(roundTrip, PgStore.layerFromUrl(unreachable, { operationTimeout: "2 seconds" }))
      )
      expect(failed.exit).toMatchObject({ _tag: "Failure" })
      expect(failed.text).toContain("ECONNREFUSED")
      expect(failed.text).not.toContain(secret)

      const refused = yield* logged(
        Effect.provide(Effect.void, PgStore.layerFromUrl(Redacted.make(`mysql://app:${secret}@db/app`)))
      )
      expect(refused.text).toContain("scheme must be postgres: or postgresql:")
      expect(refused.text).not.toContain(secret)
      const unparsable = yield* logged(
        Effect.provide(Effect.void, PgStore.layerFromUrl(Redacted.make(`postgres://app:${secret}@db:port/app`)))
      )
      expect(unparsable.text).toContain("is not a URL")
      expect(unparsable.text).not.toContain(secret)
    }))
})

describe("PgStore.layerConfig", () => {
  const provider = (entries: ReadonlyArray<readonly [string, string]>) =>
    Layer.setConfigProvider(ConfigProvider.fromMap(new Map(entries)))

  const fromEnv = PgStore.layerConfig({
    url: Config.redacted("DATABASE_URL"),
    table: Config.string("ELECTION_TABLE"),
    operationTimeout: Config.duration("ELECTION_OPERATION_TIMEOUT").pipe(Config.withDefault(Duration.seconds(3))),
    ensureSchema: Config.boolean("ELECTION_ENSURE_SCHEMA")
  })

  it.live("reads the URL and the options from Config", () =>
    Effect.provide(
      roundTrip,
      fromEnv.pipe(Layer.provide(provider([
        ["DATABASE_URL", directUrl],
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
          ["DATABASE_URL", withPassword(directUrl, secret)],
          ["ELECTION_TABLE", ""],
          ["ELECTION_ENSURE_SCHEMA", "false"]
        ])))
      ))
      expect(bad).toMatchObject({ _tag: "PgStoreConfigError", field: "table" })
      expect(Cause.pretty(Cause.fail(bad))).not.toContain(secret)
    }))
})

describe("PgStore.makeFromPool / layerFromPool", () => {
  const callerPool = Effect.acquireRelease(
    Effect.sync(() => new pg.Pool({ connectionString: directUrl, max: 2 })),
    (pool) => Effect.promise(() => pool.end())
  )

  it.live("run on the caller's pool and never end it", () =>
    Effect.gen(function*() {
      const pool = yield* callerPool
      const table = freshTable("pool")
      yield* Effect.provide(roundTrip, PgStore.layerFromPool(pool, { table, ensureSchema: true }))
      yield* Effect.scoped(Effect.flatMap(PgStore.makeFromPool(pool, { table }), (store) => store.list))
      // Both stores are gone; the pool is still the caller's, open and working.
      expect(pool.ended).toBe(false)
      expect(pool.ending).toBe(false)
      const { rows } = yield* Effect.promise(() => pool.query<{ one: number }>("select 1 as one"))
      expect(rows[0]?.one).toBe(1)
    }).pipe(Effect.scoped))

  it.live("refuse bad options before touching the pool", () =>
    Effect.gen(function*() {
      const pool = yield* callerPool
      const error = yield* Effect.flip(PgStore.makeFromPool(pool, { operationTimeout: 0 }))
      expect(error).toMatchObject({ _tag: "PgStoreConfigError", field: "operationTimeout" })
      expect(pool.totalCount).toBe(0)
    }).pipe(Effect.scoped))
})

describe("PgStore.make / layer from the PgClient in context", () => {
  it.live("take the client's URL", () =>
    Effect.provide(
      roundTrip,
      PgStore.layer({ table: freshTable("client_url"), ensureSchema: true }).pipe(
        Layer.provide(PgClient.layer({ url: Redacted.make(directUrl) }))
      )
    ))

  it.live("take the client's separate settings, and run on a pool of their own", () =>
    Effect.gen(function*() {
      const url = new URL(directUrl)
      const table = freshTable("client_fields")
      const lease = yield* Effect.gen(function*() {
        const store = yield* PgStore.make({ table, ensureSchema: true, maxConnections: 1, operationTimeout: "5 seconds" })
        const sql = yield* PgClient.PgClient
        const name = uniqueName("client")
        // The client's only connection stays busy in a transaction: a store
        // that borrowed the client's pool could not run at all.
        return yield* sql.withTransaction(
          Effect.zipRight(sql`select 1`, Effect.zipRight(store.acquire(name, "a", Duration.seconds(30), null), store.inspect(name)))
        )
      }).pipe(
        Effect.scoped,
        Effect.provide(PgClient.layer({
          host: url.hostname,
          port: Number(url.port),
          database: url.pathname.slice(1),
          username: decodeURIComponent(url.username),
          maxConnections: 1
        }))
      )
      expect(lease.holder).toBe("a")
    }))
})
