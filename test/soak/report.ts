/** The soak's results table (markdown), one row per scenario and path. */
import { median } from "./oracle.js"
import type { Result } from "./scenarios.js"

const fmt = (n: number | undefined, digits = 0): string => (n === undefined ? "—" : n.toFixed(digits))

const faults = (r: Result): string => {
  const entries = Object.entries(r.faults).sort((a, b) => b[1] - a[1])
  if (entries.length === 0) return "—"
  const total = entries.reduce((s, [, n]) => s + n, 0)
  return `${total}: ${entries.map(([k, n]) => `${k} ${n}`).join(", ")}`
}

const failover = (r: Result): string =>
  r.crashFailoverMs.length === 0
    ? "—"
    : `${fmt(median(r.crashFailoverMs))} / ${fmt(Math.max(...r.crashFailoverMs))} (${r.crashFailoverMs.length})`

const wakes = (r: Result): string =>
  r.wakes.length === 0
    ? "—"
    : `${fmt(Math.max(...r.wakes.map((w) => w.windowMs)), 1)} ms, ≤${
      Math.max(...r.wakes.map((w) => w.steps))
    } step (${r.wakes.length})`

const leaderless = (r: Result): string => {
  if (r.leaderless.length === 0) return "—"
  const leader = r.leaderless.filter((l) => l.label === "leader").map((l) => l.ms)
  const follower = r.leaderless.filter((l) => l.label !== "leader").map((l) => l.ms)
  return `leader ${leader.length === 0 ? "—" : leader.join("/")}, followers ${
    follower.length === 0 ? "—" : Math.max(...follower)
  }`
}

const memory = (r: Result): string => {
  const m = r.resources
  if (m.heapMb === undefined) return "—"
  const growth = m.heapMbPerHour === undefined
    ? "n/a"
    : `${m.heapMbPerHour >= 0 ? "+" : ""}${m.heapMbPerHour.toFixed(1)} MB/h`
  const handles = m.handlesPerHour === undefined
    ? ""
    : `, handles ${m.handlesPerHour >= 0 ? "+" : ""}${m.handlesPerHour.toFixed(0)}/h`
  const signed = (x: number, digits: number) => `${x >= 0 ? "+" : ""}${x.toFixed(digits)}`
  const longest = m.longest === undefined
    ? ""
    : `; longest-lived (${m.longest.seconds} s): ${signed(m.longest.heapMbPerHour, 1)} MB/h, second half ${
      signed(m.longest.laterHeapMbPerHour, 1)
    } MB/h, handles ${signed(m.longest.handlesPerHour, 0)}/h`
  return `${growth} (heap ≤${
    m.heapMb.toFixed(1)
  } MB over ${m.sampledSeconds} s${handles}, ≤${m.handlesMax} handles)${longest}`
}

export const table = (results: ReadonlyArray<Result>): string => {
  const header = [
    "scenario",
    "path",
    "s",
    "faults by kind",
    "terms",
    "violations",
    "recovery / max gap after heal (ms)",
    "crash failover median / max (ms)",
    "frozen-leader window",
    "leaderless per restart (ms)",
    "memory growth (heap after GC)",
    "DB conns max",
    "max step gap (ms)"
  ]
  const rows = results.map((r) => [
    r.scenario,
    r.path,
    String(r.seconds),
    faults(r),
    String(r.terms),
    String(r.violations.length + r.failures.length),
    `${r.recoveryMs} / ${fmt(r.maxGapAfterHealMs)}${
      r.gapsUnresolved > 0 ? ` (${r.gapsUnresolved} cut by the next fault)` : ""
    }`,
    failover(r),
    wakes(r),
    leaderless(r),
    memory(r),
    fmt(r.resources.dbConnectionsMax),
    String(r.maxStepGapMs)
  ])
  return [header, header.map(() => "---"), ...rows].map((cells) => `| ${cells.join(" | ")} |`).join("\n")
}

export const problems = (results: ReadonlyArray<Result>): Array<string> =>
  results.flatMap((r) => [
    ...r.violations.map((v) => `${r.scenario} (${r.path}) ${v.kind}: ${v.message}`),
    ...r.failures.map((f) => `${r.scenario} (${r.path}): ${f}`)
  ])
