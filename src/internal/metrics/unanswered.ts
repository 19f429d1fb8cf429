/**
 * The retryable errors of participants that have had no answer from their
 * store yet, logged at most once a minute per store. A process started
 * while its database is down would otherwise log a warning at every poll of
 * every election: they all share one store, and one line a minute says as
 * much as a thousand.
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Runtime from "../runtime/runtime.js"

/** How long a store's unanswered errors stay quiet once one is logged. */
const quietFor = Duration.unsafeToNanos(Duration.minutes(1))

interface Quiet {
  /** Monotonic nanoseconds, on the clock of the participant that logged. */
  loggedAt: bigint
  /** Errors not logged since. */
  suppressed: number
}

/** Keyed by the store instance: electors over one store share its entry, and it goes with the store. */
const quiet = Runtime.shared("unansweredErrors", () => new WeakMap<object, Quiet>())

/**
 * Logs `message` at WARN. Before the participant's first answer
 * (`observedAt` none), it stays quiet when an error of `store` was logged
 * less than a minute before `now` (the participant's monotonic clock), and
 * counts it: the next line logged says how many were not. A participant on
 * a clock behind the one that logged (a simulation's) logs rather than
 * stays quiet.
 *
 * @internal
 */
export const warn = (
  store: object,
  observedAt: Option.Option<unknown>,
  now: bigint,
  message: string
): Effect.Effect<void> =>
  Effect.suspend(() => {
    if (Option.isSome(observedAt)) return Effect.logWarning(message)
    const entry = quiet.get(store)
    if (entry !== undefined && now >= entry.loggedAt && now - entry.loggedAt < quietFor) {
      entry.suppressed++
      return Effect.void
    }
    const suppressed = entry?.suppressed ?? 0
    quiet.set(store, { loggedAt: now, suppressed: 0 })
    return Effect.logWarning(
      `${message} (no answer from the store yet; repeats are logged at most once a minute per store${
        suppressed > 0 ? `, ${suppressed} not logged since the last` : ""
      })`
    )
  })
