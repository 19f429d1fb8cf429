/**
 * A failover to an asynchronous standby that lost the last term (issue 39):
 * the chaos fleet (three electors in this process, PgStore through their own
 * fault proxies) on a primary whose standby streams through a proxy.
 *
 * 1. A leader on the primary; the standby replays its row; replication is cut.
 * 2. The leader crashes (no release); a successor takes over under a new
 *    fence, on the primary only.
 * 3. Some 0-`killWithinMs` later the primary is SIGKILLed (with the
 *    successor, when `zoneLost`), the standby is promoted and the
 *    participants' path moves to it: the standby still has the first
 *    leader's row, as if the successor's term never happened.
 *
 * It measures, and asserts nothing: `failoverProblems` says what a result
 * breaks, for the chaos test (failover.test.ts) and the CLI (failover.ts).
 */
import { Duration } from "effect"
import pg from "pg"
import { ensureSchema, livenessBoundMs, type Path, startFleet, table, timing } from "./fleet.js"
import { type AsyncStandbyTopology, startAsyncStandby } from "./harness/AsyncStandby.js"
import { describeViolation, type Interval } from "./harness/IntervalOracle.js"
import { sleep } from "./harness/process.js"
import { serverLoginRetrySeconds } from "./harness/ThrowawayPgBouncer.js"
import { quoteIdent } from "./harness/ThrowawayPostgres.js"

/** A term as the oracle saw it, in ms from the promotion (negative: before it). */
export interface FailoverTerm {
  readonly id: string
  readonly fence: bigint
  readonly start: number
  /** Undefined: still running when the run ended. */
  readonly end: number | undefined
}

export interface AsyncFailoverResult {
  readonly path: Path
  readonly zoneLost: boolean
  /** How long two participants ran leader-only work at once over the whole run, ms. Safe: 0. */
  readonly overlapMs: number
  /** Fences more than one term held. Safe: none. */
  readonly reusedFences: ReadonlyArray<bigint>
  /** The oracle's findings (overlaps, fences reused or going backwards), described. */
  readonly violations: ReadonlyArray<string>
  /** The first leader's fence, which the standby still has, and the successor's, which died with the primary. */
  readonly firstFence: bigint
  readonly lostFence: bigint
  /** The fence in the election's row on the standby once promoted, before anyone reached it. */
  readonly standbyFence: bigint | undefined
  /** From the successor's start to the primary's SIGKILL, ms. */
  readonly killedAfterMs: number
  /** From the SIGKILL until the promoted standby accepted writes and the path moved, ms. */
  readonly promotionMs: number
  /**
   * From the promotion (path moved) to the first claim written on the new
   * server (the row's holder or fence changed: taken over, or held back),
   * ms, within 20 ms; undefined if none was.
   */
  readonly claimAfterPromotionMs: number | undefined
  /** From the promotion (path moved) to the first term begun after it, ms; undefined if none began. */
  readonly leaderAfterPromotionMs: number | undefined
  /**
   * What issue 39 allows for that: leaseDuration + 2 × retryPeriod; through
   * PgBouncer, plus its `server_login_retry`, during which it refuses every
   * login after the ones to the dead primary failed (no client can reach
   * the promoted server sooner).
   */
  readonly leaderBoundMs: number
  readonly terms: ReadonlyArray<FailoverTerm>
  /** The fleet's logs from the successor's start on, for a report. */
  readonly logs: ReadonlyArray<string>
}

export interface AsyncFailoverOptions {
  /** The primary dies this long after the successor started, at most (default 1000; uniform). */
  readonly killWithinMs?: number
  /** In [0, 1): draws the kill's delay (default Math.random). */
  readonly random?: () => number
  /** The successor crashes with the primary, as when a zone is lost (default false). */
  readonly zoneLost?: boolean
}

// Through PgBouncer, a follower's polls fail while it refuses logins, and
// the one in flight when that ends may be one that waits out its operation
// timeout, then backs off 2 x retryPeriod: on a loaded machine the first
// claim came 2.1-3.0 s after the promotion, past the bound of one poll.
export const leaderBoundMs = (path: Path): number =>
  Duration.toMillis(timing.leaseDuration) + 2 * Duration.toMillis(timing.retryPeriod) +
  (path === "pooled"
    ? serverLoginRetrySeconds * 1000 + Duration.toMillis(timing.operationTimeout) +
      2 * Duration.toMillis(timing.retryPeriod)
    : 0)

interface RowWatch {
  /** The fence in the row when the watch began; undefined: no row. */
  readonly fence: bigint | undefined
  /** Ends the watch: when a write first changed the row's holder or fence (performance.now), if one did. */
  stop(): Promise<number | undefined>
}

/**
 * Watches the election's row on the promoted standby, over a connection of
 * its own past every proxy, every 20 ms: the first claim on the new server
 * (a takeover, or a lease held back) is when its holder or fence changes.
 */
const watchRow = async (topology: AsyncStandbyTopology, election: string): Promise<RowWatch> => {
  const client = new pg.Client({ connectionString: topology.standby.url() })
  client.on("error", () => {})
  await client.connect()
  const read = async (): Promise<string> => {
    const rows = await client.query<{ holder: string; fence: string }>(
      `SELECT holder, fence::text AS fence FROM ${quoteIdent(table)} WHERE name = $1`,
      [election]
    )
    return rows.rows[0] === undefined ? "" : `${rows.rows[0].holder}#${rows.rows[0].fence}`
  }
  const before = await read().catch(async (error: unknown) => {
    await client.end().catch(() => {})
    throw error
  })
  let changedAt: number | undefined
  let watching = true
  const watched = (async () => {
    while (watching && changedAt === undefined) {
      if ((await read()) !== before) changedAt = performance.now()
      else await sleep(20)
    }
  })().catch(() => undefined)
  return {
    fence: before === "" ? undefined : BigInt(before.slice(before.lastIndexOf("#") + 1)),
    stop: async () => {
      watching = false
      await watched
      await client.end().catch(() => {})
      return changedAt
    }
  }
}

