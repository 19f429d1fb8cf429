/**
 * A fiber that makes store calls one after another (an elector's loop, its
 * renewals) and ends the call it has in flight itself, when it stops,
 * instead of handing Effect a canceller for every call.
 *
 * A canceller costs the call more than it seems: Effect runs the call inside
 * an uninterruptible region with a handler for the interruption, whose
 * options are allocated, once V8 has seen a process start in a burst, in the
 * old generation, and from there hold the call's frames, closures and work
 * until the next full collection: with thousands of loops, a large share of
 * all promotion (see docs/performance.md). A loop is stopped once in its
 * life: its release (loop.ts) does the canceller's work for all its calls,
 * once.
 *
 * Only the fiber that runs as the caller uses it: a fiber forked inside is
 * not it, and its calls keep their cancellers.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import type * as Fiber from "effect/Fiber"
import * as Runtime from "./runtime.js"

/** A call in flight. */
export interface Call {
  /** The caller stopped waiting for it: what its canceller would have done. */
  readonly abandon: () => void
}

// Not a FiberRef: setting one copies the fiber's map of them, for every loop.
const callers = Runtime.shared("callers", () => new WeakMap<Fiber.RuntimeFiber<unknown, unknown>, Caller>())

/** @internal */
export class Caller {
  /**
   * No poll of this caller has been answered yet: it is joining the
   * election, and a SQL store does not shed its polls (see
   * stores/internal/admission.ts). The store's gate clears it.
   */
  joining = true
  private current: Call | undefined = undefined
  private fiber: Fiber.RuntimeFiber<unknown, unknown> | undefined = undefined

  /**
   * Records `call` as the one in flight. One still recorded was given up by
   * its caller (a fiber waits for one call at a time; only its
   * interruption, then a finalizer's call, comes in between), and is
   * abandoned.
   */
  calling(call: Call): void {
    const previous = this.current
    this.current = call
    previous?.abandon()
  }

  /** `call` has its answer, or was abandoned. */
  done(call: Call): void {
    if (this.current === call) this.current = undefined
  }

  /** The loop has stopped: abandons the call in flight, if any, and its fiber's calls get cancellers again. */
  stop(): void {
    if (this.fiber !== undefined) callers.delete(this.fiber)
    this.fiber = undefined
    const call = this.current
    this.current = undefined
    call?.abandon()
  }

  /** @internal */
  runOn(fiber: Fiber.RuntimeFiber<unknown, unknown>): void {
    this.fiber = fiber
    callers.set(fiber, this)
  }
}

/**
 * The caller that `fiber` runs as, if any.
 *
 * @internal
 */
export const of = (fiber: Fiber.RuntimeFiber<unknown, unknown>): Caller | undefined => callers.get(fiber)

/**
 * Runs `effect` on a fiber that is `caller`, which must be stopped once the
 * fiber has stopped: loop.ts starts every loop with that release.
 *
 * @internal
 */
export const run = <A, E, R>(caller: Caller, effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.withFiberRuntime<A, E, R>((fiber) => {
    caller.runOn(fiber)
    return effect
  })
