import { Duration, Effect, Schedule } from "effect"
import { describe, expect, it } from "vitest"
import type * as Job from "../../src/Job.js"
import { Simulation } from "../../src/testing.js"
import { seed } from "./ci.js"

/**
 * Every participant of the fleet runs one job, a slot a second, each run
 * taking 400ms of its own clock; the invariant judges every slot's runs at
 * every sampled instant.
 */
/** Runs and re-runs seen over all schedules, to show the runs exercised what the invariant judges. */
const seen = { runs: 0, interrupted: 0, again: 0 }

const jobs = (delivery: Job.Delivery) => (): Simulation.Workload => {
  // Per slot instant: its runs, in order, and whether each completed.
  const runs = new Map<number, Array<{ fence: bigint; completed: boolean }>>()
  return {
    job: {
      when: Schedule.fixed("1 second"),
      delivery,
      run: (_term, slot) =>
        Effect.gen(function*() {
          const run = { fence: slot.fence, completed: false }
          const all = runs.get(slot.at.getTime()) ?? []
          all.push(run)
          runs.set(slot.at.getTime(), all)
          seen.runs++
          if (all.length > 1) seen.again++
          yield* Effect.sleep(Duration.millis(400)).pipe(
            Effect.onInterrupt(() => Effect.sync(() => seen.interrupted++))
          )
          run.completed = true
        })
    },
    invariant: () => {
      for (const [at, all] of runs) {
        const fences = all.map((run) => run.fence).join(", ")
        if (delivery === "atMostOnce" && all.length > 1) return `slot ${at} ran ${all.length} times (fences ${fences})`
        // At least once: a slot runs again only after a run that never completed, under a newer fence.
        for (let i = 1; i < all.length; i++) {
          if (all[i - 1]!.completed || all[i - 1]!.fence >= all[i]!.fence) {
            return `slot ${at} ran again after a completed run, or under no newer fence (fences ${fences})`
          }
        }
      }
      return undefined
    }
  }
}

const numRuns = Number(process.env.SIM_RUNS ?? 100)

const check = (delivery: Job.Delivery) =>
  Simulation.check({
    schedules: { ...Simulation.defaultScheduleOptions, configs: [Simulation.shortConfig] },
    step: 50,
    runs: numRuns,
    seed,
    workload: jobs(delivery)
  })

describe("fleet simulation with a scheduled job (3s lease)", () => {
  it("never runs a slot twice at most once", async () => {
    Object.assign(seen, { runs: 0, interrupted: 0, again: 0 })
    await check("atMostOnce")
    expect(seen.runs).toBeGreaterThan(5 * numRuns)
    expect(seen.interrupted).toBeGreaterThan(0)
    expect(seen.again).toBe(0)
  }, 300_000)
  it("re-runs a slot only after an interrupted run at least once", async () => {
    Object.assign(seen, { runs: 0, interrupted: 0, again: 0 })
    await check("atLeastOnce")
    expect(seen.again).toBeGreaterThan(0)
  }, 300_000)
})
