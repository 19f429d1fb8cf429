import { Effect } from "effect"
import { describe, expect, it } from "vitest"
import { Simulation } from "../../src/testing.js"

// The first leader acquires at 0 and crashes at 100ms, before its first
// renewal (at 375ms at the earliest): its calls hang from then on and it never
// releases, so its lease expires at exactly leaseDuration (3s) on the
// database clock. A follower that saw it claims at that instant, not at its
// next poll (blind polling took up to retryPeriod, 500ms, more).
const crash = (rates: ReadonlyArray<number>): Simulation.Schedule => ({
  config: Simulation.shortConfig,
  rates: rates.map(Simulation.rate),
  window: 6000,
  events: [{ at: 100, event: { _tag: "Crash", slot: "leader" } }]
})

/** When every term started, on the timeline. */
const terms = (schedule: Simulation.Schedule, seed: number) => {
  const starts: Array<number> = []
  const result = Simulation.run(schedule, {
    step: 50,
    seed,
    workload: (timeline) => ({ work: () => Effect.sync(() => starts.push(timeline.now())) })
  })
  return { result, starts }
}

describe("failover in the fleet simulation", () => {
  it("on clocks at the database's rate, the successor leads 2ms after the crashed leader's lease expires", () => {
    for (let seed = 1; seed <= 10; seed++) {
      const { result, starts } = terms(crash([10_000, 10_000, 10_000]), seed)
      expect(result.violation).toBeUndefined()
      expect(starts.slice(0, 2)).toEqual([0, 3002])
    }
  })

  it("followers on clocks a third fast claim early, are refused, and take over safely just after the expiry", () => {
    for (let seed = 1; seed <= 10; seed++) {
      const { result, starts } = terms(crash([10_000, 13_300, 13_300]), seed)
      expect(result.violation).toBeUndefined()
      expect(starts[0]).toBe(0)
      expect(starts[1]).toBeGreaterThanOrEqual(3000)
      expect(starts[1]).toBeLessThanOrEqual(3005)
    }
  })
})
