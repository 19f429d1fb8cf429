/**
 * The soak oracle: reads what every participant process wrote (see
 * participant.mjs) and what the runner did to them, all on the machine's
 * monotonic clock in microseconds, and finds every safety violation.
 *
 * - Acts (zero tolerance): a step of the work is an `isLeader` call answered
 *   true somewhere in [t0, t1]. A participant acting under an older fence
 *   after a newer fence's holder has certainly acted (its t0 later than the
 *   other's t1) is two participants believing they lead.
 * - Fences: one fence is never used by two participants nor by two terms;
 *   ordered by their first act, terms' fences strictly increase.
 * - Terms: a term runs from its `start` to its `stop` (or the SIGKILL or
 *   death of its process), minus the spells its process was SIGSTOPped (it
 *   believes nothing while it does not run). No two terms overlap, except
 *   the moment a frozen leader needs after SIGCONT to notice: when a newer
 *   term began while it was frozen, or it was frozen for longer than a
 *   lease (its deadline, at most a lease after a renewal it sent before the
 *   freeze, passed while it was frozen, so a newer term may begin just
 *   after SIGCONT), its work may take at most one step (answered false)
 *   before the term ends. That window is measured.
 */

/** One line of a participant's log. */
export type ParticipantEvent =
  | { readonly e: "up"; readonly id: string; readonly pid: number; readonly t: number }
  | { readonly e: "ready"; readonly t: number }
  | { readonly e: "start"; readonly n?: string; readonly f: string; readonly t: number }
  | {
    readonly e: "act"
    readonly n?: string
    readonly f: string
    readonly t0: number
    readonly ok: boolean
    readonly t1: number
  }
  | { readonly e: "stop"; readonly n?: string; readonly f: string; readonly t: number }
  | {
    readonly e: "res"
    readonly t: number
    readonly heap: number
    readonly rss: number
    readonly handles: number
    readonly sockets: number
    readonly timers: number
  }
  | { readonly e: "log"; readonly t: number; readonly l: string; readonly m: string }
  | { readonly e: "exit"; readonly t: number }

/** What the runner did to a participant process, on the same clock. */
export interface ProcessEvent {
  readonly id: string
  readonly k: "kill" | "sigstop" | "sigcont" | "sigterm" | "died"
  readonly t: number
}

export interface ParticipantLog {
  readonly id: string
  readonly events: ReadonlyArray<ParticipantEvent>
}

export interface Term {
  readonly id: string
  readonly fence: bigint
  readonly start: number
  /** Stop, SIGKILL or death; the end of the record for a term still running. */
  readonly end: number
  readonly endedBy: "stop" | "kill" | "died" | "running"
  /** Steps answered true. */
  readonly acts: number
  readonly firstAct: number | undefined
  /** Earliest t1 and latest t0 of the steps answered true. */
  readonly earliestT1: number | undefined
  readonly latestT0: number | undefined
  /** When the term's process did not run (SIGSTOP to SIGCONT) within the term. */
  readonly frozen: ReadonlyArray<readonly [number, number]>
}

/** A leader frozen while a newer term began, from its SIGCONT to its term's end. */
export interface WakeEpisode {
  readonly id: string
  readonly fence: bigint
  readonly frozenUs: number
  /** SIGCONT to the term's end. */
  readonly windowUs: number
  /** Steps its work took after SIGCONT, and how many of them heard true. */
  readonly steps: number
  readonly stepsTrue: number
}

export interface Violation {
  readonly kind: "StaleAct" | "FenceShared" | "FenceOrder" | "Overlap" | "StepsAfterWake" | "Died"
  readonly message: string
}

export interface Analysis {
  readonly terms: ReadonlyArray<Term>
  readonly violations: ReadonlyArray<Violation>
  readonly wakes: ReadonlyArray<WakeEpisode>
  /** Who led when (term minus frozen spells), sorted by start. */
  readonly leading: ReadonlyArray<
    { readonly id: string; readonly fence: bigint; readonly from: number; readonly to: number }
  >
}

const ms = (us: number): string => `${(us / 1000).toFixed(1)}ms`
const showTerm = (t: Term): string => `${t.id}#${t.fence}`

/** Subtracts the frozen spells from [from, to]. */
const segments = (
  from: number,
  to: number,
  frozen: ReadonlyArray<readonly [number, number]>
): Array<[number, number]> => {
  const out: Array<[number, number]> = []
  let cursor = from
  for (const [a, b] of [...frozen].sort((x, y) => x[0] - y[0])) {
    if (b <= cursor || a >= to) continue
    if (a > cursor) out.push([cursor, a])
    cursor = Math.max(cursor, b)
  }
  if (cursor < to) out.push([cursor, to])
  return out
}

