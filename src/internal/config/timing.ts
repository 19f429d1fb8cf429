/**
 * The timing fields of a config, checked together: each within the limits
 * of `Lease`, and together leaving a leader room to lose one renewal outright
 * and still complete a second attempt before it must step down. A refusal
 * names a field to change and, for every field it proposes, a value that
 * would be accepted: each proposal is checked again before it is shown.
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Either from "effect/Either"
import * as Predicate from "effect/Predicate"
import type { ResolvedConfig } from "../../Elector.js"
import { InvalidConfig } from "../../ElectorError.js"
import * as Lease from "../../Lease.js"
import { defaultSafetyMargin, retryDelay } from "../election/timing.js"
import * as limits from "./limits.js"

/** The fields checked here. */
export const fields = ["leaseDuration", "renewInterval", "retryPeriod", "operationTimeout", "safetyMargin"] as const

/** @internal */
export type Field = typeof fields[number]

/** The timing fields as a caller set them: plain JavaScript passes anything. */
export type Input = { readonly [K in Field]?: unknown }

/** The timing fields resolved, with the retry delay they imply. */
export type Timing = Pick<
  ResolvedConfig,
  "leaseDuration" | "renewInterval" | "retryPeriod" | "operationTimeout" | "safetyMargin" | "retryDelay"
>

/** @internal */
export const defaults = {
  leaseDuration: Duration.seconds(15),
  renewInterval: Duration.seconds(5),
  retryPeriod: Duration.seconds(3),
  operationTimeout: Duration.seconds(3)
} as const

/** The timing presets of `Elector.timing`, each with every field set. */
export const presets = {
  fast: {
    leaseDuration: Duration.seconds(5),
    renewInterval: Duration.seconds(1),
    retryPeriod: Duration.seconds(1),
    operationTimeout: Duration.seconds(1),
    safetyMargin: Duration.seconds(1)
  },
  default: {
    ...defaults,
    safetyMargin: defaultSafetyMargin(defaults.leaseDuration)
  },
  wan: {
    leaseDuration: Duration.seconds(30),
    renewInterval: Duration.seconds(10),
    retryPeriod: Duration.seconds(5),
    operationTimeout: Duration.seconds(5),
    safetyMargin: Duration.seconds(3)
  }
} as const

/** Each field within its own limits, defaults filled in. */
const durations = (input: Input): Either.Either<Timing, InvalidConfig> =>
  Either.gen(function*() {
    const duration = (field: Field, fallback: Duration.Duration, min?: Duration.Duration) =>
      input[field] === undefined ? Either.right(fallback) : limits.duration(field, input[field], min)
    const leaseDuration = yield* duration("leaseDuration", defaults.leaseDuration)
    const renewInterval = yield* duration("renewInterval", defaults.renewInterval)
    const retryPeriod = yield* duration("retryPeriod", defaults.retryPeriod, Lease.minRetryPeriod)
    const operationTimeout = yield* duration("operationTimeout", defaults.operationTimeout)
    const safetyMargin = yield* duration("safetyMargin", defaultSafetyMargin(leaseDuration))
    return {
      leaseDuration,
      renewInterval,
      retryPeriod,
      operationTimeout,
      safetyMargin,
      retryDelay: retryDelay(renewInterval)
    }
  })

/** What a lost renewal and its retry take. */
const needed = (t: Timing): Duration.Duration =>
  Duration.sum(Duration.sum(t.renewInterval, Duration.times(t.operationTimeout, 2)), t.retryDelay)

/** What the lease leaves for them. */
const available = (t: Timing): Duration.Duration => Duration.subtract(t.leaseDuration, t.safetyMargin)

const fits = (t: Timing): boolean =>
  Duration.lessThan(t.safetyMargin, t.leaseDuration) && Duration.lessThanOrEqualTo(needed(t), available(t))

/** Whether the timing of `input` is accepted. */
const accepted = (input: Input): boolean => Either.match(durations(input), { onLeft: () => false, onRight: fits })

