/**
 * Membership schedules for the spread simulation and their fast-check
 * generator: a group of member slots, each on its own clock rate, some
 * running from the start, then joins, clean stops, crashes and partitions,
 * each some time after the previous one. A change that comes `settleMillis`
 * or more after the previous one finds the group settled: that is what the
 * oracle holds to the rules' bound on moves.
 */
import * as fc from "effect/FastCheck"
import { maxRate, minRate, shortConfig } from "./Schedule.js"
import { type Rate, rate } from "./VirtualTime.js"

export type Change =
  | { readonly kind: "join"; readonly slot: number }
  | { readonly kind: "stop"; readonly slot: number }
  | { readonly kind: "crash"; readonly slot: number }
  | { readonly kind: "partition"; readonly slot: number; readonly millis: number }

export interface SpreadSchedule {
  /** How many elections the group spreads. */
  readonly names: number
  /** One clock rate per member slot. */
  readonly rates: ReadonlyArray<Rate>
  /** The slots running from the start. */
  readonly initial: ReadonlyArray<number>
  /**
   * Whether the members get the store's wake-up hints (as from PostgreSQL's
   * listener; MariaDB's have none): a handover is then claimed at once,
   * rather than at the taker's next poll. A member cut off gets none.
   */
  readonly hints: boolean
  /** Changes, each `after` milliseconds after the previous one (the first: after the start). */
  readonly changes: ReadonlyArray<{ readonly after: number; readonly change: Change }>
}

/**
 * Long enough, on the short config, for any group to settle after a change:
 * a crashed member's lease, then one move per retry period.
 */
export const settleMillis = 40_000

const rateOf = fc.oneof(
  fc.constantFrom(minRate(shortConfig), maxRate(shortConfig), 10_000),
  fc.integer({ min: minRate(shortConfig), max: maxRate(shortConfig) })
).map(rate)

/**
 * Schedules of 2 to 5 member slots and 4 to 30 elections: up to 8 changes at
 * any pace, or (`spaced`) up to 4, each given time to settle before the next.
 */
export const spreadSchedules = (spaced: boolean): fc.Arbitrary<SpreadSchedule> =>
  fc.integer({ min: 2, max: 5 }).chain((m) =>
    fc.record({
      names: fc.integer({ min: 4, max: 30 }),
      rates: fc.array(rateOf, { minLength: m, maxLength: m }),
      initial: fc.uniqueArray(fc.integer({ min: 0, max: m - 1 }), { minLength: 1, maxLength: m }),
      hints: fc.boolean(),
      changes: fc.array(
        fc.record({
          after: spaced ? fc.constant(settleMillis) : fc.integer({ min: 0, max: 8_000 }),
          change: fc.oneof(
            fc.record({ kind: fc.constantFrom("join", "stop", "crash"), slot: fc.integer({ min: 0, max: m - 1 }) }),
            fc.record({
              kind: fc.constant("partition"),
              slot: fc.integer({ min: 0, max: m - 1 }),
              millis: fc.integer({ min: 100, max: 6_000 })
            })
          ) as fc.Arbitrary<Change>
        }),
        { maxLength: spaced ? 4 : 8 }
      )
    })
  )

/** A change as the summaries print it: `crash(2)`. */
export const describeChange = (change: Change | "start"): string =>
  change === "start" ? "start" : `${change.kind}(${change.slot})`
