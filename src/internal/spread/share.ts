/**
 * What one member of a spread group knows of the group, and the seat each
 * of its participants consults: the live members (membership.ts keeps them),
 * who it last saw holding each of its elections, and so how many each member
 * leads. From that and the rules (rules.ts) a seat tells its participant
 * whether to claim a free lease and, while it leads, whether to hand the
 * election over. Nothing here decides leadership: a claim is the usual
 * acquire, a handover the usual release, so a wrong view costs moves, never
 * an overlap or a reused fence.
 *
 * @internal
 */
import type * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import { target } from "./rules.js"

/**
 * What a participant of a spread group consults (participant.ts).
 *
 * @internal
 */
export interface Seat {
  /** The participant saw its election's lease: valid and held by `holder`, or free (`undefined`). */
  readonly seen: (holder: string | undefined) => void
  /**
   * Whether the participant may claim the lease now. A claim allowed counts
   * as this member's until its answer is seen, so that a member's claims in
   * flight stay within its share.
   */
  readonly mayClaim: () => boolean
  /** Asked by the leader after each renewal: whether to end the term and release the lease now. */
  readonly handsOver: () => boolean
}

/**
 * One member's view of its group.
 *
 * @internal
 */
export class Share {
  /** The live members, sorted; this member among them. */
  private members: ReadonlyArray<string>
  /**
   * Local monotonic nanoseconds from which this member trusts its view to
   * claim a lease nobody handed to it: a retry period after the
   * membership's first view. Before its first view it knows of nobody else,
   * and its first view may know of nobody else either: members started
   * together advertise a moment apart, and the first would claim every free
   * lease, to hand three in four over again. Meanwhile it claims what was
   * handed to it (a lease it saw another member hold, then free) and what
   * has been free past the grace.
   */
  private trustedAt: bigint | undefined = undefined
  /** Elections this member saw free just after another member held them: handed over, or lost by their holder. */
  private readonly handedTo = new Set<string>()
  /** Who this member last saw holding each of its elections (`undefined`: free). */
  private readonly holders = new Map<string, string | undefined>()
  /**
   * How many of this member's elections each holder was last seen holding:
   * `holders` tallied, kept up to date as each holder changes (`hold`), since
   * the rules ask every member's count at each claim and handover, and
   * tallying thousands of elections each time would cost more than the
   * renewals.
   */
  private readonly counts = new Map<string, number>()
  /** Local monotonic nanoseconds since which each election has been seen free. */
  private readonly freeSince = new Map<string, bigint>()
  /** Local monotonic nanoseconds before which this member hands nothing more over. */
  private handOverAt = 0n
  /** The election this member handed over last, until another member is seen holding it. */
  private handedOver: string | undefined = undefined
  /** Local monotonic nanoseconds at which the current period of handovers above ceil(N/M) ends. */
  private periodEnds = 0n
  /** What this member may still hand over in the current period, above ceil(N/M). */
  private shedding = 0
  private readonly grace: bigint
  private readonly pace: bigint

  constructor(
    readonly identity: string,
    private readonly clock: Clock.Clock,
    retryPeriod: Duration.Duration,
    /** Asks the membership for a fresh view: a free lease may mean a member left. */
    private readonly refresh: () => void
  ) {
    this.members = [identity]
    // Two polls' worth: a lease free for longer is claimed whatever the
    // rules say, so that no election waits on views that agree.
    this.grace = 2n * Duration.unsafeToNanos(retryPeriod)
    this.pace = Duration.unsafeToNanos(retryPeriod)
  }

  /** The membership's latest view. */
  view(members: ReadonlyArray<string>): void {
    this.members = members.includes(this.identity) ? members : [...members, this.identity].sort()
    this.trustedAt ??= this.nanos() + this.pace
  }

  /** The live members as last seen, this member among them. */
  get live(): ReadonlyArray<string> {
    return this.members
  }

  /** How many elections `identity` was last seen holding. */
  count(identity: string): number {
    return this.counts.get(identity) ?? 0
  }

  /** How many elections this member should lead. */
  target(): number {
    return target(this.holders.size, this.members, (id) => this.count(id), this.identity)
  }

  /** The seat of election `name`, which this member takes part in from now on. */
  seat(name: string): Seat {
    this.holders.set(name, undefined)
    return {
      seen: (holder) => this.seen(name, holder),
      mayClaim: () => this.mayClaim(name),
      handsOver: () => this.handsOver(name)
    }
  }

  /** Election `name` is no longer this member's to count. */
  leave(name: string): void {
    this.hold(name, undefined)
    this.holders.delete(name)
    this.freeSince.delete(name)
    this.handedTo.delete(name)
  }

  private seen(name: string, holder: string | undefined): void {
    if (holder === undefined) {
      if (!this.freeSince.has(name)) {
        this.freeSince.set(name, this.nanos())
        const before = this.holders.get(name)
        if (before !== undefined && before !== this.identity) this.handedTo.add(name)
        this.refresh()
      }
    } else {
      this.freeSince.delete(name)
      this.handedTo.delete(name)
      if (name === this.handedOver && holder !== this.identity) this.handedOver = undefined
    }
    this.hold(name, holder)
  }

  private mayClaim(name: string): boolean {
    const now = this.nanos()
    const since = this.freeSince.get(name)
    const overdue = since !== undefined && now - since >= this.grace
    const trusted = this.trustedAt !== undefined && (now >= this.trustedAt || this.handedTo.has(name))
    if (!overdue && (!trusted || this.count(this.identity) >= this.target())) {
      // Refused: a member may have left since the last view.
      this.refresh()
      return false
    }
    this.hold(name, this.identity)
    return true
  }

  // Above ceil(N/M) a member has a surplus whatever the others lead: it
  // hands a quarter of it over each retry period (a member that started
  // alone among thousands of elections sheds them in a few periods, not one
  // a period), no longer counting each as its own from then on, so that
  // the leaders renewing before the term has ended hand over no more than
  // the surplus. Down to its target, whether it keeps the extra election
  // depends on what it sees the others lead: one handover at a time, the
  // next once another member holds the last one, or a retry period after
  // it, so that the others' views catch up in between.
  private handsOver(name: string): boolean {
    const now = this.nanos()
    const count = this.count(this.identity)
    const excess = count - Math.ceil(this.holders.size / this.members.length)
    if (now >= this.periodEnds) {
      this.periodEnds = now + this.pace
      this.shedding = Math.ceil(excess / 4)
    }
    if (excess > 0 && this.shedding > 0) {
      this.shedding--
      this.hold(name, undefined)
      return true
    }
    if (this.handedOver !== undefined && now < this.handOverAt) return false
    if (count <= this.target()) return false
    this.handedOver = name
    this.handOverAt = now + this.pace
    return true
  }

  private hold(name: string, holder: string | undefined): void {
    const before = this.holders.get(name)
    if (before === holder) return
    // A count that falls to nothing goes: identities of members long gone
    // would otherwise pile up.
    if (before !== undefined) {
      const left = this.count(before) - 1
      if (left === 0) this.counts.delete(before)
      else this.counts.set(before, left)
    }
    if (holder !== undefined) this.counts.set(holder, this.count(holder) + 1)
    this.holders.set(name, holder)
  }

  private nanos(): bigint {
    return this.clock.unsafeCurrentTimeNanos()
  }
}
