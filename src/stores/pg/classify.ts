/**
 * Classification of PostgreSQL driver errors into the ones that can fix
 * themselves (retryable) and the ones that need an operator (fatal).
 *
 * @internal
 */
import * as Predicate from "effect/Predicate"
import { InvalidConfig } from "../../ElectorError.js"
import type { Classification } from "../SqlStore.js"
import { OperationTimeout, Saturated } from "../SqlStoreError.js"

/** SQLSTATE classes that describe the server or the path to it, not the request. */
const retryableClasses = new Set([
  "08", // connection exception (PgBouncer reports its own failures here too)
  "40", // transaction rollback: serialization failure, deadlock
  "53", // insufficient resources: too many connections, out of memory, disk full
  "58" // system error: I/O error
])

const retryableStates = new Set([
  "57P01", // admin_shutdown
  "57P02", // crash_shutdown
  "57P03", // cannot_connect_now (starting up, recovering)
  "57P05", // idle_session_timeout
  "57014", // query_canceled (statement_timeout, pg_cancel_backend)
  "25006", // read_only_sql_transaction: we reached a standby after a failover
  "55P03", // lock_not_available
  "55006" // object_in_use
])

/** Node.js system errors seen on the socket: all are about the network. */
const retryableErrnos = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ECONNABORTED",
  "ETIMEDOUT",
  "EPIPE",
  "EHOSTUNREACH",
  "EHOSTDOWN",
  "ENETUNREACH",
  "ENETDOWN",
  "EAI_AGAIN",
  "ENOTFOUND"
])

const sqlstate = /^[0-9A-Z]{5}$/

const codeOf = (error: object): string | undefined =>
  "code" in error && Predicate.isString(error.code) ? error.code : undefined

const reasonOf = (error: object, code: string | undefined): string =>
  "message" in error && Predicate.isString(error.message) && error.message.length > 0
    ? error.message
    : code ?? String(error)

/**
 * Classifies an error from the driver, the pool or the store itself.
 *
 * - SQLSTATEs in classes 08, 40, 53, 58 and 57P01/02/03/05, 57014, 25006,
 *   55P03, 55006 are retryable; every other SQLSTATE (42P01 undefined table,
 *   42501 insufficient privilege, 28P01/28000 authentication, 3D000 no such
 *   database, ...) is fatal.
 * - Socket errors (ECONNREFUSED, ECONNRESET, ETIMEDOUT, EPIPE, ...), the
 *   store's own {@link OperationTimeout} and a poll shed by a saturated
 *   store are retryable.
 * - A bad option or connection URL ({@link InvalidConfig}) is fatal.
 * - Any other error without a code comes from the transport ("Connection
 *   terminated unexpectedly", "timeout exceeded when trying to connect"):
 *   retryable, as the outcome of the call is unknown.
 *
 * An `@effect/sql` `SqlError` is classified by its cause.
 */
export const classify = (error: unknown): Classification => {
  if (Predicate.isTagged(error, "SqlError") && Predicate.hasProperty(error, "cause")) {
    return classify(error.cause)
  }
  if (error instanceof OperationTimeout || error instanceof Saturated) {
    return { retryable: true, reason: error.message }
  }
  if (error instanceof InvalidConfig) {
    return { retryable: false, reason: error.message }
  }
  if (!Predicate.isObject(error)) {
    return { retryable: true, reason: String(error) }
  }
  const code = codeOf(error)
  const reason = reasonOf(error, code)
  if (code === undefined) {
    return { retryable: true, reason }
  }
  // EPIPE looks like a SQLSTATE, so the socket codes are looked up first.
  const retryable = retryableErrnos.has(code) ||
    (sqlstate.test(code) && (retryableClasses.has(code.slice(0, 2)) || retryableStates.has(code)))
  return { retryable, reason, code }
}
