/**
 * Spreading on virtual time: see spreadFleet.ts. CI runs a fixed seed.
 */
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import { run, schedules } from "./spreadFleet.js"

const seed = Number(process.env["SIM_SEED"] ?? 43)
const runs = Number(process.env["SIM_RUNS"] ?? 8)

describe("spread simulation", () => {
  it(
    "members join, stop, crash and are cut off at any pace: every election safe, balanced once it settles",
    () =>
      fc.assert(
        fc.property(schedules(false), fc.nat(), (schedule, s) => {
          expect(run(schedule, s).violations).toEqual([])
        }),
        { seed, numRuns: runs }
      ),
    600_000
  )

  it("each change, given time to settle, moves at most what the rules call for", () =>
    fc.assert(
      fc.property(schedules(true), fc.nat(), (schedule, s) => {
        const verdict = run(schedule, s)
        expect(verdict.violations).toEqual([])
        for (const { bound, change, moves } of verdict.moves.slice(1)) {
          expect({ change, moves }).toEqual({ change, moves: Math.min(moves, bound) })
        }
      }),
      { seed, numRuns: Math.ceil(runs / 2) }
    ), 600_000)
})
