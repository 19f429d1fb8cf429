/**
 * A participant's follow loop while it runs, and the wake-up hints it takes
 * (see `Store.WakeUps`).
 *
 * @internal
 */
import type * as Loop from "../runtime/loop.js"

/**
 * The follow loop of a participant: its loop (the caller its store calls
 * name, its waits), whether a hint came since the current step started, and
 * whether the loop is in a wait a hint may cut short.
 *
 * @internal
 */
export class Following {
  private hinted = false
  private wakeable = false

  constructor(readonly loop: Loop.Handle) {}

  /** A step starts: a hint before it is answered by it. */
  stepping(): void {
    this.hinted = false
  }

  /** Whether a hint came since the step started. */
  wasHinted(): boolean {
    return this.hinted
  }

  /** Whether the wait about to start (or the one that just ended: `false`) may be cut short by a hint. */
  waking(wakeable: boolean): void {
    this.wakeable = wakeable
  }

  /** A hint came: remembered for the step, and it ends a wait that may be cut short. */
  hint(): void {
    this.hinted = true
    if (!this.wakeable) return
    this.wakeable = false
    this.loop.waits.wake()
  }
}
