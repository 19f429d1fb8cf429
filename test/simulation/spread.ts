/**
 * The spread path of `npm run sim` (`--call-path spread`): spread groups
 * (src/testing/internal/SpreadSimulation.ts) through schedules of
 * membership changes, half of them spaced out so that every change is
 * counted against the rules' bound on moves (joins, stops and crashes held
 * to it). Prints, per kind of change, the moves
 * against that bound and how long the group took to settle, and how the
 * elections were shared at the end; `--verbose`, each schedule's changes.
 */
import * as fc from "effect/FastCheck"
import type { Moves } from "../../src/testing/internal/SpreadOracle.js"
import {
  type Change,
  describeChange,
  type SpreadSchedule,
  spreadSchedules
} from "../../src/testing/internal/SpreadSchedule.js"
import { run } from "../../src/testing/internal/SpreadSimulation.js"

export interface SpreadPathOptions {
  readonly runs: number
  readonly seed: number
  readonly path: string | undefined
  readonly verbose: boolean
}

const json = (schedule: SpreadSchedule) =>
  JSON.stringify(schedule, (_, v) => typeof v === "bigint" ? Number(v) : v).replace(/\{"num":(\d+),"den":\d+\}/g, "$1")

const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!

/** Runs the spread schedules; false on a violation (reported, with its replay). */
export const spreadPath = async (options: SpreadPathOptions): Promise<boolean> => {
  // Per kind of change that found the group settled: its moves and settle times.
  const settled = new Map<Change["kind"], Array<Moves>>()
  const spreads = new Map<number, number>()
  let schedules = 0
  let virtualMillis = 0
  let terms = 0
  let slowest = 0
  const started = performance.now()
  const property = fc.property(fc.boolean().chain(spreadSchedules), fc.nat(), (schedule, seed) => {
    const before = performance.now()
    const result = run(schedule, seed)
    const took = performance.now() - before
    schedules++
    slowest = Math.max(slowest, took)
    virtualMillis += result.virtualMillis
    for (const moves of result.moves) {
      terms += moves.moves
      if (moves.change !== "start" && moves.settled) {
        const all = settled.get(moves.change.kind) ?? []
        all.push(moves)
        settled.set(moves.change.kind, all)
      }
    }
    if (result.shares.length > 0) {
      const spread = Math.max(...result.shares) - Math.min(...result.shares)
      spreads.set(spread, (spreads.get(spread) ?? 0) + 1)
    }
    if (options.verbose) {
      console.log(
        `N=${schedule.names} slots=${schedule.rates.length} shares=[${result.shares.join(",")}] ` +
          `(${Math.round(took)}ms real)\n  ` +
          result.moves.map(({ bound, change, moves, settled, settledIn }) =>
            `${describeChange(change)}: ${moves} moves (rules: ${settled ? bound : "-"}), last at +${settledIn}ms`
          ).join("\n  ")
      )
    }
    if (result.violations.length > 0) {
      throw new Error(
        result.violations.map(({ at, check, message }) => `${at}ms ${check}: ${message}`).join("\n") +
          `\nschedule (seed ${seed}): ${json(schedule)}`
      )
    }
  })
  const details = await fc.check(property, {
    numRuns: options.runs,
    seed: options.seed,
    ...(options.path === undefined ? {} : { path: options.path }),
    endOnFailure: options.path !== undefined
  })
  const seconds = (performance.now() - started) / 1000
  console.log(
    `spread: ${schedules} schedules in ${seconds.toFixed(1)}s: ${(seconds * 1000 / schedules).toFixed(0)}ms real ` +
      `per schedule (slowest ${(slowest / 1000).toFixed(1)}s), ${
        (virtualMillis / 3_600_000).toFixed(2)
      } virtual hours, ` +
      `${terms} terms (seed ${options.seed})`
  )
  for (const [kind, all] of settled) {
    const moves = all.reduce((n, m) => n + m.moves, 0)
    const bound = all.reduce((n, m) => n + m.bound, 0)
    const atBound = all.filter((m) => m.moves === m.bound && m.bound > 0).length
    const over = all.filter((m) => m.moves > m.bound)
    const most = Math.max(0, ...over.map((m) => m.moves - m.bound))
    // Settle times of the changes that moved anything: the others took none.
    const times = all.filter((m) => m.moves > 0).map((m) => m.settledIn).sort((a, b) => a - b)
    console.log(
      `  ${kind} from a settled group: ${all.length} changes, ${moves} moves of ${bound} allowed ` +
        `(${atBound} at the bound, ${over.length} over it, by at most ${most}); ` +
        `those that moved settled in ${percentile(times, 0.5)}ms median, ` +
        `${percentile(times, 0.99)}ms p99, ${times.at(-1) ?? 0}ms max`
    )
  }
  console.log(
    `  shares at the end, most minus least: ${
      [...spreads].sort(([a], [b]) => a - b).map(([spread, n]) => `${spread}: ${n} groups`).join(", ")
    }`
  )
  if (!details.failed) return true
  const error = details.errorInstance
  console.log(error instanceof Error ? error.message : String(error))
  console.log(fc.defaultReportMessage(details))
  console.log(
    `\nreplay: npm run sim -- --call-path spread --seed ${details.seed} --path "${details.counterexamplePath}"`
  )
  return false
}
