/**
 * Admission to a SQL store's connections, with priority, so that overload
 * degrades into skipped polls instead of a reconnect storm.
 *
 * A call holds one of `capacity` slots (the pool's size) from admission until
 * its connection is back in the pool or destroyed, which can be after the
 * caller gave up: a statement that outlived its call keeps its slot until it
 * answers. So the gate always knows how many connections are really busy, and
 * the store never asks the pool for more than it has.
 *
 * When every slot is taken, renewals and releases (a leader keeping or ending
 * its term) wait in their own queue, served first; the other calls wait
 * behind them, and a follower's poll (`inspect`) that would wait behind
 * twice `capacity` others is refused at once with {@link Saturated}, a
 * retryable error: the follower tries again at its next poll, and the store
 * does no work for it. Twice, because routine steps come in bursts: polls and
 * renewals due within one grain of the deadline timer start together
 * (`Deadlines.grain`), and a pool drains a queue of two pools' worth within
 * a few statements' time; a queue deeper than that is overload. A claim
 * (`acquire`) is never shed: a follower only claims a lease it saw free, and
 * the claim is what ends a leaderless interval.
 * Waiting is bounded by the call's own deadline.
 *
 * {@link use} runs one call through the gate on a driver's pool. The caller
 * gets control back at once when it gives up (interrupted, timed out); the
 * connection stays out of the pool while its statement runs on. An answer
 * within `grace` proves the connection was only slow, and it goes back to
 * the pool (unless the driver says the answer left it unusable); no answer
 * within `grace` and it is destroyed. A wedged connection is never handed out
 * again, and a busy database or event loop does not turn every call that
 * overran into a new connection.
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Deadlines from "../../internal/deadlines.js"
import { stackless } from "../../internal/stackless.js"
import type { Operation } from "../../Store.js"
import { OperationTimeout } from "./sqlStore.js"

/** How many calls may wait for `capacity` connections before a poll is shed (see the module's note). */
const waitingLimit = (capacity: number): number => 2 * capacity

/**
 * A poll refused because every connection of the store was busy and enough
 * polls were already waiting. Retryable: it is skipped, not failed.
 *
 * @since 0.2.0
 * @category errors
 * @example
 * ```ts
 * import * as PgStore from "effect-leaderelection/stores/PgStore"
 *
 * new PgStore.Saturated({ operation: "inspect", capacity: 4 }).message
 * // "inspect shed: all 4 connections are busy and 8 calls already wait"
 * ```
 */
export class Saturated extends Data.TaggedError("Saturated")<{
  readonly operation: Operation
  readonly capacity: number
}> {
  override get message(): string {
    return `${this.operation} shed: all ${this.capacity} connections are busy and ${waitingLimit(this.capacity)} calls already wait`
  }
}

/** A call admitted or waiting for admission. */
export interface Ticket {
  /** Withdraws a call still waiting; false when it was already admitted (it then holds a slot). */
  readonly cancel: () => boolean
}

export interface Gate {
  /**
   * Admits a call for `operation`: `admitted` runs once a slot is free (maybe
   * at once, synchronously). A poll that would have to queue behind twice
   * `capacity` other calls is refused instead.
   */
  readonly enter: (operation: Operation, admitted: () => void) => Ticket | Saturated
  /** Frees the slot of an admitted call; call it exactly once per admission. */
  readonly leave: () => void
}

/** A leader's calls: losing them loses a term, or delays the next one. */
const urgent = (operation: Operation): boolean => operation === "renew" || operation === "release"

const admittedAtOnce: Ticket = { cancel: () => false }

/** A gate over `capacity` connections. */
export const make = (capacity: number): Gate => {
  let free = capacity
  const leaders: Array<() => void> = []
  const others: Array<() => void> = []
  const withdraw = (queue: Array<() => void>, waiter: () => void): boolean => {
    const index = queue.indexOf(waiter)
    if (index < 0) return false
    queue.splice(index, 1)
    return true
  }
  return {
    enter: (operation, admitted) => {
      if (free > 0) {
        free -= 1
        admitted()
        return admittedAtOnce
      }
      const queue = urgent(operation) ? leaders : others
      if (operation === "inspect" && others.length >= waitingLimit(capacity)) return stackless(() => new Saturated({ operation, capacity }))
      // A fresh function per call: its identity is what `cancel` looks for.
      const waiter = () => admitted()
      queue.push(waiter)
      return { cancel: () => withdraw(queue, waiter) }
    },
    leave: () => {
      const next = leaders.shift() ?? others.shift()
      if (next === undefined) free += 1
      else next()
    }
  }
}

