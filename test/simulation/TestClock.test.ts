import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { Simulation } from "../../src/testing.js"

// A leader partitioned away mid-term, the database clock stepping back, and a
// crash of whoever leads next: the fleet must stay safe and elect again.
const schedule: Simulation.Schedule = {
  config: Simulation.shortConfig,
  rates: [9000, 10_000, 10_500].map(Simulation.rate),
  window: 9000,
  events: [
    {
      at: 2000,
      event: {
        _tag: "Partition",
        slot: "leader",
        faults: {
          acquire: [{ _tag: "Hang" }],
          renew: [{ _tag: "LostReply" }],
          release: [{ _tag: "Hang" }],
          inspect: [{ _tag: "Fail", retryable: true }]
        }
      }
    },
    { at: 4000, event: { _tag: "StepBack", millis: 700 } },
    { at: 6000, event: { _tag: "Crash", slot: "leader" } },
    { at: 7000, event: { _tag: "Heal", slot: 0 } }
  ]
}

describe("fleet simulation on TestClock", () => {
  it.effect("runs the same fleet as the fast scheduler, driven by TestClock.adjust", () =>
    Effect.gen(function*() {
      const fast = Simulation.run(schedule, { seed: 7, step: 100 })
      const slow = yield* Simulation.runOnTestClock(schedule, { seed: 7, step: 100 })
      expect(fast.violation).toBeUndefined()
      expect(slow.violation).toBeUndefined()
      expect(fast.terms).toBeGreaterThanOrEqual(2)
      expect(slow.terms).toBeGreaterThanOrEqual(2)
      expect(slow.virtualMillis).toBe(fast.virtualMillis)
    }))
})
