/**
 * Fault schedules for the fleet simulation and their fast-check generators.
 *
 * A schedule is a fleet (one clock rate per participant slot), an election
 * configuration and a list of timed events over a fault window; after the
 * window comes a quiet period with no faults, in which someone must lead.
 */
import * as Duration from "effect/Duration"
import * as fc from "effect/FastCheck"
import * as Schema from "effect/Schema"
import type { Operation } from "../../Store.js"
import type { Fault } from "./FaultyStore.js"
import { type Rate, rate, rateDenominator } from "./VirtualTime.js"

/** What one store operation does while a fault is in force: FaultyStore's vocabulary. */
export type OpFault = Fault

export type Ops = "acquire" | "renew" | "release" | "inspect"
export const ops: ReadonlyArray<Ops & Operation> = ["acquire", "renew", "release", "inspect"]

/**
 * The faults of each operation: successive calls take them in turn, round
 * and round (one fault: always that one; several: a flapping path).
 */
export type Faults = Readonly<Record<Ops, ReadonlyArray<OpFault>>>

/**
 * Which participant an event hits: a slot, or whoever leads when it fires
 * (nobody, if nobody leads).
 */
export type Target = number | "leader"

export type Event =
  /** The path between one participant and the database breaks, per operation. */
  | { readonly _tag: "Partition"; readonly slot: Target; readonly faults: Faults }
  | { readonly _tag: "Heal"; readonly slot: Target }
  /** The database itself misbehaves for everyone. */
  | { readonly _tag: "StoreFault"; readonly faults: Faults }
  | { readonly _tag: "StoreHeal" }
  /** The process dies without releasing: nothing it sends arrives any more. */
  | { readonly _tag: "Crash"; readonly slot: Target }
  /** A fresh process with a new identity takes the slot (a clean shutdown first, if one runs). */
  | { readonly _tag: "Restart"; readonly slot: Target }
  /** The database clock steps backwards (never forwards). */
  | { readonly _tag: "StepBack"; readonly millis: number }
  /**
   * The process stops running for `millis` (a GC pause, SIGSTOP, a VM
   * migration) while its clock goes on; then everything due runs at once.
   */
  | { readonly _tag: "Freeze"; readonly slot: Target; readonly millis: number }
  /** The participant resigns (and holds off for its resignHoldOff, the default: leaseDuration). */
  | { readonly _tag: "Resign"; readonly slot: Target }
  /** The wake-up hints to one participant are lost, duplicated, or delayed (which reorders them); Heal ends it. */
  | { readonly _tag: "Hints"; readonly slot: Target; readonly hints: HintFault }
  /** Anyone may send a hint: every participant gets one now, whatever the lease. */
  | { readonly _tag: "Forge" }
  /**
   * The database's asynchronous standby stops receiving its writes: it keeps
   * a copy of the database as it is now (a later Snapshot: it caught up and
   * was cut again).
   */
  | { readonly _tag: "Snapshot" }
  /**
   * The standby is promoted: the database holds the copy the last Snapshot
   * took (without one, the standby had every write and nothing is lost) and
   * its clock goes on, `jump` ms ahead. The new standby follows it in full.
   */
  | { readonly _tag: "Failover"; readonly jump: number }

/** What becomes of the wake-up hints to a participant (see `Store.WakeUps`). */
export type HintFault =
  | { readonly _tag: "Lost" }
  | { readonly _tag: "Duplicated" }
  | { readonly _tag: "Delayed"; readonly millis: number }

export interface Timed {
  readonly at: number
  readonly event: Event
}

export interface SimConfig {
  readonly label: string
  readonly leaseDuration: number
  readonly renewInterval: number
  readonly retryPeriod: number
  readonly operationTimeout: number
  /** The default: leaseDuration / 10, at least one second. */
  readonly safetyMargin: number
}

export const shortConfig: SimConfig = {
  label: "short",
  leaseDuration: 3000,
  // 1s would be refused: 1 + 2*0.5 + 0.25 > 3 - 1.
  renewInterval: 750,
  retryPeriod: 500,
  operationTimeout: 500,
  safetyMargin: 1000
}

/** A configuration's timing, as an elector's options take it. */
export const timingOf = (config: SimConfig) => ({
  leaseDuration: Duration.millis(config.leaseDuration),
  renewInterval: Duration.millis(config.renewInterval),
  retryPeriod: Duration.millis(config.retryPeriod),
  operationTimeout: Duration.millis(config.operationTimeout),
  safetyMargin: Duration.millis(config.safetyMargin)
})

