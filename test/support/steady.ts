import { Effect, Random } from "effect"

/**
 * Runs `effect` (an elector's `run`) with its jitter pinned, every draw 0:
 * renewals at exactly renewInterval, polls at exactly retryPeriod/2, so that a
 * unit test on TestClock can name the instant of every store call. The jitter
 * itself is tested in test/properties/Backoff.test.ts and
 * test/ElectorSchedule.test.ts.
 */
export const steady = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.withRandom(effect, Random.fixed([0]))
