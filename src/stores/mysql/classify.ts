/**
 * Classification of mysql2 / MySQL / MariaDB errors into retryable and fatal.
 *
 * @internal
 */
import * as Predicate from "effect/Predicate"
import type { Classification } from "../SqlStore.js"
import { OperationTimeout, Saturated } from "../SqlStoreError.js"

// Conditions that fix themselves: locks, read-only phases during failover,
// overload, and everything that means "the connection, not the request, failed".
const retryableErrnos = new Set([
  1040, // ER_CON_COUNT_ERROR: too many connections
  1053, // ER_SERVER_SHUTDOWN
  1205, // ER_LOCK_WAIT_TIMEOUT
  1213, // ER_LOCK_DEADLOCK
  1290, // ER_OPTION_PREVENTS_STATEMENT: --read-only, as during a failover
  1792, // ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION
  1836, // ER_READ_ONLY_MODE
  1927, // ER_CONNECTION_KILLED (MariaDB)
  2002, // CR_CONNECTION_ERROR
  2003, // CR_CONN_HOST_ERROR
  2006, // CR_SERVER_GONE_ERROR
  2013 // CR_SERVER_LOST
])

// Conditions that need an operator: the schema, the grants or the credentials.
const fatalErrnos = new Set([
  1044, // ER_DBACCESS_DENIED_ERROR
  1045, // ER_ACCESS_DENIED_ERROR
  1049, // ER_BAD_DB_ERROR
  1054, // ER_BAD_FIELD_ERROR: the table is not the store's schema
  1142, // ER_TABLEACCESS_DENIED_ERROR
  1143, // ER_COLUMNACCESS_DENIED_ERROR
  1146, // ER_NO_SUCH_TABLE
  1227, // ER_SPECIFIC_ACCESS_DENIED_ERROR
  1406, // ER_DATA_TOO_LONG: a name or identity longer than the column
  1698 // ER_ACCESS_DENIED_NO_PASSWORD_ERROR
])

const retryableCodes = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ECONNABORTED",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EAI_AGAIN",
  "PROTOCOL_CONNECTION_LOST",
  "PROTOCOL_SEQUENCE_TIMEOUT"
])

const field = (error: unknown, key: string): unknown =>
  Predicate.isObject(error) && key in error ? (error as Record<string, unknown>)[key] : undefined

/**
 * Classifies a driver error as retryable or fatal, with its code and a
 * readable reason; every error the store returns went through it. Known
 * server errnos decide first, then the driver's or the OS's code; an error
 * mysql2 marks `fatal` (it broke the connection) without a known errno is a
 * connection failure, so retryable. Anything else, syntax errors included,
 * is fatal: it will not fix itself. The store's own {@link OperationTimeout}
 * and a shed poll ({@link Saturated}) are retryable.
 */
export const classify = (error: unknown): Classification => {
  if (error instanceof OperationTimeout || error instanceof Saturated) {
    return { retryable: true, code: undefined, reason: error.message }
  }
  // Node's system errors carry a negative errno; only the server's are positive.
  const raw = field(error, "errno")
  const errno = typeof raw === "number" && raw > 0 ? raw : undefined
  const code = field(error, "code")
  const message = field(error, "sqlMessage") ?? field(error, "message")
  const symbol = typeof code === "string" ? code : undefined
  const reason = typeof message === "string"
    ? (symbol === undefined ? message : `${symbol}: ${message}`)
    : String(error)
  if (errno !== undefined && (retryableErrnos.has(errno) || fatalErrnos.has(errno))) {
    return { retryable: retryableErrnos.has(errno), code: String(errno), reason }
  }
  const retryable = (symbol !== undefined && retryableCodes.has(symbol)) || field(error, "fatal") === true
  return { retryable, code: errno === undefined ? symbol : String(errno), reason }
}
