/**
 * The PostgreSQL store, over node-postgres (the driver under
 * `@effect/sql-pg`).
 *
 * Each operation is one statement that also reports the database's `now()`,
 * so a lease's TTL comes from one clock read on one server (see the rounding
 * note on {@link makeFromPool}). Nothing is session-scoped: no advisory locks,
 * LISTEN/NOTIFY, SET, temporary tables or named prepared statements, so the
 * store works unchanged behind PgBouncer in transaction pooling mode.
 *
 * Statements run on connections checked out of a `pg.Pool`. An interrupted or
 * timed-out call gives control back at once; its connection goes back to the
 * pool only once its statement answered, and is destroyed if it does not
 * answer within twice `operationTimeout` more: a connection whose server stopped
 * answering is never handed out again, and a late answer costs no reconnect. (`@effect/sql-pg`'s `PgClient` would
 * wait up to 5 s on `pg_cancel_backend` and then reuse the wedged
 * connection.)
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
import type * as PgClient from "@effect/sql-pg/PgClient"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { constVoid } from "effect/Function"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import type { Pool, PoolConfig, QueryResult } from "pg"
import type { InvalidConfig } from "../ElectorError.js"
import * as limits from "../internal/limits.js"
import { stackless } from "../internal/stackless.js"
import type { Lease } from "../Lease.js"
import {
  type Candidate,
  LeaseLost,
  NoLease,
  type Operation,
  type SlotRecord,
  type SlotStore,
  Store,
  type StoreError,
  type StoreShape
} from "../Store.js"
import * as Rules from "./internal/rules.js"
import * as SqlStore from "./internal/sqlStore.js"
import { toStoreError } from "./pg/classify.js"
import { quoteIdentifier, validateIdentifier, validateUrl } from "./pg/config.js"
import { Pg } from "./pg/driver.js"
import { connections, type Param, query, type Row } from "./pg/query.js"
import * as Slots from "./pg/slots.js"
import { candidatesDdl, candidateStatements, ddl, lockTimeoutFor, statements } from "./pg/sql.js"

export {
  /**
   * @since 0.1.0
   * @category classification
   */
  type Classification,
  /**
   * @since 0.1.0
   * @category classification
   */
  classify,
  /**
   * @since 0.1.0
   * @category classification
   */
  toStoreError
} from "./pg/classify.js"
export {
  /**
   * @since 0.1.0
   * @category validation
   */
  quoteIdentifier,
  /**
   * @since 0.1.0
   * @category validation
   */
  validateIdentifier,
  /**
   * @since 0.1.0
   * @category validation
   */
  validateUrl
} from "./pg/config.js"
export {
  /**
   * @since 0.1.0
   * @category errors
   */
  OperationTimeout,
  /**
   * @since 0.2.0
   * @category errors
   */
  Saturated
} from "./SqlStoreError.js"

export {
  /**
   * Thrown by importing this module when its driver is not installed.
   *
   * @since 0.1.0
   * @category errors
   */
  MissingDriverError
} from "../internal/driver.js"

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
 * @since 0.1.0
 * @category models
 * @example
 * ```ts
 * import * as PgStore from "effect-leaderelection/stores/PgStore"
 *
 * const options: PgStore.PgStoreOptions = { schema: "ops", table: "elections", operationTimeout: "2 seconds" }
 * ```
 */
export interface PgStoreOptions {
  /** Schema of the table. Defaults to none: the name resolves through `search_path`. */
  readonly schema?: string | undefined
  /** Defaults to {@link defaultTable}. */
  readonly table?: string | undefined
  /** The table of scheduled job slots (`Elector.schedule`). Defaults to the table's name + `_slots`. */
  readonly slotTable?: string | undefined
  /**
   * The candidates' table (see `Store.advertise`), in the same schema.
   * Defaults to the table's name with {@link candidatesSuffix}.
   */
  readonly candidatesTable?: string | undefined
  /**
   * Bounds every statement, connecting included. On expiry the call fails
   * with a retryable `StoreError`; its connection goes back to the pool if
   * the statement answers within twice this more, else it is destroyed. Defaults
   * to 3 seconds, the elector's default operation timeout.
   */
  readonly operationTimeout?: Duration.DurationInput | undefined
  /** Run {@link PgStore.ensureSchema} when the layer is built. Defaults to false. */
  readonly ensureSchema?: boolean | undefined
}

