/**
 * The soak runner: separate participant processes running the BUILT library
 * (run `npm run build` first; `npm run test:soak` does) on throwaway servers.
 *
 *   tsx test/soak/cli.ts [--paths pg,pgbouncer,mariadb] [--scenarios soak,frozen,...]
 *
 * SOAK_SECONDS (default 20) sizes the randomised soak; the other scenarios
 * take at most a minute of it. SOAK_SEED (default 1) replays a run.
 * SOAK_JSON=file writes the results as JSON; SOAK_KEEP_LOGS=1 keeps the
 * participants' logs (they are kept anyway when a check fails). Exits 1 on
 * any violation or failed check, and when something it started is still open
 * 10 s after the report (see exit.ts).
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { type PathName, pathNames, startBackend } from "./backend.js"
import { exitWhenClosed } from "./exit.js"
import { problems, table } from "./report.js"
import { type Result, runScenario, scenarios } from "./scenarios.js"

const keys: Record<string, string> = {
  soak: "soak",
  frozen: "frozen leader",
  rolling: "rolling restart",
  churn: "replacements mid-flight",
  exhaustion: "pool exhaustion",
  neighbour: "broken neighbour",
  partitioned: "leader partitioned"
}

const arg = (name: string): string | undefined => {
  const i = process.argv.indexOf(`--${name}`)
  return i < 0 ? undefined : process.argv[i + 1]
}

const list = (value: string | undefined, fallback: ReadonlyArray<string>): Array<string> =>
  value === undefined ? [...fallback] : value.split(",").map((s) => s.trim()).filter((s) => s.length > 0)

const paths = list(arg("paths"), pathNames) as Array<PathName>
for (const p of paths) if (!pathNames.includes(p)) throw new Error(`unknown path ${p}: ${pathNames.join(", ")}`)
const wanted = list(arg("scenarios"), ["soak", "frozen", "rolling", "churn", "exhaustion", "neighbour"]).map((k) => {
  const name = keys[k]
  if (name === undefined) throw new Error(`unknown scenario ${k}: ${Object.keys(keys).join(", ")}`)
  return name
})
const seconds = Number(process.env["SOAK_SECONDS"] ?? 20)
const seed = Number(process.env["SOAK_SEED"] ?? 1)
if (!fs.existsSync(new URL("../../dist/Elector.js", import.meta.url))) {
  throw new Error("no dist/: run `npm run build` first (npm run test:soak does)")
}

const logDir = fs.mkdtempSync(path.join(os.tmpdir(), "soak-logs-"))
const results: Array<Result> = []
const began = performance.now()
for (const p of paths) {
  for (const scenario of scenarios.filter((s) => wanted.includes(s.name) && s.paths.includes(p))) {
    const backend = await startBackend(p, scenario.poolSize === undefined ? {} : { poolSize: scenario.poolSize })
    try {
      const runSeconds = scenario.name === "soak" ? seconds : Math.min(seconds, 60)
      process.stdout.write(`${scenario.name} on ${p} (${runSeconds} s, seed ${seed}) ... `)
      const result = await runScenario(backend, scenario, { seconds: runSeconds, seed, logDir })
      results.push(result)
      const bad = result.violations.length + result.failures.length
      process.stdout.write(`${bad === 0 ? "ok" : "FAILED"} in ${result.seconds} s, ${result.terms} terms\n`)
    } finally {
      await backend.destroy()
    }
  }
}

console.log(`\n${table(results)}\n`)
console.log(`seed ${seed}, SOAK_SECONDS ${seconds}, ${Math.round((performance.now() - began) / 1000)} s in all`)
if (process.env["SOAK_JSON"] !== undefined) {
  fs.writeFileSync(
    process.env["SOAK_JSON"],
    JSON.stringify(results, (_, v) => (typeof v === "bigint" ? String(v) : v), 2)
  )
}
const found = problems(results)
if (found.length > 0) {
  console.error(`\n${found.length} problem(s); participants' logs kept in ${logDir}`)
  for (const line of found) console.error(`  - ${line}`)
} else if (process.env["SOAK_KEEP_LOGS"] === "1") {
  console.log(`logs in ${logDir}`)
} else {
  fs.rmSync(logDir, { recursive: true, force: true })
}
await exitWhenClosed(found.length > 0 ? 1 : 0)
