/**
 * The MySQL / MariaDB store.
 *
 * One row per election in an InnoDB table. Each operation is one statement
 * (`release`, `inspect`, `ensureSchema`) or one short transaction on one
 * connection (`acquire`, `renew`: the write, then the row read back under
 * the write's lock, then `COMMIT`); no `SET`, user variable, temporary table,
 * lock function or prepared statement outlives a call, so the store works
 * behind a multiplexing proxy.
 *
 * The connection settings come from the `MysqlClient` of
 * `@effect/sql-mysql2` in context (or, with {@link layerFromUrl}, from a
 * URL), but the store runs its statements on a small pool of its own. The
 * client's pool prepares every ordinary statement on the server (mysql2
 * `execute`) and takes a connection back after an interrupted query, where
 * it waits, busy, for an answer a hung server never sends. The store's pool
 * uses mysql2 `query` (values escaped by the driver) and destroys any
 * connection whose call failed or was interrupted, which also ends its
 * transaction on the server.
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
import * as Data from "effect/Data"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import type * as Mysql from "mysql2"
import type { Lease } from "../Lease.js"
import { LeaseLost, NoLease, Store, type StoreError, type StoreShape } from "../Store.js"
import * as classifier from "./mysql/classify.js"
import * as Driver from "./mysql/driver.js"
import * as identifier from "./mysql/identifier.js"
import * as Pool from "./mysql/pool.js"
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

/**
 * A store option or URL the store cannot use; `field` names it and `reason`
 * says why.
 *
 * @since 0.1.0
 * @category errors
 * @example
 * ```ts
 * import * as MysqlStore from "effect-leaderelection/stores/MysqlStore"
 *
 * new MysqlStore.ConfigError({ field: "table", reason: "must not be empty" }).message
 * // 'invalid MysqlStore config: table: must not be empty'
 * ```
 */
export class ConfigError extends Data.TaggedError("MysqlStoreConfigError")<{
  readonly field: string
  readonly reason: string
}> {
  override get message(): string {
    return `invalid MysqlStore config: ${this.field}: ${this.reason}`
  }
}

/**
 * @since 0.1.0
 * @category models
 */
export interface MysqlStoreOptions {
  /** The database holding the table. Defaults to the connection's database. */
  readonly schema?: string | undefined
  /** The table. Defaults to {@link defaultTable}. */
  readonly table?: string | undefined
  /** The store's own pool size. Defaults to 4. */
  readonly maxConnections?: number | undefined
  /** Bound on opening one connection, handshake included. Defaults to 5 seconds. */
  readonly connectTimeout?: Duration.DurationInput | undefined
  /** Run {@link MysqlStore.ensureSchema} when the layer is built. Defaults to false. */
  readonly ensureSchema?: boolean | undefined
}

/**
 * The store's operations plus its schema management.
 *
 * @since 0.1.0
 * @category models
 */
export interface MysqlStore extends StoreShape {
  /** Creates the table if it does not exist. Idempotent, safe to race. */
  readonly ensureSchema: Effect.Effect<void, StoreError>
  /** The quoted, qualified table name the statements use. */
  readonly table: string
  /**
   * Every election in the table, by name, each with the server's now from the
   * same statement: who leads what, for operators. Read-only; its errors
   * report the `inspect` operation.
   */
  readonly list: Effect.Effect<ReadonlyArray<Lease>, StoreError>
}

const quoteField = (field: string, name: string): Either.Either<string, ConfigError> =>
  Either.mapLeft(identifier.quoteChecked(name), (reason) => new ConfigError({ field, reason }))

const qualifiedTable = (schemaName: string | undefined, table: string): Either.Either<string, ConfigError> =>
  Either.flatMap(quoteField("table", table), (quotedTable) =>
    schemaName === undefined || schemaName === ""
      ? Either.right(quotedTable)
      : Either.map(quoteField("schema", schemaName), (quotedSchema) => `${quotedSchema}.${quotedTable}`))