/**
 * The PostgreSQL store: the `Store` operations, plus its DDL.
 *
 * @since 0.1.0
 * @category models
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import * as PgStore from "effect-leaderelection/stores/PgStore"
 *
 * declare const store: PgStore.PgStore
 * const ready = Effect.as(store.ensureSchema, store)
 * ```
 */
export interface PgStore extends StoreShape {
  /** The quoted, possibly schema-qualified table name. */
  readonly table: string
  /**
   * The quoted, possibly schema-qualified table of job slots; `undefined`
   * when the default name (the table's + `_slots`) is too long for an
   * identifier and no `slotTable` was given: then the store records no slots.
   */
  readonly slotTable: string | undefined
  /**
   * Creates the tables (leases and job slots) if they do not exist.
   * Idempotent, and safe when many replicas run it at once. The schema
   * itself must exist.
   */
  readonly ensureSchema: Effect.Effect<void, StoreError>
  /**
   * Every election in the table, by name, each read with the same statement's
   * `now()`: who leads what, for operators. Read-only; its errors report the
   * `inspect` operation.
   */
  readonly list: Effect.Effect<ReadonlyArray<Lease>, StoreError>
  /**
   * Every live candidate of every election (see `Store.advertise`), by
   * election, highest priority first: for operators. Read-only; its errors
   * report the `inspect` operation.
   */
  readonly candidates: Effect.Effect<ReadonlyArray<Candidate & { readonly name: string }>, StoreError>
  readonly advertise: NonNullable<StoreShape["advertise"]>
  readonly withdraw: NonNullable<StoreShape["withdraw"]>
}

/**
 * What the name of the candidates' table adds to the table's by default:
 * `leader_election_candidates`. Set `candidatesTable` when the table's name
 * leaves no room for it within PostgreSQL's 63 bytes.
 *
 * @since 0.2.0
 * @category schema
 */
export const candidatesSuffix = "_candidates"

const qualifiedName = (
  schemaName: string,
  table: string,
  field: "table" | "candidatesTable" = "table"
): Either.Either<string, InvalidConfig> =>
  Either.all([
    schemaName === "" ? Either.right("") : Either.map(validateIdentifier("schema", schemaName), quoteIdentifier),
    Either.map(validateIdentifier(field, table), quoteIdentifier)
  ]).pipe(Either.map(([s, t]) => s === "" ? t : `${s}.${t}`))

/**
 * The DDL for the table: what {@link PgStore.ensureSchema} runs (with
 * {@link candidatesSchema}), for
 * deployments that apply DDL through their own migration tool. An empty
 * `schemaName` leaves the table unqualified. Keep the `fillfactor`: the row is
 * rewritten on every renewal, and the free space keeps those updates HOT.
 *
 * @since 0.1.0
 * @category schema
 * @example
 * ```ts
 * import { Either } from "effect"
 * import * as PgStore from "effect-leaderelection/stores/PgStore"
 *
 * const statement = Either.getOrThrow(PgStore.schema("", PgStore.defaultTable))
 * ```
 */
export const schema = (schemaName: string, table: string): Either.Either<string, InvalidConfig> =>
  Either.map(qualifiedName(schemaName, table), ddl)

/**
 * The DDL of the table of scheduled job slots (`Elector.schedule`), which
 * {@link PgStore.ensureSchema} creates beside the leases: for migration
 * tools, like {@link schema}. Name it as the store's `slotTable` option
 * does (by default, the lease table's name + `_slots`).
 *
 * @since 0.2.0
 * @category schema
 * @example
 * ```ts
 * import { Either } from "effect"
 * import * as PgStore from "effect-leaderelection/stores/PgStore"
 *
 * const statement = Either.getOrThrow(PgStore.slotSchema("", `${PgStore.defaultTable}_slots`))
 * ```
 */
export const slotSchema = (schemaName: string, slotTable: string): Either.Either<string, InvalidConfig> =>
  Either.map(qualifiedName(schemaName, slotTable), Slots.ddl)

