/**
 * The MySQL / MariaDB store.
 *
 * One row per election in an InnoDB table. Each operation is one statement
 * (`release`, `inspect`, `ensureSchema`) or one short transaction on one
 * connection (`acquire`, `renew`: the write, then the row read back under
 * the write's lock, then `COMMIT`), sent as one request, so one round trip
 * per operation, on the store's own pools; no `SET`, user variable, temporary table,
 * lock function or prepared statement outlives a call, so the store works
 * behind a multiplexing proxy.
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
 * connection whose request failed, or did not answer within twice that after
 * its call gave up, which also ends its transaction on the server; a late
 * answer that succeeded puts the connection back in the pool.
 *
 * Portability between MySQL 8 and MariaDB 10.11, and how it is handled:
 *
 * - `RETURNING` exists on MariaDB only (and not for `UPDATE`): the row is
 *   read back by a `SELECT ... FOR UPDATE` in the same transaction instead.
 * - `VALUES(col)` in `ON DUPLICATE KEY UPDATE` is deprecated since MySQL
 *   8.0.20 and its replacement, the `AS new` row alias, is a syntax error on
 *   MariaDB: the new values are passed again as parameters.
 * - Assignments in `ON DUPLICATE KEY UPDATE` run left to right seeing
 *   earlier ones (MariaDB's SIMULTANEOUS_ASSIGNMENT mode makes them see the
 *   old row): the statement is written to mean the same under both.
 * - `utf8mb4_bin` is a PAD SPACE collation on both (`'a' = 'a '`), and the
 *   NO PAD binary collations differ (`utf8mb4_0900_bin` on MySQL,
 *   `utf8mb4_nopad_bin` on MariaDB): `name` and `holder` are
 *   `VARBINARY(1020)` (255 utf8mb4 characters), compared byte for byte, so
 *   `'A'`, `'a'` and `'a '` are three elections.
 * - `FOR SHARE` is MySQL 8 only: the store uses `FOR UPDATE` alone.
 * - `UTC_TIMESTAMP(6)`, `TIMESTAMPDIFF(MICROSECOND, ...)`, `DATETIME(6)`,
 *   `CAST(... AS CHAR CHARACTER SET utf8mb4)` and `CAST(? AS SIGNED)` mean
 *   the same on both.
 *
 * Timestamps are `DATETIME(6)` written from `UTC_TIMESTAMP(6)` and returned
 * as microseconds since the epoch computed in SQL, so neither the session
 * `time_zone` nor the driver can shift them. Converting to millisecond
 * `Date`s, `now`, `acquiredAt` and `renewedAt` round up and `expiresAt`
 * rounds down: a TTL derived from a returned lease is never longer than the
 * server's. A name or identity longer than 1020 bytes fails with 1406
 * (fatal) under the default strict `sql_mode`; a server in a non-strict mode
 * would truncate it instead.
 *
 * @since 0.1.0
 */
import type * as MysqlClient from "@effect/sql-mysql2/MysqlClient"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import type * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import type * as Mysql from "mysql2"
import { InvalidConfig } from "../ElectorError.js"
import * as limits from "../internal/limits.js"
import { stackless } from "../internal/stackless.js"
import type { Lease } from "../Lease.js"
import {
  type Candidate,
  LeaseLost,
  NoLease,
  type Operation,
  type SlotStore,
  Store,
  type StoreError,
  type StoreShape
} from "../Store.js"
import * as SqlStore from "./internal/sqlStore.js"
import * as classifier from "./mysql/classify.js"
import * as Driver from "./mysql/driver.js"
import * as identifier from "./mysql/identifier.js"
import * as Pool from "./mysql/pool.js"
import * as SlotSql from "./mysql/slots.js"
import * as Sql from "./mysql/statements.js"

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
 * The table used when none is configured.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultTable = "leader_election"

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