/**
 * The DDL of the store's table, for deployments that withhold DDL rights
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
export const schema = (schemaName: string, table: string): Either.Either<string, ConfigError> =>
  Either.map(qualifiedTable(schemaName, table), Sql.createTable)

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
export const parseUrl = (url: string): Either.Either<Mysql.ConnectionOptions, ConfigError> => {
  const invalid = (reason: string) => Either.left(new ConfigError({ field: "url", reason }))
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

// exactOptionalPropertyTypes: mysql2's options are optional, never undefined.
const definedOnly = <A extends Record<string, unknown>>(record: A): { [K in keyof A]?: Exclude<A[K], undefined> } =>
  Object.fromEntries(Object.entries(record).filter(([, value]) => value !== undefined)) as {
    [K in keyof A]?: Exclude<A[K], undefined>
  }

const fromClientConfig = (config: MysqlClient.MysqlClientConfig): Either.Either<Mysql.PoolOptions, ConfigError> =>
  Either.map(
    config.url === undefined
      ? Either.right(definedOnly({
        host: config.host,
        port: config.port,
        database: config.database,
        user: config.username,
        password: config.password === undefined ? undefined : Redacted.value(config.password)
      }))
      : parseUrl(Redacted.value(config.url)),
    (connection) => ({ ...config.poolConfig, ...connection })
  )

const poolSize = (options: MysqlStoreOptions): Either.Either<number, ConfigError> => {
  const size = options.maxConnections ?? 4
  return Number.isInteger(size) && size >= 1
    ? Either.right(size)
    : Either.left(new ConfigError({ field: "maxConnections", reason: `must be a positive integer, got ${size}` }))
}

const micros = (ttl: Duration.Duration): number => Math.max(0, Math.floor(Duration.toMillis(ttl) * 1000))

const rows = (result: unknown): ReadonlyArray<Record<string, unknown>> =>
  Array.isArray(result) ? result.filter(Predicate.isRecord) : []

const affectedRows = (result: unknown): number =>
  Predicate.isRecord(result) && typeof result["affectedRows"] === "number" ? result["affectedRows"] : 0

const makeWith = (
  connection: Mysql.PoolOptions,
  options: MysqlStoreOptions
): Effect.Effect<MysqlStore, ConfigError | StoreError, Scope.Scope> =>
  Effect.gen(function*() {
    const table = yield* qualifiedTable(options.schema, options.table ?? defaultTable)
    const connectionLimit = yield* poolSize(options)
    const pool = yield* Pool.make({
      ...connection,
      connectionLimit,
      maxIdle: connectionLimit,
      waitForConnections: true,
      connectTimeout: Duration.toMillis(options.connectTimeout ?? Duration.seconds(5)),
      enableKeepAlive: true,
      // The statements rely on these; a caller's poolConfig must not undo them.
      charset: "UTF8MB4_GENERAL_CI",
      flags: ["FOUND_ROWS"],
      multipleStatements: false,
      typeCast: true
    })
    // One short transaction on one connection; `Pool.use` destroys the
    // connection, and with it the open transaction, if anything fails.
    const transaction = <A>(
      operation: "acquire" | "renew",
      body: (query: Pool.Query) => Effect.Effect<A, StoreError>
    ) =>
      pool.use(operation, (query) =>
        Effect.gen(function*() {
          yield* query("START TRANSACTION", [])
          const result = yield* body(query)
          yield* query("COMMIT", [])
          return result
        }))
    // Read back under the lock the write took in the same transaction, so
    // the row is there; the store never deletes one.
    const readBack = (query: Pool.Query, sql: string, values: ReadonlyArray<unknown>, name: string) =>
      Effect.map(query(sql, values), (result) => Sql.toLease(name, rows(result)[0]!))
    const bytes = (payload: Uint8Array | null) => payload === null ? null : Buffer.from(payload)

    const store: MysqlStore = {
      table,
      ensureSchema: pool.use("ensureSchema", (query) => query(Sql.createTable(table), [])).pipe(Effect.asVoid),
      acquire: (name, identity, ttl, payload) =>
        transaction("acquire", (query) =>
          Effect.zipRight(
            query(Sql.upsert(table), [
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
            ]),
            readBack(query, Sql.selectAfterUpsert(table), [identity, name], name)
          )),
      renew: (name, identity, fence, ttl, payload) =>
        transaction("renew", (query) =>
          Effect.flatMap(
            query(Sql.renew(table), [bytes(payload), micros(ttl), name, identity, fence.toString()]),
            (result) =>
              affectedRows(result) === 0
                ? Effect.as(query("ROLLBACK", []), Option.none())
                : Effect.map(readBack(query, Sql.selectAfterRenew(table), [name], name), Option.some)
          )).pipe(
            Effect.flatMap(Option.match({
              onNone: () => Effect.fail(new LeaseLost({ name, identity, fence })),
              onSome: Effect.succeed
            }))
          ),
      release: (name, identity, fence) =>
        pool.use("release", (query) => query(Sql.release(table), [name, identity, fence.toString()])).pipe(
          Effect.asVoid
        ),
      inspect: (name) =>
        pool.use("inspect", (query) => query(Sql.inspect(table), [name])).pipe(
          Effect.flatMap((result) => {
            const row = rows(result)[0]
            return row === undefined ? Effect.fail(new NoLease({ name })) : Effect.succeed(Sql.toLease(name, row))
          })
        ),
      list: pool.use("inspect", (query) => query(Sql.list(table), [])).pipe(
        Effect.map((result) => rows(result).map((row) => Sql.toLease(String(row["name"]), row)))
      )
    }
    if (options.ensureSchema === true) yield* store.ensureSchema
    return store
  })

/**
 * Builds the store from the `MysqlClient` in context: its connection
 * settings, the store's own bounded pool for the scope.
 *
 * @since 0.1.0
 * @category constructors
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import * as MysqlStore from "effect-leaderelection/stores/MysqlStore"
 *
 * const program = Effect.gen(function* () {
 *   const store = yield* MysqlStore.make({ table: "elections" })
 *   yield* store.ensureSchema
 *   return yield* store.acquire("jobs", "a", "15 seconds", null)
 * })
 * ```
 */
