import * as Duration from "effect/Duration"
import * as Lease from "../../Lease.js"

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
  jitteredMillis(Duration.toMillis(period), u)

// In plain milliseconds, so that a follower's step builds one Duration, the
// wait it returns: these run at every poll of every elector.
const jitteredMillis = (period: number, u: number): Duration.Duration =>
  Duration.millis(Math.floor(period * (0.5 + u / 2)))

/**
 * The longest a follower's poll period grows to after failed calls: this
 * many times retryPeriod.
 *
 * @internal
 */
export const maxBackoffFactor = 4

/**
 * A follower's poll delay after `failures` polls or claims in a row that
 * failed with retryable errors
 * (`u` in [0, 1) for the jitter): the period doubles with each failure, up to
 * {@link maxBackoffFactor} times `period` but never past `cap` (the lease, so
 * a follower under overload still looks at least once per lease), and never
 * under `period`. No failure: the plain {@link jittered} period. A store
 * that sheds polls or times them out (overload) then gets fewer of them,
 * instead of every follower piling on.
 *
 * @internal
 */
export const backoff = (
  period: Duration.Duration,
  failures: number,
  cap: Duration.Duration,
  u: number
): Duration.Duration => {
  const base = Duration.toMillis(period)
  const grown = base * 2 ** Math.min(failures, Math.log2(maxBackoffFactor))
  return jitteredMillis(Math.max(base, Math.min(grown, Duration.toMillis(cap))), u)
}

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

/**
 * How long after sending a renewal a leader sends the next one, in whole
 * milliseconds. Never later than `interval`, which the timing invariant counts
 * on, but drawn earlier so that leaders elected together do not renew
 * together forever: for `u` in [0, 1), the first renewal of a term falls in
 * (interval/2, interval] (the terms start spread over half a cycle), every
 * later one in (interval * 9/10, interval] (they go on drifting apart, for at
 * most a twentieth more renewals on average). At least a millisecond.
 *
 * @internal
 */
export const renewalDelay = (interval: Duration.Duration, u: number, first: boolean): Duration.Duration =>
  Duration.millis(Math.max(1, Math.floor(Duration.toMillis(interval) * (1 - (first ? 0.5 : 0.1) * u))))

/**
 * How much faster than the database's a follower's clock may run with its
 * claims still landing at or after the expiry: one part in a thousand, twice
 * the most NTP ever slews a clock (500 ppm). A claim that lands early anyway
 * (a faster clock) is refused by the database, whose reply carries the lease's
 * new remaining time to wait on: it costs a round trip, never safety.
 *
 * @internal
 */
export const claimRateTolerance = 1 / 1000

/**
 * Leases carry their instants in whole milliseconds: a remaining time may be
 * short by up to one.
 *
 * @internal
 */
export const claimSlack = Duration.millis(1)

/**
 * How long after a reply that showed a lease valid for `ttl` more (both ends
 * from one database statement) a follower waits before claiming it, in whole
 * milliseconds. The database read its clock somewhere between send and
 * reply, so counted from the reply the lease has expired by `ttl` plus the
 * rounding of its timestamps; stretched by the clock-rate tolerance, that
 * wait on the follower's clock does not end before the expiry.
 *
 * @internal
 */
export const untilClaimable = (ttl: Duration.Duration): Duration.Duration =>
  Duration.millis(untilClaimableMillis(Duration.toMillis(ttl)))

const claimSlackMillis = Duration.toMillis(claimSlack)

const untilClaimableMillis = (ttl: number): number => Math.ceil((ttl + claimSlackMillis) * (1 + claimRateTolerance))

/**
 * A follower's next step after seeing someone else's valid lease: a claim at
 * the instant the lease can first be claimed (see {@link untilClaimable},
 * counted from the reply, `elapsed` ago, and rounded up to a whole
 * millisecond) when that comes no later than the next poll, `poll` from now;
 * the poll otherwise, which a release is noticed by. `ttl` and `elapsed` are
 * in milliseconds, as a follower has them at every poll, without a Duration
 * built for each.
 *
 * @internal
 */
export const nextStep = (
  poll: Duration.Duration,
  ttl: number,
  elapsed: number
): { readonly claim: boolean; readonly wait: Duration.Duration } => {
  const claim = Math.max(0, Math.ceil(untilClaimableMillis(ttl) - elapsed))
  return claim <= Duration.toMillis(poll) ? { claim: true, wait: Duration.millis(claim) } : { claim: false, wait: poll }
}
