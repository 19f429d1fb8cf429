/**
 * The MySQL / MariaDB store.
 *
 * One row per election in an InnoDB table. Each operation is one statement
 * (`release`, `inspect`) or one short transaction on one connection
 * (`acquire`: the claim, the hold-back of a row another server wrote, the
 * row read back under the claim's lock; `renew`: the write and the read-back;
 * then `COMMIT`), sent as one request, so one round trip per operation, on
 * the store's own pools; no `SET`, user variable, temporary table, lock
 * function or prepared statement outlives a call, so the store works behind
 * a multiplexing proxy. (`ensureSchema`'s upgrade of a table of 0.1 on
 * MySQL 8 sets `lock_wait_timeout` and resets it in the same request, on a
 * connection destroyed if the request fails.)
 *
 * Each row records the server that wrote it, as `server_id` and the
 * server's start (`UNIX_TIMESTAMP() - Uptime`, stable within a run of the
 * server), so that a claim after a failover or a restart holds the lease
 * back (see `Store.acquire`). A standby must replicate rows, not statements
 * (`binlog_format` ROW or MIXED): replaying the statement would record the
 * standby itself. Writes go to one server at a time (Galera: through one
 * node).
 *
 * Four constructors, the same as the PostgreSQL store's: from a URL
 * ({@link layerFromUrl}, a `string` or `Redacted`), from `Config`
 * ({@link layerConfig}), over the app's own mysql2 pool
 * ({@link layerFromPool}), and from the `MysqlClient` of
 * `@effect/sql-mysql2` in context ({@link layer}), whose connection settings
 * the store copies into a small pool of its own. The store never runs its
 * statements through the client: the client's pool prepares every ordinary
 * statement on the server (mysql2 `execute`) and takes a connection back
 * after an interrupted query, where it waits, busy, for an answer a hung
 * server never sends. The store uses mysql2 `query` (values escaped by the
 * driver), bounds every call by `operationTimeout`, and destroys any
 * connection whose request failed, or stayed silent after its call gave up
 * (see {@link OperationTimeout}), which also ends its transaction on the
 * server; a late answer that succeeded puts the connection back in the pool.
 *
 * The statements mean the same on MySQL 8 and MariaDB 10.11 (their
 * differences, and how each is handled, are noted in `mysql/sql.ts`).
 * `name` and `holder` are compared byte for byte, so `'A'`, `'a'` and `'a '`
 * are three elections; one longer than 1020 bytes fails with 1406 (fatal)
 * under the default strict `sql_mode`. Instants come from the server's
 * `UTC_TIMESTAMP(6)`, and a TTL derived from a returned lease is never longer
 * than the server's.
 *
 * @since 0.1.0
 */
import type * as Duration from "effect/Duration"
import type * as Either from "effect/Either"
import type * as Mysql from "mysql2"
import type { InvalidConfig } from "../ElectorError.js"
import * as Engine from "./internal/sqlStore.js"
import * as Classify from "./mysql/classify.js"
import * as Config from "./mysql/config.js"
import { driver } from "./mysql/driver.js"
import { statements } from "./mysql/statements.js"
import type * as SqlStore from "./SqlStore.js"

/**
 * The errors of the SQL stores' own making, `OperationTimeout` and
 * `Saturated`, and `MissingDriverError`: documented in the
 * {@link SqlStoreError} module, re-exported here so that
 * `MysqlStore.OperationTimeout` needs no other import.
 *
 * @since 0.1.0
 */
export * from "./SqlStoreError.js"

export {
  /**
   * What the candidates' table's name adds to the lease table's, unless the
   * `candidatesTable` option says otherwise: for a migration
   * ({@link candidatesSchema}).
   *
   * @since 0.1.0
   */
  candidatesSuffix,
  /**
   * The lease table's name unless the `table` option says otherwise: for a
   * migration that creates it ({@link schema}) or an operator's query.
   *
   * @since 0.1.0
   */
  defaultTable
} from "./SqlStore.js"

