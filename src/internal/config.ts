import { randomBytes } from "node:crypto"
import { hostname } from "node:os"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { ElectorConfig, ResolvedConfig } from "../Elector.js"
import { ConfigError, IdentityError } from "../ElectorError.js"
import { defaultSafetyMargin, retryDelay } from "./timing.js"

/** @internal */
export const defaults = {
  leaseDuration: Duration.seconds(15),
  renewInterval: Duration.seconds(5),
  retryPeriod: Duration.seconds(3),
  operationTimeout: Duration.seconds(3)
} as const

/** @internal */
export const formatDuration = (d: Duration.Duration): string => `${Number((Duration.toMillis(d) / 1000).toFixed(3))}s`

const duration = (
  field: string,
  input: Duration.DurationInput | undefined,
  fallback: Duration.Duration
): Effect.Effect<Duration.Duration, ConfigError> => {
  if (input === undefined) return Effect.succeed(fallback)
  return Option.match(Duration.decodeUnknown(input), {
    onNone: () => Effect.fail(new ConfigError({ field, reason: `${JSON.stringify(String(input))} is not a duration` })),
    onSome: (d) =>
      !Duration.isFinite(d)
        ? Effect.fail(new ConfigError({ field, reason: "must be finite" }))
        : Duration.lessThanOrEqualTo(d, Duration.zero)
        ? Effect.fail(
          new ConfigError({
            field,
            reason: `must be positive, got ${typeof input === "object" ? formatDuration(d) : JSON.stringify(input)}`
          })
        )
        : Effect.succeed(d)
  })
}

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

/**
 * Fills in defaults and refuses any configuration that leaves a leader no
 * room to lose one renewal outright and still complete a second attempt
 * before it must step down.
 *
 * @internal
 */
export const resolve = (config: ElectorConfig): Effect.Effect<ResolvedConfig, ConfigError | IdentityError> =>
  Effect.gen(function*() {
    if (typeof config.name !== "string" || config.name.length === 0) {
      return yield* new ConfigError({ field: "name", reason: "must be a non-empty string" })
    }
    if (config.identity !== undefined && (typeof config.identity !== "string" || config.identity.length === 0)) {
      return yield* new ConfigError({ field: "identity", reason: "must be a non-empty string when set" })
    }
    const leaseDuration = yield* duration("leaseDuration", config.leaseDuration, defaults.leaseDuration)
    const renewInterval = yield* duration("renewInterval", config.renewInterval, defaults.renewInterval)
    const retryPeriod = yield* duration("retryPeriod", config.retryPeriod, defaults.retryPeriod)
    const operationTimeout = yield* duration("operationTimeout", config.operationTimeout, defaults.operationTimeout)
    const safetyMargin = yield* duration("safetyMargin", config.safetyMargin, defaultSafetyMargin(leaseDuration))
    if (Duration.greaterThanOrEqualTo(safetyMargin, leaseDuration)) {
      return yield* new ConfigError({
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
      return yield* new ConfigError({
        field: "renewInterval",
        reason: `a lost renewal needs renewInterval+2*operationTimeout+retryDelay (${
          formatDuration(needed)
        }) but only leaseDuration-safetyMargin (${formatDuration(available)}) is available`
      })
    }
    const onWorkFailure = config.onWorkFailure ?? "stepDown"
    if (onWorkFailure !== "stepDown" && onWorkFailure !== "keepLeading") {
      return yield* new ConfigError({
        field: "onWorkFailure",
        reason: `must be "stepDown" or "keepLeading", got ${JSON.stringify(String(onWorkFailure))}`
      })
    }
    const workFailureBackoff = yield* duration("workFailureBackoff", config.workFailureBackoff, leaseDuration)
    const identity = config.identity ?? (yield* generateIdentity)
    return {
      name: config.name,
      identity,
      payload: config.payload ?? null,
      leaseDuration,
      renewInterval,
      retryPeriod,
      operationTimeout,
      safetyMargin,
      retryDelay: retry,
      disableRelease: config.disableRelease ?? false,
      onWorkFailure,
      workFailureBackoff,
      failFast: config.failFast ?? false
    }
  })
