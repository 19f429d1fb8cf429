/**
 * The mutation check: proves the soak oracle can fail. Each mutant is a copy
 * of the built library (dist/) with one safety mechanism removed; the soak
 * runs a scenario that needs that mechanism against the copy, and the oracle
 * must report violations. A run that misses a mutant is run again, up to
 * five times in all (see `attempts`). Exits 1 if any mutant goes unnoticed,
 * or if something it started is still open 10 s after its report (see
 * exit.ts).
 *
 *   tsx test/soak/mutation.ts [--paths pg]        (after npm run build)
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { type PathName, startBackend } from "./backend.js"
import { exitWhenClosed } from "./exit.js"
import { runScenario, scenarios } from "./scenarios.js"

interface Mutant {
  readonly name: string
  readonly file: string
  readonly from: string
  readonly to: string
  /** The scenario that needs the mechanism the mutant removes. */
  readonly scenario: string
}

const mutants: ReadonlyArray<Mutant> = [
  {
    name: "isLeader without the deadline re-check",
    file: "internal/election/published.js",
    from: "term !== undefined && now < term.deadline ? term : undefined",
    to: "term",
    scenario: "frozen leader"
  },
  {
    name: "watchdog disabled",
    file: "internal/election/watchdog.js",
    // The alarm goes off and finds the deadline passed, but ends nothing.
    from: `Deferred.unsafeDone(stop, Exit.succeed("expired"))`,
    to: "undefined",
    scenario: "leader partitioned"
  }
]

const root = fileURLToPath(new URL("../../", import.meta.url))
const dist = path.join(root, "dist")
if (!fs.existsSync(path.join(dist, "Elector.js"))) throw new Error("no dist/: run `npm run build` first")

/** A copy of dist/ with one patch, next to a node_modules link so that `effect` resolves to the same package. */
const build = (mutant: Mutant, into: string): string => {
  const copy = path.join(into, "dist")
  fs.cpSync(dist, copy, { recursive: true })
  fs.symlinkSync(fs.realpathSync(path.join(root, "node_modules")), path.join(into, "node_modules"))
  const file = path.join(copy, mutant.file)
  const text = fs.readFileSync(file, "utf8")
  if (text.split(mutant.from).length !== 2) {
    throw new Error(`mutant "${mutant.name}": expected exactly one \`${mutant.from}\` in dist/${mutant.file}`)
  }
  fs.writeFileSync(file, text.replace(mutant.from, mutant.to))
  return `${pathToFileURL(copy).href}/`
}

/**
 * Runs per mutant before it counts as unnoticed. One run can miss a mutant
 * through no fault of the oracle: the frozen leader's SIGSTOP can land while
 * its work is between two steps, the next step's timer not yet set (the
 * runner's 20 ms polls are not in step with the 10 ms work). On SIGCONT the
 * watchdog's overdue alarm then goes off before that timer is set, the term
 * ends, and the mutant's `isLeader` is never asked in the window it breaks.
 * That was 3 runs in 16 of this check on the 2-core machine (in one that
 * missed, the last step before the freeze wrote its line 41 us after the
 * runner recorded the SIGSTOP; 26 rounds of the scenario alone all caught
 * it); at that rate five runs all miss about once in 4,000 checks, and a
 * retry costs about 25 s.
 */
const attempts = 5

type Violations = ReadonlyArray<{ readonly kind: string; readonly message: string }>

/** A mutant is caught by safety violations only: a participant that crashed proves nothing. */
const caughtBy = (violations: Violations): boolean =>
  violations.length > 0 && violations.every((v) => v.kind !== "Died")

const described = (violations: Violations): string =>
  violations.map((v) => `${v.kind}: ${v.message}`).join("; ") || "no violation reported"

const arg = process.argv.indexOf("--paths")
const paths = (arg < 0 ? "pg" : process.argv[arg + 1] ?? "pg").split(",") as Array<PathName>
const work = fs.mkdtempSync(path.join(os.tmpdir(), "soak-mutants-"))
let unnoticed = 0
try {
  for (const p of paths) {
    const backend = await startBackend(p)
    try {
      // The mutants run side by side, each its own election on the one backend.
      const outcomes = await Promise.all(mutants.map(async (mutant, i) => {
        const scenario = scenarios.find((s) => s.name === mutant.scenario)
        if (scenario === undefined) throw new Error(`no scenario ${mutant.scenario}`)
        const copy = build(mutant, path.join(work, String(i)))
        const misses: Array<string> = []
        for (let attempt = 1; attempt <= attempts; attempt++) {
          const result = await runScenario(backend, scenario, {
            seconds: 10,
            seed: attempt,
            logDir: path.join(work, "logs"),
            dist: copy
          })
          if (caughtBy(result.violations)) return { mutant, scenario, result, misses }
          misses.push(described(result.violations))
        }
        return { mutant, scenario, result: undefined, misses }
      }))
      for (const { misses, mutant, result, scenario } of outcomes) {
        if (result === undefined) unnoticed += 1
        const missed = misses.map((miss, i) => `\n  run ${i + 1} of ${attempts} missed it: ${miss}`).join("")
        console.log(
          result === undefined
            ? `NOT CAUGHT: ${mutant.name} (${scenario.name}, ${p}) in ${attempts} runs${missed}`
            : `caught: ${mutant.name} (${scenario.name}, ${p})${
              misses.length === 0 ? "" : ` in run ${misses.length + 1}`
            }: ${described(result.violations)}${missed}`
        )
      }
    } finally {
      await backend.destroy()
    }
  }
} finally {
  fs.rmSync(work, { recursive: true, force: true })
}
await exitWhenClosed(unnoticed === 0 ? 0 : 1)
