/**
 * How CI runs the fleet property: a fixed seed, so a run is reproducible
 * (override with SIM_SEED to look elsewhere, SIM_RUNS to look longer).
 */
import * as fc from "fast-check"
import { fleetAsync } from "./property.js"
import { ciOptions, type SimConfig } from "./Schedule.js"

export const seed = Number(process.env.SIM_SEED ?? 20_240_601)

export const check = (config: SimConfig, numRuns: number, step: number): Promise<void> =>
  fc.assert(fleetAsync({ ...ciOptions, configs: [config] }, step), {
    numRuns: Number(process.env.SIM_RUNS ?? numRuns),
    seed
  })
