/**
 * The simulation's on-caller path is the SQL stores' own (their call
 * lifecycle, stores/internal/call.ts): a mutant of it fails the simulation.
 * Here the mutant drops the call's deadline, the race an on-caller call
 * relies on to give control back at operationTimeout: a participant whose
 * call hangs then waits for it forever.
 */
import { Duration } from "effect"
import { describe, expect, it, vi } from "vitest"
import type * as Call from "../../src/stores/internal/call.js"
import { Simulation } from "../../src/testing.js"
import { seed } from "./ci.js"

vi.mock("../../src/stores/internal/call.js", async (importOriginal) => {
  const actual = await importOriginal<typeof Call>()
  const use: typeof actual.use = (connections, operation, request, answer) =>
    actual.use({ ...connections, timeout: Duration.days(365) }, operation, request, answer)
  return { ...actual, use }
})

const check = (callPath: Simulation.CallPath, runs: number) =>
  Simulation.check({
    schedules: { ...Simulation.defaultScheduleOptions, configs: [Simulation.shortConfig] },
    runs,
    seed,
    callPath
  })

describe("fleet simulation, with the SQL call path's deadline dropped", () => {
  it("fails on the on-caller path, which the mutant breaks", async () => {
    await expect(check("onCaller", 100)).rejects.toThrow(/replay with/)
  }, 300_000)

  it("passes on the apart path, which keeps a deadline of its own", async () => {
    await expect(check("apart", 30)).resolves.toBeUndefined()
  }, 300_000)
})
