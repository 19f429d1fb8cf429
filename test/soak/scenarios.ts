/**
 * The soak scenarios and the one runner they share: start a fleet of
 * participant processes on a backend, wait for a leader, run the scenario
 * (which breaks things and heals them), heal whatever is left, check
 * liveness, stop the fleet, then hand every log to the oracle and measure.
 */
import * as path from "node:path"
import { Mode } from "../chaos/harness/FaultProxy.js"
import { sleep } from "../chaos/harness/process.js"
import { prng } from "../chaos/soak.js"
import { type Backend, ownSlots, type PathName, table } from "./backend.js"
import { Fleet, nowUs } from "./fleet.js"
import { type Analysis, nextLeadingAt, slope, type Violation } from "./oracle.js"

/** The participants' lease (participant.mjs): 3 s, renewed every 750 ms, safety margin 1 s. */
export const leaseMs = 3_000
/** Once faults end: a lease left behind expires, then a follower's poll claims it. */
const livenessBoundMs = leaseMs + 7_000
/** Longer than leaseDuration - safetyMargin: a term that lasts this long renewed since the heal. */
const stableMs = leaseMs - 1_000 + 500

export interface FaultSpan {
  readonly kind: string
  readonly from: number
  readonly to: number
}

export interface Context {
  readonly path: PathName
  readonly backend: Backend
  readonly fleet: Fleet
  readonly random: () => number
  readonly seconds: number
  readonly spans: Array<FaultSpan>
  /** SIGKILLs of the leader. */
  readonly crashes: Array<{ readonly id: string; readonly t: number }>
  /** Windows whose leaderless time is measured (rolling restart). */
  readonly windows: Array<{ readonly label: string; readonly from: number; readonly to: number }>
  readonly extraViolations: Array<Violation>
  readonly notes: Record<string, string | number>
  readonly logDir: string
  dbPaused: boolean
  /** Runs `inflict`, holds for `holdMs`, runs the cure, records the span. */
  fault(kind: string, holdMs: number, inflict: () => Promise<() => Promise<void> | void>): Promise<void>
}

export interface Scenario {
  readonly name: string
  readonly paths: ReadonlyArray<PathName>
  readonly participants: number
  /** PgBouncer's server connections. */
  readonly poolSize?: number
  /** At most this many terms over the whole run. */
  readonly maxTerms?: number
  /** No term may begin or end while a fault is on: leadership holds through it. */
  readonly steadyThroughFaults?: boolean
  readonly run: (ctx: Context) => Promise<void>
}

export interface Resources {
  /** Heap after GC, MB per hour, the largest slope among processes sampled 3 minutes or more (undefined: none was). */
  readonly heapMbPerHour: number | undefined
  readonly heapMb: number | undefined
  /** Active handles (sockets, timers, ...) per hour, same processes. */
  readonly handlesPerHour: number | undefined
  readonly handlesMax: number | undefined
  readonly dbConnectionsMax: number | undefined
  readonly dbConnectionsPerHour: number | undefined
  /** How long the longest-lived process was sampled, s. */
  readonly sampledSeconds: number
  /**
   * The longest-lived process alone, sampled 3 minutes or more: its heap
   * slope over all its settled samples and over their second half (past
   * warm-up: a leak keeps its slope there, warm-up does not), and its
   * handles'. A run's largest slope is often a short-lived process's warm-up.
   */
  readonly longest:
    | {
      readonly seconds: number
      readonly heapMbPerHour: number
      readonly laterHeapMbPerHour: number
      readonly handlesPerHour: number
    }
    | undefined
}

export interface Result {
  readonly scenario: string
  readonly path: PathName
  readonly seed: number
  readonly seconds: number
  readonly faults: Record<string, number>
  readonly terms: number
  readonly violations: ReadonlyArray<Violation>
  readonly failures: ReadonlyArray<string>
  /** From the end of the run's faults to the term that then lasted. */
  readonly recoveryMs: number
  readonly maxGapAfterHealMs: number | undefined
  readonly gapsUnresolved: number
  readonly crashFailoverMs: ReadonlyArray<number>
  readonly wakes: ReadonlyArray<{ readonly windowMs: number; readonly steps: number; readonly frozenMs: number }>
  readonly leaderless: ReadonlyArray<{ readonly label: string; readonly ms: number }>
  readonly resources: Resources
  /**
   * The longest pause between two steps of a leader's work (10 ms apart when
   * the process runs), frozen spells excluded: how long the machine's load
   * kept a participant's event loop from running.
   */
  readonly maxStepGapMs: number
  readonly notes: Record<string, string | number>
}