/**
 * The DDL for the candidates' table (see `Store.advertise`), the other
 * statement {@link PgStore.ensureSchema} runs.
 *
 * @since 0.2.0
 * @category schema
 * @example
 * ```ts
 * import { Either } from "effect"
 * import * as PgStore from "effect-leaderelection/stores/PgStore"
 *
 * const statement = Either.getOrThrow(PgStore.candidatesSchema("", PgStore.defaultTable + PgStore.candidatesSuffix))
 * ```
 */
export const candidatesSchema = (schemaName: string, table: string): Either.Either<string, InvalidConfig> =>
  Either.map(qualifiedName(schemaName, table, "candidatesTable"), candidatesDdl)

const microseconds = (ttl: Duration.Duration): string => (Duration.unsafeToNanos(ttl) / 1000n).toString()

const bytes = (payload: Uint8Array | null): Buffer | null =>
  payload === null ? null : Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength)

const text = (row: Row, column: string): string => row[column] ?? ""

const toLease = (row: Row): Lease => {
  const payload = row["payload"] ?? null
  return {
    name: text(row, "name"),
    holder: text(row, "holder"),
    fence: BigInt(text(row, "fence")),
    payload: payload === null ? null : new Uint8Array(Buffer.from(payload, "hex")),
    acquiredAt: new Date(Number(text(row, "acquired_at"))),
    renewedAt: new Date(Number(text(row, "renewed_at"))),
    expiresAt: new Date(Number(text(row, "expires_at"))),
    now: new Date(Number(text(row, "now")))
  }
}

const toSlot = (row: Row): SlotRecord | undefined => {
  const completed = row["completed_at"] ?? null
  return row["slot_ms"] === null || row["slot_ms"] === undefined ? undefined : {
    job: text(row, "job"),
    at: new Date(Number(text(row, "slot_ms"))),
    fence: BigInt(text(row, "slot_fence")),
    startedAt: new Date(Number(text(row, "started_at"))),
    completedAt: completed === null ? null : new Date(Number(completed))
  }
}

const dbNow = (row: Row): Date => new Date(Number(text(row, "now")))

const toCandidate = (row: Row): Candidate => ({
  identity: text(row, "identity"),
  priority: Number(text(row, "priority")),
  version: row["version"] ?? null,
  aliveFor: Duration.millis(Number(text(row, "alive_for"))),
  ttl: Duration.millis(Number(text(row, "ttl")))
})

/** Errors a concurrent `CREATE TABLE IF NOT EXISTS` raises when another replica won the race. */
const lostCreateRace = (error: StoreError): boolean =>
  error.code === "23505" || error.code === "42P07" || error.code === "42710"

/**
 * Builds the store over a `pg.Pool` the application already has. The pool
 * stays the caller's: the store never ends it, and the caller ends it after
 * the store is done.
 *
 * Every call still returns at `operationTimeout`. A connection whose call
 * timed out or was interrupted stays out of the pool until its statement
 * answers, then goes back; one that does not answer within twice
 * `operationTimeout` more, or whose socket failed, is destroyed (removed from the
 * pool). So a wedged connection is never handed to the next caller, the app's
 * own queries included, and an overloaded process does not reconnect for
 * every call that overran. The store uses at most the pool's `max`
 * connections at once; when all are busy, renewals and releases go first and
 * polls beyond `2 * max` waiting ones are refused with a retryable
 * {@link Saturated} error instead of queued. A write waits for a row lock at
 * most a quarter of `operationTimeout` per wait (`lock_timeout`, set for the
 * statement's own transaction only), so a row that another transaction holds
 * fails the call with a retryable 55P03 and leaves no backend waiting on it.
 * Statements are unnamed and every column comes back as text, so the pool's type
 * parsers do not matter.
 *
 * Instants: PostgreSQL keeps microseconds, a `Date` milliseconds. The
 * reported `now` is the statement's `now()` rounded up to the millisecond and
 * every stored instant is reported rounded down, so `Lease.ttl` can come out
 * shorter than the database's TTL, never longer. Leases are written from the
 * rounded-up `now`, so a fresh lease reports exactly the TTL that was asked.
 * The TTL is sent as a whole number of microseconds.
 *
 * @since 0.2.0
 * @category constructors
 * @example
 * ```ts
 * import { Duration, Effect } from "effect"
 * import { Pool } from "pg"
 * import * as PgStore from "effect-leaderelection/stores/PgStore"
 *
 * const pool = new Pg.Pool({ connectionString: "postgres://app@db:5432/app" })
 * const program = Effect.gen(function* () {
 *   const store = yield* PgStore.makeFromPool(pool, { table: "elections", ensureSchema: true })
 *   return yield* store.acquire("jobs", "a", Duration.seconds(15), null)
 * })
 * ```
 */
