/**
 * Two participant processes sharing one identity (identity.ts) on each path,
 * on throwaway servers: measured, and with `--check` checked.
 *
 *   npm run soak:same-identity                          # build, then 40 s on pg and on mariadb
 *   npm run soak:same-identity -- --seconds 300 --paths pg --check   # issue 39's five minutes
 *   npx tsx test/soak/sameIdentity.ts --seconds 20 --check          # test:soak's and CI's slice
 *
 * `--seconds` (or SAME_IDENTITY_SECONDS; default 40) per path; `--paths`
 * (`pg`, `pgbouncer`, `mariadb`; default pg,mariadb); `--check` exits 1 when
 * a run breaks the requirement (`sameIdentityProblems`), else it exits 0
 * whatever it measured; SAME_IDENTITY_JSON=file writes the results;
 * SOAK_KEEP_LOGS=1 keeps the participants' logs (kept anyway when a check
 * fails). Run it after `npm run build`. Exits 1 too if a run could not be
 * carried out or left something open.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { type PathName, pathNames, startBackend } from "./backend.js"
import { exitWhenClosed } from "./exit.js"
import { runSameIdentity, sameIdentityProblems, type SameIdentityResult } from "./identity.js"

const arg = (name: string): string | undefined => {
  const i = process.argv.indexOf(`--${name}`)
  return i < 0 ? undefined : process.argv[i + 1] ?? ""
}
const paths = (arg("paths") ?? "pg,mariadb").split(",").map((s) => s.trim()) as Array<PathName>
for (const p of paths) if (!pathNames.includes(p)) throw new Error(`unknown path ${p}: ${pathNames.join(", ")}`)
const seconds = Number(arg("seconds") ?? process.env["SAME_IDENTITY_SECONDS"] ?? 40)
if (!(seconds > 0)) throw new Error(`--seconds: a positive number of seconds, not ${arg("seconds")}`)
const check = process.argv.includes("--check")
if (!fs.existsSync(new URL("../../dist/Elector.js", import.meta.url))) {
  throw new Error("no dist/: run `npm run build` first (npm run soak:same-identity does)")
}

const logDir = fs.mkdtempSync(path.join(os.tmpdir(), "soak-same-identity-"))
const results: Array<SameIdentityResult> = []
let failed = 0
let broken = 0
for (const p of paths) {
  const backend = await startBackend(p)
  try {
    process.stdout.write(`two processes as one identity on ${p} (${seconds} s) ... `)
    const r = await runSameIdentity(backend, { seconds, logDir })
    results.push(r)
    console.log(
      [
        `both leading ${r.bothLeadingMs.toFixed(0)} ms in ${seconds} s;`,
        `fences in both processes' terms [${r.sharedFences.join(", ")}];`,
        `ERROR lines naming the collision: ${r.collisionErrors.length}${
          r.collisionErrors[0] === undefined ? "" : ` (the first: ${r.collisionErrors[0]})`
        };`,
        `oracle ${JSON.stringify(r.violations)};`,
        r.processes.map((q) =>
          `${q.id}: ${q.terms} terms, led ${q.ledMs.toFixed(0)} ms, ${q.errors} ERROR / ${q.warnings} WARN lines`
        ).join("; ")
      ].join(" ")
    )
    const problems = sameIdentityProblems(r)
    if (problems.length > 0) broken += 1
    console.log(problems.length === 0 ? "  the requirement holds" : `  BROKEN: ${problems.join("; ")}`)
  } catch (error) {
    failed += 1
    console.error(`\nthe run on ${p} failed: ${error instanceof Error ? error.stack : String(error)}`)
  } finally {
    await backend.destroy()
  }
}
if (process.env["SAME_IDENTITY_JSON"] !== undefined) {
  fs.writeFileSync(
    process.env["SAME_IDENTITY_JSON"],
    JSON.stringify(results, (_, v) => (typeof v === "bigint" ? String(v) : v), 2)
  )
}
const failing = failed > 0 || (check && broken > 0)
if (process.env["SOAK_KEEP_LOGS"] === "1" || failing) console.log(`logs in ${logDir}`)
else fs.rmSync(logDir, { recursive: true, force: true })
await exitWhenClosed(failing ? 1 : 0)