export const defaultConfig: SimConfig = {
  label: "default",
  leaseDuration: 15_000,
  renewInterval: 5000,
  retryPeriod: 3000,
  operationTimeout: 3000,
  safetyMargin: 1500
}

/**
 * The slowest clock rate the safety margin absorbs, with a little room for
 * millisecond rounding: see the derivation in `Simulation.ts`.
 */
export const minRate = (config: SimConfig): number =>
  Math.ceil((1 - config.safetyMargin / config.leaseDuration) * 10_000) + 50

/** Fastest rate generated: as far above 1 as the slowest is below. */
export const maxRate = (config: SimConfig): number => 20_000 - minRate(config) + 50

export interface Schedule {
  readonly config: SimConfig
  readonly rates: ReadonlyArray<Rate>
  /** Length of the fault window, in milliseconds of the timeline. */
  readonly window: number
  /** Sorted by `at`, all within the window. */
  readonly events: ReadonlyArray<Timed>
  /**
   * Each slot's `priority`, when the fleet runs preferred leaders (every
   * participant a candidate, `preemptAfter` its default of 2 leaseDurations).
   */
  readonly priorities?: ReadonlyArray<number> | undefined
  /**
   * The slots whose processes all run under one identity, {@link sharedIdentity}
   * (restarts too, as a pod name or a host name would): a misconfigured
   * fleet, which the election must keep safe all the same.
   */
  readonly sharedIdentity?: ReadonlyArray<number> | undefined
}

/** The identity every process of a schedule's `sharedIdentity` slots runs under. */
export const sharedIdentity = "shared"

const opFault = (config: SimConfig): fc.Arbitrary<OpFault> => {
  const t = config.operationTimeout
  // Slow calls cluster around the timeout: just under it, and just over it.
  const nearTimeout = fc.oneof(
    fc.integer({ min: Math.floor(t * 0.5), max: t + Math.floor(t * 0.2) }),
    fc.integer({ min: t - 50, max: t + 10 })
  )
  return fc.oneof(
    { weight: 2, arbitrary: fc.constant<OpFault>({ _tag: "Pass" }) },
    { weight: 3, arbitrary: fc.constant<OpFault>({ _tag: "Hang" }) },
    { weight: 2, arbitrary: fc.constant<OpFault>({ _tag: "Fail", retryable: true }) },
    { weight: 1, arbitrary: fc.constant<OpFault>({ _tag: "Die" }) },
    { weight: 3, arbitrary: fc.constant<OpFault>({ _tag: "LostReply" }) },
    { weight: 2, arbitrary: nearTimeout.map((millis): OpFault => ({ _tag: "Delay", millis })) },
    { weight: 2, arbitrary: nearTimeout.map((millis): OpFault => ({ _tag: "SlowReply", millis })) },
    {
      weight: 1,
      arbitrary: fc.integer({ min: config.leaseDuration, max: 4 * config.leaseDuration }).map((millis): OpFault => ({
        _tag: "SlowCancel",
        millis
      }))
    }
  )
}

const hintFault = (config: SimConfig): fc.Arbitrary<HintFault> =>
  fc.oneof(
    fc.constant<HintFault>({ _tag: "Lost" }),
    fc.constant<HintFault>({ _tag: "Duplicated" }),
    fc.integer({ min: 1, max: config.leaseDuration }).map((millis): HintFault => ({ _tag: "Delayed", millis }))
  )

const faults = (config: SimConfig): fc.Arbitrary<Faults> => {
  const one = fc.oneof(
    { weight: 3, arbitrary: opFault(config).map((f) => [f]) },
    { weight: 1, arbitrary: fc.array(opFault(config), { minLength: 2, maxLength: 4 }) }
  )
  return fc.oneof(
    // The whole path breaks the same way.
    one.map((f) => ({ acquire: f, renew: f, release: f, inspect: f })),
    fc.record({ acquire: one, renew: one, release: one, inspect: one })
  )
}

