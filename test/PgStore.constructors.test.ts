/**
 * The four ways to build the PostgreSQL store, each against the shared
 * server: from a URL (plain or `Redacted`), from `Config`, over the app's own
 * `pg.Pool`, and from the app's `PgClient`. A `Redacted` URL's password must
 * not show in any error or log, and a pool the caller owns must outlive the
 * store. (The hung-server cases over either pool: PgStore.hang.test.ts.)
 */
import { PgClient } from "@effect/sql-pg"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import pg from "pg"
import * as PgStore from "../src/stores/PgStore.js"
import { describeConstructors, roundTrip, secret, tableTracker, whileClientBusy } from "./support/constructors.js"
import { directUrl } from "./support/databases.js"
import { dropPgTables } from "./support/tables.js"

const tables = tableTracker("ctor")
afterAll(() => dropPgTables(...tables.names))

describeConstructors({
  name: "PgStore",
  url: directUrl,
  configErrorTag: "InvalidConfig",
  layerFromUrl: PgStore.layerFromUrl,
  makeFromUrl: PgStore.makeFromUrl,
  quoteIdentifier: PgStore.quoteIdentifier,
  layerConfig: PgStore.layerConfig,
  layerFromClient: (url, options) => PgStore.layer(options).pipe(Layer.provide(PgClient.layer({ url }))),
  // Nothing listens on port 1: the failure comes from the driver.
  failing: [Redacted.make(`postgres://app:${secret}@127.0.0.1:1/test`), "ECONNREFUSED"],
  refused: [
    [Redacted.make(`mysql://app:${secret}@db/app`), "scheme must be postgres: or postgresql:"],
    [Redacted.make(`postgres://app:${secret}@db:port/app`), "is not a URL"]
  ],
  fresh: tables.fresh
})

describe("PgStore.makeFromPool / layerFromPool", () => {
  const callerPool = Effect.acquireRelease(
    Effect.sync(() => new pg.Pool({ connectionString: directUrl, max: 2 })),
    (pool) => Effect.promise(() => pool.end())
  )

  it.live("run on the caller's pool and never end it", () =>
    Effect.gen(function*() {
      const pool = yield* callerPool
      const table = tables.fresh("pool")
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
      expect(error).toMatchObject({ _tag: "InvalidConfig", field: "operationTimeout" })
      expect(pool.totalCount).toBe(0)
    }).pipe(Effect.scoped))
})

describe("PgStore.make from the PgClient in context", () => {
  it.live("take the client's separate settings, and run on a pool of their own", () =>
    Effect.gen(function*() {
      const url = new URL(directUrl)
      const lease = yield* Effect.gen(function*() {
        const store = yield* PgStore.make({
          table: tables.fresh("client_fields"),
          ensureSchema: true,
          maxConnections: 1
        })
        return yield* whileClientBusy(yield* PgClient.PgClient, store)
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
