/**
 * The fleet simulation as a fast-check property, shared by the CI test and
 * the `npm run sim` command.
 */
import * as fc from "fast-check"
import { run } from "./Simulation.js"
import { type Schedule, schedule, type ScheduleOptions } from "./Schedule.js"
import { rateToNumber } from "./VirtualTime.js"

/** A schedule as one readable line per event, for counterexamples. */
export const describe = (s: Schedule): string =>
  [
    `config ${s.config.label}, ${s.rates.length} participants at rates ${
      s.rates.map((r) => rateToNumber(r).toFixed(4)).join(", ")
    }, faults for ${s.window}ms`,
    ...s.events.map((e) => `  ${String(e.at).padStart(7)}ms ${JSON.stringify(e.event)}`)
  ].join("\n")

export interface Counters {
  schedules: number
  terms: number
  virtualMillis: number
}

export const fleet = (options: ScheduleOptions, step: number, counters?: Counters) =>
  fc.property(schedule(options), fc.integer({ min: 0, max: 0x7fffffff }), (s, seed) => {
    const result = run(s, { step, seed })
    if (counters !== undefined) {
      counters.schedules++
      counters.terms += result.terms
      counters.virtualMillis += result.virtualMillis
    }
    if (result.violation !== undefined) {
      const { at, check, message } = result.violation
      throw new Error(`${check} at ${at}ms: ${message}\n${describe(s)}`)
    }
  })
