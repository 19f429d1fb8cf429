/**
 * A longer look at the simulation than CI takes:
 *
 *   npm run sim -- --runs 100000
 *   npm run sim -- --seed 42 --path "3:1:0"   (replays a reported counterexample)
 *   npm run sim -- --call-path spread --spread-runs 300 --verbose
 *
 * Options: --runs N (default 1000, on each fleet call path), --seed S,
 * --path P, --step MS (sampling step, default 50), --config
 * short|default|both, --call-path apart|onCaller|spread|both|all (how the
 * participants' store calls are made: in a fiber each, or on their own
 * fibers through the SQL stores' call path; `spread`: spread groups instead
 * (spread.ts); both: the first two; default all, one after the other),
 * --spread-runs N (spread schedules, default a tenth of --runs), --verbose
 * (each spread schedule's moves per change), --max-leases N (longest
 * fault window, in leaseDurations), --max-slots N (participants, 3..7),
 * --no-step-back (keep the database clock from stepping back),
 * --shared-identity (two participants of every fleet share one identity),
 * --failover (the database fails over to a standby that lost its last
 * writes). The last two are off by default.
 */
import * as fc from "effect/FastCheck"
import { parseArgs } from "node:util"
import * as Simulation from "../../src/testing/Simulation.js"
import { spreadPath } from "./spread.js"

const { defaultConfig, shortConfig } = Simulation

const { values } = parseArgs({
  options: {
    runs: { type: "string", default: "1000" },
    seed: { type: "string" },
    path: { type: "string" },
    step: { type: "string", default: "50" },
    config: { type: "string", default: "both" },
    "call-path": { type: "string", default: "all" },
    "spread-runs": { type: "string" },
    verbose: { type: "boolean", default: false },
    "max-leases": { type: "string" },
    "max-slots": { type: "string" },
    "no-step-back": { type: "boolean", default: false },
    "shared-identity": { type: "boolean", default: false },
    failover: { type: "boolean", default: false }
  }
})

const configs = values.config === "short"
  ? [shortConfig]
  : values.config === "default"
  ? [defaultConfig]
  : [shortConfig, defaultConfig]
const options: Simulation.ScheduleOptions = {
  ...Simulation.defaultScheduleOptions,
  configs,
  stepBacks: !values["no-step-back"],
  sharedIdentity: values["shared-identity"],
  failovers: values.failover,
  ...(values["max-leases"] === undefined ? {} : { maxLeases: Number(values["max-leases"]) }),
  ...(values["max-slots"] === undefined ? {} : { maxSlots: Number(values["max-slots"]) })
}
const seed = values.seed === undefined ? Date.now() ^ (Math.random() * 0x100000000) : Number(values.seed)
const paths: ReadonlyArray<Simulation.CallPath | "spread"> = values["call-path"] === "apart"
  ? ["apart"]
  : values["call-path"] === "onCaller"
  ? ["onCaller"]
  : values["call-path"] === "spread"
  ? ["spread"]
  : values["call-path"] === "both"
  ? ["apart", "onCaller"]
  : ["apart", "onCaller", "spread"]
for (const callPath of paths) {
  if (callPath === "spread") {
    const runs = values["spread-runs"] ?? String(Math.ceil(Number(values.runs) / 10))
    const passed = await spreadPath({ runs: Number(runs), seed, path: values.path, verbose: values.verbose })
    if (!passed) {
      process.exitCode = 1
      break
    }
    continue
  }
  const counters: Simulation.Counters = { schedules: 0, terms: 0, virtualMillis: 0 }
  const started = performance.now()
  const details = await fc.check(
    Simulation.property({ schedules: options, step: Number(values.step), counters, callPath }),
    {
      numRuns: Number(values.runs),
      seed,
      ...(values.path === undefined ? {} : { path: values.path }),
      endOnFailure: values.path !== undefined
    }
  )
  const seconds = (performance.now() - started) / 1000
  console.log(
    `${callPath}: ${counters.schedules} schedules in ${seconds.toFixed(1)}s: ${
      (counters.schedules / seconds).toFixed(1)
    } schedules/s, ` +
      `${(counters.virtualMillis / 3_600_000).toFixed(2)} virtual hours, ${counters.terms} terms (seed ${seed})`
  )
  if (details.failed) {
    const error = details.errorInstance
    console.log(error instanceof Error ? error.message : String(error))
    console.log(fc.defaultReportMessage(details))
    console.log(
      `\nreplay: npm run sim -- --call-path ${callPath} --seed ${details.seed} --path "${details.counterexamplePath}"`
    )
    process.exitCode = 1
    break
  }
}
// On the onCaller path, a call that hung at the end of a run can leave its
// statement's fiber behind (its Effect.never holds a timer), so node would
// not exit by itself once the report is out: exit with the verdict.
process.exit(process.exitCode ?? 0)