const event = (config: SimConfig, slots: number, options: ScheduleOptions): fc.Arbitrary<Event> => {
  const slot = fc.oneof(fc.integer({ min: 0, max: slots - 1 }), fc.constant("leader" as const))
  return fc.oneof(
    { weight: 6, arbitrary: fc.record({ _tag: fc.constant("Partition" as const), slot, faults: faults(config) }) },
    { weight: 4, arbitrary: fc.record({ _tag: fc.constant("Heal" as const), slot }) },
    { weight: 1, arbitrary: fc.record({ _tag: fc.constant("StoreFault" as const), faults: faults(config) }) },
    { weight: 2, arbitrary: fc.constant({ _tag: "StoreHeal" as const }) },
    { weight: 2, arbitrary: fc.record({ _tag: fc.constant("Crash" as const), slot }) },
    { weight: 2, arbitrary: fc.record({ _tag: fc.constant("Restart" as const), slot }) },
    {
      weight: options.stepBacks ? 1 : 0,
      arbitrary: fc.record({
        _tag: fc.constant("StepBack" as const),
        millis: fc.integer({ min: 1, max: config.leaseDuration / 2 })
      })
    },
    {
      weight: options.freezes === true ? 2 : 0,
      arbitrary: fc.record({
        _tag: fc.constant("Freeze" as const),
        slot,
        millis: fc.integer({ min: 1, max: 2 * config.leaseDuration })
      })
    },
    {
      weight: options.candidates === true ? 2 : 0,
      arbitrary: fc.record({ _tag: fc.constant("Resign" as const), slot })
    },
    { weight: 2, arbitrary: fc.record({ _tag: fc.constant("Hints" as const), slot, hints: hintFault(config) }) },
    { weight: 2, arbitrary: fc.constant({ _tag: "Forge" as const }) },
    { weight: options.failovers === true ? 2 : 0, arbitrary: fc.constant({ _tag: "Snapshot" as const }) },
    {
      weight: options.failovers === true ? 2 : 0,
      arbitrary: fc.record({
        _tag: fc.constant("Failover" as const),
        jump: fc.integer({ min: 0, max: config.retryPeriod })
      })
    }
  )
}

const rateOf = (config: SimConfig): fc.Arbitrary<Rate> => {
  const min = minRate(config)
  const max = maxRate(config)
  // The extremes matter most: a slow clock is the one the margin protects.
  return fc.oneof(
    fc.constantFrom(min, max, 10_000),
    fc.integer({ min, max: min + 200 }),
    fc.integer({ min, max })
  ).map(rate)
}

export interface ScheduleOptions {
  readonly configs: ReadonlyArray<SimConfig>
  readonly minSlots: number
  readonly maxSlots: number
  /** Fault window bounds, in leaseDurations. */
  readonly minLeases: number
  readonly maxLeases: number
  readonly maxEvents: number
  /** Whether the database clock steps back (it never steps forwards). */
  readonly stepBacks: boolean
  /** Whether processes freeze (default false). */
  readonly freezes?: boolean | undefined
  /** Whether half the fleets run preferred leaders (priorities), with resignations among the events (default false). */
  readonly candidates?: boolean | undefined
  /**
   * Whether two slots of every fleet share one identity (default false).
   * With preferred leaders, they share one priority too: the store knows
   * candidates by identity.
   */
  readonly sharedIdentity?: boolean | undefined
  /**
   * Whether the database fails over to a standby that lost its last writes,
   * `Snapshot` and `Failover` among the events (default false).
   */
  readonly failovers?: boolean | undefined
}

export const ciOptions: ScheduleOptions = {
  configs: [shortConfig, defaultConfig],
  minSlots: 3,
  maxSlots: 7,
  minLeases: 3,
  maxLeases: 12,
  maxEvents: 24,
  stepBacks: true,
  candidates: true
}

export const schedule = (options: ScheduleOptions): fc.Arbitrary<Schedule> =>
  fc.constantFrom(...options.configs).chain((config) =>
    fc.record({
      slots: fc.integer({ min: options.minSlots, max: options.maxSlots }),
      window: fc.integer({
        min: options.minLeases * config.leaseDuration,
        max: options.maxLeases * config.leaseDuration
      })
    }).chain(({ slots, window }) =>
      fc.record({
        config: fc.constant(config),
        rates: fc.array(rateOf(config), { minLength: slots, maxLength: slots }),
        window: fc.constant(window),
        events: fc.array(
          fc.record({ at: fc.integer({ min: 0, max: window }), event: event(config, slots, options) }),
          { maxLength: options.maxEvents }
        ).map((events) => [...events].sort((a, b) => a.at - b.at)),
        ...(options.candidates === true
          ? {
            priorities: fc.option(fc.array(fc.integer({ min: 0, max: 3 }), { minLength: slots, maxLength: slots }), {
              nil: undefined
            })
          }
          : {}),
        ...(options.sharedIdentity === true
          ? {
            sharedIdentity: fc.uniqueArray(fc.integer({ min: 0, max: slots - 1 }), { minLength: 2, maxLength: 2 })
              .map((pair) => [...pair].sort((a, b) => a - b))
          }
          : {})
      }).map(onePriorityPerIdentity)
    )
  )