/**
 * The options every constructor takes.
 *
 * @since 0.1.0
 * @category models
 * @example
 * ```ts
 * import * as MysqlStore from "effect-leaderelection/stores/MysqlStore"
 *
 * const options: MysqlStore.MysqlStoreOptions = { table: "elections", operationTimeout: "2 seconds" }
 * ```
 */
export interface MysqlStoreOptions {
  /** The database holding the table. Defaults to the connection's database. */
  readonly schema?: string | undefined
  /** The table. Defaults to {@link defaultTable}. */
  readonly table?: string | undefined
  /** The table of scheduled job slots (`Elector.schedule`). Defaults to the table's name + `_slots`. */
  readonly slotTable?: string | undefined
  /**
   * The candidates' table (see `Store.advertise`), in the same database.
   * Defaults to the table's name with {@link candidatesSuffix}.
   */
  readonly candidatesTable?: string | undefined
  /**
   * Bounds every call, waiting for a connection included. On expiry the call
   * fails with a retryable `StoreError`; its connection goes back to the pool
   * if the request then succeeds within twice this, and is destroyed
   * otherwise, which also rolls back its transaction. Defaults to 3 seconds, the
   * elector's default operation timeout.
   */
  readonly operationTimeout?: Duration.DurationInput | undefined
  /** Run {@link MysqlStore.ensureSchema} when the store is built. Defaults to false. */
  readonly ensureSchema?: boolean | undefined
}

/**
 * The options of a store that owns its pool ({@link makeFromUrl},
 * {@link layerConfig}, {@link make}).
 *
 * @since 0.2.0
 * @category models
 * @example
 * ```ts
 * import * as MysqlStore from "effect-leaderelection/stores/MysqlStore"
 *
 * const options: MysqlStore.MysqlStoreUrlOptions = { maxConnections: 2, connectTimeout: "2 seconds" }
 * ```
 */
export interface MysqlStoreUrlOptions extends MysqlStoreOptions {
  /** The store's own pool size. Defaults to 4. */
  readonly maxConnections?: number | undefined
  /** Bound on opening one connection, handshake included. Defaults to 5 seconds. */
  readonly connectTimeout?: Duration.DurationInput | undefined
}

/**
 * What {@link layerConfig} reads: the URL (as `Redacted`) and the options of
 * {@link MysqlStoreUrlOptions}.
 *
 * @since 0.2.0
 * @category models
 * @example
 * ```ts
 * import { Redacted } from "effect"
 * import * as MysqlStore from "effect-leaderelection/stores/MysqlStore"
 *
 * const config: MysqlStore.MysqlStoreConfig = { url: Redacted.make("mysql://app@db:3306/app"), table: "elections" }
 * ```
 */
export type MysqlStoreConfig = SqlStore.UrlConfig<MysqlStoreUrlOptions>

/**
 * The store's operations plus its schema management.
 *
 * @since 0.1.0
 * @category models
 */
