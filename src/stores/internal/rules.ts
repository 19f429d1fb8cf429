/**
 * The bounds the SQL stores derive from their operation timeout and pool
 * size, each stated once here; every other place names them. (PostgreSQL's
 * row-lock wait is its dialect's: `lockTimeoutFor` in `pg/sql.ts`.)
 *
 * @internal
 */
import * as Duration from "effect/Duration"

/**
 * How long a statement whose caller gave up (timed out, interrupted) may
 * still answer before its connection is destroyed: twice the operation
 * timeout. A call let in just before its deadline is abandoned at once, and
 * its late answer needs about a round trip more. An answer within the grace
 * proves the connection was only slow, and it goes back to the pool, so a
 * busy database or event loop does not turn every call that overran into a
 * reconnect; silence past it means the connection is wedged.
 */
export const grace = (timeout: Duration.Duration): Duration.Duration => Duration.times(timeout, 2)

/**
 * How many calls may wait for `capacity` connections before a poll is shed:
 * twice the pool. Routine steps come in bursts (polls and renewals due within
 * one grain of the deadline timer start together, `Deadlines.grain`), and a
 * pool drains a queue of two pools' worth within a few statements' time; a
 * queue deeper than that is overload.
 */
export const waitingLimit = (capacity: number): number => 2 * capacity

/**
 * The most calls one request carries (`batch.ts`), renewals or polls. A
 * request of renewals keeps its rows locked until it commits, and a request
 * that fails fails them all: 256 keeps one request within a few
 * milliseconds of server time on either database while a member of ten
 * thousand elections at the default timing still needs only a few dozen
 * requests a second.
 */
export const callsPerRequest = 256
