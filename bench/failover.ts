/**
 * Failover benchmark: a fleet of three electors (real PostgreSQL, direct
 * path, the chaos suite's 3s lease) loses its leader, repeatedly, in two ways:
 *
 * - crash: the leader stops without releasing (disableRelease), so a
 *   successor must wait for the lease to expire in the database;
 * - clean: the leader shuts down and releases, so the next poll claims it;
 * - resign: the leader resigns (and stays out for its hold-off), so the next
 *   poll of another participant claims it.
 *
 * Failover is measured from the instant the leader is stopped to the
 * successor's onStartedLeading, on one monotonic clock. Each loss lands at a
 * random phase of the renewal cycle.
 *
 *   npm run bench:failover            # 10 runs of each
 *   BENCH_RUNS=30 npm run bench:failover
 */
import { Duration } from "effect"
import { ensureSchema, startFleet, timing } from "../test/chaos/fleet.js"
import { sleep } from "../test/chaos/harness/process.js"
import { startTopology } from "../test/chaos/harness/Topology.js"

const runs = Number(process.env["BENCH_RUNS"] ?? 10)

/** Nearest-rank percentile of an ascending list. */
const percentile = (sorted: ReadonlyArray<number>, p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? Number.NaN

const seconds = (ms: number): string => `${(ms / 1000).toFixed(3)}s`

const main = async (): Promise<void> => {
  const topology = await startTopology({ participants: ["a", "b", "c"] })
  try {
    await ensureSchema(topology.db.url())
    console.log(
      `config: ${topology.participants.length} participants, PostgreSQL direct, ` +
        Object.entries(timing).map(([k, v]) => `${k} ${Duration.format(v)}`).join(", ") +
        `, safetyMargin 1s (default); ${runs} runs each`
    )
    for (const mode of ["crash", "clean", "resign"] as const) {
      const samples: Array<number> = []
      for (let i = 0; i < runs; i++) {
        const fleet = await startFleet(topology, { disableRelease: mode === "crash" })
        try {
          const leader = await fleet.leaderWithin(15_000)
          await sleep(1_000 + Math.random() * Duration.toMillis(timing.renewInterval))
          const at = performance.now()
          if (mode === "resign") await fleet.resign(leader.id)
          else await fleet.stop(leader.id)
          const next = await fleet.nextTerm(at, 15_000, leader.id)
          samples.push(next.start - at)
        } finally {
          await fleet.destroy()
        }
        const violations = fleet.oracle.violations()
        if (violations.length > 0) throw new Error(`safety violated in ${mode} run ${i}`)
      }
      const sorted = [...samples].sort((a, b) => a - b)
      console.log(
        `${mode.padEnd(6)} (${mode === "crash" ? "no release" : "release"}): median ${seconds(percentile(sorted, 50))}, ` +
          `p95 ${seconds(percentile(sorted, 95))}, min ${seconds(sorted[0] ?? Number.NaN)}, max ${
            seconds(sorted.at(-1) ?? Number.NaN)
          }`
      )
    }
  } finally {
    await topology.destroy()
  }
}

main().catch((error: unknown) => {
  console.error(error)
  process.exitCode = 1
})