/** Growth thresholds of the soak's own check (override: SOAK_MAX_HEAP_MB_PER_HOUR, SOAK_MAX_HANDLES_PER_HOUR). */
export const thresholds = {
  heapMbPerHour: Number(process.env["SOAK_MAX_HEAP_MB_PER_HOUR"] ?? 64),
  handlesPerHour: Number(process.env["SOAK_MAX_HANDLES_PER_HOUR"] ?? 120)
}

const pick = <A>(random: () => number, xs: ReadonlyArray<A>): A => xs[Math.floor(random() * xs.length)] as A
const between = (random: () => number, lo: number, hi: number): number => lo + random() * (hi - lo)

/** The leading segment's time covered within [from, to], µs. */
const ledWithin = (analysis: Analysis, from: number, to: number): number => {
  const parts = analysis.leading.map((s) => [Math.max(s.from, from), Math.min(s.to, to)] as const).filter(([a, b]) =>
    b > a
  ).sort((x, y) => x[0] - y[0])
  let covered = 0
  let reach = from
  for (const [a, b] of parts) {
    if (b <= reach) continue
    covered += b - Math.max(a, reach)
    reach = b
  }
  return covered
}

const resources = (ctx: Context, dbSamples: ReadonlyArray<readonly [number, number]>): Resources => {
  let heapMbPerHour: number | undefined
  let handlesPerHour: number | undefined
  let heapMb: number | undefined
  let handlesMax: number | undefined
  let sampledSeconds = 0
  let longest: Resources["longest"]
  for (const log of ctx.fleet.logs()) {
    const samples = log.events.filter((e): e is Extract<typeof e, { e: "res" }> => e.e === "res")
    const first = samples[0]
    if (first === undefined) continue
    // The first 20 s are warm-up: modules, pools and JIT settle.
    const settled = samples.filter((s) => s.t - first.t >= 20e6)
    const last = settled[settled.length - 1]
    if (last === undefined) continue
    const span = (last.t - (settled[0] as { t: number }).t) / 1e6
    sampledSeconds = Math.max(sampledSeconds, span)
    heapMb = Math.max(heapMb ?? 0, Math.max(...settled.map((s) => s.heap)) / 1e6)
    handlesMax = Math.max(handlesMax ?? 0, ...settled.map((s) => s.handles))
    // A slope over a minute or two is warm-up and noise (a handle more or
    // less is 60/h over one minute): only processes sampled for 3 minutes
    // or more are measured and checked.
    if (span < 180 || settled.length < 30) continue
    const heap = slope(settled.map((s) => [s.t / 3.6e9, s.heap / 1e6] as const))
    const handles = slope(settled.map((s) => [s.t / 3.6e9, s.handles] as const))
    heapMbPerHour = Math.max(heapMbPerHour ?? Number.NEGATIVE_INFINITY, heap)
    handlesPerHour = Math.max(handlesPerHour ?? Number.NEGATIVE_INFINITY, handles)
    if (longest === undefined || span > longest.seconds) {
      const later = settled.slice(Math.floor(settled.length / 2))
      longest = {
        seconds: Math.round(span),
        heapMbPerHour: heap,
        laterHeapMbPerHour: slope(later.map((s) => [s.t / 3.6e9, s.heap / 1e6] as const)),
        handlesPerHour: handles
      }
    }
  }
  const dbSettled = dbSamples.filter(([t]) => t - (dbSamples[0]?.[0] ?? t) >= 20e6)
  return {
    heapMbPerHour,
    heapMb,
    handlesPerHour,
    handlesMax,
    dbConnectionsMax: dbSamples.length === 0 ? undefined : Math.max(...dbSamples.map(([, n]) => n)),
    dbConnectionsPerHour: dbSettled.length < 10 ? undefined : slope(dbSettled.map(([t, n]) => [t / 3.6e9, n] as const)),
    sampledSeconds: Math.round(sampledSeconds),
    longest
  }
}

