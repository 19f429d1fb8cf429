/**
 * Issue 43's soak of spreading: one spread group of `--names` elections over
 * `--members` participant processes (participant.mjs, `SOAK_SHAPE=spread`,
 * the BUILT library) on a throwaway server per path, through a sequence of
 * changes: a member joins, one stops cleanly (SIGTERM), one crashes
 * (SIGKILL) and is started again, one is frozen (SIGSTOP) for longer than
 * the lease and thawed, every member is restarted in turn. After each
 * change it waits until the group has settled (every election led by one
 * live member, every live member within floor(N/M)..ceil(N/M), and still so
 * two retry periods later) and records how long that took and how many
 * terms began meanwhile (moves) against what the rules call for. At the end
 * the oracle checks every election across every process.
 *
 *   npm run soak:spread                                        # build, 1,000 elections over 4 members on each path
 *   npx tsx test/soak/spread.ts --paths pg --names 100 --check  # CI's slice
 *
 * `--paths` (`pg`, `pgbouncer`, `mariadb`; default all), `--names` (default
 * 1000), `--members` (default 4), `--timing` (a preset of `Elector.timing`;
 * default `default`: see the README for why not `fast`), `--settle` (seconds
 * a change may take to settle, default 300), `--check`: exit 1 on any
 * violation, a process that died, or a change that never settled (without
 * it: 0 whatever it measured). Moves are measured, never checked.
 * SPREAD_JSON=file writes the results; SOAK_KEEP_LOGS=1 keeps the logs (kept
 * anyway when a check fails). Exits 1 too if a run could not be carried out
 * or left something open.
 */
import { Duration } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Elector from "../../src/Elector.js"
import { sleep } from "../chaos/harness/process.js"
import { type Backend, type PathName, pathNames, startBackend, table } from "./backend.js"
import { exitWhenClosed } from "./exit.js"
import { Fleet, nowUs } from "./fleet.js"
import { analyse, byElection, type Violation } from "./oracle.js"

const arg = (name: string): string | undefined => {
  const i = process.argv.indexOf(`--${name}`)
  return i < 0 ? undefined : process.argv[i + 1] ?? ""
}
const paths = (arg("paths") ?? pathNames.join(",")).split(",").map((s) => s.trim()) as Array<PathName>
for (const p of paths) if (!pathNames.includes(p)) throw new Error(`unknown path ${p}: ${pathNames.join(", ")}`)
const names = Number(arg("names") ?? 1000)
const members = Number(arg("members") ?? 4)
const settleSeconds = Number(arg("settle") ?? 300)
const timingName = (arg("timing") ?? "default") as keyof typeof Elector.timing
const timing = Elector.timing[timingName]
if (!(names > 0) || !(members >= 2) || !(settleSeconds > 0) || timing === undefined) {
  throw new Error(
    `--names N > 0, --members M >= 2, --settle seconds > 0, --timing ${Object.keys(Elector.timing).join(" | ")}`
  )
}
const check = process.argv.includes("--check")
if (!fs.existsSync(new URL("../../dist/Elector.js", import.meta.url))) {
  throw new Error("no dist/: run `npm run build` first (npm run soak:spread does)")
}
const leaseMs = Duration.toMillis(timing.leaseDuration)
const retryMs = Duration.toMillis(timing.retryPeriod)
/** How long the balance must hold to count as settled: two retry periods, each member's view refreshed twice. */
const holdMs = 2 * retryMs

/** One change and how the group settled after it. */
interface Change {
  readonly kind: string
  /** Live members once it settles. */
  readonly members: number
  /** What the rules call for (moves), and which rule. */
  readonly bound: number
  readonly rule: string
  /** Terms begun from the change to the instant the balance began to hold. */
  readonly moves: number
  /** Terms begun while the balance held (the hold): a settled group moves nothing. */
  readonly movesWhileSettled: number
  /** From the change (for a freeze: from SIGCONT) to the instant the balance began to hold; undefined: never. */
  readonly settleMs: number | undefined
  /** Elections each live member led at that instant. */
  readonly counts: ReadonlyArray<number>
  /**
   * Terms ended from the change to the settling, by the library's step-down
   * reason (`handedOver`, `shutdown`, `expired`, ...): an `expired` one is a
   * renewal lost (on a loaded machine, to a starved event loop), and the
   * election's next term is a move the rules did not call for.
   */
  readonly stepDowns: Readonly<Record<string, number>>
  /** The change's window on the monotonic clock (µs), for the step-downs. */
  readonly window: readonly [number, number]
}

interface PathResult {
  readonly path: PathName
  readonly names: number
  readonly timing: string
  readonly seconds: number
  readonly load: readonly [number, number]
  readonly changes: ReadonlyArray<Change>
  /** The oracle's findings over every election, by kind. */
  readonly violations: Readonly<Partial<Record<Violation["kind"], number>>>
  readonly firstViolations: ReadonlyArray<string>
  readonly terms: number
  /** Frozen leaders that woke superseded: how many, and the longest SIGCONT-to-stop window (ms). */
  readonly wakes: number
  readonly maxWakeMs: number
  readonly died: number
  readonly errorLines: number
  readonly warnLines: number
}

