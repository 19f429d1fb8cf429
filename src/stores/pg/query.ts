/**
 * Runs one statement on a connection checked out of a `pg.Pool`, in a way an
 * elector can trust with a deadline.
 *
 * `@effect/sql-pg` answers an interruption by issuing `pg_cancel_backend` on
 * another connection and waiting for it (up to 5 s), then returns the same
 * connection to the pool, where the next query queues behind the one that
 * hung; behind PgBouncer the pid it cancels is not even a backend. Here an
 * interruption gives control back at once and destroys the connection
 * (`release(error)` makes pg-pool drop it and pg destroy its socket), so a
 * wedged connection is never handed out again.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import { constVoid } from "effect/Function"
import type { Pool, PoolClient, QueryResult } from "pg"
import { Pg } from "./driver.js"

/** Parameters are always sent as text or bytes, so the pool's type config cannot change them. */
export type Param = string | Buffer | null

/** Every column a store statement returns is text (or null): decoding is ours alone. */
export type Row = Readonly<Record<string, string | null>>

const interrupted = (): Error => new Error("the store call was interrupted; connection destroyed")

/**
 * Runs `text` as one unnamed extended-protocol statement (pg only names a
 * statement when the query config carries a `name`, and this one never does),
 * so it is safe behind a transaction-pooling proxy.
 */
export const query = (pool: Pool, text: string, values: ReadonlyArray<Param>): Effect.Effect<QueryResult<Row>, Error> =>
  Effect.async<QueryResult<Row>, Error>((resume) => {
    let settled = false
    let client: PoolClient | undefined
    // A server-reported error leaves the connection in sync and reusable;
    // anything else (a dead socket, our own interruption) means it must go.
    const settle = (error: Error | undefined): boolean => {
      if (settled) return false
      settled = true
      client?.release(error instanceof Pg.DatabaseError ? undefined : error)
      return true
    }
    pool.connect((error, checkedOut) => {
      if (settled) {
        // Interrupted while connecting: the new connection is healthy. Given
        // back after this callback returns: pg-pool hands a released
        // connection to its next waiter at once, and thousands of abandoned
        // waiters releasing in turn would overflow the stack.
        queueMicrotask(() => checkedOut?.release())
        return
      }
      if (checkedOut === undefined) {
        settled = true
        return resume(Effect.fail(error ?? new Error("the pool returned no connection")))
      }
      client = checkedOut
      // pg also reports socket failures to the active query's callback, which
      // is where they are handled; without a listener they would crash the process.
      client.on("error", constVoid)
      client.query<Row>({ text, values: [...values] }, (queryError, result) => {
        client?.off("error", constVoid)
        if (settle(queryError ?? undefined)) {
          resume(queryError ? Effect.fail(queryError) : Effect.succeed(result))
        }
      })
    })
    return Effect.sync(() => settle(interrupted()))
  })