export interface RunOptions {
  readonly seconds: number
  readonly seed: number
  readonly logDir: string
  /** The built library to run (default dist/). */
  readonly dist?: string | undefined
}

let runs = 0

export const runScenario = async (shared: Backend, scenario: Scenario, options: RunOptions): Promise<Result> => {
  const name = `soak-${scenario.name}-${process.pid}-${++runs}`
  const backend = ownSlots(shared, String(runs))
  const logDir = path.join(options.logDir, `${scenario.name}-${backend.path}-${runs}`)
  const fleet = new Fleet({
    dir: logDir,
    kind: backend.kind,
    name,
    table,
    url: (slot) => backend.url(slot),
    dist: options.dist,
    // SOAK_LISTEN=1: wake-up hints, heard on a direct connection that no fault proxy breaks.
    listenUrl: process.env["SOAK_LISTEN"] === "1" ? backend.direct : undefined
  })
  const began = nowUs()
  const ctx: Context = {
    path: backend.path,
    backend,
    fleet,
    random: prng(options.seed),
    seconds: options.seconds,
    spans: [],
    crashes: [],
    windows: [],
    extraViolations: [],
    notes: {},
    logDir,
    dbPaused: false,
    fault: async (kind, holdMs, inflict) => {
      const from = nowUs()
      const cure = await inflict()
      try {
        await sleep(holdMs)
      } finally {
        await cure()
        ctx.spans.push({ kind, from, to: nowUs() })
      }
    }
  }
  const dbSamples: Array<[number, number]> = []
  let sampling = true
  const sampler = (async () => {
    while (sampling) {
      if (!ctx.dbPaused) {
        const n = await Promise.race([backend.connections(), sleep(2_000).then(() => undefined)]).catch(() => undefined)
        if (n !== undefined) dbSamples.push([nowUs(), n])
      }
      await sleep(5_000)
    }
  })()
  const failures: Array<string> = []
  let recoveryMs = 0
  try {
    for (let i = 0; i < scenario.participants; i++) await fleet.start(`p${i}`)
    // Starting node and loading the library takes seconds on a loaded machine.
    for (const slot of fleet.slots) await fleet.ready(slot)
    await fleet.stableLeader(30_000, 500)
    await scenario.run(ctx)
    backend.setAll(Mode.pass)
    if (ctx.dbPaused) backend.resume()
    const healed = nowUs()
    await fleet.stableLeader(livenessBoundMs, stableMs).catch((error: Error) => {
      failures.push(`liveness: ${error.message}`)
    })
    const term = ctx.fleet.leader()
    const member = term === undefined ? undefined : ctx.fleet.member(term)
    if (member !== undefined) {
      const analysis = fleet.analyse()
      const current = analysis.terms.find((t) => t.id === member.id && t.endedBy === "running")
      if (current !== undefined) recoveryMs = Math.max(0, (current.start - healed) / 1000)
    }
  } catch (error) {
    failures.push(`${scenario.name} (${backend.path}): ${error instanceof Error ? error.message : String(error)}`)
  } finally {
    backend.setAll(Mode.pass)
    if (ctx.dbPaused) backend.resume()
    sampling = false
    await sampler
    await fleet.stopAll()
  }
  const analysis = fleet.analyse()
  const violations = [...analysis.violations, ...ctx.extraViolations]
  if (scenario.maxTerms !== undefined && analysis.terms.length > scenario.maxTerms) {
    failures.push(`${analysis.terms.length} terms, at most ${scenario.maxTerms} expected`)
  }

  if (scenario.steadyThroughFaults === true) {
    for (const span of ctx.spans) {
      const moved = analysis.terms.filter((t) =>
        (t.start > span.from && t.start < span.to) || (t.endedBy !== "running" && t.end > span.from && t.end < span.to)
      )
      if (moved.length > 0) {
        failures.push(
          `leadership moved during "${span.kind}": ${moved.map((t) => `${t.id}#${t.fence}`).join(", ")} began or ended`
        )
      }
    }
  }

  // Gaps after heals: from each fault's end to the next moment someone leads,
  // if that comes before the next fault begins.
  const spans = [...ctx.spans].sort((a, b) => a.from - b.from)
  const gaps: Array<number> = []
  let unresolved = 0
  spans.forEach((span, i) => {
    const next = nextLeadingAt(analysis, span.to)
    const nextFault = spans[i + 1]?.from ?? Number.POSITIVE_INFINITY
    if (next !== undefined && next <= nextFault) gaps.push((next - span.to) / 1000)
    else unresolved += 1
  })

  // Crash failover: from the leader's SIGKILL to the next term, unless
  // another fault began in between.
  const crashFailoverMs = ctx.crashes.flatMap((crash) => {
    const successor = analysis.leading.filter((s) => s.from >= crash.t && s.id !== crash.id)[0]
    if (successor === undefined) return []
    const disturbed = spans.some((s) => s.from > crash.t && s.from < successor.from)
    return disturbed ? [] : [(successor.from - crash.t) / 1000]
  })

  let maxStepGapMs = 0
  for (const log of fleet.logs()) {
    const frozen = analysis.terms.filter((t) => t.id === log.id).flatMap((t) => t.frozen)
    let previous: { readonly f: string; readonly t1: number } | undefined
    for (const event of log.events) {
      if (event.e !== "act") continue
      const last = previous
      if (last?.f === event.f && !frozen.some(([a, b]) => a < event.t0 && b > last.t1)) {
        maxStepGapMs = Math.max(maxStepGapMs, (event.t0 - last.t1) / 1000)
      }
      previous = event
    }
  }

  const res = resources(ctx, dbSamples)
  if (res.heapMbPerHour !== undefined && res.heapMbPerHour > thresholds.heapMbPerHour) {
    failures.push(`heap grows ${res.heapMbPerHour.toFixed(1)} MB/h (threshold ${thresholds.heapMbPerHour})`)
  }
  if (res.handlesPerHour !== undefined && res.handlesPerHour > thresholds.handlesPerHour) {
    failures.push(`handles grow ${res.handlesPerHour.toFixed(1)}/h (threshold ${thresholds.handlesPerHour})`)
  }
  if (violations.length > 0 || failures.length > 0) {
    process.stderr.write(
      `\n${scenario.name} (${backend.path}) logs in ${logDir}\n${
        analysis.terms.map((t) =>
          `  ${t.id}#${t.fence} ${(t.start / 1000).toFixed(1)}..${
            (t.end / 1000).toFixed(1)
          } ${t.endedBy} acts=${t.acts} frozen=${t.frozen.length}`
        ).join("\n")
      }\n`
    )
  }
  const faults: Record<string, number> = {}
  for (const span of spans) faults[span.kind] = (faults[span.kind] ?? 0) + 1
  return {
    scenario: scenario.name,
    path: backend.path,
    seed: options.seed,
    seconds: Math.round((nowUs() - began) / 1e6),
    faults,
    terms: analysis.terms.length,
    violations,
    failures,
    recoveryMs: Math.round(recoveryMs),
    maxGapAfterHealMs: gaps.length === 0 ? undefined : Math.round(Math.max(...gaps)),
    gapsUnresolved: unresolved,
    crashFailoverMs: crashFailoverMs.map(Math.round),
    wakes: analysis.wakes.map((w) => ({
      windowMs: Math.round(w.windowUs / 100) / 10,
      steps: w.steps,
      frozenMs: Math.round(w.frozenUs / 1000)
    })),
    leaderless: ctx.windows.map((w) => ({
      label: w.label,
      ms: Math.round((w.to - w.from - ledWithin(analysis, w.from, w.to)) / 1000)
    })),
    resources: res,
    maxStepGapMs: Math.round(maxStepGapMs),
    notes: ctx.notes
  }
}