let runs = 0

const runPath = async (backend: Backend, logDir: string): Promise<PathResult> => {
  const began = performance.now()
  const loadAtStart = os.loadavg()[0] ?? 0
  const run = ++runs
  const fleet = new Fleet({
    dir: path.join(logDir, `spread-${backend.path}-${run}`),
    kind: backend.kind,
    name: `spread-${process.pid}-${run}`,
    table,
    url: (slot) => backend.url(slot),
    // One step of each election's work a second: 1,000 elections log 1,000
    // steps a second over the group, enough to catch a stale act at each
    // handover without the logging taking the machine. A pool of 8: at
    // the default timing a member of 1,000 elections makes ~500 calls a
    // second (docs/operations.md, "Sizing the pool"), and five members stay
    // within the throwaway PostgreSQL's 60 connections.
    env: { SOAK_NAMES: String(names), SOAK_TIMING: timingName, SOAK_STEP_MS: "1000", SOAK_POOL: "8" }
  })
  const changes: Array<Change> = []
  const live = () =>
    fleet.slots.flatMap((slot) => {
      const member = fleet.member(slot)
      return member === undefined || member.exited || member.frozen ? [] : [{ slot, member }]
    })
  const balanced = (): boolean => {
    fleet.follow()
    const now = live()
    const holders = new Map<string, number>()
    for (const { member } of now) for (const name of member.led.keys()) holders.set(name, (holders.get(name) ?? 0) + 1)
    const [floor, ceil] = [Math.floor(names / now.length), Math.ceil(names / now.length)]
    return holders.size === names && [...holders.values()].every((n) => n === 1) &&
      now.every(({ member }) => member.led.size >= floor && member.led.size <= ceil)
  }
  const led = (slot: string): number => fleet.member(slot)?.led.size ?? 0
  const share = () => Math.ceil(names / live().length)
  const moves = (from: number, to: number): number => fleet.termStarts.filter((t) => t >= from && t < to).length

  /** Waits until the balance has held for holdMs; records the change. */
  const settle = async (kind: string, fromUs: number, bound: number, rule: string, clockFromUs = fromUs) => {
    const deadline = performance.now() + settleSeconds * 1000
    let since: number | undefined
    let counts: Array<number> = []
    for (;;) {
      const now = nowUs()
      if (balanced()) {
        if (since === undefined) {
          since = now
          counts = live().map(({ member }) => member.led.size)
        }
        if (now - since >= holdMs * 1000) break
      } else since = undefined
      if (performance.now() > deadline) break
      await sleep(100)
    }
    const change: Change = {
      kind,
      members: live().length,
      bound,
      rule,
      moves: moves(fromUs, since ?? nowUs()),
      movesWhileSettled: since === undefined ? 0 : moves(since, nowUs()),
      settleMs: since === undefined ? undefined : (since - clockFromUs) / 1000,
      counts,
      stepDowns: {},
      window: [fromUs, since ?? nowUs()]
    }
    changes.push(change)
    console.log(
      `  ${kind.padEnd(20)} ${String(change.members)} members: moves ${change.moves} (rules: ${bound}, ${rule})` +
        `, settled ${change.settleMs === undefined ? "NEVER" : `after ${(change.settleMs / 1000).toFixed(1)} s`}` +
        ` [${change.counts.join(" ")}]${
          change.movesWhileSettled > 0 ? `, ${change.movesWhileSettled} moves while settled` : ""
        }`
    )
    return change.settleMs !== undefined
  }
  const ready = (slot: string) => fleet.ready(slot, settleSeconds * 1000)

  try {
    const steps: Array<() => Promise<boolean>> = [
      async () => {
        const from = nowUs()
        const slots = Array.from({ length: members }, (_, i) => `p${i}`)
        for (const slot of slots) await fleet.start(slot, { shape: "spread" })
        for (const slot of slots) await ready(slot)
        return settle("start together", from, names, "every election once")
      },
      async () => {
        const from = nowUs()
        await fleet.start(`p${members}`, { shape: "spread" })
        await ready(`p${members}`)
        return settle("join", from, share(), "the joiner's share")
      },
      async () => {
        const count = led("p0")
        const from = nowUs()
        await fleet.terminate("p0")
        return settle("clean stop", from, count, "the leaver's elections")
      },
      async () => {
        const count = led("p1")
        const from = nowUs()
        await fleet.kill("p1")
        return settle("crash", from, count, "the crashed member's elections")
      },
      async () => {
        const from = nowUs()
        await fleet.start("p1", { shape: "spread" })
        await ready("p1")
        return settle("restart after crash", from, share(), "the joiner's share")
      },
      async () => {
        const count = led("p2")
        const from = nowUs()
        fleet.freeze("p2")
        // Longer than the lease: the others take its elections over, and its
        // membership lapses (candidateTtl is shorter than the default lease).
        await sleep(leaseMs * 1.5)
        fleet.thaw("p2")
        const thawed = nowUs()
        return settle("freeze", from, count + share(), "its elections, then its share back", thawed)
      },
      async () => {
        const from = nowUs()
        const slots = live().map(({ slot }) => slot)
        // A deploy: each member in turn stopped cleanly and replaced, the
        // next once the new one is up; the balance is not waited for.
        for (const slot of slots) {
          await fleet.terminate(slot)
          await fleet.start(slot, { shape: "spread" })
          await ready(slot)
        }
        return settle("rolling restart", from, 2 * share() * slots.length, "each: its elections, then a share")
      }
    ]
    for (const step of steps) if (!(await step())) break
  } finally {
    await fleet.stopAll()
  }

  const end = nowUs()
  const logs = fleet.logs()
  const violations: Partial<Record<Violation["kind"], number>> = {}
  const firstViolations: Array<string> = []
  let terms = 0
  let wakes = 0
  let maxWakeUs = 0
  for (const [name, electionLogs] of byElection(logs)) {
    const analysis = analyse(electionLogs, fleet.processEvents, end, leaseMs * 1000)
    terms += analysis.terms.length
    wakes += analysis.wakes.length
    for (const wake of analysis.wakes) maxWakeUs = Math.max(maxWakeUs, wake.windowUs)
    // A process that died is counted once below, not once per election.
    for (const v of analysis.violations.filter((v) => v.kind !== "Died")) {
      violations[v.kind] = (violations[v.kind] ?? 0) + 1
      if (firstViolations.length < 10) firstViolations.push(`${name}: ${v.message}`)
    }
  }
  const lines = logs.flatMap((log) => log.events.flatMap((e) => (e.e === "log" ? [e] : [])))
  const stepDowns = lines.flatMap((e) => {
    const reason = /^stopped leading under fence \d+ \((\w+)\)/.exec(e.m)?.[1]
    return reason === undefined ? [] : [{ t: e.t, reason }]
  })
  return {
    path: backend.path,
    names,
    timing: timingName,
    seconds: (performance.now() - began) / 1000,
    load: [loadAtStart, os.loadavg()[0] ?? 0],
    changes: changes.map((change) => {
      const counted: Record<string, number> = {}
      for (const { reason, t } of stepDowns) {
        if (t >= change.window[0] && t < change.window[1]) counted[reason] = (counted[reason] ?? 0) + 1
      }
      return { ...change, stepDowns: counted }
    }),
    violations,
    firstViolations,
    terms,
    wakes,
    maxWakeMs: maxWakeUs / 1000,
    died: fleet.processEvents.filter((e) => e.k === "died").length,
    errorLines: lines.filter((e) => e.l === "ERROR").length,
    warnLines: lines.filter((e) => e.l === "WARN").length
  }
}

