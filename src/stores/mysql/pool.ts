/**
 * The store's own bounded pool of mysql2 connections.
 *
 * Two properties of the driver shape this module. A mysql2 query cannot be
 * cancelled: interrupting the fiber waiting for it gives control back, but
 * the connection stays busy until the server answers, which a hung server
 * or a blackholed path never does. And the pool behind @effect/sql-mysql2
 * takes such a connection back once the query returns, if it ever returns;
 * meanwhile it counts against the pool's limit. So every operation here is
 * one request on one borrowed connection, run through the store's
 * {@link Gate.Gate}: the caller gets control back at its deadline, and the
 * connection stays out of the pool until the request answers. It goes back
 * only if the request succeeded; on an error, or no answer within twice the
 * operation timeout after the caller gave up, it is destroyed, which also
 * makes the server roll back whatever transaction it had open. Nothing a
 * failed call did can survive it, a wedged connection is never handed to the
 * next caller, and a late answer costs no reconnect.
 *
 * A transaction (`acquire`, `renew`) is sent as ONE request, its statements
 * separated by `;`, when the pool's connections allow several statements per
 * request (the store's own pools do): one round trip per operation. On a
 * caller's pool that does not, the statements go one by one on the same
 * connection. Either way the request carries no `SET` and no user variable,
 * and its last statement is the `COMMIT`.
 *
 * Statements go through mysql2's `query` (COM_QUERY, values escaped by the
 * driver), never `execute`: server-side prepared statements live in the
 * session, which a multiplexing proxy such as ProxySQL has to pin or track.
 *
 * The same holds over a pool the caller owns ({@link fromPool}): only the
 * connections whose call failed are destroyed, and the pool itself is left
 * open.
 *
 * @internal
 */
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type * as Mysql from "mysql2"
import { createRequire } from "node:module"
import { stackless } from "../../internal/stackless.js"
import type { Operation } from "../../Store.js"
import { StoreError } from "../../Store.js"
import * as Admission from "../internal/admission.js"
import * as Gate from "../internal/gate.js"
import * as Rules from "../internal/rules.js"
import { classify } from "./classify.js"
import * as Driver from "./driver.js"

/** One statement and its values, escaped by the driver. */
export interface Statement {
  readonly sql: string
  readonly values: ReadonlyArray<unknown>
}

export interface Pool {
  /**
   * Runs `statements` in order on one connection, as one request when the
   * connection allows it, and gives each one's result. The connection goes
   * back to the pool only if all succeeded; otherwise it is destroyed.
   */
  readonly run: (
    operation: Operation,
    statements: ReadonlyArray<Statement>
  ) => Effect.Effect<ReadonlyArray<unknown>, StoreError>
  /** Every `run` answers within this. */
  readonly timeout: Duration.Duration
}

/** Maps a driver error to the store's error, classified. */
export const storeError = (operation: Operation, cause: unknown): StoreError =>
  stackless(() => new StoreError({ operation, ...classify(cause), cause }))

// Per query, so that a caller's pool configured otherwise decodes the
// store's rows the way the store reads them.
const decoding = { rowsAsArray: false, nestTables: false } as const

const send = (
  connection: Mysql.PoolConnection,
  statements: ReadonlyArray<Statement>,
  together: boolean,
  callback: (error: Error | undefined, results: ReadonlyArray<unknown>) => void
): void => {
  if (together) {
    const sql = statements.map((statement) => statement.sql).join(";\n")
    const values = statements.flatMap((statement) => statement.values)
    // Several statements answer with one result each, in order.
    connection.query(
      { sql, values, ...decoding },
      (error, result) => callback(error ?? undefined, result as ReadonlyArray<unknown>)
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

/**
 * The store's view of a mysql2 pool: every call holds one of the pool's
 * connections, returns within `timeout`, and destroys the connection unless
 * its request succeeded.
 */
export const fromPool = (pool: Mysql.Pool, timeout: Duration.Duration): Pool => {
  const severalPerRequest = settingsOf(pool).multipleStatements === true
  const connections: Gate.Connections<
    Mysql.PoolConnection,
    ReadonlyArray<Statement>,
    ReadonlyArray<unknown>,
    StoreError
  > = {
    // mysql2 fills in its default limit (10) when none was given.
    gate: Admission.make(pool.config.connectionLimit ?? 10),
    driver: {
      connect: (callback) =>
        pool.getConnection((error, connection) =>
          callback(error ?? undefined, error === null ? connection : undefined)
        ),
      run: (connection, statements, callback) =>
        send(connection, statements, severalPerRequest && statements.length > 1, callback),
      // Only a request that succeeded is known to have left no transaction open.
      release: (connection, error) => error === undefined ? connection.release() : connection.destroy()
    },
    timeout,
    grace: Rules.grace(timeout),
    failure: storeError
  }
  return {
    run: (operation, statements) => Gate.use(connections, operation, statements, Effect.succeed),
    timeout
  }
}

/**
 * Opens a pool for the scope. mysql2 connects lazily, so an unreachable server
 * shows up as classified errors from operations, not here.
 */
export const make = (options: Mysql.PoolOptions, timeout: Duration.Duration): Effect.Effect<Pool, never, Scope.Scope> =>
  Effect.map(
    Effect.acquireRelease(
      Effect.sync(() => Driver.Mysql.createPool(options)),
      // mysql2 ends every connection, one still waiting for a late answer
      // included, and waits for each to say goodbye: a silent one never does.
      // The store stops waiting at the timeout; that connection is destroyed
      // when its grace ends.
      (pool) =>
        Effect.async<void>((resume) => pool.end(() => resume(Effect.void))).pipe(
          Effect.interruptible,
          Effect.timeoutOption(timeout)
        )
    ),
    (pool) => fromPool(pool, timeout)
  )

/**
 * The collation ids of utf8mb4. mysql2 exposes its table through a getter on
 * its CommonJS exports, which an ES module namespace import does not see; it
 * is read on first use, from a pool that already proves mysql2 is installed.
 */
const utf8mb4 = (): ReadonlySet<number> => {
  const { Charsets } = createRequire(import.meta.url)("mysql2") as { readonly Charsets: Record<string, number> }
  return new Set(Object.entries(Charsets).flatMap(([name, id]) => name.startsWith("UTF8MB4") ? [id] : []))
}

/** The connection settings mysql2 derived from a pool's options; not in its typings. */
interface ConnectionSettings {
  readonly charsetNumber?: number
  readonly clientFlags?: number
  readonly multipleStatements?: boolean
}

const settingsOf = (pool: Mysql.Pool): ConnectionSettings =>
  (pool.config as { readonly connectionConfig?: ConnectionSettings }).connectionConfig ?? {}

/**
 * Why the store cannot run on a caller's pool, or `undefined` when it can.
 * Names and identities are sent and read back as utf8mb4 text: under another
 * connection charset two different identities could reach the server as the
 * same bytes. And `renew` counts matched rows (FOUND_ROWS), not changed ones.
 */
export const poolProblem = (pool: Mysql.Pool): string | undefined => {
  const settings = settingsOf(pool)
  if (settings.charsetNumber === undefined || !utf8mb4().has(settings.charsetNumber)) {
    return "its connections must use a utf8mb4 charset (mysql2's default)"
  }
  // The client capability flag CLIENT_FOUND_ROWS.
  if (((settings.clientFlags ?? 0) & 2) === 0) return "its connections must keep the FOUND_ROWS flag (mysql2's default)"
  return undefined
}
