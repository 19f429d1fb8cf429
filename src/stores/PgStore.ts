/**
 * The PostgreSQL store, over node-postgres (the driver under
 * `@effect/sql-pg`).
 *
 * Each operation is one statement that also reports the database's `now()`,
 * so a lease's TTL comes from one clock read on one server. The statements
 * keep no session state: no advisory locks, SET, temporary tables or named
 * prepared statements, so the store works unchanged behind PgBouncer in
 * transaction pooling mode. The one session a store may keep is opt-in and
 * outside its statements: with `listen` (wake-up hints), one extra
 * connection, direct to PostgreSQL, runs `LISTEN`; a release's `pg_notify`
 * is part of its own statement, so it goes through a pooler like any other.
 * (`ensureSchema`'s upgrade of a table of 0.1 bounds its lock wait with
 * `SET LOCAL`, which ends with its own one-query transaction.)
 *
 * Each row records the server that wrote it, as the server's start
 * (`pg_postmaster_start_time()`, which a restart and a promoted standby
 * change), so that a claim after a failover or a restart holds the lease
 * back (see `Store.acquire`).
 *
 * Statements run on connections checked out of a `pg.Pool`. An interrupted or
 * timed-out call gives control back at once; its connection goes back to the
 * pool only once its statement answered, and is destroyed if it stays silent
 * (see {@link OperationTimeout}): a connection whose server stopped answering
 * is never handed out again, and a late answer costs no reconnect.
 * (`@effect/sql-pg`'s `PgClient` would wait up to 5 s on `pg_cancel_backend`
 * and then reuse the wedged connection.)
 *
 * Four constructors, the same as the MySQL store's: from a URL
 * ({@link layerFromUrl}, a `string` or `Redacted`), from `Config`
 * ({@link layerConfig}), over the app's own `pg.Pool` ({@link layerFromPool},
 * which a `PgClient` can share through `PgClient.layerFromPool`), and from
 * the `PgClient` in context ({@link layer}), whose connection settings the
 * store copies into a small pool of its own.
 *
 * @since 0.1.0
 */
import type * as Duration from "effect/Duration"
import type * as Either from "effect/Either"
import type * as Redacted from "effect/Redacted"
import type { InvalidConfig } from "../ElectorError.js"
import type { Operation, StoreError } from "../Store.js"
import * as Engine from "./internal/sqlStore.js"
import * as Classify from "./pg/classify.js"
import * as Config from "./pg/config.js"
import { driver } from "./pg/driver.js"
import * as Hints from "./pg/hints.js"
import { statements } from "./pg/statements.js"
import type * as SqlStore from "./SqlStore.js"

/**
 * The errors of the SQL stores' own making, `OperationTimeout` and
 * `Saturated`, and `MissingDriverError`: documented in the
 * {@link SqlStoreError} module, re-exported here so that
 * `PgStore.OperationTimeout` needs no other import.
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
 * The channel of the wake-up hints of a store's table (its `table` field):
 * its releases `pg_notify` it, and a store with `listen` set runs `LISTEN` on
 * it. Derived from the table alone, so every store of one table agrees. For
 * an operator who watches the hints (`LISTEN` in psql).
 *
 * @since 0.1.0
 * @category constants
 * @example
 * ```ts
 * import * as PgStore from "effect-leaderelection/stores/PgStore"
 *
 * console.log(PgStore.hintChannel('"leader_election"')) // leaderelection_ and 32 hex digits
 * ```
 */
export const hintChannel: (table: string) => string = Hints.channelOf

/**
 * Quotes an identifier as the store's statements do: wrapped in double
 * quotes, embedded double quotes doubled, so it names exactly `value`, case
 * and all. For an operator's or a migration's own queries on the store's
 * tables (a store's `table` field is quoted already).
 *
 * @since 0.1.0
 * @category schema
 * @example
 * ```ts
 * import * as PgStore from "effect-leaderelection/stores/PgStore"
 *
 * PgStore.quoteIdentifier('my "odd" table') // '"my ""odd"" table"'
 * ```
 */
export const quoteIdentifier: (value: string) => string = Config.quoteIdentifier

/**
 * The verdict of {@link classify}: what every `StoreError` of the store
 * carries.
 *
 * @since 0.1.0
 * @category models
 */
