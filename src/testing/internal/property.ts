/**
 * The fleet simulation as a fast-check property, shared by the CI test, the
 * `npm run sim` command and the public `Simulation` module.
 */
import * as fc from "effect/FastCheck"
import { encode, type Schedule, schedule, type ScheduleOptions } from "./Schedule.js"
import { run, type Timeline, type Workload } from "./Simulation.js"
import { rateToNumber } from "./VirtualTime.js"

/** A schedule as one readable line per event, for counterexamples. */
export const describe = (s: Schedule): string =>
  [
    `config ${s.config.label}, ${s.rates.length} participants at rates ${
      s.rates.map((r) => rateToNumber(r).toFixed(4)).join(", ")
    }, faults for ${s.window}ms`,
    ...s.events.map((e) => `  ${String(e.at).padStart(7)}ms ${JSON.stringify(e.event)}`)
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
  readonly counters?: Counters | undefined
}

const seeds = fc.integer({ min: 0, max: 0x7fffffff })

/** Runs one schedule and throws the violation, if any, with the schedule and its seed. */
const judge = (options: FleetOptions) => (s: Schedule, seed: number): void => {
  const result = run(s, { step: options.step, seed, workload: options.workload })
  const counters = options.counters
  if (counters !== undefined) {
    counters.schedules++
    counters.terms += result.terms
    counters.virtualMillis += result.virtualMillis
  }
  if (result.violation !== undefined) {
    const { at, check, message } = result.violation
    throw new Error(`${check} at ${at}ms: ${message}\n${describe(s)}\n(run seed ${seed})\n${regression(s, seed)}`)
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
