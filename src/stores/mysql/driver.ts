/**
 * MySQL / MariaDB's driver for the SQL store engine (`internal/sqlStore.ts`):
 * mysql2, an optional peer dependency loaded when MysqlStore is imported
 * (see `internal/driver.ts`), its pools and their settings.
 * `@effect/sql-mysql2` is never loaded: a `MysqlClient` the app hands the
 * store is found by its key.
 *
 * A mysql2 query cannot be cancelled: the connection stays busy until the
 * server answers, which a hung server or a blackholed path never does, and
 * the pool behind `@effect/sql-mysql2` takes such a connection back once the
 * query returns, if it ever does. Here a connection goes back to the pool
 * only if its request succeeded; on an error, or silence past its grace, it
 * is destroyed, which also makes the server roll back whatever transaction it
 * had open. Nothing a failed call did can survive it.
 *
 * A request of several statements is a transaction: `START TRANSACTION`, the
 * statements, `COMMIT`, sent as ONE request, separated by `;`, when the
 * pool's connections allow several statements per request (the store's own
 * pools do): one round trip per operation. On a caller's pool that does not,
 * the statements go one by one on the same connection. Either way the
 * request carries no `SET` and no user variable, and its last statement is
 * the `COMMIT`.
 *
 * Statements go through mysql2's `query` (COM_QUERY, values escaped by the
 * driver), never `execute`: server-side prepared statements live in the
 * session, which a multiplexing proxy such as ProxySQL has to pin or track.
 *
 * @internal
 */
import type * as MysqlClient from "@effect/sql-mysql2/MysqlClient"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Redacted from "effect/Redacted"
import type * as MysqlModule from "mysql2"
import { createRequire } from "node:module"
import * as limits from "../../internal/config/limits.js"
import * as Dialect from "../internal/dialect.js"
import { load } from "../internal/driver.js"
import type { MysqlStoreUrlOptions } from "../MysqlStore.js"
import { classify } from "./classify.js"
import { parseUrl } from "./config.js"
import type { Request, Result, Statement } from "./statements.js"

const Mysql: typeof MysqlModule = await load("MysqlStore", ["mysql2"], () => import("mysql2"))

// Per query, so that a caller's pool configured otherwise decodes the
// store's rows the way the store reads them.
const decoding = { rowsAsArray: false, nestTables: false } as const

const send = (
  connection: MysqlModule.PoolConnection,
  statements: Request,
  together: boolean,
  callback: (error: Error | undefined, results: Result) => void
): void => {
  if (together) {
    const sql = statements.map((statement) => statement.sql).join(";\n")
    const values = statements.flatMap((statement) => statement.values)
    // Several statements answer with one result each, in order.
    connection.query(
      { sql, values, ...decoding },
      (error, result) => callback(error ?? undefined, result as Result)
    )
    return
  }
  const results: Array<unknown> = []
  const next = (statement: Statement | undefined): void => {
    if (statement === undefined) return callback(undefined, results)
    connection.query({ sql: statement.sql, values: [...statement.values], ...decoding }, (error, result) => {
      if (error !== null) return callback(error, results)
      results.push(result)
      next(statements[results.length])
    })
  }
  next(statements[0])
}

const begin: Statement = { sql: "START TRANSACTION", values: [] }
const commit: Statement = { sql: "COMMIT", values: [] }

/**
 * The collation ids of utf8mb4. mysql2 exposes its table through a getter on
 * its CommonJS exports, which an ES module namespace import does not see; it
 * is read on first use, from a pool that already proves mysql2 is installed.
 */
const utf8mb4 = (): ReadonlySet<number> => {
  const { Charsets } = createRequire(import.meta.url)("mysql2") as { readonly Charsets: Record<string, number> }
  return new Set(Object.entries(Charsets).flatMap(([name, id]) => name.toLowerCase().startsWith("utf8mb4") ? [id] : []))
}

/** The connection settings mysql2 derived from a pool's options; not in its typings. */
interface ConnectionSettings {
  readonly charsetNumber?: number
  readonly clientFlags?: number
  readonly multipleStatements?: boolean
}

const settingsOf = (pool: MysqlModule.Pool): ConnectionSettings =>
  (pool.config as { readonly connectionConfig?: ConnectionSettings }).connectionConfig ?? {}

// Found by its key: MysqlStore never loads `@effect/sql-mysql2`, which an
// app that hands it no `MysqlClient` need not install.
const client = Context.GenericTag<MysqlClient.MysqlClient>("@effect/sql-mysql2/MysqlClient")

/** The MySQL / MariaDB driver. */
export const driver: Dialect.Driver<
  MysqlModule.Pool,
  MysqlModule.PoolConnection,
  Request,
  Result,
  MysqlModule.PoolOptions,
  MysqlClient.MysqlClient,
  MysqlStoreUrlOptions
> = {
  connections: (pool) => {
    const severalPerRequest = settingsOf(pool).multipleStatements === true
    return {
      connect: (callback) =>
        pool.getConnection((error, connection) =>
          callback(error ?? undefined, error === null ? connection : undefined)
        ),
      run: (connection, statements, callback) =>
        statements.length === 1
          ? send(connection, statements, false, callback)
          : send(
            connection,
            [begin, ...statements, commit],
            severalPerRequest,
            // Each statement's own result: those of START TRANSACTION and COMMIT say nothing.
            (error, results) => callback(error, error === undefined ? results.slice(1, -1) : results)
          ),
      // Only a request that succeeded is known to have left no transaction open.
      release: (connection, error) => error === undefined ? connection.release() : connection.destroy()
    }
  },
  // mysql2 fills in its default limit (10) when none was given.
  capacity: (pool) => pool.config.connectionLimit ?? 10,
  // Names and identities are sent and read back as utf8mb4 text: under
  // another connection charset two different identities could reach the
  // server as the same bytes. And `renew` counts matched rows (FOUND_ROWS),
  // not changed ones.
  poolProblem: (pool) => {
    const settings = settingsOf(pool)
    if (settings.charsetNumber === undefined || !utf8mb4().has(settings.charsetNumber)) {
      return "its connections must use a utf8mb4 charset (mysql2's default)"
    }
    // The client capability flag CLIENT_FOUND_ROWS.
    if (((settings.clientFlags ?? 0) & 2) === 0) {
      return "its connections must keep the FOUND_ROWS flag (mysql2's default)"
    }
    return undefined
  },
  classify,
  fromUrl: parseUrl,
  fromClient: Effect.flatMap(client, ({ config }) =>
    Either.map(
      config.url === undefined
        ? Either.right(Dialect.definedOnly({
          host: config.host,
          port: config.port,
          database: config.database,
          user: config.username,
          password: Dialect.revealOptional(config.password)
        }))
        : parseUrl(Redacted.value(config.url)),
      (connection) => ({ ...config.poolConfig, ...connection })
    )),
  ownPool: (settings, options, connectionLimit) =>
    Either.map(limits.duration("connectTimeout", options.connectTimeout ?? Duration.seconds(5)), (connectTimeout) => ({
      ...settings,
      connectionLimit,
      maxIdle: connectionLimit,
      waitForConnections: true,
      connectTimeout: Duration.toMillis(connectTimeout),
      enableKeepAlive: true,
      // The statements rely on these; a caller's poolConfig must not undo them.
      // mysql2 looks its charsets up in upper case.
      charset: "utf8mb4_general_ci",
      flags: ["FOUND_ROWS"],
      // One request per transaction: one round trip per operation.
      multipleStatements: true,
      typeCast: true
    })),
  openPool: (settings) => Mysql.createPool(settings),
  endPool: (pool, done) => pool.end(() => done())
}
