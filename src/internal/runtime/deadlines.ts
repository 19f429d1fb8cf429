/**
 * Deadlines of calls in flight, and the waits of electors' loops, kept by one
 * timer fiber per clock for the whole process: every elector's store calls,
 * watchdog alarms and waits between steps, and every SQL store's gate share
 * it, so that neither a call nor an elector needs a timer of its own. The
 * fiber sleeps until the earliest deadline still open, passes over the ones
 * cancelled already, and stops as soon as none is open, so an idle process
 * holds no timer.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import type * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Fiber from "effect/Fiber"
import type * as Scheduler from "effect/Scheduler"
import * as Runtime from "./runtime.js"

/**
 * A deadline set on a clock's timer (see {@link add}).
 *
 * @internal
 */
export interface Entry {
  /** Nanoseconds on the timer's clock. */
  readonly at: bigint
  /** Undefined once expired or cancelled. */
  expire: (() => void) | undefined
  readonly timer: Timer
}

/** The deadlines of one clock. */
interface Timer {
  /** A binary min-heap on `at`; cancelled entries stay until they come up. */
  readonly heap: Array<Entry>
  /** Entries still to be kept. */
  open: number
  fiber: Fiber.RuntimeFiber<void> | undefined
  /** When the fiber wakes next (meaningful while it sleeps). */
  wakeAt: bigint
}

const earlier = (heap: Array<Entry>, i: number, j: number): boolean => heap[i]!.at < heap[j]!.at

const swap = (heap: Array<Entry>, i: number, j: number): void => {
  const entry = heap[i]!
  heap[i] = heap[j]!
  heap[j] = entry
}

const push = (heap: Array<Entry>, entry: Entry): void => {
  heap.push(entry)
  let i = heap.length - 1
  while (i > 0) {
    const parent = (i - 1) >> 1
    if (!earlier(heap, i, parent)) return
    swap(heap, i, parent)
    i = parent
  }
}

const pop = (heap: Array<Entry>): void => {
  const last = heap.pop()!
  if (heap.length === 0) return
  heap[0] = last
  let i = 0
  while (true) {
    const left = 2 * i + 1
    const right = left + 1
    let least = i
    if (left < heap.length && earlier(heap, left, least)) least = left
    if (right < heap.length && earlier(heap, right, least)) least = right
    if (least === i) return
    swap(heap, i, least)
    i = least
  }
}

const timers = Runtime.shared("deadlines", () => new WeakMap<Clock.Clock, Timer>())

const run = (clock: Clock.Clock, timer: Timer): Effect.Effect<void> =>
  Effect.gen(function*() {
    while (timer.open > 0) {
      const next = timer.heap[0]!
      const expire = next.expire
      const wait = next.at - clock.unsafeCurrentTimeNanos()
      if (expire !== undefined && wait > 0n) {
        timer.wakeAt = next.at
        yield* clock.sleep(Duration.nanos(wait))
        continue
      }
      pop(timer.heap)
      if (expire === undefined) continue
      next.expire = undefined
      timer.open -= 1
      // A throw would end the fiber and, with it, every deadline after this
      // one (an elector's watchdog alarm among them) until the next is set.
      try {
        expire()
      } catch (error) {
        yield* Effect.logError("a deadline's expiry threw; the deadlines after it are kept", Cause.die(error))
      }
    }
    timer.fiber = undefined
  })

const start = (clock: Clock.Clock, scheduler: Scheduler.Scheduler, timer: Timer): void => {
  // Until it sleeps, the new fiber has yet to read the earliest deadline. It
  // starts on the scheduler, not on this stack: `expire` never runs inside
  // `schedule`.
  timer.wakeAt = 0n
  timer.fiber = Runtime.forkLater(run(clock, timer), scheduler)
}

const stop = (timer: Timer): void => {
  if (timer.fiber !== undefined) Runtime.interruptNow(timer.fiber)
  timer.fiber = undefined
}

/**
 * Sets the deadline `at` on the timer of `clock`; see {@link schedule}. For
 * a caller that keeps the entry where it keeps the rest of its state, rather
 * than in a closure of its own.
 *
 * @internal
 */
export const add = (clock: Clock.Clock, scheduler: Scheduler.Scheduler, at: bigint, expire: () => void): Entry => {
  let timer = timers.get(clock)
  if (timer === undefined) {
    timer = { heap: [], open: 0, fiber: undefined, wakeAt: 0n }
    timers.set(clock, timer)
  }
  const entry: Entry = { at, expire, timer }
  push(timer.heap, entry)
  timer.open += 1
  // None running, or it was ended from outside: a fresh one takes over.
  if (timer.fiber === undefined || !Runtime.isRunning(timer.fiber)) start(clock, scheduler, timer)
  else if (at < timer.wakeAt) {
    // Earlier than the instant the fiber sleeps until: a fresh one takes over.
    stop(timer)
    start(clock, scheduler, timer)
  }
  return entry
}

/**
 * Takes back `entry` unless it has expired; drops its `expire` either way,
 * so that an entry kept longer than its deadline keeps nothing alive.
 *
 * @internal
 */