export type Classification = SqlStore.Classification

/**
 * The verdict the store gives an error of `pg`, the pool or the server,
 * which every `StoreError` it returns carries: for an app that runs its own
 * queries on the same database and retries or alerts the way the store
 * does. Retryable: the SQLSTATE classes of the connection, rollbacks,
 * resources and the system (08, 40, 53, 58), shutdowns and restarts, lock
 * and statement timeouts, a read-only standby, socket errors, the store's
 * own {@link OperationTimeout} and {@link Saturated}, and any error without a
 * code (the outcome is unknown). Fatal: every other SQLSTATE (a missing
 * table, a privilege, authentication, no such database) and a bad option.
 * An `@effect/sql` `SqlError` is classified by its cause.
 *
 * @since 0.1.0
 * @category classification
 * @example
 * ```ts
 * import * as PgStore from "effect-leaderelection/stores/PgStore"
 *
 * PgStore.classify(Object.assign(new Error("relation does not exist"), { code: "42P01" }))
 * // { retryable: false, reason: "relation does not exist", code: "42P01" }
 * ```
 */
export const classify: (error: unknown) => Classification = Classify.classify

/**
 * Checks that `value` names exactly one PostgreSQL identifier once quoted:
 * not empty, no NUL, well-formed Unicode, at most 63 bytes of UTF-8.
 * Deprecated: the store checks every name it is given, and so does
 * {@link schema}.
 *
 * @deprecated Use {@link schema}: `PgStore.schema("", name)` is a `Left`
 * with an `InvalidConfig` naming what is wrong.
 * @since 0.1.0
 * @category validation
 */
export const validateIdentifier: (field: string, value: string) => Either.Either<string, InvalidConfig> =
  Config.validateIdentifier

/**
 * Validates a connection URL: it must parse and use the `postgres:` or
 * `postgresql:` scheme. Deprecated: the constructors check the URL.
 *
 * @deprecated Pass the URL to {@link makeFromUrl}, {@link layerFromUrl} or
 * {@link layerConfig}, which refuse a bad one with an `InvalidConfig`
 * (field `url`).
 * @since 0.1.0
 * @category validation
 */
export const validateUrl: (url: string) => Either.Either<string, InvalidConfig> = Config.validateUrl

/**
 * Wraps any failure of a store operation as a `Store.StoreError`, classified
 * by {@link classify}. Deprecated: {@link classify} is what an app needs.
 *
 * @deprecated Build it from {@link classify}:
 * `new Store.StoreError({ operation, ...PgStore.classify(error), cause: error })`.
 * @since 0.1.0
 * @category classification
 */
export const toStoreError: (operation: Operation, error: unknown) => StoreError = Engine.toStoreError(classify)

/**
 * The options every constructor takes ({@link makeFromPool},
 * {@link layerFromPool}): {@link SqlStore.Options} (`table`, `schema`,
 * `slotTable`, `candidatesTable`, `operationTimeout`, `ensureSchema`,
 * `ensureSchemaTimeout`), each with its default there.
 *
 * @since 0.1.0
 * @category models
 */
export type PgStoreOptions = SqlStore.Options

/**
 * The PostgreSQL store: the `Store` operations, plus its DDL
 * ({@link SqlStore.SqlStore}).
 *
 * @since 0.1.0
 * @category models
 */
export type PgStore = SqlStore.SqlStore

/**
 * The options of a store that owns its pool ({@link makeFromUrl},
 * {@link layerFromUrl}, {@link layerConfig}, {@link make}, {@link layer}):
 * {@link SqlStore.OwnedPoolOptions} (those of every SQL store, and
 * `maxConnections`), plus the pool's connection lifetimes and wake-up hints.
 *
 * @since 0.1.0
 * @category models
 */