/**
 * `endOfRecord`: when the record was taken, closing terms still running.
 * `leaseUs`: the participants' lease duration, when known: a leader frozen
 * for longer woke with its deadline passed.
 */
export const analyse = (
  logs: ReadonlyArray<ParticipantLog>,
  processEvents: ReadonlyArray<ProcessEvent>,
  endOfRecord: number,
  leaseUs = Number.POSITIVE_INFINITY
): Analysis => {
  const violations: Array<Violation> = []
  const terms: Array<Term> = []
  const freezesOf = new Map<string, Array<[number, number]>>()
  const open = new Map<string, number>()
  for (const event of [...processEvents].sort((a, b) => a.t - b.t)) {
    if (event.k === "sigstop") open.set(event.id, event.t)
    if (event.k === "sigcont" || event.k === "kill") {
      const from = open.get(event.id)
      if (from !== undefined) {
        const list = freezesOf.get(event.id) ?? []
        list.push([from, event.t])
        freezesOf.set(event.id, list)
        open.delete(event.id)
      }
    }
    if (event.k === "died") violations.push({ kind: "Died", message: `${event.id} exited on its own` })
  }

  for (const log of logs) {
    const ended = processEvents.find((p) => p.id === log.id && (p.k === "kill" || p.k === "died"))
    const frozenAll = freezesOf.get(log.id) ?? []
    let current:
      | { fence: bigint; start: number; acts: number; firstAct?: number; earliestT1?: number; latestT0?: number }
      | undefined
    const close = (end: number, endedBy: Term["endedBy"]): void => {
      if (current === undefined) return
      const c = current
      terms.push({
        id: log.id,
        fence: c.fence,
        start: c.start,
        end,
        endedBy,
        acts: c.acts,
        firstAct: c.firstAct,
        earliestT1: c.earliestT1,
        latestT0: c.latestT0,
        frozen: frozenAll.filter(([a, b]) => b > c.start && a < end)
      })
      current = undefined
    }
    for (const event of log.events) {
      if (event.e === "start") {
        if (current !== undefined) {
          violations.push({
            kind: "Overlap",
            message: `${log.id} started fence ${event.f} inside fence ${current.fence}`
          })
          close(event.t, "stop")
        }
        current = { fence: BigInt(event.f), start: event.t, acts: 0 }
      } else if (event.e === "act" && event.ok && current !== undefined) {
        current.acts += 1
        current.firstAct ??= event.t0
        current.earliestT1 = Math.min(current.earliestT1 ?? event.t1, event.t1)
        current.latestT0 = Math.max(current.latestT0 ?? event.t0, event.t0)
      } else if (event.e === "stop") {
        close(event.t, "stop")
      }
    }
    if (ended !== undefined) close(ended.t, ended.k === "kill" ? "kill" : "died")
    else close(endOfRecord, "running")
  }

  // Acts: by fence, the latest act of any older term against the earliest of this one.
  const byFence = [...terms].sort((a, b) => (a.fence < b.fence ? -1 : a.fence > b.fence ? 1 : 0))
  let latest: Term | undefined
  for (const term of byFence) {
    if (
      term.earliestT1 !== undefined && latest?.latestT0 !== undefined && latest.fence < term.fence &&
      latest.latestT0 > term.earliestT1
    ) {
      violations.push({
        kind: "StaleAct",
        message: `${showTerm(latest)} acted at ${ms(latest.latestT0)} after ${showTerm(term)} (newer) had acted by ${
          ms(term.earliestT1)
        }`
      })
    }
    if (term.latestT0 !== undefined && (latest?.latestT0 === undefined || term.latestT0 > latest.latestT0)) {
      latest = term
    }
  }

  // Fences: never shared, strictly increasing in order of first act.
  const owner = new Map<bigint, Term>()
  for (const term of terms) {
    const first = owner.get(term.fence)
    if (first === undefined) owner.set(term.fence, term)
    else {
      violations.push({
        kind: "FenceShared",
        message: `fence ${term.fence} used by ${showTerm(first)} (from ${ms(first.start)}) and ${
          showTerm(term)
        } (from ${ms(term.start)})`
      })
    }
  }
  const acting = terms.filter((t) => t.firstAct !== undefined).sort((a, b) => (a.firstAct ?? 0) - (b.firstAct ?? 0))
  for (let i = 1; i < acting.length; i++) {
    const [previous, next] = [acting[i - 1] as Term, acting[i] as Term]
    if (next.fence <= previous.fence) {
      violations.push({
        kind: "FenceOrder",
        message: `${showTerm(next)} first acted at ${ms(next.firstAct ?? 0)}, after ${showTerm(previous)} at ${
          ms(previous.firstAct ?? 0)
        }, with a fence not greater`
      })
    }
  }

  // Frozen leaders superseded or expired while frozen: the window after SIGCONT.
  const wakes: Array<WakeEpisode> = []
  const excused = new Map<Term, number>()
  for (const term of terms) {
    for (const [stoppedAt, contAt] of term.frozen) {
      if (contAt >= term.end) continue
      const superseded = contAt - stoppedAt > leaseUs ||
        terms.some((o) => o.fence > term.fence && o.start >= stoppedAt && o.start < contAt)
      if (!superseded) continue
      const log = logs.find((l) => l.id === term.id)
      const after = (log?.events ?? []).filter((e): e is Extract<ParticipantEvent, { e: "act" }> =>
        e.e === "act" && BigInt(e.f) === term.fence && e.t0 >= contAt
      )
      const episode: WakeEpisode = {
        id: term.id,
        fence: term.fence,
        frozenUs: contAt - stoppedAt,
        windowUs: term.end - contAt,
        steps: after.length,
        stepsTrue: after.filter((e) => e.ok).length
      }
      wakes.push(episode)
      if (episode.steps > 1 || episode.stepsTrue > 0) {
        violations.push({
          kind: "StepsAfterWake",
          message: `${
            showTerm(term)
          } woke superseded and its work took ${episode.steps} steps (${episode.stepsTrue} hearing true) in the ${
            ms(episode.windowUs)
          } before its term ended`
        })
      } else {
        excused.set(term, contAt)
      }
    }
  }

  // Terms as believed (minus frozen spells; a wake window excused above
  // counts only up to SIGCONT): no two overlap.
  const leading = terms.flatMap((term) => {
    const wokeAt = excused.get(term)
    return segments(term.start, wokeAt ?? term.end, term.frozen).map(([from, to]) => ({
      id: term.id,
      fence: term.fence,
      from,
      to
    }))
  }).sort((a, b) => a.from - b.from)
  let reach: (typeof leading)[number] | undefined
  for (const segment of leading) {
    if (reach !== undefined && reach.fence !== segment.fence && reach.to > segment.from) {
      violations.push({
        kind: "Overlap",
        message: `${reach.id}#${reach.fence} believed it led until ${
          ms(reach.to)
        }, ${segment.id}#${segment.fence} from ${ms(segment.from)}`
      })
    }
    if (reach === undefined || segment.to > reach.to) reach = segment
  }

  return { terms, violations, wakes, leading }
}

