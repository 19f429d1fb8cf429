import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { Simulation, StoreSuite } from "effect-leaderelection/testing"
import { workload } from "./job.js"
import * as MapStore from "./MapStore.js"

// (a) The acceptance suite, registered as tests of this file: MapStore passes.
StoreSuite.run("MapStore", MapStore.layer())

describe("the acceptance suite on a broken store", () => {
  it.effect("catches a takeover that keeps the previous fence, and says which rule broke", () =>
    Effect.gen(function*() {
      const report = yield* StoreSuite.check("MapStore without fence bump", MapStore.layer({ bumpFence: false }))
      const names = report.failures.map((f) => f.name)
      expect(names).toContain("the fence advances exactly when an expired lease is reclaimed, even by its holder")
      expect(names).toContain("operation-level model of the contract")
      const chain = report.failures.find((f) => f.name === "fences never repeat across a chain of handovers")!
      expect(chain.message).toContain(
        "the contract requires: eight terms, each after a release, have fences 1 to 8: " +
          "[ 1n, 2n, 3n, 4n, 5n, 6n, 7n, 8n ] (got [ 1n, 1n, 1n, 1n, 1n, 1n, 1n, 1n ])"
      )
      const model = report.failures.find((f) => f.name === "operation-level model of the contract")!
      // The model's failure is the takeover it made, as the store call it was.
      expect(model.message).toMatch(
        /^acquire\('storetest-model-[01]-[^']+', '[abc]', (2s|5m), [^\n]*\)\n {2}answered: /
      )
      expect(model.message).toContain("the contract requires: an acquire answers the election's lease: holder ")
      // The rules the bug does not touch still pass; MapStore has no job slots nor candidates, and keeps no
      // incarnations (it is written to the contract of 0.1).
      expect(names).not.toContain("renew extends the term and keeps the fence")
      expect(report.skipped).toHaveLength(8)
    }))
})

// (b) The fleet simulation running the application's own job.
const schedules: Simulation.ScheduleOptions = {
  ...Simulation.defaultScheduleOptions,
  configs: [Simulation.shortConfig],
  maxLeases: 6
}

describe("a fenced-write job under a simulated fleet", () => {
  it("the fenced job's accepted writes stay in fence order", () =>
    Simulation.check({ schedules, runs: 25, seed: 12, workload: workload({ fenced: true }) }))

  it("the unfenced job is caught writing out of order, with the schedule that did it", async () => {
    const failure = Simulation.check({ schedules, runs: 25, seed: 12, workload: workload({ fenced: false }) })
    await expect(failure).rejects.toThrow(
      /invariant at \d+ms: p\d\.\d+ wrote under fence \d+ at \d+ms, after p\d\.\d+ wrote under fence \d+/
    )
    await expect(failure).rejects.toThrow(
      /replay with Simulation\.check\(\{ \.\.\.options, seed: 12, path: "[\d:]+" \}\)/
    )
  })
})