const leaderOr = (ctx: Context, fallback: () => string): string => ctx.fleet.leader() ?? fallback()
const runningSlots = (ctx: Context): Array<string> =>
  ctx.fleet.slots.filter((s) => ctx.fleet.member(s)?.exited === false && ctx.fleet.member(s)?.frozen === false)

/** Randomised soak: faults of every kind, one at a time, seeded. p0 is never killed: its memory is sampled for the whole run. */
const soak: Scenario = {
  name: "soak",
  paths: ["pg", "pgbouncer", "mariadb"],
  participants: 4,
  run: async (ctx) => {
    const { random } = ctx
    const onPath = (mode: Parameters<Backend["setAll"]>[0]) => async (slot: string) => {
      const proxy = await ctx.backend.proxy(slot)
      proxy.setMode(mode)
      return () => proxy.setMode(Mode.pass)
    }
    type Inflict = (slot: string) => Promise<() => Promise<void> | void>
    const faults: Array<{ kind: string; hold?: () => number; inflict: Inflict }> = [
      {
        kind: "SIGKILL + restart",
        inflict: async (target) => {
          const slot = target === "p0" ? pick(random, runningSlots(ctx).filter((s) => s !== "p0")) : target
          if (slot === undefined) return () => {}
          const member = ctx.fleet.member(slot)
          const wasLeader = ctx.fleet.leader() === slot
          const t = nowUs()
          await ctx.fleet.kill(slot)
          if (wasLeader && member !== undefined) ctx.crashes.push({ id: member.id, t })
          return async () => {
            await ctx.fleet.start(slot)
          }
        }
      },
      {
        kind: "SIGSTOP",
        // 0.2 s up to three leases.
        hold: () => between(random, 200, 3 * leaseMs),
        inflict: async (slot) => {
          ctx.fleet.freeze(slot)
          return () => ctx.fleet.thaw(slot)
        }
      },
      { kind: "partition", inflict: onPath(Mode.partition) },
      { kind: "blackhole", inflict: onPath(Mode.blackhole) },
      { kind: "sinkhole", inflict: onPath(Mode.sinkhole) },
      { kind: "replies dropped", inflict: onPath(Mode.dropReplies) },
      {
        kind: "all partitioned",
        inflict: async () => {
          ctx.backend.setAll(Mode.partition)
          return () => ctx.backend.setAll(Mode.pass)
        }
      },
      {
        kind: "db paused",
        inflict: async () => {
          ctx.dbPaused = true
          ctx.backend.pause()
          return () => {
            ctx.backend.resume()
            ctx.dbPaused = false
          }
        }
      },
      {
        kind: "db restart",
        hold: () => 0,
        inflict: async () => {
          ctx.dbPaused = true
          await ctx.backend.restart()
          ctx.dbPaused = false
          return () => {}
        }
      },
      ...(ctx.backend.bouncer === undefined ? [] : [{
        kind: "PgBouncer restart",
        hold: () => 0,
        inflict: async () => {
          await ctx.backend.bouncer?.restart()
          return () => {}
        }
      }]),
      { kind: "quiet", hold: () => between(random, 2_000, 8_000), inflict: async () => () => {} }
    ]
    const until = performance.now() + ctx.seconds * 1000
    while (performance.now() < until) {
      const fault = pick(random, faults)
      const running = runningSlots(ctx)
      // Half the time at whoever leads, so leaders are hit as often as followers.
      const target = random() < 0.5 ? leaderOr(ctx, () => pick(random, running)) : pick(random, running)
      const hold = fault.hold?.() ?? between(random, 500, 4_000)
      await ctx.fault(fault.kind, hold, () => fault.inflict(target))
      await sleep(between(random, 300, 2_500))
    }
  }
}

