/**
 * A leader-only job with fenced writes, and the same job without fencing.
 *
 * The leader appends a record to a sink (a ledger table, an object store, a
 * downstream API) every 200ms. A write spends 2.5s in flight (a queue, a
 * retrying HTTP client, a slow replica) before it lands, and it still lands
 * after its term ended: the sender stepped down, the write did not.
 *
 * - fenced: the sink accepts a write only if its fence is at least the
 *   highest it has accepted (`UPDATE ... WHERE fence <= $fence`), so a late
 *   write of an old term is refused.
 * - unfenced: the sink takes every write; an old term's late write lands
 *   after the new leader's writes, out of order.
 *
 * The invariant, checked by the fleet simulation at every step: the writes
 * the sink accepted carry non-decreasing fences.
 */
import { Effect } from "effect"
import type { Simulation } from "effect-leaderelection/testing"

export interface Write {
  readonly fence: bigint
  readonly by: string
  /** When it landed, in ms of the simulation's timeline. */
  readonly at: number
}

export class Sink {
  readonly accepted: Array<Write> = []
  private highest = 0n
  constructor(readonly fenced: boolean, private readonly now: () => number) {}

  write(fence: bigint, by: string): void {
    if (this.fenced && fence < this.highest) return
    if (fence > this.highest) this.highest = fence
    this.accepted.push({ fence, by, at: this.now() })
  }

  /** The first write that landed after a write of a later term, if any. */
  outOfOrder(): string | undefined {
    for (let i = 1; i < this.accepted.length; i++) {
      const [before, after] = [this.accepted[i - 1]!, this.accepted[i]!]
      if (after.fence < before.fence) {
        return `${after.by} wrote under fence ${after.fence} at ${after.at}ms, after ${before.by} wrote under fence ${before.fence}`
      }
    }
    return undefined
  }
}

/** The job a leader runs: send a write every 200ms of its own clock; each lands 2.5s later, whatever happens to the term. */
export const job = (sink: Sink, term: Simulation.Term): Effect.Effect<never> =>
  Effect.forever(Effect.zipRight(
    Effect.forkDaemon(Effect.delay(Effect.sync(() => sink.write(term.fence, term.identity)), "2500 millis")),
    Effect.sleep("200 millis")
  ))

/** The fleet's workload: every participant runs `job` while it leads; the sink is checked at every step. */
export const workload =
  (options: { readonly fenced: boolean }) => (timeline: Simulation.Timeline): Simulation.Workload => {
    const sink = new Sink(options.fenced, timeline.now)
    return { work: (term) => job(sink, term), invariant: () => sink.outOfOrder() }
  }
