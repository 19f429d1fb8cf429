import { describe, expect, it } from "vitest"
import { Simulation } from "../../src/testing.js"

// Found by the fleet property (seed 20240601): the database clock steps back
// 811ms just after p5 released its lease (release sets expiresAt = now), so
// the released lease is valid again; p5's acquire, delayed 450ms, lands on
// it and, as the holder of a valid lease, extends it under the same fence.
// p5 started a second term under fence 2. Fixed by never leading twice under
// one fence: the elector gives such a lease up and claims a fresh fence.
const resurrected: Simulation.Schedule = {
  config: Simulation.shortConfig,
  rates: [6717, 6842, 6717, 6717, 6717, 11124, 6717].map(Simulation.rate),
  window: 11487,
  events: [
    {
      at: 0,
      event: {
        _tag: "StoreFault",
        faults: {
          acquire: [{ _tag: "Delay", millis: 450 }],
          renew: [{ _tag: "Hang" }],
          release: [{ _tag: "Pass" }],
          inspect: [{ _tag: "SlowReply", millis: 450 }]
        }
      }
    },
    { at: 5267, event: { _tag: "StepBack", millis: 811 } }
  ]
}

// Issue 10: a store call abandoned at its timeout was a child of the renewal
// fiber, and a fiber waits for its children when it is interrupted: with a
// driver that takes a minute to cancel, the leader's step-down (and with it
// the interruption of its work) waited for the cancellation while another
// participant already led. Abandoned calls now cancel in the background.
const slowCancel: Simulation.Schedule = {
  config: Simulation.shortConfig,
  rates: [10_000, 10_000, 10_000].map(Simulation.rate),
  window: 9000,
  events: [
    {
      at: 1000,
      event: {
        _tag: "Partition",
        slot: "leader",
        faults: {
          acquire: [{ _tag: "Pass" }],
          renew: [{ _tag: "SlowCancel", millis: 60_000 }],
          release: [{ _tag: "Pass" }],
          inspect: [{ _tag: "Pass" }]
        }
      }
    }
  ]
}

describe("fleet simulation regressions", () => {
  it("a leader whose abandoned renewals take a minute to cancel stops its work at its deadline", () => {
    const result = Simulation.run(slowCancel, { step: 50, seed: 10 })
    expect(result.violation).toBeUndefined()
    expect(result.terms).toBeGreaterThanOrEqual(2)
  })

  it("a database clock step back that revives a released lease never revives its fence", () => {
    expect(Simulation.run(resurrected, { step: 50, seed: 791_266_345 }).violation).toBeUndefined()
  })

  it("the same schedule without the step back is safe", () => {
    const result = Simulation.run({ ...resurrected, events: resurrected.events.slice(0, 1) }, {
      step: 50,
      seed: 791_266_345
    })
    expect(result.violation).toBeUndefined()
  })
})
