/**
 * What the two SQL stores share: the options every constructor of
 * `PgStore` and `MysqlStore` takes, those of a store that owns its pool, what
 * `layerConfig` reads, and the store they build. Each store names these after
 * itself (`PgStore.PgStoreOptions`, `MysqlStore.MysqlStoreUrlOptions`, ...)
 * and adds the options of its own driver. Here too: the default names of
 * the tables, and the verdict of a store's `classify` on an error.
 *
 * A store keeps three tables, named after its `table` option (by default
 * `leader_election`): the leases, one row per election; the candidates
 * (`leader_election_candidates`, see `Store.advertise`); and the job slots
 * (`leader_election_slots`, see `Elector.schedule`). `ensureSchema` creates
 * the three where absent, and upgrades a lease table an older release made.
 *
 * @since 0.1.0
 */
import type * as Duration from "effect/Duration"
import type * as Effect from "effect/Effect"
import type * as Redacted from "effect/Redacted"
import type { Lease } from "../Lease.js"
import type { Candidate, StoreError, StoreShape } from "../Store.js"

/**
 * The table the store uses unless told otherwise.
 *
 * @since 0.1.0
 * @category constants
 * @example
 * ```ts
 * import * as PgStore from "effect-leaderelection/stores/PgStore"
 *
 * PgStore.defaultTable // "leader_election"
 * ```
 */
export const defaultTable = "leader_election"

/**
 * What the name of the candidates' table adds to the table's by default:
 * `leader_election_candidates`. Set `candidatesTable` when the table's name
 * leaves no room for it within the database's identifier limit (PostgreSQL:
 * 63 bytes, MySQL: 64 characters).
 *
 * @since 0.1.0
 * @category constants
 */
export const candidatesSuffix = "_candidates"

/**
 * The options every SQL store constructor takes, each with its default.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /**
   * Schema (PostgreSQL) or database (MySQL) of the tables. Defaults to the
   * connection's (PostgreSQL: the name resolves through `search_path`).
   */
  readonly schema?: string | undefined
  /**
   * The leases' table, one row per election; the candidates' and the job
   * slots' tables are named after it. Defaults to `leader_election`.
   */
  readonly table?: string | undefined
  /** The table of scheduled job slots (`Elector.schedule`). Defaults to the table's name + `_slots`. */
  readonly slotTable?: string | undefined
  /**
   * The candidates' table (see `Store.advertise`), in the same schema.
   * Defaults to the table's name + `_candidates`.
   */
  readonly candidatesTable?: string | undefined
  /**
   * Bounds every call, waiting for a connection included. On expiry the call
   * fails with a retryable `StoreError` (an `OperationTimeout`, whose note
   * says what becomes of its connection). Defaults to 3 seconds, the
   * elector's default operation timeout.
   */
  readonly operationTimeout?: Duration.DurationInput | undefined
  /**
   * Run the store's `ensureSchema` when it is built: create the leases',
   * candidates' and job slots' tables where absent, and upgrade a lease table
   * made by 0.1. A database that cannot be reached yet, or a table whose lock
   * the upgrade could not get (a retryable error), is tried again, with a backoff up to
   * 5 seconds, until it answers or {@link ensureSchemaTimeout} runs out: the
   * store waits for its database instead of failing the app's start.
   * Meanwhile a warning is logged at most once a minute, with the count of
   * failed attempts. A fatal error (a wrong password, a missing database, no
   * privilege) fails at once. Defaults to false.
   */
  readonly ensureSchema?: boolean | undefined
  /**
   * How long `ensureSchema: true` keeps trying a database that cannot be
   * reached before the store's construction fails with the last error.
   * Defaults to no limit.
   */
  readonly ensureSchemaTimeout?: Duration.DurationInput | undefined
}

/**
 * The options of a store that owns its pool (built from a URL, from `Config`
 * or from the `@effect/sql` client in context): those of {@link Options},
 * plus the pool's size.
 *
 * @since 0.1.0
 * @category models
 */
export interface OwnedPoolOptions extends Options {
  /** Connections in the store's own pool. Defaults to 4. */
  readonly maxConnections?: number | undefined
}

/**
 * What a store's `layerConfig` reads: its options plus the URL, as `Redacted`.
 *
 * @since 0.1.0
 * @category models
 */
export type UrlConfig<Options> = Options & {
  /** The connection URL, password included: read it with `Config.redacted`. */
  readonly url: Redacted.Redacted<string>
}

/**
 * A SQL store: the `Store` operations, plus its tables, DDL and operators' reads.
 *
 * @since 0.1.0
 * @category models
 */
export interface SqlStore extends StoreShape {
  /** The quoted, possibly schema-qualified table name the statements use. */
  readonly table: string
  /**
   * The quoted, possibly schema-qualified table of job slots; `undefined`
   * when the default name (the table's + `_slots`) is too long for an
   * identifier and no `slotTable` was given: then the store records no slots.
   */
  readonly slotTable: string | undefined
  /**
   * Creates the tables (leases, candidates, job slots) if they do not exist,
   * and adds to a lease table made by 0.1 the columns of 0.2 (`incarnation`,
   * `server`; see the store's `schemaUpgrade`) when it lacks them, in place:
   * processes of both releases may run on it meanwhile. Idempotent, and safe
   * when many replicas run it at once; it checks the catalog first, so a role
   * without the right to alter an up-to-date table passes. The upgrade waits
   * for the table's lock a moment at most and fails with a retryable error
   * instead, so that the running electors' statements never queue long
   * behind it. The schema itself must exist. One attempt: the retries of the
   * `ensureSchema` option are the constructor's.
   */
  readonly ensureSchema: Effect.Effect<void, StoreError>
  /**
   * Every election in the table, by name, each read with the same
   * statement's clock: who leads what, for operators. Read-only; its errors
   * report the `inspect` operation.
   */
  readonly list: Effect.Effect<ReadonlyArray<Lease>, StoreError>
  /**
   * Every live candidate of every election (see `Store.advertise`), by
   * election, highest priority first: for operators. Read-only; its errors
   * report the `inspect` operation.
   */
  readonly candidates: Effect.Effect<ReadonlyArray<Candidate & { readonly name: string }>, StoreError>
  /** `Store.advertise`, which every SQL store implements. */
  readonly advertise: NonNullable<StoreShape["advertise"]>
  /** `Store.withdraw`, which every SQL store implements. */
  readonly withdraw: NonNullable<StoreShape["withdraw"]>
}

/**
 * The verdict of a store's `classify` on one error: whether it can fix itself
 * (`retryable`) or needs an operator, and why. Every `StoreError` a SQL
 * store returns carries these fields.
 *
 * @since 0.1.0
 * @category models
 */
export interface Classification {
  /** Whether the error can fix itself: the server or the path to it, not the request. */
  readonly retryable: boolean
  /** What went wrong, in words. */
  readonly reason: string
  /** The SQLSTATE (PostgreSQL) or errno (MySQL), or the driver's / the OS's error code (ECONNRESET, ...). */
  readonly code?: string | undefined
}
