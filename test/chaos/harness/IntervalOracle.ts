/**
 * The chaos safety oracle. Participants share one process, so their
 * leadership intervals can be measured on ONE monotonic clock and compared
 * directly. It knows nothing of the elector: tests call `started(id, fence)`
 * when a participant begins to believe it leads and `stopped(id)` when it no
 * longer does.
 */

/** One term as one participant saw it, on the oracle's clock (ms). */
export interface Interval {
  readonly id: string
  readonly fence: bigint
  readonly start: number
  /** Undefined while the term is still running. */
  readonly end: number | undefined
}

export type Violation =
  | { readonly _tag: "Overlap"; readonly first: Interval; readonly second: Interval }
  | { readonly _tag: "FenceWentBackwards"; readonly previous: Interval; readonly next: Interval }
  | { readonly _tag: "FenceReused"; readonly first: Interval; readonly second: Interval }
  | { readonly _tag: "StartedTwice"; readonly id: string; readonly at: number }
  | { readonly _tag: "StoppedWithoutStarting"; readonly id: string; readonly at: number }

export interface IntervalOracleOptions {
  /** The one clock every interval is measured on, in ms. Default `performance.now`. */
  readonly now?: () => number
  /**
   * Also require each term's fence to be strictly greater than the previous
   * term's, even for the same participant. Default false: fences must only
   * never go backwards and never be shared by two participants.
   */
  readonly strictFences?: boolean
}

const endOf = (i: Interval): number => i.end ?? Number.POSITIVE_INFINITY

/**
 * How long two or more of `spans` ran at once, in their unit: the measure of
 * the union of their pairwise intersections. A span is `[start, end)`, so
 * one ending at the instant another starts adds nothing.
 */
export const concurrentTime = (spans: ReadonlyArray<{ readonly start: number; readonly end: number }>): number => {
  // At one instant ends come before starts.
  const edges = spans.flatMap((s) => s.end > s.start ? [[s.start, 1] as const, [s.end, -1] as const] : [])
    .sort((a, b) => a[0] - b[0] || a[1] - b[1])
  let open = 0
  let since = 0
  let total = 0
  for (const [at, delta] of edges) {
    if (open >= 2) total += at - since
    open += delta
    since = at
  }
  return total
}

const show = (i: Interval): string =>
  `${i.id}#${i.fence} [${i.start.toFixed(1)}, ${i.end === undefined ? "open" : i.end.toFixed(1)}]`

export const describeViolation = (v: Violation): string => {
  switch (v._tag) {
    case "Overlap":
      return `two leaders at once: ${show(v.first)} overlaps ${show(v.second)}`
    case "FenceWentBackwards":
      return `fence went backwards: ${show(v.previous)} then ${show(v.next)}`
    case "FenceReused":
      return `fence ${v.first.fence} used by two participants: ${show(v.first)} and ${show(v.second)}`
    case "StartedTwice":
      return `${v.id} started leading at ${v.at.toFixed(1)} while already leading`
    case "StoppedWithoutStarting":
      return `${v.id} stopped leading at ${v.at.toFixed(1)} without leading`
  }
}

interface Waiter {
  readonly resolve: (interval: Interval) => void
}

export class IntervalOracle {
  private readonly now: () => number
  private readonly strictFences: boolean
  private readonly closed: Array<Interval> = []
  private readonly open = new Map<string, Interval>()
  private readonly protocolErrors: Array<Violation> = []
  private readonly waiters = new Set<Waiter>()

  constructor(options: IntervalOracleOptions = {}) {
    this.now = options.now ?? (() => performance.now())
    this.strictFences = options.strictFences ?? false
  }

  /** `id` began to lead with `fence`. */
  started(id: string, fence: bigint | number): void {
    const at = this.now()
    if (this.open.has(id)) {
      this.protocolErrors.push({ _tag: "StartedTwice", id, at })
      return
    }
    const interval: Interval = { id, fence: BigInt(fence), start: at, end: undefined }
    this.open.set(id, interval)
    for (const waiter of this.waiters) waiter.resolve(interval)
    this.waiters.clear()
  }

  /** `id` stopped leading. */
  stopped(id: string): void {
    const at = this.now()
    const interval = this.open.get(id)
    if (interval === undefined) {
      this.protocolErrors.push({ _tag: "StoppedWithoutStarting", id, at })
      return
    }
    this.open.delete(id)
    this.closed.push({ ...interval, end: at })
  }

  /** Every interval so far, in start order; running ones have no end. */
  intervals(): Array<Interval> {
    return [...this.closed, ...this.open.values()].sort((a, b) => a.start - b.start)
  }

  /** Participants that currently believe they lead. */
  leaders(): Array<Interval> {
    return [...this.open.values()]
  }

  /**
   * How long two or more participants believed they led at once, in ms,
   * terms still running counted up to now: the size of the overlaps that
   * {@link violations} lists.
   */
  overlapMs(): number {
    const now = this.now()
    return concurrentTime(this.intervals().map((i) => ({ start: i.start, end: i.end ?? now })))
  }

  /** Fences held by more than one term (of one participant or several), ascending. */
  reusedFences(): Array<bigint> {
    const terms = new Map<bigint, number>()
    for (const i of this.intervals()) terms.set(i.fence, (terms.get(i.fence) ?? 0) + 1)
    return [...terms].filter(([, n]) => n > 1).map(([fence]) => fence).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
  }

  /** Every safety violation in the record so far. */
  violations(): Array<Violation> {
    const found: Array<Violation> = [...this.protocolErrors]
    const all = this.intervals()
    let latestEnding: Interval | undefined
    let previous: Interval | undefined
    const fenceOwner = new Map<bigint, Interval>()
    for (const next of all) {
      // Zero tolerance: the next term may start at the instant the last ended, not before.
      if (latestEnding !== undefined && endOf(latestEnding) > next.start) {
        found.push({ _tag: "Overlap", first: latestEnding, second: next })
      }
      if (latestEnding === undefined || endOf(latestEnding) < endOf(next)) latestEnding = next
      if (previous !== undefined) {
        const backwards = next.fence < previous.fence ||
          (this.strictFences && next.fence === previous.fence)
        if (backwards) found.push({ _tag: "FenceWentBackwards", previous, next })
      }
      const owner = fenceOwner.get(next.fence)
      if (owner === undefined) fenceOwner.set(next.fence, next)
      else if (owner.id !== next.id) found.push({ _tag: "FenceReused", first: owner, second: next })
      previous = next
    }
    return found
  }

  /** Throws listing every violation, if there is any. */
  assertSafe(): void {
    const found = this.violations()
    if (found.length > 0) {
      throw new Error(
        `leadership safety violated (${found.length}):\n${
          found.map((v) => `  - ${describeViolation(v)}`).join("\n")
        }\n` +
          `intervals:\n${this.intervals().map((i) => `  ${show(i)}`).join("\n")}`
      )
    }
  }

  /**
   * Resolves with the current leader's interval as soon as someone leads
   * (immediately if someone already does); rejects after `ms` otherwise.
   */
  assertSomeoneLeadsWithin(ms: number): Promise<Interval> {
    const current = this.leaders()[0]
    if (current !== undefined) return Promise.resolve(current)
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        resolve: (interval) => {
          clearTimeout(timer)
          resolve(interval)
        }
      }
      const timer = setTimeout(() => {
        this.waiters.delete(waiter)
        reject(
          new Error(`nobody led within ${ms} ms; intervals:\n${this.intervals().map((i) => `  ${show(i)}`).join("\n")}`)
        )
      }, ms)
      this.waiters.add(waiter)
    })
  }
}
