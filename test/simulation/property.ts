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

const seeds = fc.integer({ min: 0, max: 0x7fffffff })

/** Runs one schedule and throws the violation, if any, with the schedule. */
const judge = (counters: Counters | undefined, step: number) => (s: Schedule, seed: number): void => {
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
  }

export const fleet = (options: ScheduleOptions, step: number, counters?: Counters) =>
  fc.property(schedule(options), seeds, judge(counters, step))

/** The same property, giving the event loop a turn between schedules (vitest's worker needs it). */
export const fleetAsync = (options: ScheduleOptions, step: number) => {
  const run = judge(undefined, step)
  return fc.asyncProperty(schedule(options), seeds, async (s, seed) => {
    await new Promise((resolve) => setImmediate(resolve))
    run(s, seed)
  })
}
