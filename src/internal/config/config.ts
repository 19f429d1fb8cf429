import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Predicate from "effect/Predicate"
import { randomBytes } from "node:crypto"
import { hostname } from "node:os"
import type { ElectorConfig, ResolvedConfig } from "../../Elector.js"
import { IdentityError, InvalidConfig } from "../../ElectorError.js"
import * as Lease from "../../Lease.js"
import { defaultSafetyMargin, retryDelay } from "../election/timing.js"
import * as limits from "./limits.js"
import { formatDuration } from "./limits.js"

/** @internal */
export const defaults = {
  leaseDuration: Duration.seconds(15),
  renewInterval: Duration.seconds(5),
  retryPeriod: Duration.seconds(3),
  operationTimeout: Duration.seconds(3)
} as const

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
  | "leaseDuration"
  | "renewInterval"
  | "retryPeriod"
  | "operationTimeout"
  | "safetyMargin"
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
 * Fills in defaults and refuses, naming the field the caller set: any field
 * of the wrong type, anything outside the limits of `Lease`, and any
 * configuration that leaves a leader no room to lose one renewal outright and
 * still complete a second attempt before it must step down.
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
    const duration = (field: DurationField, fallback: Duration.Duration, min?: Duration.Duration) =>
      config[field] === undefined ? Either.right(fallback) : limits.duration(field, config[field], min)
    const leaseDuration = yield* duration("leaseDuration", defaults.leaseDuration)
    const renewInterval = yield* duration("renewInterval", defaults.renewInterval)
    const retryPeriod = yield* duration("retryPeriod", defaults.retryPeriod, Lease.minRetryPeriod)
    const operationTimeout = yield* duration("operationTimeout", defaults.operationTimeout)
    const safetyMargin = yield* duration("safetyMargin", defaultSafetyMargin(leaseDuration))
    yield* optional("disableRelease", config.disableRelease, Predicate.isBoolean, "a boolean")
    yield* optional("onStartedLeading", config.onStartedLeading, Predicate.isFunction, "a function")
    yield* optional("onNewLeader", config.onNewLeader, Predicate.isFunction, "a function")
    yield* optional("onStoppedLeading", config.onStoppedLeading, Effect.isEffect, "an Effect")
    if (Duration.greaterThanOrEqualTo(safetyMargin, leaseDuration)) {
      return yield* config.safetyMargin === undefined
        ? new InvalidConfig({
          field: "leaseDuration",
          reason: `must be longer than the default safetyMargin (leaseDuration/10, at least 1s), got ${
            formatDuration(leaseDuration)
          }; set a shorter safetyMargin for a shorter lease`
        })
        : new InvalidConfig({
          field: "safetyMargin",
          reason: `must be shorter than leaseDuration (${formatDuration(leaseDuration)}), got ${
            formatDuration(safetyMargin)
          }`
        })
    }
    const retry = retryDelay(renewInterval)
    const needed = Duration.sum(Duration.sum(renewInterval, Duration.times(operationTimeout, 2)), retry)
    const available = Duration.subtract(leaseDuration, safetyMargin)
    if (Duration.greaterThan(needed, available)) {
      // The defaults fit, so the caller set at least one of these.
      const field = (["renewInterval", "leaseDuration", "operationTimeout", "safetyMargin"] as const).find((field) =>
        config[field] !== undefined
      )!
      return yield* new InvalidConfig({
        field,
        reason: `a lost renewal needs renewInterval+2*operationTimeout+retryDelay (${
          formatDuration(needed)
        }) but only leaseDuration-safetyMargin (${formatDuration(available)}) is available`
      })
    }
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
      retryDelay: shared(retry),
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