/** A proposal: the fields to set, each as a duration a config can carry. */
type Fix = Partial<Record<Field, string>>

/** `"6 seconds"`, `"1250 millis"`: what a config can carry, for whole milliseconds. */
const written = (millis: number): string =>
  millis % 1000 === 0
    ? `${millis / 1000} ${millis === 1000 ? "second" : "seconds"}`
    : `${millis} ${millis === 1 ? "milli" : "millis"}`

/** `{ renewInterval: "6 seconds" }`: a proposal as it would be pasted into a config. */
const show = (fix: Fix): string =>
  `{ ${Object.entries(fix).map(([field, value]) => `${field}: ${JSON.stringify(value)}`).join(", ")} }`

/**
 * `millis` kept to two significant digits (at most whole seconds), rounded
 * the way that keeps it on the accepted side: down for a bound from above,
 * up for one from below.
 */
const rounded = (millis: number, up: boolean): number => {
  const step = Math.min(1000, 10 ** Math.max(0, Math.floor(Math.log10(millis)) - 1))
  return (up ? Math.ceil(millis / step) : Math.floor(millis / step)) * step
}

/**
 * The value of `field` that fits, everything else as it is: `bound`, a
 * whole number of milliseconds at the edge, rounded to a readable value when
 * that still fits. None when even the edge is refused (out of the limits).
 */
const fixing = (base: Input, field: Field, bound: number, up: boolean, alike?: Field): Fix | undefined => {
  if (!(bound >= 1)) return undefined
  for (const millis of [rounded(bound, up), bound]) {
    const fix = alike === undefined
      ? { [field]: written(millis) }
      : { [field]: written(millis), [alike]: written(millis) }
    if (accepted({ ...base, ...fix })) return fix
  }
  return undefined
}

/**
 * The single fields whose change would fit, with their values, in the order
 * they are worth trying (`first` first): those that keep the failover time
 * and the margin before those that lengthen the one or shorten the other.
 * The margin is proposed only when the caller set it. Before them, for a
 * lease set too short for the default renewInterval and operationTimeout,
 * both sized to it. Failing all, the defaults, which fit.
 */
const fixes = (base: Input, t: Timing, first?: Field): ReadonlyArray<Fix> => {
  const ms = Duration.toMillis
  const room = ms(t.leaseDuration) - ms(t.safetyMargin)
  const need = ms(needed(t))
  const renewRoom = room - 2 * ms(t.operationTimeout)
  const bounds: ReadonlyArray<readonly [Field, number, boolean]> = [
    // r + max(r/4, 50ms) within renewRoom.
    ["renewInterval", Math.floor(renewRoom >= 250 ? renewRoom * 4 / 5 : renewRoom - 50), false],
    ["operationTimeout", Math.floor((room - ms(t.renewInterval) - ms(t.retryDelay)) / 2), false],
    // The default margin grows with the lease: leaseDuration/10, at least 1s.
    [
      "leaseDuration",
      Math.ceil(base.safetyMargin === undefined ? Math.max(need + 1000, need * 10 / 9) : need + ms(t.safetyMargin)),
      true
    ],
    ["safetyMargin", base.safetyMargin === undefined ? 0 : Math.floor(ms(t.leaseDuration) - need), false]
  ]
  const ordered = [...bounds].sort(([a], [b]) => Number(b === first) - Number(a === first))
  const found = ordered.flatMap(([field, bound, up]) => fixing(base, field, bound, up) ?? [])
  // A lease too short for the default renewInterval and operationTimeout,
  // neither set, and renewInterval alone not enough: both sized to the
  // lease, each a part of the room (r + 2r + r/4).
  const both = base.leaseDuration !== undefined && base.renewInterval === undefined &&
      base.operationTimeout === undefined && !found.some((fix) => "renewInterval" in fix)
    ? fixing(base, "renewInterval", rounded(Math.floor(room / 3.25), false), false, "operationTimeout")
    : undefined
  if (both !== undefined) found.unshift(both)
  return found.length > 0 ? found : [{
    leaseDuration: written(ms(defaults.leaseDuration)),
    renewInterval: written(ms(defaults.renewInterval)),
    operationTimeout: written(ms(defaults.operationTimeout)),
    safetyMargin: written(ms(defaultSafetyMargin(defaults.leaseDuration)))
  }]
}

