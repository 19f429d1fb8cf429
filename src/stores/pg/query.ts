/**
 * Runs one statement on a connection checked out of a `pg.Pool`, in a way an
 * elector can trust with a deadline, and without turning overload into a
 * reconnect storm.
 *
 * `@effect/sql-pg` answers an interruption by issuing `pg_cancel_backend` on
 * another connection and waiting for it (up to 5 s), then returns the same
 * connection to the pool, where the next query queues behind the one that
 * hung; behind PgBouncer the pid it cancels is not even a backend. Here an
 * interruption (a timeout included) gives control back at once, and the
 * connection stays out of the pool until its statement answers (see
 * {@link Gate.use}); one that does not answer in time is destroyed
 * (`release(error)` makes pg-pool drop it and pg destroy its socket), so a
 * wedged connection is never handed out again.
 *
 * @internal
 */
import type * as Duration from "effect/Duration"
import type * as Effect from "effect/Effect"
import { constVoid } from "effect/Function"
import type { Pool, PoolClient, QueryResult } from "pg"
import type { Operation } from "../../Store.js"
import * as Admission from "../internal/admission.js"
import * as Gate from "../internal/gate.js"
import { Pg } from "./driver.js"

/** Parameters are always sent as text or bytes, so the pool's type config cannot change them. */
export type Param = string | Buffer | null

/** Every column a store statement returns is text (or null): decoding is ours alone. */
export type Row = Readonly<Record<string, string | null>>

/** A statement and its parameters. */
export interface Request {
  readonly text: string
  readonly values: Array<Param>
}

/** A pool as the store uses it, with errors classified as `E`. */
export type Connections<E> = Gate.Connections<PoolClient, Request, QueryResult<Row>, E>

/**
 * The store's view of `pool`: as many slots as the pool has connections,
 * every call bounded by `timeout` (waiting for a connection included), and
 * `grace` for a statement whose caller gave up to answer before its
 * connection is destroyed.
 */
export const connections = <E>(
  pool: Pool,
  timeout: Duration.Duration,
  grace: Duration.Duration,
  failure: (operation: Operation, error: Error) => E
): Connections<E> => ({
  // pg-pool fills in its default size (10) when none was given.
  gate: Admission.make(pool.options.max ?? 10),
  driver: {
    connect: (callback) => pool.connect((error, client) => callback(error ?? undefined, client)),
    run: (client, { text, values }, callback) => {
      // pg also reports socket failures to the active query's callback, which
      // is where they are handled; without a listener they would crash the process.
      client.on("error", constVoid)
      client.query<Row>({ text, values }, (error, result) => {
        client.off("error", constVoid)
        callback(error ?? undefined, result)
      })
    },
    // An answer, even a server-reported error, leaves the connection in sync
    // and reusable; anything else (a dead socket, no answer) means it must go.
    release: (client, error) => client.release(error instanceof Pg.DatabaseError ? undefined : error)
  },
  timeout,
  grace,
  failure
})

/**
 * Runs `text` as one unnamed extended-protocol statement (pg only names a
 * statement when the query config carries a `name`, and this one never does),
 * so it is safe behind a transaction-pooling proxy.
 */
export const query = <A, E>(
  connections: Connections<E>,
  operation: Operation,
  text: string,
  values: Array<Param>,
  answer: (result: QueryResult<Row>) => Effect.Effect<A, E>
): Effect.Effect<A, E> => Gate.use(connections, operation, { text, values }, answer)