/**
 * Quotes an identifier as the store's statements do: backticks around it,
 * embedded backticks doubled. For an operator's or a migration's own
 * queries on the store's tables (a store's `table` field is quoted already).
 *
 * @since 0.1.0
 * @category schema
 * @example
 * ```ts
 * import * as MysqlStore from "effect-leaderelection/stores/MysqlStore"
 *
 * MysqlStore.quoteIdentifier("odd`name") // '`odd``name`'
 * ```
 */
export const quoteIdentifier: (name: string) => string = Config.quoteIdentifier

/**
 * The verdict of {@link classify}: what every `StoreError` of the store
 * carries.
 *
 * @since 0.1.0
 * @category models
 */
export type Classification = SqlStore.Classification

/**
 * The verdict the store gives an error of mysql2, the pool or the server,
 * which every `StoreError` it returns carries: for an app that runs its own
 * queries on the same database and retries or alerts the way the store
 * does. Known server errnos decide first (locks, deadlocks, read-only
 * phases, too many connections and lost connections are retryable; access
 * denied, no such database, table or column, data too long are fatal), then
 * the driver's or the OS's code; an error mysql2 marks `fatal` (it broke the
 * connection) is retryable. Anything else, syntax errors included, is
 * fatal: it will not fix itself. The store's own {@link OperationTimeout}
 * and {@link Saturated} are retryable.
 *
 * @since 0.1.0
 * @category classification
 * @example
 * ```ts
 * import * as MysqlStore from "effect-leaderelection/stores/MysqlStore"
 *
 * MysqlStore.classify({ errno: 1213, code: "ER_LOCK_DEADLOCK", message: "Deadlock" }).retryable // true
 * ```
 */
export const classify: (error: unknown) => Classification = Classify.classify

/**
 * Parses a `mysql://user:password@host:port/database` (or `mariadb://`) URL
 * into mysql2 connection options; query parameters are refused. Deprecated:
 * the constructors parse the URL.
 *
 * @deprecated Pass the URL to {@link makeFromUrl}, {@link layerFromUrl} or
 * {@link layerConfig}, which refuse a bad one with an `InvalidConfig`
 * (field `url`); for a pool of your own, to mysql2's `createPool({ uri })`.
 * @since 0.1.0
 * @category constructors
 */
export const parseUrl: (url: string) => Either.Either<Mysql.ConnectionOptions, InvalidConfig> = Config.parseUrl

/**
 * The options every constructor takes ({@link makeFromPool},
 * {@link layerFromPool}): {@link SqlStore.Options} (`table`, `schema`,
 * `slotTable`, `candidatesTable`, `operationTimeout`, `ensureSchema`,
 * `ensureSchemaTimeout`), each with its default there.
 *
 * @since 0.1.0
 * @category models
 */
export type MysqlStoreOptions = SqlStore.Options

/**
 * The options of a store that owns its pool ({@link makeFromUrl},
 * {@link layerFromUrl}, {@link layerConfig}, {@link make}, {@link layer}):
 * {@link SqlStore.OwnedPoolOptions} (those of every SQL store, and
 * `maxConnections`), plus the bound on opening a connection.
 *
 * @since 0.1.0
 * @category models
 */
export interface MysqlStoreUrlOptions extends SqlStore.OwnedPoolOptions {
  /** Bound on opening one connection, handshake included. Defaults to 5 seconds. */
  readonly connectTimeout?: Duration.DurationInput | undefined
}

/**
 * What {@link layerConfig} reads: the URL (as `Redacted`) and the options of
 * {@link MysqlStoreUrlOptions}.
 *
 * @since 0.1.0
 * @category models
 */
export type MysqlStoreConfig = SqlStore.UrlConfig<MysqlStoreUrlOptions>

/**
 * The MySQL / MariaDB store: the `Store` operations, plus its DDL
 * ({@link SqlStore.SqlStore}).
 *
 * @since 0.1.0
 * @category models
 */
