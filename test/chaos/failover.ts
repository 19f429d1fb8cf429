/**
 * Measures the failover to an asynchronous standby that lost the last term
 * (asyncFailover.ts), as many runs per path as asked, and says which runs
 * break issue 39's requirement (`failoverProblems`). `npm run test:chaos`
 * asserts a few runs (failover.test.ts); this is for more of them.
 *
 *   npm run chaos:failover
 *   FAILOVER_RUNS=6 FAILOVER_PATHS=direct FAILOVER_SEED=3 FAILOVER_JSON=out.json npm run chaos:failover
 *
 * FAILOVER_RUNS (default 3) runs per path, FAILOVER_PATHS (`direct`,
 * `pooled`; default both), FAILOVER_SEED (default 1) draws when the primary
 * dies, FAILOVER_ZONE_LOST=1 crashes the successor with it,
 * FAILOVER_JSON=file writes every result. Exits 0 with a report
 * whatever it measured; 1 only if a run could not be carried out.
 */
import * as fs from "node:fs"
import { exitWhenClosed } from "../soak/exit.js"
import {
  type AsyncFailoverResult,
  failoverProblems,
  ms,
  runAsyncFailover,
  summary,
  termLines
} from "./asyncFailover.js"
import type { Path } from "./fleet.js"
import { prng } from "./soak.js"

const runs = Number(process.env["FAILOVER_RUNS"] ?? 3)
const paths = (process.env["FAILOVER_PATHS"] ?? "direct,pooled").split(",").map((s) => s.trim()) as Array<Path>
for (const p of paths) if (p !== "direct" && p !== "pooled") throw new Error(`unknown path ${p}: direct, pooled`)
const seed = Number(process.env["FAILOVER_SEED"] ?? 1)
const random = prng(seed)
const zoneLost = process.env["FAILOVER_ZONE_LOST"] === "1"

const results: Array<AsyncFailoverResult> = []
let failed = 0
for (const path of paths) {
  for (let i = 0; i < runs; i++) {
    try {
      const result = await runAsyncFailover(path, { random, zoneLost })
      results.push(result)
      console.log(`${path} #${i + 1}: ${summary(result)}`)
      for (const term of termLines(result)) console.log(`    ${term}`)
    } catch (error) {
      failed += 1
      console.error(`${path} #${i + 1}: the run failed: ${error instanceof Error ? error.stack : String(error)}`)
    }
  }
}

console.log(
  `\nseed ${seed}, ${runs} run(s) per path${
    zoneLost ? ", the successor crashed with the primary" : ""
  }; terms in ms from the promotion`
)
for (const path of paths) {
  const mine = results.filter((r) => r.path === path)
  const overlapping = mine.filter((r) => r.overlapMs > 0)
  const reused = mine.filter((r) => r.reusedFences.length > 0)
  const broken = mine.filter((r) => failoverProblems(r).length > 0)
  const led = mine.flatMap((r) => r.leaderAfterPromotionMs === undefined ? [] : [r.leaderAfterPromotionMs])
  console.log(
    `${path}: ${mine.length} runs, the requirement broken in ${broken.length}; overlap in ${overlapping.length} (${
      overlapping.map((r) => ms(r.overlapMs)).join(", ") || "-"
    } ms); a fence reused in ${reused.length}; leader after the promotion ${led.map(ms).join(", ") || "-"} ms (bound ${
      mine[0]?.leaderBoundMs ?? "-"
    })`
  )
}
if (process.env["FAILOVER_JSON"] !== undefined) {
  fs.writeFileSync(
    process.env["FAILOVER_JSON"],
    JSON.stringify(results, (_, v) => (typeof v === "bigint" ? String(v) : v), 2)
  )
}
await exitWhenClosed(failed > 0 ? 1 : 0)