/**
 * The slots that share an identity, given one priority: the store knows
 * candidates by identity, so two priorities under one cannot be honoured
 * (each advertisement replaces the other's, and the leaders hand over back
 * and forth).
 */
const onePriorityPerIdentity = (s: Schedule): Schedule => {
  const [first, ...others] = s.sharedIdentity ?? []
  if (s.priorities === undefined || first === undefined) return s
  const priority = s.priorities[first]!
  return { ...s, priorities: s.priorities.map((p, slot) => others.includes(slot) ? priority : p) }
}

// A schedule as JSON: rates as numbers of ten-thousandths, everything else as it is.
const Millis = Schema.Number
const FaultSchema = Schema.Union(
  Schema.TaggedStruct("Pass", {}),
  Schema.TaggedStruct("Hang", {}),
  Schema.TaggedStruct("Fail", { retryable: Schema.Boolean }),
  Schema.TaggedStruct("Die", {}),
  Schema.TaggedStruct("LostReply", {}),
  Schema.TaggedStruct("Delay", { millis: Millis }),
  Schema.TaggedStruct("SlowReply", { millis: Millis }),
  Schema.TaggedStruct("SlowCancel", { millis: Millis })
)
const FaultsSchema = Schema.Struct({
  acquire: Schema.Array(FaultSchema),
  renew: Schema.Array(FaultSchema),
  release: Schema.Array(FaultSchema),
  inspect: Schema.Array(FaultSchema)
})
const TargetSchema = Schema.Union(Schema.Number, Schema.Literal("leader"))
const EventSchema = Schema.Union(
  Schema.TaggedStruct("Partition", { slot: TargetSchema, faults: FaultsSchema }),
  Schema.TaggedStruct("Heal", { slot: TargetSchema }),
  Schema.TaggedStruct("StoreFault", { faults: FaultsSchema }),
  Schema.TaggedStruct("StoreHeal", {}),
  Schema.TaggedStruct("Crash", { slot: TargetSchema }),
  Schema.TaggedStruct("Restart", { slot: TargetSchema }),
  Schema.TaggedStruct("StepBack", { millis: Millis }),
  Schema.TaggedStruct("Freeze", { slot: TargetSchema, millis: Millis }),
  Schema.TaggedStruct("Resign", { slot: TargetSchema }),
  Schema.TaggedStruct("Hints", {
    slot: TargetSchema,
    hints: Schema.Union(
      Schema.TaggedStruct("Lost", {}),
      Schema.TaggedStruct("Duplicated", {}),
      Schema.TaggedStruct("Delayed", { millis: Millis })
    )
  }),
  Schema.TaggedStruct("Forge", {}),
  Schema.TaggedStruct("Snapshot", {}),
  Schema.TaggedStruct("Failover", { jump: Millis })
)
const RateSchema = Schema.transform(
  Schema.Number,
  Schema.Struct({ num: Schema.BigIntFromSelf, den: Schema.BigIntFromSelf }),
  {
    strict: true,
    decode: (perTenThousand) => rate(perTenThousand),
    encode: (r) => Number((r.num * rateDenominator) / r.den)
  }
)

const ScheduleStruct = Schema.Struct({
  config: Schema.Struct({
    label: Schema.String,
    leaseDuration: Millis,
    renewInterval: Millis,
    retryPeriod: Millis,
    operationTimeout: Millis,
    safetyMargin: Millis
  }),
  rates: Schema.Array(RateSchema),
  window: Millis,
  events: Schema.Array(Schema.Struct({ at: Millis, event: EventSchema })),
  priorities: Schema.optional(Schema.Array(Schema.Number)),
  sharedIdentity: Schema.optional(Schema.Array(Schema.Number))
})

/** A schedule and its JSON form. */
export const ScheduleSchema: Schema.Schema<Schedule, typeof ScheduleStruct.Encoded> = ScheduleStruct

/** The schedule as one line of JSON. */
export const encode = (schedule: Schedule): string => JSON.stringify(Schema.encodeSync(ScheduleSchema)(schedule))

/** A schedule from its JSON (as `encode` writes it); throws a `ParseError` naming what does not fit. */
export const decode = (json: string): Schedule => Schema.decodeUnknownSync(Schema.parseJson(ScheduleSchema))(json)