/**
 * A spread group's logs (each term's events carry `n`, the election's name)
 * as one set of logs per election: the checks above hold per election, each
 * with its own fences, across every process of the group.
 */
export const byElection = (logs: ReadonlyArray<ParticipantLog>): Map<string, Array<ParticipantLog>> => {
  const elections = new Map<string, Map<string, Array<ParticipantEvent>>>()
  for (const log of logs) {
    for (const event of log.events) {
      if ((event.e !== "start" && event.e !== "act" && event.e !== "stop") || event.n === undefined) continue
      const election = elections.get(event.n) ?? new Map<string, Array<ParticipantEvent>>()
      elections.set(event.n, election)
      const events = election.get(log.id) ?? []
      election.set(log.id, events)
      events.push(event)
    }
  }
  return new Map(
    [...elections].map(([name, election]) => [name, [...election].map(([id, events]) => ({ id, events }))])
  )
}

/** Whether someone leads at `t`, and if not, when someone next does (undefined: nobody does). */
export const nextLeadingAt = (analysis: Analysis, t: number): number | undefined => {
  let best: number | undefined
  for (const s of analysis.leading) {
    if (s.from <= t && s.to > t) return t
    if (s.from > t && (best === undefined || s.from < best)) best = s.from
  }
  return best
}

/** Least-squares slope of `ys` over `xs`, per unit of x. */
export const slope = (points: ReadonlyArray<readonly [number, number]>): number => {
  const n = points.length
  if (n < 2) return 0
  const mx = points.reduce((s, [x]) => s + x, 0) / n
  const my = points.reduce((s, [, y]) => s + y, 0) / n
  let num = 0
  let den = 0
  for (const [x, y] of points) {
    num += (x - mx) * (y - my)
    den += (x - mx) ** 2
  }
  return den === 0 ? 0 : num / den
}

export const median = (xs: ReadonlyArray<number>): number | undefined => {
  if (xs.length === 0) return undefined
  const sorted = [...xs].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[mid] : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2
}