/**
 * What `result` breaks of issue 39's requirement, one line each; none when it
 * holds: no two participants working at once, no fence held by two terms
 * (nor any other oracle finding), a leader within leaseDuration + 2 ×
 * retryPeriod of the promotion. Also that the run lost the successor's term
 * at all: the standby held the first leader's fence, not the successor's.
 */
export const failoverProblems = (result: AsyncFailoverResult): Array<string> => [
  ...(result.standbyFence === result.firstFence
    ? []
    : [`the standby held fence ${result.standbyFence ?? "none"}, not the first leader's ${result.firstFence}`]),
  ...(result.overlapMs > 0 ? [`two participants worked at once for ${result.overlapMs.toFixed(0)} ms`] : []),
  ...(result.reusedFences.length > 0 ? [`fences held by more than one term: ${result.reusedFences.join(", ")}`] : []),
  ...result.violations,
  ...(result.leaderAfterPromotionMs === undefined
    ? ["no leader after the promotion"]
    : result.leaderAfterPromotionMs > result.leaderBoundMs
    ? [`a leader ${result.leaderAfterPromotionMs.toFixed(0)} ms after the promotion (bound ${result.leaderBoundMs})`]
    : [])
]

/** Milliseconds to print, whole; "none" for a time that never came. */
export const ms = (n: number | undefined): string => n === undefined ? "none" : n.toFixed(0)

/** The run in one line: whether it holds the requirement, and its figures. */
export const summary = (r: AsyncFailoverResult): string =>
  [
    failoverProblems(r).length === 0 ? "holds;" : "BREAKS the requirement;",
    `overlap ${ms(r.overlapMs)} ms,`,
    `fences reused [${r.reusedFences.join(", ")}],`,
    `first claim ${ms(r.claimAfterPromotionMs)} ms and leader ${
      ms(r.leaderAfterPromotionMs)
    } ms after the promotion (bound ${r.leaderBoundMs}),`,
    `fences: first ${r.firstFence}, lost ${r.lostFence}, standby held ${r.standbyFence ?? "no row"};`,
    `primary killed ${ms(r.killedAfterMs)} ms into the lost term, promoted in ${ms(r.promotionMs)} ms`
  ].join(" ")

/** Every term of the run, one line each: `id#fence [start, end]` in ms from the promotion. */
export const termLines = (result: AsyncFailoverResult): Array<string> =>
  result.terms.map((t) => `${t.id}#${t.fence} [${ms(t.start)}, ${t.end === undefined ? "open" : ms(t.end)}] ms`)

export const runAsyncFailover = async (
  path: Path,
  options: AsyncFailoverOptions = {}
): Promise<AsyncFailoverResult> => {
  const random = options.random ?? Math.random
  const topology = await startAsyncStandby({ participants: ["a", "b", "c"], pooled: path === "pooled" })
  try {
    await ensureSchema(topology.primary.url())
    // Stopping a participant is a crash: its lease stays behind.
    const fleet = await startFleet(topology, { disableRelease: true })
    try {
      const first = await fleet.stableLeaderWithin(livenessBoundMs, 1_000)
      await topology.caughtUp()
      topology.cutReplication()

      const crashedAt = performance.now()
      await fleet.stop(first.id)
      const successor = await fleet.nextTerm(crashedAt, livenessBoundMs, first.id)
      const logsFrom = fleet.logs.length

      await sleep(random() * (options.killWithinMs ?? 1_000))
      const killedAt = performance.now()
      await Promise.all([topology.killPrimary(), options.zoneLost === true ? fleet.stop(successor.id) : undefined])
      await topology.promoteStandby()
      const row = await watchRow(topology, fleet.name)
      topology.moveToStandby()
      const promotedAt = performance.now()

      let next: Interval | undefined
      let claimedAt: number | undefined
      try {
        next = await fleet.nextTerm(promotedAt, livenessBoundMs).catch(() => undefined)
        // Until a term has lasted past leaseDuration - safetyMargin, any term
        // from before the failover has run out, and the record is complete.
        await fleet.stableLeaderWithin(livenessBoundMs, 2_500).catch(() => undefined)
      } finally {
        claimedAt = await row.stop()
      }
      const oracle = fleet.oracle
      return {
        path,
        zoneLost: options.zoneLost === true,
        overlapMs: oracle.overlapMs(),
        reusedFences: oracle.reusedFences(),
        violations: oracle.violations().map(describeViolation),
        firstFence: first.fence,
        lostFence: successor.fence,
        standbyFence: row.fence,
        killedAfterMs: killedAt - successor.start,
        promotionMs: promotedAt - killedAt,
        claimAfterPromotionMs: claimedAt === undefined ? undefined : claimedAt - promotedAt,
        leaderAfterPromotionMs: next === undefined ? undefined : next.start - promotedAt,
        leaderBoundMs: leaderBoundMs(path),
        terms: oracle.intervals().map((i) => ({
          id: i.id,
          fence: i.fence,
          start: i.start - promotedAt,
          end: i.end === undefined ? undefined : i.end - promotedAt
        })),
        logs: fleet.logs.slice(logsFrom)
      }
    } finally {
      await fleet.destroy()
    }
  } finally {
    await topology.destroy()
  }
}