export const make = (
  options: MysqlStoreOptions = {}
): Effect.Effect<MysqlStore, ConfigError | StoreError, MysqlClient.MysqlClient | Scope.Scope> =>
  Effect.flatMap(Driver.MysqlClient.MysqlClient, (client) =>
    Effect.flatMap(fromClientConfig(client.config), (connection) => makeWith(connection, options)))

/**
 * The store as a layer over a `MysqlClient` from `@effect/sql-mysql2`.
 *
 * @since 0.1.0
 * @category layers
 * @example
 * ```ts
 * import { MysqlClient } from "@effect/sql-mysql2"
 * import { Layer, Redacted } from "effect"
 * import * as MysqlStore from "effect-leaderelection/stores/MysqlStore"
 *
 * const StoreLive = MysqlStore.layer({ ensureSchema: true }).pipe(
 *   Layer.provide(MysqlClient.layer({ url: Redacted.make("mysql://app@db:3306/app") }))
 * )
 * ```
 */
export const layer = (
  options: MysqlStoreOptions = {}
): Layer.Layer<Store, ConfigError | StoreError, MysqlClient.MysqlClient> => Layer.scoped(Store, make(options))

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
export const layerFromUrl = (
  url: string,
  options: MysqlStoreOptions = {}
): Layer.Layer<Store, ConfigError | StoreError> =>
  Layer.scoped(Store, makeFromUrl(url, options))

/**
 * The store of {@link layerFromUrl}, with its DDL and `list`, for the scope:
 * its pool is closed when the scope closes.
 *
 * @since 0.1.0
 * @category constructors
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import * as MysqlStore from "effect-leaderelection/stores/MysqlStore"
 *
 * const elections = MysqlStore.makeFromUrl("mysql://root@127.0.0.1:3306/test").pipe(
 *   Effect.flatMap((store) => store.list),
 *   Effect.scoped
 * )
 * ```
 */
export const makeFromUrl = (
  url: string,
  options: MysqlStoreOptions = {}
): Effect.Effect<MysqlStore, ConfigError | StoreError, Scope.Scope> =>
  Effect.flatMap(parseUrl(url), (connection) => makeWith(connection, options))
