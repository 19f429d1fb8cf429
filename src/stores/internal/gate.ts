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
import type * as Clock from "effect/Clock"
import * as Data from "effect/Data"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Fiber from "effect/Fiber"
import type * as Scheduler from "effect/Scheduler"
import * as Caller from "../../internal/caller.js"
import * as Deadlines from "../../internal/deadlines.js"
import * as Runtime from "../../internal/runtime.js"
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
    return `${this.operation} shed: all ${this.capacity} connections are busy and ${
      waitingLimit(this.capacity)
    } calls already wait`
  }
}

/** A call waiting for admission, or admitted. */
export interface Waiter {
  /** Runs once the call holds a slot (maybe at once, synchronously, inside `enter`). */
  readonly admitted: () => void
}

export interface Gate {
  /**
   * Admits `waiter`'s call for `operation`: `waiter.admitted()` runs once a
   * slot is free (maybe at once, synchronously). A poll that would have to
   * queue behind twice `capacity` other calls is refused instead.
   */
  readonly enter: (operation: Operation, waiter: Waiter) => Saturated | undefined
  /** Takes back a call still waiting; false when it was already admitted (it then holds a slot). */
  readonly withdraw: (waiter: Waiter) => boolean
  /** Frees the slot of an admitted call; call it exactly once per admission. */
  readonly leave: () => void
}

/** A leader's calls: losing them loses a term, or delays the next one. */
const urgent = (operation: Operation): boolean => operation === "renew" || operation === "release"

/** A gate over `capacity` connections. */
export const make = (capacity: number): Gate => {
  let free = capacity
  const leaders: Array<Waiter> = []
  const others: Array<Waiter> = []
  const remove = (queue: Array<Waiter>, waiter: Waiter): boolean => {
    const index = queue.indexOf(waiter)
    if (index < 0) return false
    queue.splice(index, 1)
    return true
  }
  return {
    enter: (operation, waiter) => {
      if (free > 0) {
        free -= 1
        waiter.admitted()
        return undefined
      }
      if (operation === "inspect" && others.length >= waitingLimit(capacity)) {
        return stackless(() => new Saturated({ operation, capacity }))
      }
      ;(urgent(operation) ? leaders : others).push(waiter)
      return undefined
    },
    withdraw: (waiter) => remove(leaders, waiter) || remove(others, waiter),
    leave: () => {
      const next = leaders.shift() ?? others.shift()
      if (next === undefined) free += 1
      else next.admitted()
    }
  }
}

/** What {@link use} needs from a driver's pool and connections. */
export interface Driver<C, R, A> {
  /** Checks a connection out of the pool. */
  readonly connect: (callback: (error: Error | undefined, connection: C | undefined) => void) => void
  /** Runs a call's `request` on `connection`. */
  readonly run: (connection: C, request: R, callback: (error: Error | undefined, result: A) => void) => void
  /**
   * Puts `connection` back in the pool after its request ended with `error`
   * (`undefined`: it succeeded), or destroys it when that error leaves it
   * unusable. An error of the gate's own means the request never answered.
   */
  readonly release: (connection: C, error: Error | undefined) => void
}

/**
 * A store's connections as {@link use} runs calls on them, one for the
 * store's life: its gate, its driver over the pool, the bounds of every call,
 * and what an error of the gate or the driver becomes (classified), applied
 * where the call ends, so that the caller's fiber runs no further step to map
 * it.
 */
export interface Connections<C, R, A, E> {
  readonly gate: Gate
  readonly driver: Driver<C, R, A>
  /** Bounds every call, waiting for a slot and a connection included. */
  readonly timeout: Duration.Duration
  /** How long a statement whose caller gave up may still answer before its connection is destroyed. */
  readonly grace: Duration.Duration
  readonly failure: (operation: Operation, error: Error) => E
}

/**
 * One call in flight. Everything the call needs is a field, and every
 * callback it hands out is built in a method, so that it holds the call and
 * nothing else: the request, the decoding and the caller's resumption are
 * dropped as soon as they are used. Whatever keeps a callback after the call
 * (Effect's handler for the caller's interruption, a driver's request, a
 * timer entry, all of them kept for a while by objects the young generation's
 * collections do not free) keeps this object alone, not the call's work.
 */
class Call<C, R, A, B, E> implements Waiter, Caller.Call {
  /** The slot is free again and the connection, if any, back or destroyed. */
  private settled = false
  private connection: C | undefined = undefined
  /** The call's deadline; once the caller gave up, the grace of its statement. */
  private timer: Deadlines.Entry | undefined = undefined
  private readonly clock: Clock.Clock
  private readonly scheduler: Scheduler.Scheduler
  /** The loop that ends this call if it stops waiting (see `internal/caller.ts`); none: Effect's canceller does. */
  private readonly caller: Caller.Caller | undefined