export interface PgStoreUrlOptions extends SqlStore.OwnedPoolOptions {
  /** An idle connection is closed after this long. Defaults to 30 seconds. */
  readonly idleTimeout?: Duration.DurationInput | undefined
  /** No connection is used for longer than this. Defaults to 5 minutes. */
  readonly maxLifetime?: Duration.DurationInput | undefined
  /**
   * Wake-up hints (see `Store.WakeUps`): on a release, this process's
   * followers of the election claim at once instead of at their next poll,
   * so a clean handover takes one round trip. It opens ONE more connection,
   * for the store's life, that runs `LISTEN`: `true` when the store's own
   * URL reaches PostgreSQL directly; `{ url }`, a direct URL, when it goes
   * through a transaction pooler such as PgBouncer, which cannot keep a
   * `LISTEN` (the releases' `pg_notify` goes through it). A hint decides
   * nothing; a lost listening connection is logged, counted
   * (`Metrics.hintListenerLosses`) and retried while followers poll.
   * Defaults to off.
   */
  readonly listen?:
    | boolean
    | {
      /** A URL that reaches PostgreSQL directly, not through a pooler. */
      readonly url: string | Redacted.Redacted<string>
    }
    | undefined
}

/**
 * What {@link layerConfig} reads: the URL (as `Redacted`) and the options of
 * {@link PgStoreUrlOptions}.
 *
 * @since 0.1.0
 * @category models
 */
export type PgStoreConfig = SqlStore.UrlConfig<PgStoreUrlOptions>

const store = Engine.constructors(driver, statements)

/**
 * The DDL of the table: what {@link PgStore.ensureSchema} runs (with
 * {@link candidatesSchema} and {@link slotSchema}), for deployments that
 * apply DDL through their own migration tool. An empty `schemaName` leaves
 * the table unqualified. Keep the `fillfactor`: the row is rewritten on every
 * renewal, and the free space keeps those updates HOT.
 *
 * @since 0.1.0
 * @category schema
 * @example
 * ```ts
 * import { Either } from "effect"
 * import * as PgStore from "effect-leaderelection/stores/PgStore"
 *
 * const migration = [
 *   PgStore.schema("", PgStore.defaultTable),
 *   PgStore.slotSchema("", `${PgStore.defaultTable}_slots`),
 *   PgStore.candidatesSchema("", PgStore.defaultTable + PgStore.candidatesSuffix)
 * ].map(Either.getOrThrow).join("\n")
 * ```
 */
export const schema = store.schema

/**
 * The DDL that brings a table made by 0.1 up to this release, in place: the
 * columns `incarnation` and `server`, nullable and without a default, so the
 * `ALTER` only writes the catalog, and again harmlessly (`IF NOT EXISTS`).
 * `ensureSchema` runs it when the table lacks them, waiting at most 100 ms
 * for the table's lock each try. Names are validated and quoted, like
 * {@link schema}.
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
 * Builds the store over a `pg.Pool` the application already has. The pool
 * stays the caller's: the store never ends it.
 *
 * Every call still returns at `operationTimeout`, and a connection whose call
 * timed out or was interrupted stays out of the pool until its statement
 * answers (see {@link OperationTimeout}), so a wedged connection is never
 * handed to the next caller, the app's own queries included. The store uses
 * at most the pool's `max` connections at once; when all are busy, renewals
 * and releases go first, and a poll that finds too many calls waiting is
 * refused with a retryable {@link Saturated} error. A write waits for a row
 * lock a quarter of `operationTimeout` at most (`lock_timeout`, for the
 * statement's own transaction only), so a row another transaction holds
 * fails the call with a retryable 55P03 and leaves no backend waiting on it.
 *
 * Instants: PostgreSQL keeps microseconds, a `Date` milliseconds. The
 * reported `now` is the statement's `now()` rounded up to the millisecond and
 * every stored instant is reported rounded down, so `Lease.ttl` can come out
 * shorter than the database's TTL, never longer.
 *
 * @since 0.1.0
 * @category constructors
 * @example
 * ```ts
 * import { Duration, Effect } from "effect"
 * import { Pool } from "pg"
 * import * as PgStore from "effect-leaderelection/stores/PgStore"
 *
 * const pool = new Pool({ connectionString: "postgres://app@db:5432/app" })
 * const program = Effect.gen(function* () {
 *   const store = yield* PgStore.makeFromPool(pool, { table: "elections", ensureSchema: true })
 *   return yield* store.acquire("jobs", "a", Duration.seconds(15), null)
 * })
 * ```
 */
export const makeFromPool = store.makeFromPool

