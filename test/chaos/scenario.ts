/**
 * The one scenario runner: start a fleet on a topology, wait for a leader,
 * run the scenario's fault (which breaks things and heals them), then check
 * liveness (someone leads within a bound once the faults end) and safety (the
 * oracle: no overlapping terms, fences strictly increasing, none reused).
 */
import { Duration } from "effect"
import { expect } from "vitest"
import { type Fleet, type FleetOptions, livenessBoundMs, type Path, startFleet, timing } from "./fleet.js"
import { type FaultProxy, Mode, type ProxyMode } from "./harness/FaultProxy.js"
import { describeViolation } from "./harness/IntervalOracle.js"
import { sleep } from "./harness/process.js"
import type { Topology } from "./harness/Topology.js"

export { livenessBoundMs, type Path }

const leaseMs = Duration.toMillis(timing.leaseDuration)

/** A leader cut off from the database must have stepped down by the time its lease could expire there. */
export const stepDownBoundMs = leaseMs + 500
/** Longer than leaseDuration - safetyMargin: a term that lasts this long renewed within it. */
const stableMs = leaseMs - 1_000 + 500

export interface ScenarioContext {
  readonly path: Path
  readonly topology: Topology
  readonly fleet: Fleet
  /** The leader when the fault began. */
  readonly leader: string
  /** The leader's path. */
  readonly proxy: FaultProxy
  /** Records a measurement for the report. */
  note(key: string, value: number): void
}

export interface Scenario {
  readonly name: string
  /** Default both. */
  readonly paths?: ReadonlyArray<Path>
  readonly fleet?: FleetOptions
  /** Breaks things and heals them; resolves once every fault has ended. */
  readonly fault: (ctx: ScenarioContext) => Promise<void>
  /** At most this many terms over the whole run, the first included. */
  readonly maxTerms?: number
}

export interface ScenarioResult {
  readonly scenario: string
  readonly path: Path
  readonly terms: number
  /** From the end of the faults until the term that then lasted began (0: it began before). */
  readonly recoveryMs: number
  readonly notes: Readonly<Record<string, number>>
  readonly seconds: number
}

export const results: Array<ScenarioResult> = []

const report = (fleet: Fleet): string =>
  `intervals:\n${
    fleet.oracle.intervals().map((i) => `  ${i.id}#${i.fence} [${i.start.toFixed(0)}, ${i.end?.toFixed(0) ?? "open"}]`)
      .join("\n")
  }\nlast logs:\n${fleet.logs.slice(-60).join("\n")}`

export const runScenario = async (path: Path, topology: Topology, scenario: Scenario): Promise<ScenarioResult> => {
  const began = performance.now()
  const fleet = await startFleet(topology, scenario.fleet)
  const notes: Record<string, number> = {}
  let recoveryMs = 0
  try {
    const first = await fleet.leaderWithin(livenessBoundMs)
    await scenario.fault({
      path,
      topology,
      fleet,
      leader: first.id,
      proxy: topology.proxy(first.id),
      note: (key, value) => {
        notes[key] = Math.round(value)
      }
    })
    topology.setAll(Mode.pass)
    const healed = performance.now()
    // A leader that outlives a whole renewal window after the heal has
    // renewed since: not one living on a lease from before the faults.
    const live = await fleet.stableLeaderWithin(livenessBoundMs, stableMs)
    recoveryMs = Math.max(0, live.start - healed)
    if (scenario.maxTerms !== undefined) {
      expect(fleet.oracle.intervals().length, "leadership changes").toBeLessThanOrEqual(scenario.maxTerms)
    }
  } catch (error) {
    throw new Error(
      `${scenario.name} (${path}): ${error instanceof Error ? error.message : String(error)}\n${report(fleet)}`
    )
  } finally {
    topology.setAll(Mode.pass)
    await fleet.destroy()
  }
  const violations = fleet.oracle.violations()
  if (violations.length > 0) {
    throw new Error(`${scenario.name} (${path}): ${violations.map(describeViolation).join("; ")}\n${report(fleet)}`)
  }
  const result: ScenarioResult = {
    scenario: scenario.name,
    path,
    terms: fleet.oracle.intervals().length,
    recoveryMs: Math.round(recoveryMs),
    notes,
    seconds: Math.round((performance.now() - began) / 100) / 10
  }
  results.push(result)
  return result
}

/** Fails if anyone leads at any point during the next `ms`. */
export const nobodyLeadsFor = async (fleet: Fleet, ms: number): Promise<void> => {
  const until = performance.now() + ms
  while (performance.now() < until) {
    const leader = fleet.leader()
    if (leader !== undefined) throw new Error(`${leader} leads while nobody can write to the database`)
    await sleep(10)
  }
}

/**
 * The leader's path breaks in `mode`: it steps down, another participant
 * takes over, then the path heals.
 */
export const isolateLeader = (mode: ProxyMode) => async (ctx: ScenarioContext): Promise<void> => {
  const at = performance.now()
  ctx.proxy.setMode(mode)
  ctx.note("stepDownMs", (await ctx.fleet.steppedDown(ctx.leader, stepDownBoundMs)) - at)
  const next = await ctx.fleet.nextTerm(at, livenessBoundMs, ctx.leader)
  ctx.note("failoverMs", next.start - at)
  ctx.proxy.setMode(Mode.pass)
}

/**
 * Nobody can write: the leader steps down before its lease could expire,
 * nobody leads for a while past any lease, then `heal` ends the outage.
 */
export const outage = (
  inflict: (ctx: ScenarioContext) => Promise<() => Promise<void>>
) =>
async (ctx: ScenarioContext): Promise<void> => {
  const at = performance.now()
  const heal = await inflict(ctx)
  try {
    ctx.note("stepDownMs", (await ctx.fleet.steppedDown(ctx.leader, stepDownBoundMs)) - at)
    await nobodyLeadsFor(ctx.fleet, leaseMs)
  } finally {
    await heal()
  }
}

/** `id` leaves (a crash when the fleet keeps its lease on shutdown), a successor takes over, `id` rejoins. */
export const leaderLeaves = async (ctx: ScenarioContext): Promise<void> => {
  const at = performance.now()
  await ctx.fleet.stop(ctx.leader)
  const next = await ctx.fleet.nextTerm(at, livenessBoundMs, ctx.leader)
  ctx.note("failoverMs", next.start - at)
  await ctx.fleet.start(ctx.leader)
}