  constructor(
    private readonly connections: Connections<C, R, A, E>,
    private readonly operation: Operation,
    private request: R | undefined,
    private answer: ((result: A) => Effect.Effect<B, E>) | undefined,
    /** Undefined once the caller has its answer, or stopped waiting (interrupted, timed out). */
    private resume: ((effect: Effect.Effect<B, E>) => void) | undefined,
    fiber: Fiber.RuntimeFiber<unknown, unknown>
  ) {
    this.clock = Runtime.clockOf(fiber)
    this.scheduler = Runtime.schedulerOf(fiber)
    this.caller = Caller.of(fiber)
  }

  /** Enters the gate; what the caller's interruption runs, unless the call ended already. */
  start(): Effect.Effect<void> | undefined {
    const { connections, operation } = this
    const shed = connections.gate.enter(operation, this)
    if (shed !== undefined) {
      this.reply(Effect.fail(connections.failure(operation, shed)))
      return undefined
    }
    // Answered already, synchronously: no deadline to keep.
    if (this.resume === undefined) return undefined
    this.timer = this.after(connections.timeout, () => this.expired())
    const { caller } = this
    if (caller === undefined) return Effect.sync(() => this.abandon())
    caller.calling(this)
    return undefined
  }

  admitted(): void {
    this.connections.driver.connect((error, connection) => this.connected(error, connection))
  }

  private connected(error: Error | undefined, connection: C | undefined): void {
    const { driver } = this.connections
    if (connection === undefined) {
      this.settle(undefined)
      return this.fail(error ?? new Error("the pool returned no connection"))
    }
    if (this.resume === undefined) {
      // Given up while connecting: the new connection is healthy.
      driver.release(connection, undefined)
      return this.settle(undefined)
    }
    this.connection = connection
    const request = this.request as R
    this.request = undefined
    driver.run(connection, request, (error, result) => this.ran(error, result))
  }

  private ran(error: Error | undefined, result: A): void {
    this.settle(error)
    if (error !== undefined) return this.fail(error)
    const { answer } = this
    if (answer !== undefined) this.reply(answer(result))
  }

  private fail(error: Error): void {
    this.reply(Effect.fail(this.connections.failure(this.operation, error)))
  }

  private reply(result: Effect.Effect<B, E>): void {
    const { resume } = this
    if (resume === undefined) return
    this.over()
    resume(result)
  }

  /** The caller stops waiting: its deadline is dropped, and with it what it would have needed. */
  private over(): void {
    this.resume = undefined
    this.answer = undefined
    if (this.timer !== undefined) Deadlines.cancel(this.timer)
    this.caller?.done(this)
  }

  private expired(): void {
    const { resume } = this
    this.abandon()
    const { failure, timeout } = this.connections
    resume?.(Effect.fail(failure(this.operation, stackless(() => new OperationTimeout({ timeout })))))
  }

  // The caller stopped waiting: a call still queued is withdrawn, and a
  // statement still running keeps its slot, for `grace` at most.
  abandon(): void {
    this.over()
    if (this.settled || this.connections.gate.withdraw(this)) {
      this.request = undefined
      return
    }
    const { grace } = this.connections
    this.timer = this.after(
      grace,
      () => this.settle(new Error(`no answer ${Duration.format(grace)} after the call gave up; connection destroyed`))
    )
  }

  private settle(error: Error | undefined): void {
    if (this.settled) return
    this.settled = true
    if (this.timer !== undefined) Deadlines.cancel(this.timer)
    const { connection } = this
    this.connection = undefined
    if (connection !== undefined) this.connections.driver.release(connection, error)
    this.connections.gate.leave()
  }

  private after(duration: Duration.Duration, expire: () => void): Deadlines.Entry {
    const { clock } = this
    return Deadlines.add(
      clock,
      this.scheduler,
      clock.unsafeCurrentTimeNanos() + Duration.unsafeToNanos(duration),
      expire
    )
  }
}

/**
 * One call for `operation` through the gate of `connections`, running
 * `request`, its result decoded by `answer` where the call ends. It is
 * bounded by the connections' timeout (waiting for a slot and a connection
 * included): on expiry the caller gets an {@link OperationTimeout} at once.
 * See the module's note.
 *
 * The deadline is kept by the process's one timer fiber (see
 * `internal/deadlines.ts`), not `Effect.timeout`, which would run the call in
 * a fiber of its own beside a fiber that sleeps, and join them.
 */
export const use = <C, R, A, B, E>(
  connections: Connections<C, R, A, E>,
  operation: Operation,
  request: R,
  answer: (result: A) => Effect.Effect<B, E>
): Effect.Effect<B, E> =>
  Effect.withFiberRuntime<B, E>((fiber) =>
    Effect.async<B, E>((resume) => new Call(connections, operation, request, answer, resume, fiber).start())
  )
