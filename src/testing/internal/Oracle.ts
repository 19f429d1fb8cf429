/**
 * The simulation's oracle. It is told every term's start and stop (recorded
 * from inside the term's work fiber) and, at every sample, what each
 * participant believes and what the database holds. The first violation is
 * kept, with the instant it was seen.
 *
 * It tells processes apart by their own name, `p<slot>.<incarnation>`, not
 * by the identity their elector runs under: two processes may share one
 * identity, and must not lead together any more than two others.
 */
import { Cause } from "effect"
import * as Lease from "../../Lease.js"

export type Check =
  | "two-leaders"
  | "fence-reused"
  | "fence-backwards"
  | "work-overlap"
  | "leader-not-in-db"
  | "no-leader-after-faults"
  /** After the faults stopped, leadership went back to a participant sooner than the hysteresis (preemptAfter). */
  | "flapping"
  /** The fleet runs preferred leaders, and a less preferred participant still leads at the end. */
  | "not-preferred-after-faults"
  /** The user's own invariant about the work's side effects. */
  | "invariant"
  /** The user's work failed or died (interruption at the end of a term is not a crash). */
  | "work-crashed"

export interface Violation {
  readonly check: Check
  readonly at: number
  readonly message: string
}

export interface Belief {
  /** The process: `p<slot>.<incarnation>`. */
  readonly process: string
  /** The identity its elector runs under, which the database's record names. */
  readonly identity: string
  readonly isLeader: boolean
  readonly fence: bigint | undefined
}

/** One term as the oracle saw it: who led under which fence, from when and until when (still leading: undefined). */
export interface Tenure {
  /** The process that led, `p<slot>.<incarnation>` (its elector's identity too, unless its slot shares one). */
  readonly identity: string
  readonly fence: bigint
  readonly from: number
  readonly until: number | undefined
}

export class Oracle {
  violation: Violation | undefined
  /** Every term so far, in the order they started. */
  readonly tenures: Array<Tenure> = []
  /** Work fibers running now, by `process/fence`, with their term's index in `tenures`. */
  private readonly running = new Map<
    string,
    { readonly process: string; readonly fence: bigint; readonly tenure: number; frozen: boolean }
  >()
  private readonly started = new Set<bigint>()
  private highest = 0n
  terms = 0
  /** The first instant at or after which someone was seen leading, once asked for. */
  ledAt: number | undefined
  /** Once the faults have stopped: when, and the hysteresis leadership must respect. */
  private quiet: { readonly at: number; readonly hysteresis: number } | undefined
  /**
   * After the latest failover: the highest fence handed out before it, and
   * until when a leader under such a fence may still believe in a term the
   * promoted standby lost.
   */
  private lost: { readonly fence: bigint; readonly until: number } | undefined
  /** Since the faults stopped: which process started the latest term, and when each one last stopped leading. */
  private lastStarter: string | undefined
  private readonly stoppedAt = new Map<string, number>()

  private fail(check: Check, at: number, message: string): void {
    if (this.violation === undefined) this.violation = { check, at, message }
  }

  /** The faults stopped at `at`; from now on leadership must not flap faster than `hysteresis`. */
  calm(at: number, hysteresis: number): void {
    this.quiet = { at, hysteresis }
  }

  /**
   * The database failed over at `at`. A leader whose term the standby lost
   * learns it at its next renewal, and steps down by the end of the lease it
   * last renewed, at most `leaseDuration` after the failover: until then it
   * is a leader the database does not know. Safety does not rest on it
   * knowing sooner: the store holds the lease back rather than let anyone
   * else lead or reuse a fence (the other checks still judge that).
   */
  failedOver(at: number, leaseDuration: number): void {
    this.lost = { fence: this.highest, until: at + leaseDuration }
  }

