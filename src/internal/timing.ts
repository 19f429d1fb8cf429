import * as Duration from "effect/Duration"
import * as Lease from "../Lease.js"

/** @internal */
export const minRetryDelay = Duration.millis(50)

/**
 * How long a leader waits before retrying a renewal that failed.
 *
 * @internal
 */
export const retryDelay = (renewInterval: Duration.Duration): Duration.Duration =>
  Duration.max(Duration.nanos(Duration.unsafeToNanos(renewInterval) / 4n), minRetryDelay)

/**
 * The default margin: a tenth of the lease, and never under a second.
 *
 * @internal
 */
export const defaultSafetyMargin = (leaseDuration: Duration.Duration): Duration.Duration =>
  Duration.max(Duration.nanos(Duration.unsafeToNanos(leaseDuration) / 10n), Duration.seconds(1))

/**
 * A follower's poll delay: uniform over [period/2, period) for `u` in [0, 1),
 * so a fleet that started together spreads out, and no poll waits longer
 * than the period itself.
 *
 * @internal
 */
export const jittered = (period: Duration.Duration, u: number): Duration.Duration =>
  Duration.millis(Math.floor(Duration.toMillis(period) * (0.5 + u / 2)))

/**
 * The local instant (monotonic nanoseconds) at which a term must end: the
 * database's remaining lease, never believed longer than what was asked for,
 * counted from when the request was sent and less the safety margin.
 *
 * @internal
 */
export const localDeadline = (
  sentAt: bigint,
  lease: Lease.Lease,
  requested: Duration.Duration,
  safetyMargin: Duration.Duration
): bigint =>
  sentAt + Duration.unsafeToNanos(Duration.min(Lease.ttl(lease), requested)) -
  Duration.unsafeToNanos(safetyMargin)