export interface MysqlStore extends StoreShape {
  /** Creates the tables (leases and job slots) if they do not exist. Idempotent, safe to race. */
  readonly ensureSchema: Effect.Effect<void, StoreError>
  /** The quoted, qualified table name the statements use. */
  readonly table: string
  /**
   * The quoted, qualified table of job slots; `undefined` when the default
   * name (the table's + `_slots`) is too long for an identifier and no
   * `slotTable` was given: then the store records no slots.
   */
  readonly slotTable: string | undefined
  /**
   * Every election in the table, by name, each with the server's now from the
   * same statement: who leads what, for operators. Read-only; its errors
   * report the `inspect` operation.
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

const quoteField = (field: string, name: string): Either.Either<string, InvalidConfig> =>
  Either.mapLeft(identifier.quoteChecked(name), (reason) => new InvalidConfig({ field, reason }))

/**
 * What the name of the candidates' table adds to the table's by default:
 * `leader_election_candidates`. Set `candidatesTable` when the table's name
 * leaves no room for it within 64 characters.
 *
 * @since 0.2.0
 * @category schema
 */
export const candidatesSuffix = "_candidates"

const qualifiedTable = (
  schemaName: string | undefined,
  table: string,
  field: "table" | "candidatesTable" = "table"
): Either.Either<string, InvalidConfig> =>
  Either.flatMap(quoteField(field, table), (quotedTable) =>
    schemaName === undefined || schemaName === ""
      ? Either.right(quotedTable)
      : Either.map(quoteField("schema", schemaName), (quotedSchema) => `${quotedSchema}.${quotedTable}`))

/**
 * The DDL of the store's table (`ensureSchema` also runs
 * {@link candidatesSchema}), for deployments that withhold DDL rights
 * from the application and run migrations instead. An empty `schemaName`
 * means the connection's database. Names are validated and quoted.
 *
 * @since 0.1.0
 * @category schema
 * @example
 * ```ts
 * import { Either } from "effect"
 * import * as MysqlStore from "effect-leaderelection/stores/MysqlStore"
 *
 * const ddl = MysqlStore.schema("", MysqlStore.defaultTable)
 * if (Either.isRight(ddl)) console.log(ddl.right)
 * ```
 */
export const schema = (schemaName: string, table: string): Either.Either<string, InvalidConfig> =>
  Either.map(qualifiedTable(schemaName, table), Sql.createTable)

/**
 * The DDL of the table of scheduled job slots (`Elector.schedule`), which
 * {@link MysqlStore.ensureSchema} creates beside the leases: for migration
 * tools, like {@link schema}. Name it as the store's `slotTable` option
 * does (by default, the lease table's name + `_slots`).
 *
 * @since 0.2.0
 * @category schema
 * @example
 * ```ts
 * import { Either } from "effect"
 * import * as MysqlStore from "effect-leaderelection/stores/MysqlStore"
 *
 * const ddl = Either.getOrThrow(MysqlStore.slotSchema("", `${MysqlStore.defaultTable}_slots`))
 * ```
 */
export const slotSchema = (schemaName: string, slotTable: string): Either.Either<string, InvalidConfig> =>
  Either.map(qualifiedTable(schemaName, slotTable), SlotSql.createTable)

/**
 * The DDL of the candidates' table (see `Store.advertise`), the other
 * statement `ensureSchema` runs.
 *
 * @since 0.2.0
 * @category schema
 * @example
 * ```ts
 * import { Either } from "effect"
 * import * as MysqlStore from "effect-leaderelection/stores/MysqlStore"
 *
 * const ddl = MysqlStore.candidatesSchema("", MysqlStore.defaultTable + MysqlStore.candidatesSuffix)
 * ```
 */
export const candidatesSchema = (schemaName: string, table: string): Either.Either<string, InvalidConfig> =>
  Either.map(qualifiedTable(schemaName, table, "candidatesTable"), Sql.createCandidatesTable)

/**
 * Quotes a MySQL identifier: backticks around it, embedded backticks
 * doubled. Use {@link schema} or the store options, which also validate.
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
export const quoteIdentifier: (name: string) => string = identifier.quote

/**
 * Classifies a driver error as retryable or fatal, with its code and a
 * readable reason. Every error the store returns went through it.
 *
 * @since 0.1.0
 * @category errors
 * @example
 * ```ts
 * import * as MysqlStore from "effect-leaderelection/stores/MysqlStore"
 *
 * MysqlStore.classify({ errno: 1213, code: "ER_LOCK_DEADLOCK", message: "Deadlock" }).retryable // true
 * ```
 */
export const classify: (error: unknown) => classifier.Classification = classifier.classify

/**
 * Parses a `mysql://user:password@host:port/database` (or `mariadb://`) URL
 * into connection options. Query parameters are refused rather than
 * ignored: pass driver options through the `MysqlClient` config instead.
 *
 * @since 0.1.0
 * @category constructors
 * @example
 * ```ts
 * import * as MysqlStore from "effect-leaderelection/stores/MysqlStore"
 *
 * MysqlStore.parseUrl("mysql://root@127.0.0.1:3306/test")
 * ```
 */
export const parseUrl = (url: string): Either.Either<Mysql.ConnectionOptions, InvalidConfig> => {
  const invalid = (reason: string) => Either.left(new InvalidConfig({ field: "url", reason }))
  if (!URL.canParse(url)) return invalid("not a URL")
  const parsed = new URL(url)
  if (parsed.protocol !== "mysql:" && parsed.protocol !== "mariadb:") {
    return invalid(`scheme must be mysql: or mariadb:, got ${parsed.protocol}`)
  }
  if (parsed.hostname === "") return invalid("has no host")
  const parameters = [...parsed.searchParams.keys()]
  if (parameters.length > 0) return invalid(`query parameters are not supported: ${parameters.join(", ")}`)
  const database = decodeURIComponent(parsed.pathname.slice(1))
  return Either.right({
    host: parsed.hostname.replace(/^\[(.*)\]$/, "$1"),
    port: parsed.port === "" ? 3306 : Number(parsed.port),
    user: decodeURIComponent(parsed.username),
    password: decodeURIComponent(parsed.password),
    ...(database === "" ? {} : { database })
  })
}

/** Each store names its own error; the checks are shared. */
const fromClientConfig = (config: MysqlClient.MysqlClientConfig): Either.Either<Mysql.PoolOptions, InvalidConfig> =>
  Either.map(
    config.url === undefined
      ? Either.right(SqlStore.definedOnly({
        host: config.host,
        port: config.port,
        database: config.database,
        user: config.username,
        password: SqlStore.revealOptional(config.password)
      }))
      : parseUrl(SqlStore.reveal(config.url)),
    (connection) => ({ ...config.poolConfig, ...connection })
  )

const micros = (ttl: Duration.Duration): number => Math.max(0, Math.floor(Duration.toMillis(ttl) * 1000))

const rows = (result: unknown): ReadonlyArray<Record<string, unknown>> =>
  Array.isArray(result) ? result.filter(Predicate.isRecord) : []

const affectedRows = (result: unknown): number =>
  Predicate.isRecord(result) && typeof result["affectedRows"] === "number" ? result["affectedRows"] : 0

/** The store's operations on `pool`, for the already quoted `table`. */
const storeOn = (pool: Pool.Pool, table: string, slotTable: Option.Option<string>, candidates: string): MysqlStore => {
  // One statement, one request.
  const one = (operation: Operation, sql: string, values: ReadonlyArray<unknown>) =>
    Effect.map(pool.run(operation, [{ sql, values }]), (results) => results[0])
  // One short transaction on one connection, as one request where the pool
  // allows it: the write, then the row read back under the write's lock (it
  // is there: the store never deletes one), then COMMIT. `Pool.run` destroys
  // the connection, and with it the open transaction, if anything fails.
  const transaction = (operation: "acquire" | "renew", write: Pool.Statement, readBack: Pool.Statement) =>
    Effect.map(
      pool.run(operation, [{ sql: "START TRANSACTION", values: [] }, write, readBack, { sql: "COMMIT", values: [] }]),
      (results) => ({ written: results[1], row: rows(results[2])[0] })
    )
  const bytes = (payload: Uint8Array | null) => payload === null ? null : Buffer.from(payload)

  // A slot write is one short transaction, one request where the pool
  // allows it: the caller's lease row read under FOR UPDATE (its guard and
  // the server's now; the lock holds a successor's takeover off until the
  // end), the write, guarded again inside its own statement, then COMMIT.
  const guarded = (
    operation: "claimSlot" | "completeSlot",
    name: string,
    identity: string,
    fence: bigint,
    writes: ReadonlyArray<Pool.Statement>
  ) =>
    Effect.flatMap(
      pool.run(operation, [
        { sql: "START TRANSACTION", values: [] },
        { sql: SlotSql.lockLease(table), values: [identity, fence.toString(), name] },
        ...writes,
        { sql: "COMMIT", values: [] }
      ]),
      (results) => {
        const lease = rows(results[1])[0]
        return lease?.["held"] === "1"
          ? Effect.succeed({ now: SlotSql.toNow(lease), results: results.slice(2) })
          : Effect.fail(new LeaseLost({ name, identity, fence }))
      }
    )
  const held = (name: string, identity: string, fence: bigint) => [name, identity, fence.toString()]

  const slots = (slotTable: string): SlotStore => ({
    claim: (name, identity, fence, job, at, reclaim) => {
      const ms = at.getTime().toString()
      const f = fence.toString()
      return guarded("claimSlot", name, identity, fence, [
        {
          sql: SlotSql.upsert(slotTable, table),
          values: [name, job, ms, f, ...held(name, identity, fence), reclaim, f, reclaim, f, f]
        },
        { sql: SlotSql.selectSlot(slotTable), values: [name, job, ms] }
      ]).pipe(
        Effect.map(({ now, results }) => {
          const slot = SlotSql.toSlot(rows(results[1])[0] ?? {})
          return { claimed: slot !== undefined && slot.fence === fence && slot.completedAt === null, slot, now }
        })
      )
    },
    complete: (name, identity, fence, job, at) =>
      guarded("completeSlot", name, identity, fence, [
        {
          sql: SlotSql.complete(slotTable, table),
          values: [name, job, at.getTime().toString(), fence.toString(), ...held(name, identity, fence)]
        }
      ]).pipe(
        Effect.flatMap(({ now, results }) =>
          affectedRows(results[0]) === 0 ? Effect.fail(new LeaseLost({ name, identity, fence })) : Effect.succeed(now)
        )
      ),
    last: (name, job) =>
      Effect.map(one("lastSlot", SlotSql.last(slotTable), [name, job]), (result) => {
        const row = rows(result)[0] ?? {}
        return { now: SlotSql.toNow(row), slot: SlotSql.toSlot(row) }
      })
  })

  // Every call is one request through the pool's gate, which answers by its timeout.
  return Object.assign(
    limits.enforce<MysqlStore>({
      table,
      slotTable: Option.getOrUndefined(slotTable),
      ensureSchema: Effect.all([
        one("ensureSchema", Sql.createTable(table), []),
        one("ensureSchema", Sql.createCandidatesTable(candidates), []),
        Option.match(slotTable, {
          onNone: () => Effect.void,
          onSome: (name) => one("ensureSchema", SlotSql.createTable(name), [])
        })
      ], { discard: true }),
      ...Option.match(slotTable, { onNone: () => ({}), onSome: (name) => ({ slots: slots(name) }) }),
      acquire: (name, identity, ttl, payload) =>
        Effect.map(
          transaction("acquire", {
            sql: Sql.upsert(table),
            values: [
              name,
              identity,
              micros(ttl),
              bytes(payload),
              identity,
              bytes(payload),
              identity,
              identity,
              identity,
              micros(ttl)
            ]
          }, { sql: Sql.selectAfterUpsert(table), values: [identity, name] }),
          ({ row }) => Sql.toLease(name, row!)
        ),
      renew: (name, identity, fence, ttl, payload) =>
        // The read-back of a renewal that matched nothing reads someone else's
        // row, or none: it is not decoded. Committing a write that changed
        // nothing is harmless.
        transaction(
          "renew",
          { sql: Sql.renew(table), values: [bytes(payload), micros(ttl), name, identity, fence.toString()] },
          { sql: Sql.selectAfterRenew(table), values: [name] }
        ).pipe(
          Effect.flatMap(({ row, written }) =>
            affectedRows(written) === 0
              ? Effect.fail(new LeaseLost({ name, identity, fence }))
              : Effect.succeed(Sql.toLease(name, row!))
          )
        ),
      release: (name, identity, fence) =>
        Effect.asVoid(one("release", Sql.release(table), [name, identity, fence.toString()])),
      inspect: (name) =>
        one("inspect", Sql.inspect(table), [name]).pipe(
          Effect.flatMap((result) => {
            const row = rows(result)[0]
            // Stackless: an empty election answers every poll with it.
            return row === undefined
              ? Effect.fail(stackless(() => new NoLease({ name })))
              : Effect.succeed(Sql.toLease(name, row))
          })
        ),
      list: Effect.map(
        one("inspect", Sql.list(table), []),
        (result) => rows(result).map((row) => Sql.toLease(String(row["name"]), row))
      ),
      // One short transaction, as one request where the pool allows it.
      advertise: (name, identity, { priority, version }, ttl) =>
        Effect.map(
          pool.run("advertise", [
            { sql: "START TRANSACTION", values: [] },
            { sql: Sql.collectCandidates(candidates), values: [name, identity, micros(ttl)] },
            {
              sql: Sql.advertise(candidates),
              values: [name, identity, priority, version, micros(ttl), priority, version, micros(ttl)]
            },
            { sql: Sql.liveCandidates(candidates), values: [name] },
            { sql: "COMMIT", values: [] }
          ]),
          (results) =>
            rows(results[3]).map((row) => {
              const { name: _, ...candidate } = Sql.toCandidate(row)
              return candidate
            })
        ),
      withdraw: (name, identity) => Effect.asVoid(one("withdraw", Sql.withdraw(candidates), [name, identity])),
      candidates: Effect.map(
        one("inspect", Sql.allCandidates(candidates), []),
        (result) => rows(result).map(Sql.toCandidate)
      )
    }),
    { answersWithin: pool.timeout }
  )
}

/** Checks the options, then builds the store on the pool `open` gives for the checked timeout. */
const build = <E, R>(
  options: MysqlStoreOptions,
  open: (timeout: Duration.Duration) => Effect.Effect<Pool.Pool, E, R>
): Effect.Effect<MysqlStore, InvalidConfig | StoreError | E, R> =>
  Effect.gen(function*() {
    const tableName = options.table ?? defaultTable
    const table = yield* qualifiedTable(options.schema, tableName)
    const slotTable = yield* SqlStore.slotTable(options.slotTable, tableName, (name) =>
      qualifiedTable(options.schema, name))
    const candidates = yield* qualifiedTable(
      options.schema,
      options.candidatesTable ?? tableName + candidatesSuffix,
      "candidatesTable"
    )
    const timeout = yield* SqlStore.operationTimeout(options)
    return storeOn(yield* open(timeout), table, slotTable, candidates)
  }).pipe(SqlStore.withSchema(options))

/**
 * Builds the store over a mysql2 pool the application already has (the
 * callback pool of `mysql2`; for a `mysql2/promise` pool pass its `.pool`).
 * The pool stays the caller's: the store never ends it.
 *
 * Every call still returns at `operationTimeout`, and a connection whose
 * request failed, or stayed silent for twice that after its call gave up, is
 * destroyed rather than released, so
 * a wedged connection is never handed to the next caller, the app's own
 * queries included. The store runs `query` (text protocol), never `execute`.
 * A connection the pool was still opening when its call gave up holds its
 * slot until the pool's own `connectTimeout` (mysql2's default: 10 s), so
 * keep that short, as the store's own pools do (5 s).
 * A pool whose connections do not use a utf8mb4 charset, or that dropped the
 * FOUND_ROWS flag, is refused with a {@link InvalidConfig} (field `pool`).
 *
 * @since 0.2.0
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
export const makeFromPool = (
  pool: Mysql.Pool,
  options: MysqlStoreOptions = {}
): Effect.Effect<MysqlStore, InvalidConfig | StoreError> => {
  const problem = Pool.poolProblem(pool)
  return problem === undefined
    ? build(options, (timeout) => Effect.succeed(Pool.fromPool(pool, timeout)))
    : Effect.fail(new InvalidConfig({ field: "pool", reason: problem }))
}

/**
 * The store of {@link makeFromPool} as a layer: over a mysql2 pool the
 * application owns (and ends).
 *
 * @since 0.2.0
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
export const layerFromPool = (
  pool: Mysql.Pool,
  options: MysqlStoreOptions = {}
): Layer.Layer<Store, InvalidConfig | StoreError> => Layer.effect(Store, makeFromPool(pool, options))

/** The store over a small bounded pool of its own, closed when the scope closes. */
const makeOwningPool = (
  connection: Mysql.PoolOptions,
  options: MysqlStoreUrlOptions
): Effect.Effect<MysqlStore, InvalidConfig | StoreError, Scope.Scope> =>
  Effect.flatMap(
    Effect.all([
      SqlStore.maxConnections(options.maxConnections),
      limits.duration("connectTimeout", options.connectTimeout ?? Duration.seconds(5))
    ]),
    ([connectionLimit, connectTimeout]) =>
      build(options, (timeout) =>
        Pool.make({
          ...connection,
          connectionLimit,
          maxIdle: connectionLimit,
          waitForConnections: true,
          connectTimeout: Duration.toMillis(connectTimeout),
          enableKeepAlive: true,
          // The statements rely on these; a caller's poolConfig must not undo them.
          charset: "UTF8MB4_GENERAL_CI",
          flags: ["FOUND_ROWS"],
          // One request per transaction: one round trip per operation.
          multipleStatements: true,
          typeCast: true
        }, timeout))
  )

/**
 * Builds the store from the `MysqlClient` (`@effect/sql-mysql2`) an Effect
 * app already has in context: the store takes the client's connection
 * settings (URL or host, port, database, user, password, `poolConfig`) and
 * opens a small bounded pool of its own with them for the scope. It does not
 * run its statements through the client: the client prepares every statement
 * on the server (`execute`) and takes a connection back after an interrupted
 * query, where it stays busy waiting for an answer a hung server never
 * sends. The store's own pool destroys such connections instead.
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
export const make = (
  options: MysqlStoreUrlOptions = {}
): Effect.Effect<MysqlStore, InvalidConfig | StoreError, MysqlClient.MysqlClient | Scope.Scope> =>
  Effect.flatMap(
    Driver.MysqlClient.MysqlClient,
    (client) => Effect.flatMap(fromClientConfig(client.config), (connection) => makeOwningPool(connection, options))
  )

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
export const layer = (
  options: MysqlStoreUrlOptions = {}
): Layer.Layer<Store, InvalidConfig | StoreError, MysqlClient.MysqlClient> => Layer.scoped(Store, make(options))

/**
 * The store of {@link layerFromUrl}, with its DDL and `list`, for the scope:
 * its pool is closed when the scope closes.
 *
 * The URL may be `Redacted` (as `Config.redacted` reads it); either way it
 * goes to the driver only: a refused URL is reported by what is wrong with
 * it, never echoed.
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
export const makeFromUrl = (
  url: string | Redacted.Redacted<string>,
  options: MysqlStoreUrlOptions = {}
): Effect.Effect<MysqlStore, InvalidConfig | StoreError, Scope.Scope> =>
  Effect.flatMap(parseUrl(SqlStore.reveal(url)), (connection) => makeOwningPool(connection, options))

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
export const layerFromUrl = SqlStore.toLayer(makeFromUrl)

/**
 * Like `MysqlClient.layerConfig`: {@link layerFromUrl} with the URL and the
 * options taken from `Config`, so from environment variables unless another
 * `ConfigProvider` is installed. `Config.redacted` keeps the password out of
 * logs and error messages.
 *
 * @since 0.2.0
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
export const layerConfig = SqlStore.layerConfig(makeFromUrl)
