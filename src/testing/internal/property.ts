/**
 * The fleet simulation as a fast-check property, shared by the CI test, the
 * `npm run sim` command and the public `Simulation` module.
 */
import * as fc from "effect/FastCheck"
import type { Tenure } from "./Oracle.js"
import { encode, type Schedule, schedule, type ScheduleOptions, sharedIdentity } from "./Schedule.js"
import { type CallPath, run, slotOf, type Timeline, type Workload } from "./Simulation.js"
import { rateToNumber } from "./VirtualTime.js"

const instant = (at: number): string => `  ${String(at).padStart(7)}ms`

/** An event as JSON, and what a failover brings back: the copy of the latest snapshot before it, if any. */
const describeEvents = (events: Schedule["events"]): Array<string> => {
  let snapshot: number | undefined
  return events.map(({ at, event }) => {
    const line = `${instant(at)} ${JSON.stringify(event)}`
    switch (event._tag) {
      case "Snapshot":
        snapshot = at
        return line
      case "Failover": {
        const lost = snapshot === undefined
          ? "the standby had every write"
          : `the store failed over to the snapshot of t=${snapshot}ms`
        snapshot = undefined
        return `${line}: ${lost}`
      }
      default:
        return line
    }
  })
}

/**
 * A schedule as one readable line per event, for counterexamples: every
 * input that shapes the run, the preferred leaders, the processes that
 * share an identity and the end of the faults too, which are not among the
 * events.
 */
export const describe = (s: Schedule): string =>
  [
    `config ${s.config.label}, ${s.rates.length} participants at rates ${
      s.rates.map((r) => rateToNumber(r).toFixed(4)).join(", ")
    }, faults for ${s.window}ms`,
    ...(s.priorities === undefined ? [] : [
      `  preferred leaders (every participant a candidate, the less preferred hand over): ${
        s.priorities.map((p, slot) => `p${slot} priority ${p}`).join(", ")
      }`
    ]),
    ...(s.sharedIdentity === undefined ? [] : [
      `  ${s.sharedIdentity.map((slot) => `p${slot}`).join(" and ")} share identity "${sharedIdentity}" ` +
      `(every process of theirs, restarts too)`
    ]),
    ...describeEvents(s.events),
    `${instant(s.window)} the faults stop: every path heals, frozen processes thaw, dead slots restart`
  ].join("\n")

/** Who led when, as the run saw it: the handovers no event names, such as the preferred leaders', show here. */
export const describeTenures = (tenures: ReadonlyArray<Tenure>, s: Schedule): string =>
  tenures.length === 0 ? "nobody led" : [
    "who led:",
    ...tenures.map(({ fence, from, identity, until }) => {
      const priority = s.priorities?.[slotOf(identity)]
      return `${instant(from)} ${identity}${
        priority === undefined ? "" : ` (priority ${priority})`
      } under fence ${fence}${until === undefined ? "" : `, until ${until}ms`}`
    })
  ].join("\n")

/**
 * The line that replays schedule `s` with run seed `seed` on its own, to
 * keep as a regression test (`options` being the check's own).
 */
export const regression = (s: Schedule, seed: number): string =>
  `keep it as a regression test: Simulation.run(Simulation.decode('${
    encode(s).replace(/[\\']/g, "\\$&")
  }'), { ...options, seed: ${seed} })`

export interface Counters {
  schedules: number
  terms: number
  virtualMillis: number
}

export interface FleetOptions {
  readonly schedules: ScheduleOptions
  /** Sampling step, in milliseconds of the timeline. */
  readonly step: number
  readonly workload?: ((timeline: Timeline) => Workload) | undefined
  readonly callPath?: CallPath | undefined
  readonly counters?: Counters | undefined
}

const seeds = fc.integer({ min: 0, max: 0x7fffffff })

/** Runs one schedule and throws the violation, if any, with the schedule and its seed. */
const judge = (options: FleetOptions) => (s: Schedule, seed: number): void => {
  const result = run(s, { step: options.step, seed, workload: options.workload, callPath: options.callPath })
  const counters = options.counters
  if (counters !== undefined) {
    counters.schedules++
    counters.terms += result.terms
    counters.virtualMillis += result.virtualMillis
  }
  if (result.violation !== undefined) {
    const { at, check, message } = result.violation
    throw new Error(
      `${check} at ${at}ms: ${message}\n${describe(s)}\n${describeTenures(result.tenures, s)}\n(run seed ${seed}, ${
        options.callPath ?? "apart"
      } call path)\n${regression(s, seed)}`
    )
  }
}

/** The property, giving the event loop a turn between schedules (vitest's worker needs it). */
export const fleetAsync = (options: FleetOptions) => {
  const run = judge(options)
  return fc.asyncProperty(schedule(options.schedules), seeds, async (s, seed) => {
    await new Promise((resolve) => setImmediate(resolve))
    run(s, seed)
  })
}
