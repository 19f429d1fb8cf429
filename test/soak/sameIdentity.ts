/**
 * Measures two participant processes sharing one identity (identity.ts) on
 * each path, on throwaway servers. Not part of `npm run test:soak`: today's
 * library lets both lead at once and prints no ERROR about it.
 *
 *   npm run soak:same-identity                 # build, then 40 s on pg and on mariadb
 *   SAME_IDENTITY_SECONDS=300 npx tsx test/soak/sameIdentity.ts --paths pg,pgbouncer,mariadb
 *
 * SAME_IDENTITY_SECONDS (default 40) per path; `--paths` (`pg`, `pgbouncer`,
 * `mariadb`; default pg,mariadb); SAME_IDENTITY_JSON=file writes the results;
 * SOAK_KEEP_LOGS=1 keeps the participants' logs. Run it after
 * `npm run build`. Exits 0 with a report whatever it measured; 1 only if a
 * run could not be carried out or left something open.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { type PathName, pathNames, startBackend } from "./backend.js"
import { exitWhenClosed } from "./exit.js"
import { runSameIdentity, type SameIdentityResult } from "./identity.js"

const i = process.argv.indexOf("--paths")
const paths = (i < 0 ? "pg,mariadb" : process.argv[i + 1] ?? "").split(",").map((s) => s.trim()) as Array<PathName>
for (const p of paths) if (!pathNames.includes(p)) throw new Error(`unknown path ${p}: ${pathNames.join(", ")}`)
const seconds = Number(process.env["SAME_IDENTITY_SECONDS"] ?? 40)
if (!fs.existsSync(new URL("../../dist/Elector.js", import.meta.url))) {
  throw new Error("no dist/: run `npm run build` first (npm run soak:same-identity does)")
}

const logDir = fs.mkdtempSync(path.join(os.tmpdir(), "soak-same-identity-"))
const results: Array<SameIdentityResult> = []
let failed = 0
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
        `ERROR lines naming the collision: ${r.collisionErrors.length};`,
        `oracle ${JSON.stringify(r.violations)};`,
        r.processes.map((q) =>
          `${q.id}: ${q.terms} terms, led ${q.ledMs.toFixed(0)} ms, ${q.errors} ERROR / ${q.warnings} WARN lines`
        ).join("; ")
      ].join(" ")
    )
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
if (process.env["SOAK_KEEP_LOGS"] === "1" || failed > 0) console.log(`logs in ${logDir}`)
else fs.rmSync(logDir, { recursive: true, force: true })
await exitWhenClosed(failed > 0 ? 1 : 0)