export const makeFromPool = (
  pool: Pool,
  options: PgStoreOptions = {}
): Effect.Effect<PgStore, InvalidConfig | StoreError> =>
  Effect.gen(function*() {
    const tableName = options.table ?? defaultTable
    const table = yield* qualifiedName(options.schema ?? "", tableName)
    const slotTable = yield* SqlStore.slotTable(
      options.slotTable,
      tableName,
      (name) => qualifiedName(options.schema ?? "", name)
    )
    const candidates = yield* qualifiedName(
      options.schema ?? "",
      options.candidatesTable ?? tableName + candidatesSuffix,
      "candidatesTable"
    )
    const timeout = yield* SqlStore.operationTimeout(options)
    const sql = statements(table, lockTimeoutFor(timeout))
    const candidateSql = candidateStatements(candidates)
    const slots = connections<StoreError>(pool, timeout, Rules.grace(timeout), toStoreError)
    const runThen = <A, E>(
      operation: Operation,
      statement: string,
      values: Array<Param>,
      answer: (result: QueryResult<Row>) => Effect.Effect<A, E | StoreError>
    ): Effect.Effect<A, E | StoreError> => query<A, E | StoreError>(slots, operation, statement, values, answer)
    const run = (operation: Operation, statement: string, values: Array<Param>) =>
      runThen(operation, statement, values, Effect.succeed)
    const create = (statement: string) =>
      run("ensureSchema", statement, []).pipe(Effect.catchIf(lostCreateRace, () => Effect.void), Effect.asVoid)
    const lost = (name: string, identity: string, fence: bigint) => new LeaseLost({ name, identity, fence })
    const slotStore = (slotTable: string): SlotStore => {
      const slotSql = Slots.statements(table, slotTable)
      return {
        claim: (name, identity, fence, job, at, reclaim) =>
          run("claimSlot", slotSql.claim, [
            name,
            identity,
            fence.toString(),
            job,
            at.getTime().toString(),
            reclaim.toString()
          ]).pipe(
            Effect.flatMap((result) => {
              const row = result.rows[0] ?? {}
              return row["held"] !== "true"
                ? Effect.fail(lost(name, identity, fence))
                : Effect.succeed({ claimed: row["claimed"] === "true", slot: toSlot(row), now: dbNow(row) })
            })
          ),
        complete: (name, identity, fence, job, at) =>
          run("completeSlot", slotSql.complete, [name, identity, fence.toString(), job, at.getTime().toString()]).pipe(
            Effect.flatMap((result) =>
              result.rows[0] === undefined
                ? Effect.fail(lost(name, identity, fence))
                : Effect.succeed(dbNow(result.rows[0]))
            )
          ),
        last: (name, job) =>
          Effect.map(run("lastSlot", slotSql.last, [name, job]), (result) => {
            const row = result.rows[0] ?? {}
            return { now: dbNow(row), slot: toSlot(row) }
          })
      }
    }
    // Every call goes through the gate, which answers by the timeout.
    return Object.assign(
      limits.enforce<PgStore>({
        table,
        slotTable: Option.getOrUndefined(slotTable),
        ensureSchema: Effect.zipRight(
          create(`${ddl(table)}\n${candidatesDdl(candidates)}`),
          Option.match(slotTable, { onNone: () => Effect.void, onSome: (name) => create(Slots.ddl(name)) })
        ),
        ...Option.match(slotTable, { onNone: () => ({}), onSome: (name) => ({ slots: slotStore(name) }) }),
        acquire: (name, identity, ttl, payload) =>
          runThen(
            "acquire",
            sql.acquire,
            [name, identity, microseconds(ttl), bytes(payload)],
            (result) => Effect.succeed(toLease(result.rows[0] ?? {}))
          ),
        renew: (name, identity, fence, ttl, payload) =>
          runThen(
            "renew",
            sql.renew,
            [name, identity, fence.toString(), microseconds(ttl), bytes(payload)],
            (result) =>
              result.rows[0] === undefined
                ? Effect.fail(new LeaseLost({ name, identity, fence }))
                : Effect.succeed(toLease(result.rows[0]))
          ),
        release: (name, identity, fence) =>
          Effect.asVoid(run("release", sql.release, [name, identity, fence.toString()])),
        inspect: (name) =>
          runThen(
            "inspect",
            sql.inspect,
            [name],
            (result) =>
              result.rows[0] === undefined
                ? Effect.fail(stackless(() => new NoLease({ name })))
                : Effect.succeed(toLease(result.rows[0]))
          ),
        list: Effect.map(run("inspect", sql.list, []), (result) => result.rows.map(toLease)),
        advertise: (name, identity, { priority, version }, ttl) =>
          Effect.map(
            run("advertise", candidateSql.advertise, [name, identity, String(priority), microseconds(ttl), version]),
            (result) => result.rows.map(toCandidate)
          ),
        withdraw: (name, identity) => Effect.asVoid(run("withdraw", candidateSql.withdraw, [name, identity])),
        candidates: Effect.map(
          run("inspect", candidateSql.candidates, []),
          (result) => result.rows.map((row) => ({ name: text(row, "name"), ...toCandidate(row) }))
        )
      }),
      { answersWithin: timeout }
    )
  }).pipe(SqlStore.withSchema(options))