export type MysqlStore = SqlStore.SqlStore

const store = Engine.constructors(driver, statements)

/**
 * The DDL of the store's table (`ensureSchema` also runs
 * {@link candidatesSchema} and {@link slotSchema}), for deployments that
 * withhold DDL rights from the application and run migrations instead. An
 * empty `schemaName` means the connection's database. Names are validated
 * and quoted.
 *
 * @since 0.1.0
 * @category schema
 * @example
 * ```ts
 * import { Either } from "effect"
 * import * as MysqlStore from "effect-leaderelection/stores/MysqlStore"
 *
 * const migration = [
 *   MysqlStore.schema("", MysqlStore.defaultTable),
 *   MysqlStore.slotSchema("", `${MysqlStore.defaultTable}_slots`),
 *   MysqlStore.candidatesSchema("", MysqlStore.defaultTable + MysqlStore.candidatesSuffix)
 * ].map(Either.getOrThrow).join(";\n")
 * ```
 */
export const schema = store.schema

/**
 * The DDL that brings a table made by 0.1 up to this release, in place: the
 * columns `incarnation` and `server`, nullable, appended (`ALGORITHM=INSTANT`,
 * no copy of the table). MariaDB's form runs as is, and again harmlessly;
 * MySQL 8 has no `ADD COLUMN IF NOT EXISTS`, so its form follows as
 * comments, one statement per column the table lacks. `ensureSchema` runs it
 * when the table lacks them, with a bounded wait for the table's lock. Names
 * are validated and quoted, like {@link schema}.
 *
 * @since 0.2.0
 * @category schema
 */
export const schemaUpgrade = store.schemaUpgrade

/**
 * The DDL of the table of scheduled job slots (`Elector.schedule`), named as
 * the store's `slotTable` option (by default, the lease table's name +
 * `_slots`), like {@link schema}.
 *
 * @since 0.1.0
 * @category schema
 */
export const slotSchema = store.slotSchema

/**
 * The DDL of the candidates' table (see `Store.advertise`), like {@link schema}.
 *
 * @since 0.1.0
 * @category schema
 */
export const candidatesSchema = store.candidatesSchema

/**
 * Builds the store over a mysql2 pool the application already has (the
 * callback pool of `mysql2`; for a `mysql2/promise` pool pass its `.pool`).
 * The pool stays the caller's: the store never ends it.
 *
 * Every call still returns at `operationTimeout`, and a connection whose
 * request failed, or stayed silent after its call gave up (see
 * {@link OperationTimeout}), is destroyed rather than released, so a wedged
 * connection is never handed to the next caller. The store runs `query`
 * (text protocol), never `execute`. A connection the pool was still opening
 * when its call gave up holds its slot until the pool's own `connectTimeout`
 * (mysql2's default: 10 s), so keep that short, as the store's own pools do
 * (5 s). A pool whose connections do not use a utf8mb4 charset, or that
 * dropped the FOUND_ROWS flag, is refused with an {@link InvalidConfig}
 * (field `pool`).
 *
 * @since 0.1.0
 * @category constructors
 * @example
 * ```ts
 * import { Duration, Effect } from "effect"
 * import * as Mysql from "mysql2"
 * import * as MysqlStore from "effect-leaderelection/stores/MysqlStore"
 *
 * const pool = Mysql.createPool({ uri: "mysql://app@db:3306/app" })
 * const program = Effect.gen(function* () {
 *   const store = yield* MysqlStore.makeFromPool(pool, { table: "elections", ensureSchema: true })
 *   return yield* store.acquire("jobs", "a", Duration.seconds(15), null)
 * })
 * ```
 */
export const makeFromPool = store.makeFromPool