/** What a result breaks, one line each (moves are measured, not checked: lost renewals add to them). */
const problems = (r: PathResult): Array<string> => [
  ...Object.entries(r.violations).map(([kind, n]) => `the oracle found ${n} ${kind}`),
  ...(r.died > 0 ? [`${r.died} processes died on their own`] : []),
  ...r.changes.filter((c) => c.settleMs === undefined).map((c) => `${c.kind} never settled`),
  ...(r.changes.length < 7 ? [`the run stopped after ${r.changes.length} of 7 changes`] : [])
]

const logDir = fs.mkdtempSync(path.join(os.tmpdir(), "soak-spread-"))
const results: Array<PathResult> = []
let failed = false
let broken = false
for (const p of paths) {
  const backend = await startBackend(p)
  try {
    console.log(`spread: ${names} elections over ${members} processes on ${p}, timing ${timingName}`)
    const r = await runPath(backend, logDir)
    results.push(r)
    console.log(
      `  ${r.terms} terms in ${r.seconds.toFixed(0)} s (load ${r.load[0].toFixed(1)} -> ${r.load[1].toFixed(1)}); ` +
        `oracle ${JSON.stringify(r.violations)}; frozen leaders woken superseded ${r.wakes} ` +
        `(longest window ${r.maxWakeMs.toFixed(0)} ms); ${r.errorLines} ERROR / ${r.warnLines} WARN lines`
    )
    for (const c of r.changes) {
      console.log(`  ${c.kind.padEnd(20)} step-downs meanwhile: ${JSON.stringify(c.stepDowns)}`)
    }
    for (const v of r.firstViolations) console.log(`  ${v}`)
    const found = problems(r)
    if (found.length > 0) broken = true
    console.log(found.length === 0 ? "  every check holds" : `  BROKEN: ${found.join("; ")}`)
  } catch (error) {
    failed = true
    console.error(`\nthe run on ${p} failed: ${error instanceof Error ? error.stack : String(error)}`)
  } finally {
    await backend.destroy()
  }
}
if (process.env["SPREAD_JSON"] !== undefined) {
  fs.writeFileSync(process.env["SPREAD_JSON"], JSON.stringify(results, null, 2))
}
const failing = failed || (check && broken)
if (process.env["SOAK_KEEP_LOGS"] === "1" || failing || broken) console.log(`logs in ${logDir}`)
else fs.rmSync(logDir, { recursive: true, force: true })
await exitWhenClosed(failing ? 1 : 0)
