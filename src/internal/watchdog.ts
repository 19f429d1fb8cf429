/**
 * A term's watchdog (see {@link arm}).
 *
 * @internal
 */
import * as Deferred from "effect/Deferred"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import type * as Scheduler from "effect/Scheduler"
import * as Deadlines from "./deadlines.js"
import type { Published, StepDown } from "./published.js"

/** @internal */
export interface Watchdog {
  /** A renewal moved the deadline to `deadline`. */
  readonly moved: (deadline: bigint) => void
  readonly disarm: () => void
}

// Ends the term at its deadline. It reads nothing but the clock and the
// deadline the renewals leave behind, so no store call can delay it. It
// is an alarm on the process's deadline timer (deadlines.ts), not a
// fiber of its own: when it goes off, the term ends unless a renewal has
// moved the deadline later since, and then the next alarm is set for the
// deadline in force. A renewal that moves the deadline later leaves the
// alarm be; only an earlier one moves it.
export const arm = (self: Published, stop: Deferred.Deferred<StepDown>, scheduler: Scheduler.Scheduler): Watchdog => {
  let disarm = (): void => {}
  let alarmAt = 0n
  const check = (): void => {
    const term = Option.getOrUndefined(self.state.term)
    if (term === undefined || self.nanos() >= term.deadline) {
      Deferred.unsafeDone(stop, Exit.succeed("expired"))
      return
    }
    alarmAt = term.deadline
    disarm = Deadlines.schedule(self.clock, scheduler, alarmAt, check)
  }
  check()
  return {
    moved: (deadline: bigint): void => {
      if (deadline >= alarmAt) return
      disarm()
      check()
    },
    disarm: () => disarm()
  }
}