export const cancel = (entry: Entry): void => {
  if (entry.expire === undefined) return
  entry.expire = undefined
  const { timer } = entry
  timer.open -= 1
  // Nothing open: every entry left is cancelled. The fiber is not stopped:
  // it ends at its next wake-up unless a deadline is set before, so that
  // calls one after the other do not each stop it and start a new one.
  if (timer.open === 0) timer.heap.length = 0
}

/**
 * Calls `expire` once `clock` reaches `at` (nanoseconds), unless the function
 * returned is called first; that function does nothing after `expire` ran.
 * The timer's fiber runs on the caller's `scheduler` (a simulation's virtual
 * one goes with its virtual clock).
 *
 * @internal
 */
export const schedule = (
  clock: Clock.Clock,
  scheduler: Scheduler.Scheduler,
  at: bigint,
  expire: () => void
): () => void => {
  const entry = add(clock, scheduler, at, expire)
  return () => cancel(entry)
}

/**
 * Stops the timer of `clock` at once when no deadline is open, rather than
 * at its next wake-up (up to the longest deadline later), so that it does not
 * keep a process that is done alive: electors call it when they shut down.
 *
 * @internal
 */
export const quiesce = (clock: Clock.Clock): void => {
  const timer = timers.get(clock)
  if (timer !== undefined && timer.open === 0) stop(timer)
}

/**
 * The fiber keeping the deadlines of `clock`, if one runs.
 *
 * @internal
 */
export const fiberOf = (clock: Clock.Clock): Fiber.RuntimeFiber<void> | undefined => timers.get(clock)?.fiber

/**
 * The grain of a loop's routine waits, in nanoseconds (see {@link Waits}).
 * Spread by jitter, each such wait would wake the timer fiber on its own;
 * ended on the grain, the ones due within one grain share a wake-up. Each
 * wake-up of a fiber is Effect's async machinery and scheduling, promoted to
 * the old generation often enough to matter: thousands of loops' wake-ups a
 * second become at most one per grain.
 *
 * @internal
 */
export const grain = 20_000_000n

/**
 * A loop's waits, kept by the deadline timer of `clock` rather than by
 * `clock.sleep`. `clock.sleep` is an `Effect.async` with a canceller, which
 * Effect runs inside an uninterruptible region with a handler for the
 * interruption: its frames and closures stay on the fiber for the whole
 * wait. An elector waits seconds between steps, so they outlive the young
 * generation's collections and are promoted, only to die in the old one, in
 * a heap that V8 lets grow to several times what is live.
 *
 * `until(at)` suspends the fiber until `clock` reaches `at` (nanoseconds),
 * with nothing on its stack but the wait. Interrupting the fiber ends the
 * wait at once, as it ends `clock.sleep`, but leaves its deadline set: the
 * loop's release (loop.ts) calls `cancel` once it has stopped (left, the deadline would
 * keep the timer, and the process, alive until it falls), or the loop's next
 * wait takes it back. A loop is one fiber, waiting for one thing at a time.
 *
 * `by(at)` is `until` for a routine step (a poll, a renewal), which may come
 * early but never late: it ends at the last multiple of the {@link grain} at
 * or before `at`, so that routine steps due within one grain share the
 * timer's wake-up; at `at` itself when that multiple is not in the future
 * (a wait shorter than the grain), so that no loop runs its steps back to
 * back. A step whose instant matters (a claim at a lease's expiry) waits
 * with `until`.
 *
 * @internal
 */
export interface Waits {
  readonly until: (at: bigint) => Effect.Effect<void>
  readonly by: (at: bigint) => Effect.Effect<void>
  /** Takes back the deadline of the wait in progress, if any. */
  readonly cancel: () => void
  /** Ends the wait in progress now, as its deadline would; nothing when none is in progress. */
  readonly wake: () => void
}

/**
 * Waits for one loop, run on `scheduler` (see {@link Waits}).
 *
 * @internal
 */
export const waits = (clock: Clock.Clock, scheduler: Scheduler.Scheduler): Waits => {
  // The wait in progress: its deadline, and the fiber's resumption. One
  // expiry serves every wait of the loop, so that a wait, which lasts
  // seconds, keeps no closure of its own beyond Effect's.
  let pending: Entry | undefined
  let resume: ((effect: Effect.Effect<void>) => void) | undefined
  const expire = (): void => {
    const waiting = resume
    pending = undefined
    resume = undefined
    waiting?.(Effect.void)
  }
  const takeBack = (): void => {
    const taken = pending
    pending = undefined
    resume = undefined
    if (taken !== undefined) cancel(taken)
  }
  const until = (at: bigint): Effect.Effect<void> =>
    Effect.async<void>((waiting) => {
      // A deadline left by a wait that was interrupted must not end this one.
      takeBack()
      resume = waiting
      pending = add(clock, scheduler, at, expire)
    })
  return {
    until,
    by: (at) => {
      // The remainder taken the same way for instants before the clock's zero (a virtual clock's).
      const early = at - ((at % grain) + grain) % grain
      return until(early > clock.unsafeCurrentTimeNanos() ? early : at)
    },
    cancel: takeBack,
    wake: () => {
      const waiting = resume
      takeBack()
      waiting?.(Effect.void)
    }
  }
}
