// The simulation runs the job users deploy: code written for Elector.whileLeader, unchanged.
import { expect, it } from "@effect/vitest"
import { Cause, Effect, FiberId, TestContext } from "effect"
import { describe } from "vitest"
import { workload } from "../../examples/testing/job.js"
import * as Elector from "../../src/Elector.js"
import * as Leadership from "../../src/Leadership.js"
import { FaultyStore, Simulation } from "../../src/testing.js"
import { Oracle } from "../../src/testing/internal/Oracle.js"

const quiet: Simulation.Schedule = {
  config: Simulation.shortConfig,
  rates: [Simulation.rate(10_000), Simulation.rate(9_800)],
  window: 9_000,
  events: [{ at: 4_000, event: { _tag: "Crash", slot: "leader" } }]
}

describe("the simulation's workload", () => {
  it("runs a whileLeader job as it is: Leadership and the Elector in context", () => {
    const writes: Array<string> = []
    // The job as production code writes it, for Elector.whileLeader.
    const job = Effect.gen(function*() {
      const term = yield* Leadership.Leadership
      const elector = yield* Elector.Elector
      writes.push(`${term.identity}@${term.fence} ${elector.config.name}`)
      return yield* Effect.never
    })
    const deployed: Effect.Effect<never, never, Elector.Elector> = Elector.whileLeader(job)
    expect(Effect.isEffect(deployed)).toBe(true)
    const result = Simulation.run(quiet, { seed: 1, workload: () => ({ work: job }) })
    expect(result.violation).toBeUndefined()
    // The leader crashed at 4s: a second term, under the next fence, ran the job again.
    expect(writes).toEqual([expect.stringMatching(/^p0\.0@1 sim-/), expect.stringMatching(/^p1\.0@2 sim-/)])
  })

  it("reports a job that fails as a crash, with its cause", () => {
    const job = Effect.flatMap(
      Leadership.fence,
      (fence) => fence === 1n ? Effect.delay(Effect.fail(new Error("disk full")), "1 second") : Effect.never
    )
    const result = Simulation.run(quiet, { seed: 1, workload: () => ({ work: job }) })
    expect(result.violation).toMatchObject({ check: "work-crashed", at: 1000 })
    expect(result.violation?.message).toMatch(/^p0\.0's work under fence 1 crashed: Error: disk full/)
  })

  it("keeps a failing schedule as a regression test in one line, which replays from its JSON", async () => {
    const options = { runs: 25, seed: 12, workload: workload({ fenced: false }) }
    const failure = await Simulation.check(options).then(() => undefined, (error: Error) => error.message)
    const line = failure?.match(/keep it as a regression test: (Simulation\.run\(Simulation\.decode\('(.*)'\), .*\))$/m)
    expect(line?.[1]).toMatch(
      /^Simulation\.run\(Simulation\.decode\('\{"config":.*'\), \{ \.\.\.options, seed: \d+ \}\)$/
    )
    const seed = Number(line![1]!.match(/seed: (\d+) \}\)$/)![1])
    // The printed line, as a test would keep it.
    const replayed = Simulation.run(Simulation.decode(line![2]!), { ...options, seed })
    expect(replayed.violation?.check).toBe("invariant")
    expect(failure).toContain(`invariant at ${replayed.violation?.at}ms: ${replayed.violation?.message}`)
  })

  it.prop("a schedule round-trips through its JSON", [Simulation.schedules()], ([schedule]) => {
    expect(Simulation.decode(Simulation.encode(schedule))).toEqual(schedule)
  }, { fastCheck: { numRuns: 50 } })

  it("speaks FaultyStore's vocabulary: its faults are a schedule's", () => {
    const faults: Simulation.Faults = {
      acquire: [FaultyStore.hang],
      renew: [FaultyStore.delay("600 millis"), FaultyStore.fatal],
      release: [FaultyStore.lostReply],
      inspect: [FaultyStore.slowReply("1 second")]
    }
    const schedule: Simulation.Schedule = { ...quiet, events: [{ at: 1_000, event: { _tag: "StoreFault", faults } }] }
    expect(Simulation.decode(Simulation.encode(schedule))).toEqual(schedule)
    expect(Simulation.run(schedule, { seed: 3 }).violation).toBeUndefined()
  })

  it("runs overlapping in one process keep their electors apart", async () => {
    const onItsOwnClock = () =>
      Effect.runPromise(Effect.provide(Simulation.runOnTestClock(quiet, { seed: 2 }), TestContext.TestContext))
    const results = await Promise.all([onItsOwnClock(), onItsOwnClock()])
    expect(results.map((r) => r.violation)).toEqual([undefined, undefined])
  })

  it("an invariant that throws something else than an Error is reported by fast-check's words", async () => {
    const throws = () => ({
      invariant: () => {
        throw "not an Error"
      }
    })
    await expect(Simulation.check({ runs: 1, seed: 3, workload: throws })).rejects.toThrow(/not an Error/)
  })

  it("the oracle names a less preferred leader, and a crash", () => {
    const oracle = new Oracle()
    oracle.preferred(9_000, "p1.0", false, 4_000)
    expect(oracle.violation).toEqual({
      check: "not-preferred-after-faults",
      at: 9_000,
      message: "p1.0 leads 4000ms after the faults stopped, not the most preferred live participant"
    })
    const crashed = new Oracle()
    crashed.crash("p0.0", 2n, 500, Cause.interrupt(FiberId.none))
    expect(crashed.violation).toBeUndefined()
    crashed.crash("p0.0", 2n, 1_000, Cause.fail("boom"))
    expect(crashed.violation?.message).toBe("p0.0's work under fence 2 crashed: Error: boom")
  })

  it("refuses JSON that is not a schedule, saying where", () => {
    expect(() => Simulation.decode(`{"config":{}}`)).toThrow(/config[^]*label[^]*is missing/)
  })
})