/** `leaseDuration 15s`, marked when the caller left it to its default. */
const term = (base: Input, field: Field, value: Duration.Duration): string =>
  `${field} ${limits.formatDuration(value)}${base[field] === undefined ? " (the default)" : ""}`

/** Why `t`, each field valid, does not fit, and what would. */
const misfit = (base: Input, t: Timing, also: Fix = {}): { readonly field: Field; readonly reason: string } => {
  const marginFirst = Duration.greaterThanOrEqualTo(t.safetyMargin, t.leaseDuration)
  const problem = marginFirst
    ? `${term(base, "safetyMargin", t.safetyMargin)} must be shorter than ${
      term(base, "leaseDuration", t.leaseDuration)
    }`
    : `${term(base, "renewInterval", t.renewInterval)} + 2 × ${
      term(base, "operationTimeout", t.operationTimeout)
    } + retryDelay ${limits.formatDuration(t.retryDelay)} = ${limits.formatDuration(needed(t))} must fit in ${
      term(base, "leaseDuration", t.leaseDuration)
    } - ${term(base, "safetyMargin", t.safetyMargin)} = ${
      limits.formatDuration(available(t))
    }, so that a leader can lose one renewal and retry it before it steps down`
  const found = fixes(base, t, marginFirst && base.safetyMargin !== undefined ? "safetyMargin" : undefined)
  return {
    field: Object.keys(found[0]!)[0] as Field,
    reason: `${problem}; any one of these fits: ${found.map((fix) => show({ ...also, ...fix })).join(", ")}`
  }
}

/** Positive numbers under a second, which a caller who meant seconds would write. */
const bareMillis = (input: Input): ReadonlyArray<Field> =>
  fields.filter((field) => {
    const value = input[field]
    return Predicate.isNumber(value) && value > 0 && value < 1000
  })

/**
 * The timing of `input`, or why it is refused: a field outside its limits,
 * or fields that do not fit together, with what would. Numbers are
 * milliseconds; a refusal of numbers under a second that would be accepted
 * as seconds says so.
 */
export const resolve = (input: Input): Either.Either<Timing, InvalidConfig> => {
  const checked = durations(input)
  if (Either.isRight(checked) && fits(checked.right)) return checked
  const bare = bareMillis(input)
  const asSeconds: Fix = Object.fromEntries(bare.map((field) => [field, written(Number(input[field]) * 1000)]))
  const meant = bare.length === 1 ? JSON.stringify(asSeconds[bare[0]!]) : show(asSeconds)
  const reading = bare.map((field) => `${field} ${String(input[field])} is ${String(input[field])}ms`).join(", ")
  if (Either.isLeft(checked)) {
    const { field, reason } = checked.left
    return bare.length > 0 && accepted({ ...input, ...asSeconds })
      ? Either.left(
        new InvalidConfig({ field, reason: `${reason}; numbers are milliseconds: did you mean ${meant}?` })
      )
      : checked
  }
  if (bare.length > 0) {
    if (accepted({ ...input, ...asSeconds })) {
      return Either.left(
        new InvalidConfig({
          field: bare[0]!,
          reason: `numbers are milliseconds (${reading}): did you mean ${meant}?`
        })
      )
    }
    const seconds = durations({ ...input, ...asSeconds })
    if (bare.includes("leaseDuration") && Either.isRight(seconds)) {
      const { reason } = misfit({ ...input, ...asSeconds }, seconds.right, asSeconds)
      return Either.left(
        new InvalidConfig({
          field: "leaseDuration",
          reason: `numbers are milliseconds (${reading}), and as seconds this is refused too: ${reason}`
        })
      )
    }
  }
  return Either.left(new InvalidConfig(misfit(input, checked.right)))
}
