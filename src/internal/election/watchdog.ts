/**
 * A term's watchdog (see {@link guarding}).
 *
 * @internal
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import type * as Scheduler from "effect/Scheduler"
import * as Deadlines from "../runtime/deadlines.js"
import * as Runtime from "../runtime/runtime.js"
import type { Published, StepDown } from "./published.js"

interface Watchdog {
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
const arm = (self: Published, stop: Deferred.Deferred<StepDown>, scheduler: Scheduler.Scheduler): Watchdog => {
  let disarm = (): void => {}
  let alarmAt = 0n
  const check = (): void => {
    const term = Option.getOrUndefined(self.current.term)
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

/**
 * Runs `use` with the watchdog of the term of `self` armed, and disarms it
 * when `use` ends, however it ends; `use` tells it of every deadline a
 * renewal moves.
 *
 * @internal
 */
export const guarding = <A, E, R>(
  self: Published,
  stop: Deferred.Deferred<StepDown>,
  use: (moved: (deadline: bigint) => void) => Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> =>
  Effect.flatMap(Runtime.scheduler, (scheduler) => {
    const guard = arm(self, stop, scheduler)
    return Effect.ensuring(use(guard.moved), Effect.sync(guard.disarm))
  })