/** The leader is SIGSTOPped for two leases (a successor takes over meanwhile), then SIGCONTed. */
const frozen: Scenario = {
  name: "frozen leader",
  paths: ["pg", "pgbouncer", "mariadb"],
  participants: 3,
  run: async (ctx) => {
    // About one round per 20 s of SOAK_SECONDS, 1 to 10.
    const rounds = Math.min(10, Math.max(1, Math.round(ctx.seconds / 20)))
    for (let round = 0; round < rounds; round++) {
      const slot = await ctx.fleet.stableLeader(livenessBoundMs, stableMs)
      await ctx.fault("SIGSTOP leader", 2 * leaseMs, async () => {
        ctx.fleet.freeze(slot)
        return () => ctx.fleet.thaw(slot)
      })
      await sleep(1_000)
    }
  }
}

/** The leader's path is partitioned until someone else leads. */
const partitioned: Scenario = {
  name: "leader partitioned",
  paths: ["pg", "pgbouncer", "mariadb"],
  participants: 3,
  run: async (ctx) => {
    const slot = await ctx.fleet.stableLeader(livenessBoundMs, stableMs)
    const proxy = await ctx.backend.proxy(slot)
    await ctx.fault("partition leader", 0, async () => {
      proxy.setMode(Mode.partition)
      const deadline = performance.now() + livenessBoundMs
      while (performance.now() < deadline) {
        const leader = ctx.fleet.leader()
        if (leader !== undefined && leader !== slot) break
        await sleep(20)
      }
      await sleep(1_000)
      return () => proxy.setMode(Mode.pass)
    })
  }
}