/**
 * The store of {@link makeFromPool} as a layer: over a `pg.Pool` the
 * application owns (and ends), e.g. one also shared with a `PgClient` built
 * by `PgClient.layerFromPool`.
 *
 * @since 0.2.0
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
export const layerFromPool = (
  pool: Pool,
  options: PgStoreOptions = {}
): Layer.Layer<Store, InvalidConfig | StoreError> => Layer.effect(Store, makeFromPool(pool, options))

/**
 * The options of a store that owns its pool ({@link makeFromUrl},
 * {@link layerConfig}, {@link make}).
 *
 * @since 0.1.0
 * @category models
 * @example
 * ```ts
 * import * as PgStore from "effect-leaderelection/stores/PgStore"
 *
 * const options: PgStore.PgStoreUrlOptions = { maxConnections: 2, maxLifetime: "1 minute" }
 * ```
 */
export interface PgStoreUrlOptions extends PgStoreOptions {
  /** Connections in the pool. Defaults to 4. */
  readonly maxConnections?: number | undefined
  /** An idle connection is closed after this long. Defaults to 30 seconds. */
  readonly idleTimeout?: Duration.DurationInput | undefined
  /** No connection is used for longer than this. Defaults to 5 minutes. */
  readonly maxLifetime?: Duration.DurationInput | undefined
}

/**
 * What {@link layerConfig} reads: the URL (as `Redacted`) and the options of
 * {@link PgStoreUrlOptions}.
 *
 * @since 0.2.0
 * @category models
 * @example
 * ```ts
 * import { Redacted } from "effect"
 * import * as PgStore from "effect-leaderelection/stores/PgStore"
 *
 * const config: PgStore.PgStoreConfig = { url: Redacted.make("postgres://app@db:5432/app"), table: "elections" }
 * ```
 */
export type PgStoreConfig = SqlStore.UrlConfig<PgStoreUrlOptions>

/**
 * The store over a small bounded pool of its own, opened with `connection`
 * and ended when the scope closes.
 */
const makeOwningPool = (
  connection: PoolConfig,
  options: PgStoreUrlOptions
): Effect.Effect<PgStore, InvalidConfig | StoreError, Scope.Scope> =>
  Effect.gen(function*() {
    const timeout = yield* SqlStore.operationTimeout(options)
    const idle = yield* limits.duration("idleTimeout", options.idleTimeout ?? Duration.seconds(30))
    const lifetime = yield* limits.duration("maxLifetime", options.maxLifetime ?? Duration.minutes(5))
    const max = yield* SqlStore.maxConnections(options.maxConnections)
    const pool = yield* Effect.acquireRelease(
      Effect.sync(() =>
        new Pg.Pool({
          ...connection,
          max,
          idleTimeoutMillis: Duration.toMillis(idle),
          maxLifetimeSeconds: Duration.toSeconds(lifetime),
          connectionTimeoutMillis: 2 * Duration.toMillis(timeout),
          keepAlive: true,
          application_name: "effect-leaderelection"
        }).on("error", constVoid)
      ),
      // A pool whose server stopped answering may never finish saying goodbye.
      (pool) => Effect.promise(() => pool.end()).pipe(Effect.timeoutOption(timeout))
    )
    return yield* makeFromPool(pool, { ...options, operationTimeout: timeout })
  })