  onStart(process: string, fence: bigint, at: number): void {
    this.terms++
    if (this.quiet !== undefined) {
      const stopped = this.stoppedAt.get(process)
      if (this.lastStarter !== undefined && this.lastStarter !== process && stopped !== undefined) {
        if (at - stopped < this.quiet.hysteresis) {
          this.fail(
            "flapping",
            at,
            `${process} leads again ${
              at - stopped
            }ms after it stopped, with ${this.lastStarter} in between (hysteresis ${this.quiet.hysteresis}ms)`
          )
        }
      }
      this.lastStarter = process
    }
    for (const other of this.running.values()) {
      // A frozen process cannot stop its work: fencing is what covers it.
      if (other.frozen) continue
      this.fail(
        "work-overlap",
        at,
        `${process} started work under fence ${fence} ` +
          `while ${other.process}'s work under fence ${other.fence} still ran`
      )
    }
    if (this.started.has(fence)) this.fail("fence-reused", at, `fence ${fence} started a second term (${process})`)
    else if (fence <= this.highest) {
      this.fail("fence-backwards", at, `${process} started under fence ${fence} after fence ${this.highest}`)
    }
    this.started.add(fence)
    if (fence > this.highest) this.highest = fence
    const tenure = this.tenures.push({ identity: process, fence, from: at, until: undefined }) - 1
    this.running.set(`${process}/${fence}`, { process, fence, tenure, frozen: false })
  }

  /** `process` froze: its work may go on after its term, until it thaws. */
  onFreeze(process: string): void {
    for (const work of this.running.values()) if (work.process === process) work.frozen = true
  }

  onStop(process: string, fence: bigint, at?: number): void {
    const work = this.running.get(`${process}/${fence}`)
    this.running.delete(`${process}/${fence}`)
    if (work !== undefined) this.tenures[work.tenure] = { ...this.tenures[work.tenure]!, until: at }
    if (this.quiet !== undefined && at !== undefined) this.stoppedAt.set(process, at)
  }

  /** Judges one instant of the timeline: every participant's belief and the database record. */
  sample(at: number, beliefs: ReadonlyArray<Belief>, lease: Lease.Lease | undefined, watchLiveness: boolean): void {
    const leaders = beliefs.filter((b) => b.isLeader)
    if (leaders.length > 1) {
      this.fail("two-leaders", at, `${leaders.map((b) => `${b.process}@${b.fence}`).join(" and ")} both lead`)
    }
    for (const leader of leaders) {
      const held = lease !== undefined && Lease.isHeldBy(lease, leader.identity) && lease.fence === leader.fence
      const lostTrack = this.lost !== undefined && at < this.lost.until && leader.fence !== undefined &&
        leader.fence <= this.lost.fence
      if (!held && !lostTrack) {
        const db = lease === undefined
          ? "no record"
          : `${lease.holder}@${lease.fence}, ${lease.expiresAt.getTime() - lease.now.getTime()}ms left`
        this.fail(
          "leader-not-in-db",
          at,
          `${leader.process}@${leader.fence} believes it leads; the database says ${db}`
        )
      }
    }
    if (watchLiveness && this.ledAt === undefined && leaders.length > 0) this.ledAt = at
  }

  /** The work of `process`'s term under `fence` failed or died at `at` (an interruption alone is no crash). */
  crash(process: string, fence: bigint, at: number, cause: Cause.Cause<unknown>): void {
    if (Cause.isInterruptedOnly(cause)) return
    this.fail("work-crashed", at, `${process}'s work under fence ${fence} crashed: ${Cause.pretty(cause)}`)
  }

  /** Records what the user's invariant found at `at`, if anything. */
  invariant(at: number, message: string | undefined): void {
    if (message !== undefined) this.fail("invariant", at, message)
  }

  /** At the end of a run with preferred leaders: `leader` (if any) must be among the most preferred. */
  preferred(at: number, leader: string | undefined, preferred: boolean, bound: number): void {
    if (!preferred) {
      this.fail(
        "not-preferred-after-faults",
        at,
        `${leader ?? "nobody"} leads ${bound}ms after the faults stopped, not the most preferred live participant`
      )
    }
  }

  /** Ends the run at `at`: someone must have led in the `bound` after the faults stopped at `since`. */
  finish(at: number, since: number, bound: number): void {
    if (this.ledAt === undefined) {
      this.fail("no-leader-after-faults", at, `nobody led in the ${bound}ms after the faults stopped at ${since}`)
    }
  }
}
