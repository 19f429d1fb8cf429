// Frozen processes (GC pauses, SIGSTOP, VM migrations): a dedicated test, not
// part of the CI fleet property's options.
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Simulation from "../../src/testing/Simulation.js"

/** A job that writes at once, every 200ms, to a sink that fences or not; the sink's writes must keep fence order. */
const writer = (fenced: boolean) => (): Simulation.Workload => {
  const accepted: Array<bigint> = []
  let highest = 0n
  return {
    work: (term) =>
      Effect.forever(Effect.zipRight(
        Effect.sync(() => {
          if (fenced && term.fence < highest) return
          if (term.fence > highest) highest = term.fence
          accepted.push(term.fence)
        }),
        Effect.sleep("200 millis")
      )),
    invariant: () => {
      const i = accepted.findIndex((fence, i) => i > 0 && fence < accepted[i - 1]!)
      return i < 0 ? undefined : `fence ${accepted[i]} written after fence ${accepted[i - 1]}`
    }
  }
}

// The leader freezes for 6s, twice its lease: someone else takes over while
// it sleeps; when it thaws, its work gets a step in before the watchdog ends
// the term.
const frozenLeader: Simulation.Schedule = {
  config: Simulation.shortConfig,
  rates: [10_000, 10_000, 10_000].map(Simulation.rate),
  window: 9000,
  events: [{ at: 1000, event: { _tag: "Freeze", slot: "leader", millis: 6000 } }]
}

describe("frozen processes", () => {
  it("a frozen leader's work runs once more after it thaws: fenced writes refuse it", () => {
    const result = Simulation.run(frozenLeader, { seed: 3, workload: writer(true) })
    expect(result.violation).toBeUndefined()
    expect(result.terms).toBeGreaterThanOrEqual(2)
  })

  it("and unfenced writes land out of order", () => {
    expect(Simulation.run(frozenLeader, { seed: 3, workload: writer(false) }).violation).toMatchObject({
      check: "invariant",
      message: "fence 1 written after fence 2"
    })
  })

  it.effect("the same on TestClock", () =>
    Effect.gen(function*() {
      const result = yield* Simulation.runOnTestClock(frozenLeader, { seed: 3, workload: writer(false) })
      expect(result.violation?.message).toBe("fence 1 written after fence 2")
    }))

  it("the election stays safe and live under generated schedules with freezes", () =>
    Simulation.check({
      schedules: { ...Simulation.defaultScheduleOptions, configs: [Simulation.shortConfig], freezes: true },
      runs: 50,
      seed: 20_240_601
    }), 120_000)
})
