/**
 * Issue 39's second case, asserted: a failover to an asynchronous standby
 * that lost the last term (asyncFailover.ts), on both paths. In each run no
 * two participants work at once, no fence is held by two terms, and someone
 * leads within leaseDuration + 2 × retryPeriod of the promotion; in the
 * zone-lost runs the successor dies with the primary, so that nobody is left
 * who remembers its fence.
 *
 * CHAOS_FAILOVER_RUNS (default 2) runs of each kind per path; CHAOS_SEED
 * (default 7) draws when the primary dies. Each run starts its own primary,
 * standby (and PgBouncer): 10-17 s on the loaded 2-core machine.
 * `npm run chaos:failover` runs more of them and only reports.
 */
import { describe, expect, it } from "vitest"
import { failoverProblems, runAsyncFailover, summary, termLines } from "./asyncFailover.js"
import { prng } from "./soak.js"

const runs = Number(process.env["CHAOS_FAILOVER_RUNS"] ?? 2)
const seed = Number(process.env["CHAOS_SEED"] ?? 7)

const cases = Array.from({ length: runs }, (_, i) => [
  { run: `successor alive, run ${i + 1}`, zoneLost: false },
  { run: `zone lost, run ${i + 1}`, zoneLost: true }
]).flat()

describe.each(["direct", "pooled"] as const)("failover to a standby that lost the last term (%s)", (path) => {
  const random = prng(seed + (path === "pooled" ? 1 : 0))
  it.each(cases)("$run", async ({ zoneLost }) => {
    const result = await runAsyncFailover(path, { random, zoneLost })
    const problems = failoverProblems(result)
    // The figures of every run; every term and the fleet's logs from the
    // successor's start on when it fails.
    const details = problems.length === 0 ? [] : [...termLines(result), ...result.logs]
    console.log([summary(result), ...details].join("\n  "))
    expect(problems).toEqual([])
  })
})
