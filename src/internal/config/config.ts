import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Predicate from "effect/Predicate"
import { randomBytes } from "node:crypto"
import { hostname } from "node:os"
import type { ElectorConfig, ResolvedConfig } from "../../Elector.js"
import { IdentityError, InvalidConfig } from "../../ElectorError.js"
import * as limits from "./limits.js"
import * as timing from "./timing.js"

/** @internal */
export { formatDuration } from "./limits.js"

/**
 * hostname-pid-random. The random part is what keeps a restarted process
 * from renewing a lease its stalled predecessor still believes it holds.
 *
 * @internal
 */
export const generateIdentity: Effect.Effect<string, IdentityError> = Effect.try({
  try: () => `${hostname()}-${process.pid}-${randomBytes(6).toString("hex")}`,
  catch: (cause) => new IdentityError({ cause })
})

type DurationField =
  | "workFailureBackoff"
  | "resignHoldOff"
  | "preemptAfter"

/** The fields a config may carry, each refused with its name when it has the wrong type. */
const optional = (
  field: string,
  value: unknown,
  accepts: (u: unknown) => boolean,
  expected: string
): Either.Either<void, InvalidConfig> =>
  value === undefined || accepts(value)
    ? Either.void
    : Either.left(new InvalidConfig({ field, reason: `must be ${expected} when set, got ${limits.kind(value)}` }))

// Durations of one length, resolved for any number of electors, are one
// object: a process may run thousands of electors with the same few lengths
// (each config's own Durations, and those derived from them, would be kept
// per elector). Bounded, so that many distinct lengths cannot grow it.
const lengths = new Map<bigint, Duration.Duration>()
const sharedLengths = 256

/** The one Duration kept for the length of `duration` (finite, as resolved durations are). */
const shared = (duration: Duration.Duration): Duration.Duration => {
  const nanos = Duration.unsafeToNanos(duration)
  const kept = lengths.get(nanos)
  if (kept !== undefined) return kept
  if (lengths.size >= sharedLengths) lengths.clear()
  lengths.set(nanos, duration)
  return duration
}

/**
 * Fills in defaults and refuses, naming the field to change: any field
 * of the wrong type, anything outside the limits of `Lease`, and any
 * configuration that leaves a leader no room to lose one renewal outright and
 * still complete a second attempt before it must step down (see timing.ts).
 *
 * @internal
 */
export const resolve = (config: ElectorConfig): Effect.Effect<ResolvedConfig, InvalidConfig | IdentityError> =>
  Effect.gen(function*() {
    if (!Predicate.isRecord(config)) {
      return yield* new InvalidConfig({ field: "config", reason: `must be an object, got ${limits.kind(config)}` })
    }
    const name = yield* limits.name(config.name)
    const identity = config.identity === undefined ? undefined : yield* limits.identity(config.identity)
    const payload = yield* limits.payload(config.payload ?? null)
    const duration = (field: DurationField, fallback: Duration.Duration) =>
      config[field] === undefined ? Either.right(fallback) : limits.duration(field, config[field])
    const { leaseDuration, operationTimeout, renewInterval, retryDelay, retryPeriod, safetyMargin } = yield* timing
      .resolve(config)
    yield* optional("disableRelease", config.disableRelease, Predicate.isBoolean, "a boolean")
    yield* optional("onStartedLeading", config.onStartedLeading, Predicate.isFunction, "a function")
    yield* optional("onNewLeader", config.onNewLeader, Predicate.isFunction, "a function")
    yield* optional("onStoppedLeading", config.onStoppedLeading, Effect.isEffect, "an Effect")
    const onWorkFailure = config.onWorkFailure ?? "stepDown"
    if (onWorkFailure !== "stepDown" && onWorkFailure !== "keepLeading") {
      return yield* new InvalidConfig({
        field: "onWorkFailure",
        reason: `must be "stepDown" or "keepLeading", got ${JSON.stringify(String(onWorkFailure))}`
      })
    }
    const workFailureBackoff = yield* duration("workFailureBackoff", leaseDuration)
    const resignHoldOff = yield* duration("resignHoldOff", leaseDuration)
    const candidacy = config.priority === undefined && config.version === undefined ? null : {
      priority: yield* limits.priority(config.priority ?? 0),
      version: yield* limits.version(config.version ?? null)
    }
    const versionPolicy = config.versionPolicy ?? "newer"
    if (versionPolicy !== "newer" && versionPolicy !== "older") {
      return yield* new InvalidConfig({
        field: "versionPolicy",
        reason: `must be "newer" or "older", got ${JSON.stringify(String(versionPolicy))}`
      })
    }
    const preemptAfter = yield* duration("preemptAfter", Duration.times(leaseDuration, 2))
    yield* optional("failFast", config.failFast, Predicate.isBoolean, "a boolean")
    return {
      name,
      identity: identity ?? (yield* generateIdentity),
      payload,
      leaseDuration: shared(leaseDuration),
      renewInterval: shared(renewInterval),
      retryPeriod: shared(retryPeriod),
      operationTimeout: shared(operationTimeout),
      safetyMargin: shared(safetyMargin),
      retryDelay: shared(retryDelay),
      disableRelease: config.disableRelease ?? false,
      onWorkFailure,
      workFailureBackoff: shared(workFailureBackoff),
      resignHoldOff: shared(resignHoldOff),
      candidacy,
      versionPolicy,
      preemptAfter: shared(preemptAfter),
      // Outlives one lost advertisement: two polls, each up to retryPeriod
      // apart and taking up to operationTimeout.
      candidateTtl: shared(Duration.times(Duration.sum(retryPeriod, operationTimeout), 2)),
      failFast: config.failFast ?? false
    }
  })
