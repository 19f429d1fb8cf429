/**
 * A loop that makes store calls one after another (an elector's loop, its
 * renewals) and ends the call it has in flight itself, when it stops,
 * instead of handing Effect a canceller for every call. It reaches the store
 * in the loop's call context (`Store.CallContext`, see loop.ts): a fiber the
 * elector forks from the loop is detached from it, and its calls keep their
 * cancellers.
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
 * @internal
 */
import type * as Store from "../../Store.js"

/** @internal */
export class Caller implements Store.Caller {
  private current: Store.InFlight | undefined = undefined

  /**
   * Records `call` as the one in flight. One still recorded was given up by
   * its caller (a fiber waits for one call at a time; only its
   * interruption, then a finalizer's call, comes in between), and is
   * abandoned.
   */
  calling(call: Store.InFlight): void {
    const previous = this.current
    this.current = call
    previous?.abandon()
  }

  /** `call` has its answer, or was abandoned. */
  done(call: Store.InFlight): void {
    if (this.current === call) this.current = undefined
  }

  /** The loop has stopped: abandons the call in flight, if any. */
  stop(): void {
    const call = this.current
    this.current = undefined
    call?.abandon()
  }
}
