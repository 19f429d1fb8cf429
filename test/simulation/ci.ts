/**
 * How CI runs the fleet property: a fixed seed, so a run is reproducible
 * (override with SIM_SEED to look elsewhere, SIM_RUNS to look longer).
 */
import { Simulation } from "../../src/testing.js"

export const seed = Number(process.env.SIM_SEED ?? 20_240_601)

export const check = (
  config: Simulation.Config,
  numRuns: number,
  step: number,
  callPath: Simulation.CallPath = "apart"
): Promise<void> =>
  Simulation.check({
    schedules: { ...Simulation.defaultScheduleOptions, configs: [config] },
    step,
    runs: Number(process.env.SIM_RUNS ?? numRuns),
    seed,
    callPath
  })