/** A deploy: each participant in turn shut down cleanly (SIGTERM) and replaced by a new identity. */
const rolling: Scenario = {
  name: "rolling restart",
  paths: ["pg", "pgbouncer", "mariadb"],
  participants: 4,
  run: async (ctx) => {
    for (const slot of [...ctx.fleet.slots]) {
      await ctx.fleet.stableLeader(livenessBoundMs, stableMs)
      const wasLeader = ctx.fleet.leader() === slot
      const from = nowUs()
      await ctx.fleet.terminate(slot)
      await ctx.fleet.start(slot)
      await ctx.fleet.ready(slot)
      await sleep(2_000)
      ctx.windows.push({ label: wasLeader ? "leader" : "follower", from, to: nowUs() })
    }
  }
}

/** New identities join while old ones leave (half SIGTERM, half SIGKILL). */
const churn: Scenario = {
  name: "replacements mid-flight",
  paths: ["pg", "pgbouncer", "mariadb"],
  participants: 4,
  run: async (ctx) => {
    const { random } = ctx
    const until = performance.now() + ctx.seconds * 1000
    let next = 0
    while (performance.now() < until) {
      const leaving = pick(random, runningSlots(ctx))
      const joining = `n${next++}`
      await ctx.fleet.start(joining)
      await sleep(between(random, 200, 1_500))
      const wasLeader = ctx.fleet.leader() === leaving
      const member = ctx.fleet.member(leaving)
      if (random() < 0.5) {
        await ctx.fault("leave (SIGTERM)", 0, async () => {
          await ctx.fleet.terminate(leaving)
          return () => {}
        })
      } else {
        await ctx.fault("leave (SIGKILL)", 0, async () => {
          const t = nowUs()
          await ctx.fleet.kill(leaving)
          if (wasLeader && member !== undefined) ctx.crashes.push({ id: member.id, t })
          return () => {}
        })
      }
      await sleep(between(random, 1_500, 4_000))
    }
  }
}

/** Ten participants (two connections each) behind a PgBouncer with two server connections. */
const exhaustion: Scenario = {
  name: "pool exhaustion",
  paths: ["pgbouncer"],
  participants: 10,
  poolSize: 2,
  steadyThroughFaults: true,
  run: async (ctx) => {
    await ctx.fault("20 clients, 2 server connections", ctx.seconds * 1000, async () => () => {})
    const pools = await ctx.backend.bouncer?.admin("SHOW POOLS")
    const pool = pools?.find((p) => p["database"] === "test")
    ctx.notes["server connections"] = Number(pool?.["sv_active"] ?? 0) + Number(pool?.["sv_idle"] ?? 0) +
      Number(pool?.["sv_used"] ?? 0)
  }
}

/** Two elections in one table; the other one's row is locked by a held transaction. This one must not notice. */
const neighbour: Scenario = {
  name: "broken neighbour",
  paths: ["pg", "pgbouncer", "mariadb"],
  participants: 3,
  steadyThroughFaults: true,
  run: async (ctx) => {
    const other = new Fleet({
      ...ctx.fleet.options,
      dir: path.join(ctx.logDir, "neighbour"),
      name: `${ctx.fleet.options.name}-neighbour`,
      url: (slot) => ctx.backend.url(`neighbour-${slot}`)
    })
    try {
      for (const slot of ["q0", "q1"]) await other.start(slot)
      for (const slot of ["q0", "q1"]) await other.ready(slot)
      await other.stableLeader(livenessBoundMs, 500)
      await ctx.fault("neighbour's row locked", ctx.seconds * 1000, async () => {
        const release = await ctx.backend.lockElection(other.options.name)
        return release
      })
      ctx.notes["neighbour terms"] = other.analyse().terms.length
    } finally {
      await other.stopAll()
      ctx.extraViolations.push(...other.analyse().violations.map((v) => ({ ...v, message: `neighbour: ${v.message}` })))
    }
  }
}

export const scenarios: ReadonlyArray<Scenario> = [soak, frozen, rolling, churn, exhaustion, neighbour, partitioned]