/**
 * The store of {@link layerFromUrl}, with its DDL and `list`, for the scope:
 * the pool it owns is ended when the scope closes.
 *
 * The URL may be `Redacted` (as `Config.redacted` reads it); either way it
 * goes to the driver only: a refused URL is reported by its scheme, never
 * echoed.
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
export const makeFromUrl = (
  url: string | Redacted.Redacted<string>,
  options: PgStoreUrlOptions = {}
): Effect.Effect<PgStore, InvalidConfig | StoreError, Scope.Scope> =>
  Effect.flatMap(validateUrl(SqlStore.reveal(url)), (connectionString) => makeOwningPool({ connectionString }, options))

/**
 * The store as a layer that owns its pool, configured to be safe behind a
 * transaction-pooling proxy such as PgBouncer:
 *
 * - no named (server-side) prepared statements: node-postgres only names a
 *   statement when asked to, and the store never asks; every statement is
 *   an unnamed Parse/Bind/Execute in its own implicit transaction;
 * - no session state, and no startup parameters a pooler would refuse;
 * - bounded connection lifetime (`maxLifetime`) and idle timeout, so the pool
 *   sheds connections a pooler or server restart left behind;
 * - health: TCP keepalive on every socket, pg-pool evicts idle connections
 *   whose socket fails, and any connection whose statement failed at the
 *   transport level, or did not answer within twice the operation timeout
 *   after its call gave up, is destroyed;
 * - the caller gets control back at the operation timeout, connecting
 *   included; a connection attempt it abandoned is given up by the pool after
 *   twice that.
 *
 * A URL that does not parse, or whose scheme is not `postgres:` or
 * `postgresql:`, fails the layer with a {@link InvalidConfig}.
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
export const layerFromUrl = SqlStore.toLayer(makeFromUrl)

/**
 * The store of {@link layerFromUrl}, its URL and options read from `Config`
 * (environment variables by default), like `PgClient.layerConfig`. Read the
 * URL with `Config.redacted` so that the password never shows in logs.
 *
 * @since 0.2.0
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
export const layerConfig = SqlStore.layerConfig(makeFromUrl)

/**
 * The `PgClient` tag, found by its key: PgStore never loads `@effect/sql-pg`
 * at run time (only `pg`). Its declarations do name `PgClient`'s types, so a
 * PgStore app installs `@effect/sql-pg` for its type-check (README, Install).
 */
const pgClient = Context.GenericTag<PgClient.PgClient>("@effect/sql-pg/PgClient")

/** The connection settings of a `PgClient`, for the store's own pool. */
const fromClientConfig = (config: PgClient.PgClientConfig): PoolConfig =>
  SqlStore.definedOnly({
    connectionString: SqlStore.revealOptional(config.url),
    host: config.host,
    port: config.port,
    database: config.database,
    user: config.username,
    password: SqlStore.revealOptional(config.password),
    ssl: config.ssl,
    stream: config.stream
  })

/**
 * Builds the store from the `PgClient` (`@effect/sql-pg`) an Effect app
 * already has in context: the store takes the client's connection settings
 * (URL or host, port, database, user, password, TLS) and opens a small
 * bounded pool of its own with them for the scope. It does not run its
 * statements through the client: an interrupted `PgClient` query waits up to
 * 5 s on `pg_cancel_backend` and then hands the wedged connection back to the
 * pool, so a call could not be trusted to return at `operationTimeout`. The
 * store's own pool destroys such connections instead.
 *
 * @since 0.2.0
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
export const make = (
  options: PgStoreUrlOptions = {}
): Effect.Effect<PgStore, InvalidConfig | StoreError, PgClient.PgClient | Scope.Scope> =>
  Effect.flatMap(pgClient, (client) => makeOwningPool(fromClientConfig(client.config), options))

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
export const layer = (
  options: PgStoreUrlOptions = {}
): Layer.Layer<Store, InvalidConfig | StoreError, PgClient.PgClient> => Layer.scoped(Store, make(options))