/**
 * The store of {@link makeFromPool} as a layer, over a `pg.Pool` the
 * application owns (and ends), e.g. one shared with `PgClient.layerFromPool`.
 *
 * @since 0.1.0
 * @category layers
 * @example
 * ```ts
 * import { Pool } from "pg"
 * import * as PgStore from "effect-leaderelection/stores/PgStore"
 *
 * const pool = new Pool({ connectionString: "postgres://app@db:5432/app", max: 4 })
 * const StoreLive = PgStore.layerFromPool(pool, { ensureSchema: true })
 * ```
 */
export const layerFromPool = store.layerFromPool

/**
 * The store of {@link layerFromUrl} for the scope: the pool it owns is ended
 * when the scope closes. The URL may be `Redacted`; either way it goes to the
 * driver only: a refused URL is reported by its scheme, never echoed.
 *
 * @since 0.1.0
 * @category constructors
 * @example
 * ```ts
 * import { Effect, Redacted } from "effect"
 * import * as PgStore from "effect-leaderelection/stores/PgStore"
 *
 * const elections = PgStore.makeFromUrl(Redacted.make("postgres://app:secret@db:5432/app")).pipe(
 *   Effect.flatMap((store) => store.list),
 *   Effect.scoped
 * )
 * ```
 */
export const makeFromUrl = store.makeFromUrl

/**
 * The store as a layer that owns its pool, safe behind a transaction-pooling
 * proxy such as PgBouncer: unnamed statements only, no session state, bounded
 * connection lifetime and idle time, TCP keepalive, and every connection
 * whose statement failed at the transport level or stayed silent after its
 * call gave up destroyed. A URL that does not parse, or whose scheme is not
 * `postgres:` or `postgresql:`, fails the layer with an {@link InvalidConfig}.
 *
 * @since 0.1.0
 * @category layers
 * @example
 * ```ts
 * import * as PgStore from "effect-leaderelection/stores/PgStore"
 *
 * const StoreLive = PgStore.layerFromUrl("postgres://app@pgbouncer:6432/app", { ensureSchema: true })
 * ```
 */
export const layerFromUrl = store.layerFromUrl

/**
 * The store of {@link layerFromUrl}, its URL and options read from `Config`,
 * like `PgClient.layerConfig`. Read the URL with `Config.redacted`.
 *
 * @since 0.1.0
 * @category layers
 * @example
 * ```ts
 * import { Config } from "effect"
 * import * as PgStore from "effect-leaderelection/stores/PgStore"
 *
 * const StoreLive = PgStore.layerConfig({
 *   url: Config.redacted("DATABASE_URL"),
 *   table: Config.string("ELECTION_TABLE").pipe(Config.withDefault(PgStore.defaultTable)),
 *   ensureSchema: Config.succeed(true)
 * })
 * ```
 */
export const layerConfig = store.layerConfig

/**
 * Builds the store from the `PgClient` (`@effect/sql-pg`) in context: the
 * store copies the client's connection settings (URL or host, port,
 * database, user, password, TLS) into a small bounded pool of its own for
 * the scope, and never runs its statements through the client, whose
 * interrupted queries keep their wedged connections.
 *
 * @since 0.1.0
 * @category constructors
 * @example
 * ```ts
 * import { Duration, Effect } from "effect"
 * import * as PgStore from "effect-leaderelection/stores/PgStore"
 *
 * const program = Effect.gen(function* () {
 *   const store = yield* PgStore.make({ table: "elections", ensureSchema: true })
 *   return yield* store.acquire("jobs", "a", Duration.seconds(15), null)
 * })
 * ```
 */
export const make = store.make

/**
 * The store of {@link make} as a layer over the `PgClient` in context.
 *
 * @since 0.1.0
 * @category layers
 * @example
 * ```ts
 * import { PgClient } from "@effect/sql-pg"
 * import { Config, Layer } from "effect"
 * import * as PgStore from "effect-leaderelection/stores/PgStore"
 *
 * const StoreLive = PgStore.layer({ ensureSchema: true }).pipe(
 *   Layer.provide(PgClient.layerConfig({ url: Config.redacted("DATABASE_URL") }))
 * )
 * ```
 */
export const layer = store.layer