/**
 * The store of {@link makeFromPool} as a layer, over a mysql2 pool the
 * application owns (and ends).
 *
 * @since 0.1.0
 * @category layers
 * @example
 * ```ts
 * import * as Mysql from "mysql2"
 * import * as MysqlStore from "effect-leaderelection/stores/MysqlStore"
 *
 * const pool = Mysql.createPool({ uri: "mysql://app@db:3306/app", connectionLimit: 4 })
 * const StoreLive = MysqlStore.layerFromPool(pool, { ensureSchema: true })
 * ```
 */
export const layerFromPool = store.layerFromPool

/**
 * Builds the store from the `MysqlClient` (`@effect/sql-mysql2`) in context:
 * the store copies the client's connection settings (URL or host, port,
 * database, user, password, `poolConfig`) into a small bounded pool of its
 * own for the scope, and never runs its statements through the client, which
 * prepares every statement on the server and keeps a connection busy after
 * an interrupted query.
 *
 * @since 0.1.0
 * @category constructors
 * @example
 * ```ts
 * import { Duration, Effect } from "effect"
 * import * as MysqlStore from "effect-leaderelection/stores/MysqlStore"
 *
 * const program = Effect.gen(function* () {
 *   const store = yield* MysqlStore.make({ table: "elections", ensureSchema: true })
 *   return yield* store.acquire("jobs", "a", Duration.seconds(15), null)
 * })
 * ```
 */
export const make = store.make

/**
 * The store of {@link make} as a layer over the `MysqlClient` in context.
 *
 * @since 0.1.0
 * @category layers
 * @example
 * ```ts
 * import { MysqlClient } from "@effect/sql-mysql2"
 * import { Config, Layer } from "effect"
 * import * as MysqlStore from "effect-leaderelection/stores/MysqlStore"
 *
 * const StoreLive = MysqlStore.layer({ ensureSchema: true }).pipe(
 *   Layer.provide(MysqlClient.layerConfig({ url: Config.redacted("DATABASE_URL") }))
 * )
 * ```
 */
export const layer = store.layer

/**
 * The store of {@link layerFromUrl} for the scope: its pool is closed when
 * the scope closes. The URL may be `Redacted`; either way it goes to the
 * driver only: a refused URL is reported by what is wrong with it, never
 * echoed.
 *
 * @since 0.1.0
 * @category constructors
 * @example
 * ```ts
 * import { Effect, Redacted } from "effect"
 * import * as MysqlStore from "effect-leaderelection/stores/MysqlStore"
 *
 * const elections = MysqlStore.makeFromUrl(Redacted.make("mysql://root@127.0.0.1:3306/test")).pipe(
 *   Effect.flatMap((store) => store.list),
 *   Effect.scoped
 * )
 * ```
 */
export const makeFromUrl = store.makeFromUrl

/**
 * The store as a layer straight from a URL. No `MysqlClient` is built: its
 * pool would connect at startup, and a store must come up while the
 * database is down and report that from its operations, classified.
 *
 * @since 0.1.0
 * @category layers
 * @example
 * ```ts
 * import * as MysqlStore from "effect-leaderelection/stores/MysqlStore"
 *
 * const StoreLive = MysqlStore.layerFromUrl("mysql://app:secret@db:3306/app")
 * ```
 */
export const layerFromUrl = store.layerFromUrl

/**
 * {@link layerFromUrl} with the URL and the options taken from `Config`, like
 * `MysqlClient.layerConfig`. `Config.redacted` keeps the password out of
 * logs and error messages.
 *
 * @since 0.1.0
 * @category layers
 * @example
 * ```ts
 * import { Config } from "effect"
 * import * as MysqlStore from "effect-leaderelection/stores/MysqlStore"
 *
 * const StoreLive = MysqlStore.layerConfig({
 *   url: Config.redacted("DATABASE_URL"),
 *   operationTimeout: Config.duration("ELECTION_OPERATION_TIMEOUT").pipe(Config.withDefault("3 seconds"))
 * })
 * ```
 */
export const layerConfig = store.layerConfig
