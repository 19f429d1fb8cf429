/**
 * The spread simulation's oracle. Every election of the group is judged by
 * an `Oracle` of its own, exactly as the fleet simulation judges its one
 * election (no two leaders at an instant, no leader the database does not
 * name, no two terms' work at once, fences only rising). On top of that it
 * counts moves: every term started after a change, until the next one, is
 * that change's. A join, stop or crash that found the group settled may
 * cost at most what the rules call for from a balanced group (a partition
 * is counted against its bound, not held to it: a member cut off and back
 * is a miscount the rules admit costs extra moves, see "Spreading work over
 * the fleet" in docs/operations.md); and once the changes stop
 * and the group settles, every election is led by a live member, each
 * within floor(N/M)..ceil(N/M).
 */
import type * as Lease from "../../Lease.js"
import { type Belief, type Check, Oracle } from "./Oracle.js"
import { type Change, describeChange } from "./SpreadSchedule.js"

export type SpreadCheck =
  | Check
  /** Once settled, an election nobody leads while members live. */
  | "unled-after-settling"
  /** Once settled, an election whose lease names a member that stopped or crashed. */
  | "held-after-leaving"
  /** Once settled, a live member outside floor(N/M)..ceil(N/M). */
  | "unbalanced"
  /** A join, stop or crash that found the group settled moved more elections than the rules call for. */
  | "too-many-moves"

export interface SpreadViolation {
  readonly check: SpreadCheck
  readonly at: number
  /** The election it concerns, if one. */
  readonly name: string | undefined
  readonly message: string
}

/**
 * The terms started after a change (until the next one), the last one's
 * delay after the change, and the most the rules call for after it from a
 * balanced group, held to only when the change found the group settled.
 */
export interface Moves {
  readonly change: Change | "start"
  readonly moves: number
  readonly settledIn: number
  readonly bound: number
  readonly settled: boolean
}

/**
 * What the rules allow a change from a balanced group of `members` live
 * members, `present` if the slot it names is live: a joiner takes its
 * share; a leaver's share moves to the others; a member cut off loses its
 * share and takes it back. A change to a slot that is already so moves
 * nothing.
 */
export const movesAllowed = (change: Change, names: number, members: number, present: boolean): number => {
  if (change.kind === "join") return present ? 0 : Math.ceil(names / (members + 1))
  if (!present) return 0
  const share = Math.ceil(names / members)
  return change.kind === "partition" ? 2 * share : share
}

export class SpreadOracle {
  private readonly elections: ReadonlyMap<string, Oracle>
  private readonly found: Array<SpreadViolation> = []
  readonly moves: Array<Moves> = []
  private terms = 0
  private lastStartAt = 0
  private counted: { change: Change | "start"; at: number; from: number; bound: number; settled: boolean }

  constructor(readonly names: ReadonlyArray<string>) {
    this.elections = new Map(names.map((name) => [name, new Oracle()]))
    this.counted = { change: "start", at: 0, from: 0, bound: names.length, settled: false }
  }

  /** Every violation so far: each election's first, then the group's. */
  get violations(): ReadonlyArray<SpreadViolation> {
    const elections = [...this.elections].flatMap(([name, oracle]) =>
      oracle.violation === undefined
        ? []
        : [{ ...oracle.violation, name, message: `${name}: ${oracle.violation.message}` }]
    )
    return [...elections, ...this.found]
  }

  onStart(name: string, process: string, fence: bigint, at: number): void {
    this.elections.get(name)!.onStart(process, fence, at)
    this.terms++
    this.lastStartAt = at
  }

  onStop(name: string, process: string, fence: bigint, at: number): void {
    this.elections.get(name)!.onStop(process, fence, at)
  }

  /** Judges one election at one instant: the members that believe they lead it, and its record. */
  sample(at: number, name: string, leaders: ReadonlyArray<Belief>, lease: Lease.Lease | undefined): void {
    this.elections.get(name)!.sample(at, leaders, lease, false)
  }

  /**
   * A change is made at `at` (called before it is, since a joiner claims
   * at once): the moves since the previous one are that one's. `settled`:
   * the group had settled before it, so `bound` applies.
   */
  change(change: Change, at: number, bound: number, settled: boolean): void {
    this.close(at)
    this.counted = { change, at, from: this.terms, bound, settled }
    this.lastStartAt = at
  }

  /**
   * Ends the run at `at`, once the group had time to settle: `live` are the
   * live members' identities, `holders` the identity each election's
   * unexpired lease names (undefined: none). Returns how many elections
   * each live member leads.
   */
  finish(
    at: number,
    live: ReadonlyArray<string>,
    holders: ReadonlyMap<string, string | undefined>
  ): ReadonlyArray<number> {
    this.close(at)
    const held = new Map<string, number>(live.map((id) => [id, 0]))
    for (const name of this.names) {
      const holder = holders.get(name)
      if (holder === undefined) {
        if (live.length > 0) this.fail("unled-after-settling", at, name, `${name}: nobody leads it after settling`)
      } else if (!held.has(holder)) {
        this.fail("held-after-leaving", at, name, `${name}: held by ${holder}, no longer a member`)
      } else {
        held.set(holder, held.get(holder)! + 1)
      }
    }
    const floor = Math.floor(this.names.length / live.length)
    const ceil = Math.ceil(this.names.length / live.length)
    for (const [id, n] of held) {
      if (n < floor || n > ceil) this.fail("unbalanced", at, undefined, `${id} leads ${n}, not ${floor}..${ceil}`)
    }
    return [...held.values()]
  }

  private close(at: number): void {
    const { bound, change, from, settled } = this.counted
    const moves = this.terms - from
    this.moves.push({ change, moves, settledIn: Math.max(0, this.lastStartAt - this.counted.at), bound, settled })
    if (settled && change !== "start" && change.kind !== "partition" && moves > bound) {
      this.fail(
        "too-many-moves",
        at,
        undefined,
        `${describeChange(change)} moved ${moves} elections, the rules ${bound}`
      )
    }
  }

  private fail(check: SpreadCheck, at: number, name: string | undefined, message: string): void {
    this.found.push({ check, at, name, message })
  }
}
