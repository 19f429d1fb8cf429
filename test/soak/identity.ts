/**
 * Two participant processes given ONE identity (a pod name copied into two
 * clusters, `os.hostname()` under host networking), on one election, for a
 * while, untouched: issue 39's first case. Both run participant.mjs shaped
 * as README's Effect quick start (the built library, the 3 s lease, the
 * identity set); the fleet tells them apart by their own ids, so the oracle
 * sees two participants.
 *
 * It measures; `sameIdentityProblems` says what a result breaks, for the CLI
 * in sameIdentity.ts (which fails on it under `--check`).
 */
import * as path from "node:path"
import { concurrentTime } from "../chaos/harness/IntervalOracle.js"
import { sleep } from "../chaos/harness/process.js"
import { type Backend, type PathName, table } from "./backend.js"
import { Fleet } from "./fleet.js"
import type { Violation } from "./oracle.js"

export interface SameIdentityProcess {
  /** The fleet's id for the process (its identity is the shared one). */
  readonly id: string
  readonly terms: number
  /** How long it believed it led, ms. */
  readonly ledMs: number
  /** Its library log lines at ERROR and at WARN. */
  readonly errors: number
  readonly warnings: number
}

export interface SameIdentityResult {
  readonly path: PathName
  readonly identity: string
  readonly seconds: number
  /** How long both processes ran their leader-only work at once, ms. Safe: 0. */
  readonly bothLeadingMs: number
  /** Fences that terms of both processes held. Safe: none. */
  readonly sharedFences: ReadonlyArray<bigint>
  /** ERROR lines (of either process) naming the collision. Wanted: at least one. */
  readonly collisionErrors: ReadonlyArray<string>
  readonly processes: ReadonlyArray<SameIdentityProcess>
  /** What the soak oracle finds, by kind (its Overlap skips two terms under one fence; bothLeadingMs does not). */
  readonly violations: Readonly<Partial<Record<Violation["kind"], number>>>
}

/**
 * An ERROR line names the collision when it names the identity and says
 * another process uses it (issue 39 asks for "identity X is in use by
 * another process; give every process an identity of its own").
 */
export const namesCollision = (identity: string, message: string): boolean =>
  message.includes(identity) && /another process|in use by|collid|collision/i.test(message)

export interface SameIdentityOptions {
  readonly seconds: number
  readonly logDir: string
  /** The identity both processes are given (default `web-0`, a StatefulSet's first pod). */
  readonly identity?: string
}

let runs = 0

export const runSameIdentity = async (backend: Backend, options: SameIdentityOptions): Promise<SameIdentityResult> => {
  const identity = options.identity ?? "web-0"
  const run = ++runs
  const fleet = new Fleet({
    dir: path.join(options.logDir, `same-identity-${backend.path}-${run}`),
    kind: backend.kind,
    name: `same-identity-${process.pid}-${run}`,
    table,
    url: (slot) => backend.url(slot)
  })
  try {
    for (const slot of ["p0", "p1"]) await fleet.start(slot, { identity, shape: "quickstart" })
    for (const slot of fleet.slots) await fleet.ready(slot)
    await sleep(options.seconds * 1000)
  } finally {
    await fleet.stopAll()
  }
  const analysis = fleet.analyse()
  const logs = fleet.logs()
  const processes = logs.map((log): SameIdentityProcess => {
    const lines = log.events.filter((e) => e.e === "log")
    return {
      id: log.id,
      terms: analysis.terms.filter((t) => t.id === log.id).length,
      ledMs: analysis.leading.filter((s) => s.id === log.id).reduce((sum, s) => sum + (s.to - s.from) / 1000, 0),
      errors: lines.filter((e) => e.l === "ERROR").length,
      warnings: lines.filter((e) => e.l === "WARN").length
    }
  })
  const fencesOf = (id: string): Set<bigint> => new Set(analysis.terms.filter((t) => t.id === id).map((t) => t.fence))
  const [first, second] = logs.map((log) => fencesOf(log.id))
  const violations: Partial<Record<Violation["kind"], number>> = {}
  for (const v of analysis.violations) violations[v.kind] = (violations[v.kind] ?? 0) + 1
  return {
    path: backend.path,
    identity,
    seconds: options.seconds,
    bothLeadingMs: concurrentTime(analysis.leading.map((s) => ({ start: s.from, end: s.to }))) / 1000,
    sharedFences: [...(first ?? [])].filter((f) => second?.has(f) === true).sort((a, b) => (a < b ? -1 : 1)),
    collisionErrors: logs.flatMap((log) =>
      log.events.flatMap((e) => e.e === "log" && e.l === "ERROR" && namesCollision(identity, e.m) ? [e.m] : [])
    ),
    processes,
    violations
  }
}

/**
 * What `result` breaks of issue 39's requirement, one line each; none when it
 * holds: the two never run their work at once, no fence is in both
 * processes' terms, the oracle finds nothing (a process that died included),
 * an ERROR line names the collision; and, so that none of that holds merely
 * because nobody led, one of them led for at least half the run.
 */
export const sameIdentityProblems = (result: SameIdentityResult): Array<string> => {
  const ledMs = result.processes.reduce((sum, p) => sum + p.ledMs, 0)
  return [
    ...(result.bothLeadingMs > 0 ? [`both processes led at once for ${result.bothLeadingMs.toFixed(0)} ms`] : []),
    ...(result.sharedFences.length > 0 ? [`fences in both processes' terms: ${result.sharedFences.join(", ")}`] : []),
    ...Object.entries(result.violations).map(([kind, n]) => `the oracle found ${n} ${kind}`),
    ...(result.collisionErrors.length === 0 ? ["no ERROR line names the collision"] : []),
    ...(ledMs < result.seconds * 500 ? [`led ${ledMs.toFixed(0)} ms in all, under half the run`] : [])
  ]
}
