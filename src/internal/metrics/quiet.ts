/**
 * The retryable errors a process would otherwise log by the thousand,
 * logged at most once a minute per store: those of participants that have
 * had no answer from their store yet (a process started while its database
 * is down would log a warning at every poll of every election), and
 * followers' failed polls (a saturated pool sheds a request of hundreds of
 * them at once; a follower polls again at its next poll anyway). The
 * elections share one store, and one line a minute says as much as a
 * thousand. A leader's failed renewal, which may end its term, is logged
 * each time.
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Runtime from "../runtime/runtime.js"

/** How long a store's quieted errors stay quiet once one is logged. */
const quietFor = Duration.unsafeToNanos(Duration.minutes(1))

interface Quiet {
  /** Monotonic nanoseconds, on the clock of the participant that logged. */
  loggedAt: bigint
  /** Errors not logged since. */
  suppressed: number
}

/** Keyed by the store instance: electors over one store share its entry, and it goes with the store. */
const quiet = Runtime.shared("quietedErrors", () => new WeakMap<object, Quiet>())

/**
 * Logs `message` at WARN: each time when `why` is undefined; otherwise it
 * stays quiet when an error of `store` was logged less than a minute before
 * `now` (the participant's monotonic clock), and counts it: the next line
 * logged says why it is quieted and how many were not logged. A participant
 * on a clock behind the one that logged (a simulation's) logs rather than
 * stays quiet.
 *
 * @internal
 */
export const warn = (
  store: object,
  why: string | undefined,
  now: bigint,
  message: string
): Effect.Effect<void> =>
  Effect.suspend(() => {
    if (why === undefined) return Effect.logWarning(message)
    const entry = quiet.get(store)
    if (entry !== undefined && now >= entry.loggedAt && now - entry.loggedAt < quietFor) {
      entry.suppressed++
      return Effect.void
    }
    const suppressed = entry?.suppressed ?? 0
    quiet.set(store, { loggedAt: now, suppressed: 0 })
    return Effect.logWarning(
      `${message} (${why}; repeats are logged at most once a minute per store${
        suppressed > 0 ? `, ${suppressed} not logged since the last` : ""
      })`
    )
  })
