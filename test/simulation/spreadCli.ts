/**
 * `npm run sim:spread -- [--runs n] [--seed s] [--spaced]`: runs spread
 * schedules (spreadFleet.ts), prints each one's moves per change and time to
 * settle, the final shares, and any violation; exits 1 on one.
 */
import * as fc from "fast-check"
import { parseArgs } from "node:util"
import { run, schedules } from "./spreadFleet.js"

const { values } = parseArgs({
  options: {
    runs: { type: "string", default: "20" },
    seed: { type: "string", default: String(Date.now() % 100_000) },
    spaced: { type: "boolean", default: false }
  }
})
const seed = Number(values.seed)
const samples = fc.sample(fc.tuple(schedules(values.spaced), fc.nat()), { seed, numRuns: Number(values.runs) })
let failed = 0
for (const [i, [schedule, s]] of samples.entries()) {
  const startedAt = performance.now()
  const verdict = run(schedule, s)
  const took = Math.round(performance.now() - startedAt)
  const changes = verdict.moves.map(({ bound, change, moves, settledIn }) =>
    `${change === "start" ? "start" : `${change.kind}(${change.slot})`}: ${moves} moves (rules: ${bound}), ` +
    `last at +${settledIn}ms`
  )
  console.log(
    `#${i} N=${schedule.names} slots=${schedule.rates.length} shares=[${
      verdict.shares.join(",")
    }] (${took}ms real)\n  ` +
      changes.join("\n  ")
  )
  for (const v of verdict.violations) console.log(`  VIOLATION ${v}`)
  if (verdict.violations.length > 0) {
    failed++
    console.log(`  schedule: ${JSON.stringify(schedule, (_, v) => typeof v === "bigint" ? String(v) : v)}`)
  }
}
console.log(`seed ${seed}: ${samples.length} schedules, ${failed} with violations`)
// Members' scopes left closing on virtual time would keep the process alive.
process.exit(failed > 0 ? 1 : 0)
