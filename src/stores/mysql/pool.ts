/**
 * The store's own bounded pool of mysql2 connections.
 *
 * Two properties of the driver shape this module. A mysql2 query cannot be
 * cancelled: interrupting the fiber waiting for it gives control back, but
 * the connection stays busy until the server answers, which a hung server
 * or a blackholed path never does. And the pool behind @effect/sql-mysql2
 * takes such a connection back once the query returns, if it ever returns;
 * meanwhile it counts against the pool's limit. So every operation here
 * borrows one connection for its whole duration and returns it only when the
 * operation succeeded; on failure or interruption the connection is
 * destroyed, which also makes the server roll back whatever transaction it
 * had open. Nothing a failed call did can survive it, and a wedged
 * connection can never be handed to the next caller.
 *
 * A slot can stay taken after an interruption: a connection still in its
 * handshake cannot be reached through mysql2's pool, so it holds its slot
 * until `connectTimeout` fails it. That bounds how long a healed path waits
 * for a free slot; `connectTimeout` is the knob.
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
import { createRequire } from "node:module"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Scope from "effect/Scope"
import type * as Mysql from "mysql2"
import * as Driver from "./driver.js"
import type { Operation } from "../../Store.js"
import { StoreError } from "../../Store.js"
import { withDeadline } from "../internal/sqlStore.js"
import { classify } from "./classify.js"

/** Runs one statement on the borrowed connection. */
export type Query = (sql: string, values: ReadonlyArray<unknown>) => Effect.Effect<unknown, StoreError>

export interface Pool {
  /**
   * Runs `f` on one connection. The connection goes back to the pool only if
   * `f` succeeds; otherwise it is destroyed.
   */
  readonly use: <A, E>(operation: Operation, f: (query: Query) => Effect.Effect<A, E>) => Effect.Effect<A, E | StoreError>
}

/** Maps a driver error to the store's error, classified. */
export const storeError = (operation: Operation, cause: unknown): StoreError =>
  new StoreError({ operation, ...classify(cause), cause })

const acquire = (pool: Mysql.Pool, operation: Operation) =>
  Effect.async<Mysql.PoolConnection, StoreError>((resume) => {
    let abandoned = false
    pool.getConnection((error, connection) => {
      if (abandoned) {
        // The caller was interrupted while queued or connecting: the
        // connection, if one arrived, was never used and is healthy.
        if (error === null) connection.release()
      } else {
        resume(error === null ? Effect.succeed(connection) : Effect.fail(storeError(operation, error)))
      }
    })
    return Effect.sync(() => {
      abandoned = true
    })
  })

const query = (connection: Mysql.PoolConnection, operation: Operation): Query => (sql, values) =>
  Effect.async<unknown, StoreError>((resume) => {
    // Per query, so that a caller's pool configured otherwise decodes the
    // store's rows the way the store reads them.
    connection.query({ sql, values: [...values], rowsAsArray: false, nestTables: false }, (error, result) => {
      resume(error === null ? Effect.succeed(result) : Effect.fail(storeError(operation, error)))
    })
  })

/**
 * The store's view of a mysql2 pool: every call borrows one connection,
 * returns within `timeout`, and destroys the connection unless it succeeded.
 */
export const fromPool = (pool: Mysql.Pool, timeout: Duration.Duration): Pool => ({
  use: (operation, f) =>
    Effect.acquireUseRelease(
      // Waiting for a connection, even mid-handshake with a silent
      // server, must stay interruptible; `acquire` cleans up after itself.
      Effect.interruptible(acquire(pool, operation)),
      (connection) => f(query(connection, operation)),
      (connection, exit) => Effect.sync(() => Exit.isSuccess(exit) ? connection.release() : connection.destroy())
    ).pipe(withDeadline(timeout, operation, storeError))
})

/**
 * Opens a pool for the scope. mysql2 connects lazily, so an unreachable server
 * shows up as classified errors from operations, not here.
 */
export const make = (options: Mysql.PoolOptions, timeout: Duration.Duration): Effect.Effect<Pool, never, Scope.Scope> =>
  Effect.map(
    Effect.acquireRelease(
      Effect.sync(() => Driver.Mysql.createPool(options)),
      (pool) => Effect.async<void>((resume) => pool.end(() => resume(Effect.void)))
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
}

/**
 * Why the store cannot run on a caller's pool, or `undefined` when it can.
 * Names and identities are sent and read back as utf8mb4 text: under another
 * connection charset two different identities could reach the server as the
 * same bytes. And `renew` counts matched rows (FOUND_ROWS), not changed ones.
 */
export const poolProblem = (pool: Mysql.Pool): string | undefined => {
  const settings: ConnectionSettings = (pool.config as { readonly connectionConfig?: ConnectionSettings })
    .connectionConfig ?? {}
  if (settings.charsetNumber === undefined || !utf8mb4().has(settings.charsetNumber)) {
    return "its connections must use a utf8mb4 charset (mysql2's default)"
  }
  // The client capability flag CLIENT_FOUND_ROWS.
  if (((settings.clientFlags ?? 0) & 2) === 0) return "its connections must keep the FOUND_ROWS flag (mysql2's default)"
  return undefined
}