/** What {@link use} needs from a driver's pool and connections. */
export interface Driver<C, A> {
  /** Checks a connection out of the pool. */
  readonly connect: (callback: (error: Error | undefined, connection: C | undefined) => void) => void
  /** Runs the call's request on `connection`. */
  readonly run: (connection: C, callback: (error: Error | undefined, result: A) => void) => void
  /**
   * Puts `connection` back in the pool after its request ended with `error`
   * (`undefined`: it succeeded), or destroys it when that error leaves it
   * unusable. An error of the gate's own means the request never answered.
   */
  readonly release: (connection: C, error: Error | undefined) => void
}

/**
 * What the end of a call becomes: the driver's result, through `answer`
 * (decoded, say), or an error of the gate or the driver, through `failure`
 * (classified). Applied where the call ends, so that the caller's fiber runs
 * no further step to map them.
 */
export interface Ending<A, B, E> {
  readonly answer: (result: A) => Effect.Effect<B, E>
  readonly failure: (error: Error) => E
}

/**
 * One call through `gate` on `driver`'s pool, bounded by `timeout` (waiting
 * for a slot and a connection included): on expiry the caller gets an
 * {@link OperationTimeout} at once. See the module's note.
 *
 * The deadline is kept by the process's one timer fiber (see
 * `internal/deadlines.ts`), not `Effect.timeout`, which would run the call in
 * a fiber of its own beside a fiber that sleeps, and join them.
 */
export const use = <C, A, B, E>(
  gate: Gate,
  timeout: Duration.Duration,
  grace: Duration.Duration,
  operation: Operation,
  driver: Driver<C, A>,
  ending: Ending<A, B, E>
): Effect.Effect<B, E> =>
  Effect.withFiberRuntime<B, E>((fiber) => {
    const clock = Context.get(fiber.currentDefaultServices, Clock.Clock)
    return Effect.async<B, E>((resume) => {
      const scheduler = fiber.currentScheduler
      // The caller has its answer, or stopped waiting (interrupted, timed out).
      let over = false
      // The slot is free again and the connection, if any, back or destroyed.
      let settled = false
      let held: C | undefined
      let cancelDeadline: (() => void) | undefined
      let cancelGrace: (() => void) | undefined
      const settle = (error: Error | undefined): void => {
        if (settled) return
        settled = true
        cancelGrace?.()
        if (held !== undefined) driver.release(held, error)
        gate.leave()
      }
      const answer = (result: Effect.Effect<B, E>): void => {
        if (over) return
        over = true
        cancelDeadline?.()
        resume(result)
      }
      // The caller stopped waiting: a call still queued is withdrawn, and a
      // statement still running keeps its slot, for `grace` at most.
      const abandon = (): void => {
        over = true
        cancelDeadline?.()
        if (settled || ticket.cancel()) return
        cancelGrace = Deadlines.schedule(
          clock,
          scheduler,
          clock.unsafeCurrentTimeNanos() + Duration.unsafeToNanos(grace),
          () => settle(new Error(`no answer ${Duration.format(grace)} after the call gave up; connection destroyed`))
        )
      }
      const entered = gate.enter(operation, () =>
        driver.connect((error, connection) => {
          if (connection === undefined) {
            settle(undefined)
            return answer(Effect.fail(ending.failure(error ?? new Error("the pool returned no connection"))))
          }
          if (over) {
            // Given up while connecting: the new connection is healthy.
            driver.release(connection, undefined)
            return settle(undefined)
          }
          held = connection
          driver.run(connection, (error, result) => {
            settle(error)
            answer(error === undefined ? ending.answer(result) : Effect.fail(ending.failure(error)))
          })
        })
      )
      if (entered instanceof Saturated) return resume(Effect.fail(ending.failure(entered)))
      const ticket: Ticket = entered
      // Answered already, synchronously: no deadline to keep.
      if (over) return
      cancelDeadline = Deadlines.schedule(clock, scheduler, clock.unsafeCurrentTimeNanos() + Duration.unsafeToNanos(timeout), () => {
        abandon()
        resume(Effect.fail(ending.failure(stackless(() => new OperationTimeout({ timeout })))))
      })
      return Effect.sync(abandon)
    })
  })
