import type * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Random from "effect/Random"
import * as Scope from "effect/Scope"
import type * as Stream from "effect/Stream"
import type { ElectorConfig, ResolvedConfig, Status } from "../../Elector.js"
import { AlreadyRunning, type LastError, LeaseExpiredLocally } from "../../ElectorError.js"
import type { LeadershipShape } from "../../Leadership.js"
import * as Lease from "../../Lease.js"
import * as Store from "../../Store.js"
import type { Candidate, StoreError } from "../../Store.js"
import { formatDuration } from "../config/config.js"
import * as Instrumentation from "../metrics/instrumentation.js"
import * as LogFields from "../metrics/logFields.js"
import * as Quiet from "../metrics/quiet.js"
import * as Deadlines from "../runtime/deadlines.js"
import * as Loop from "../runtime/loop.js"
import * as Runtime from "../runtime/runtime.js"
import type { Seat } from "../spread/share.js"
import { Advisory } from "./advisory.js"
import { StoreCalls } from "./calls.js"
import { outranks, type Standing } from "./candidacy.js"
import { Collisions } from "./collisions.js"
import { Following } from "./following.js"
import { type Elector, type Observed, Published, type StepDown } from "./published.js"
import * as Term from "./term.js"
import { backoff, jittered, localDeadline, nextStep, renewalDelay } from "./timing.js"
import * as Watchdog from "./watchdog.js"

/** A follower's next step: look at the record, or try to take it. */
type Step = "poll" | "claim"

/** The next step, and how long to wait for it (`undefined`: it follows at once). */
interface Next {
  readonly step: Step
  readonly wait: Duration.Duration | undefined
  /** A wait no wake-up hint cuts short. */
  readonly firm?: boolean
}

/** The next step is a poll, at once. */
const pollNow: Next = { step: "poll", wait: undefined }

/**
 * One participant: the election, in reading order (run, follow, poll, claim,
 * lead, renew until the deadline, step down), then what the steps record of
 * the store's answers (`observe`, `failed`). It owns its collaborators, each
 * with its own state: what the elector shows of itself (published.ts), its
 * advisory callbacks (advisory.ts), its store calls (calls.ts), and its
 * follow loop while it runs, with the wake-up hints it takes (following.ts).
 * make.ts makes it, for the life of a scope.
 *
 * @internal
 */
export class Participant implements Elector {
  readonly name: string
  readonly identity: string
  private readonly published: Published
  private readonly advice: Advisory
  private readonly calls: StoreCalls
  private readonly collisions: Collisions
  /** The elector's log annotations. */
  private readonly annotations: Readonly<Record<string, string>>
  /** The highest fence any term of this participant has used. */
  private ledUnder = -1n
  /** The term that has started and not yet fully ended. */
  private active: Term.Term | undefined = undefined
  /** Local monotonic nanoseconds until which this participant stays out of the election. */
  private heldOffUntil = 0n
  /** Whether the last poll saw a live candidate this participant prefers to itself. */
  private outranked = false
  // Polls and claims that failed in a row with retryable errors (shed,
  // timed out: the store is overloaded or unreachable), since the last
  // answer. A fatal error needs an operator, not fewer polls.
  private stepFailures = 0
  /** The fence of the last lease seen held back, announced once. */
  private heldBack: bigint | undefined = undefined
  /** The follow loop, while it runs. */
  private following: Following | undefined = undefined
  /** The fiber running `run`, so that closing the elector's scope stops it. */
  private runner: Fiber.RuntimeFiber<never, AlreadyRunning> | undefined = undefined
  // The callbacks of the configuration, not the configuration itself: it
  // may hold objects of its own (Durations) the resolved config replaces.
  private readonly onNewLeader: ElectorConfig["onNewLeader"]
  private readonly onStartedLeading: ElectorConfig["onStartedLeading"]
  private readonly onStoppedLeading: ElectorConfig["onStoppedLeading"]

  constructor(
    input: ElectorConfig,
    readonly config: ResolvedConfig,
    readonly store: Store.StoreShape,
    private readonly standing: Standing | undefined,
    private readonly clock: Clock.Clock,
    private readonly instrumentation: Instrumentation.Instrumentation,
    /** What tells this elector's process apart in the store: given to every acquire. */
    private readonly incarnation: string,
    /** Its place in a spread group (see spread/share.ts), when it is in one. */
    private readonly seat?: Seat | undefined
  ) {
    this.name = config.name
    this.identity = config.identity
    this.annotations = { election: this.name, identity: this.identity }
    this.published = new Published(this.identity, clock)
    this.advice = new Advisory(clock, instrumentation, this.annotations)
    this.calls = new StoreCalls(store, config, instrumentation, this.published)
    this.collisions = new Collisions(this.name, this.identity, instrumentation)
    this.onNewLeader = input.onNewLeader
    this.onStartedLeading = input.onStartedLeading
    this.onStoppedLeading = input.onStoppedLeading
  }

  // What the elector shows of itself is its published state's.
  get isLeader(): Effect.Effect<boolean> {
    return this.published.isLeader
  }
  get fence(): Effect.Effect<Option.Option<bigint>> {
    return this.published.fence
  }
  get status(): Effect.Effect<Status> {
    return this.published.status
  }
  get changes(): Stream.Stream<Status> {
    return this.published.changes
  }
  get ready(): Effect.Effect<void, StoreError> {
    return this.published.ready
  }
  get leadership(): Effect.Effect<LeadershipShape> {
    return this.published.leadership
  }
  unsafeIsLeader(): boolean {
    return this.published.unsafeIsLeader()
  }
  unsafeFence(): bigint | undefined {
    return this.published.unsafeFence()
  }

  get run(): Effect.Effect<never, AlreadyRunning> {
    return Effect.suspend(() => this.running())
  }
  get resign(): Effect.Effect<void> {
    return Effect.suspend(() => this.resigning())
  }

  /** `run`: the loop on the caller's fiber, with the elector's clock and log annotations. */
  private running(): Effect.Effect<never, AlreadyRunning> {
    return Effect.uninterruptibleMask((restore) =>
      Effect.withFiberRuntime<never, AlreadyRunning>((fiber) => {
        if (this.runner !== undefined) return new AlreadyRunning({ name: this.name, identity: this.identity })
        this.runner = fiber
        this.calls.trace(!Instrumentation.isNative(Runtime.tracerOf(fiber)))
        const loop = (handle: Loop.Handle) =>
          restore(
            this.follow(handle).pipe(
              // Nothing the store or user code does ends the loop; should anything
              // else, say so loudly rather than linger as a silent non-participant.
              // (Interrupting `run` from outside skips this: that is how it stops.)
              Effect.tapErrorCause((cause) =>
                Effect.zipRight(
                  Effect.logFatal("the elector stopped", cause),
                  Effect.sync(() => this.published.settleReady(Exit.failCause(cause)))
                )
              )
            )
          )
        // Once the loop is released (its call in flight abandoned), the
        // withdrawal's call names no caller: it gets a canceller of its own.
        return Loop.run(this.clock, this.annotations, this.published, loop, () => {
          this.following = undefined
          return Effect.zipRight(
            this.withdrawal(),
            Effect.sync(() => {
              this.runner = undefined
            })
          )
        })
      })
    )
  }

  private follow(loop: Loop.Handle): Effect.Effect<never> {
    const following = this.following = new Following(loop)
    const { waits } = loop
    return Effect.gen(this, function*() {
      let step: Step = "poll"
      while (true) {
        // Resigned: out of the election until the hold-off ends (a second
        // resign extends it); no hint cuts the hold-off short.
        if (this.heldOffUntil > this.nanos()) {
          yield* this.withdrawal()
          while (this.heldOffUntil > this.nanos()) yield* waits.until(this.heldOffUntil)
        }
        following.stepping()
        // Claiming at a seen lease's expiry skips the look at the record:
        // not while a preferred candidate is alive, which may claim it.
        const next: Next = yield* (step === "claim" && !this.outranked ? this.claim() : this.poll())
        step = next.step
        const firm = next.firm === true
        // A hint during the step: its answer may predate the release.
        if (!firm && following.wasHinted()) step = "claim"
        else if (next.wait !== undefined) {
          const at = this.nanos() + Duration.unsafeToNanos(next.wait)
          following.waking(!firm)
          // A claim at a lease's expiry goes at that instant; a poll may go
          // early, on the grain it shares with other loops' routine steps.
          // Not before the first answer: joiners whose polls timed out in a
          // start-up burst would come back in bursts again.
          yield* next.step === "claim" || !this.published.observed() ? waits.until(at) : waits.by(at)
          following.waking(false)
          if (!firm && following.wasHinted()) step = "claim"
        }
      }
    })
  }

  // A hint that a lease of the election was given up (see Store.WakeUps):
  // the follow loop claims now rather than after its wait. It decides
  // nothing: the claim is the usual acquire, and a hint that was wrong costs
  // that one call. A leader's hints are its own release's, or stale by the
  // time it follows.
  hint(): void {
    if (this.active === undefined) this.following?.hint()
  }

  private *poll() {
    const startedAt = this.nanos()
    // No candidacy, no rivals: outranked stays false.
    if (this.standing !== undefined) this.outranked = (yield* this.rivals()).length > 0
    const seen = yield* this.calls.attempt("inspect", this.store.inspect(this.name))
    const replyAt = this.nanos()
    if (Either.isLeft(seen) && seen.left._tag !== "NoLease") {
      this.stepFailed(seen.left)
      yield* this.failed(seen.left)
      return this.repoll(yield* Random.next, startedAt)
    }
    this.stepFailures = 0
    const lease = Either.getOrUndefined(seen)
    const announce = this.observe(lease)
    if (announce !== undefined) yield* announce
    if (lease !== undefined && this.mine(lease)) {
      // A valid lease of ours that no term of ours is using: an earlier term
      // that stepped down locally, or an acquire whose reply was lost. Give
      // it up, so that the next term is told apart by a fresh fence.
      if (!(yield* this.releaseLease(lease.fence))) return this.pause(yield* Random.next)
    } else if (lease !== undefined && !Lease.isExpired(lease)) {
      return this.pause(yield* Random.next, lease, replyAt)
    }
    // Free, and a preferred candidate is alive: leave the lease to it, for
    // as long as a live candidate needs to claim it (it may have died since
    // its last advertisement).
    if (
      lease !== undefined && this.outranked &&
      lease.now.getTime() - lease.expiresAt.getTime() < Duration.toMillis(this.config.candidateTtl)
    ) return this.pause(yield* Random.next)
    return yield* this.claim()
  }

  // `claim` and `poll` are generators that `follow` delegates to with
  // `yield*`: a step builds no effect, nor generator function, of its own.
  private *claim() {
    const { config, identity, name } = this
    const { leaseDuration, safetyMargin } = config
    // In a spread group, only a member below its share claims a lease freed
    // a moment ago; the claim itself is the usual acquire.
    if (this.seat !== undefined && !this.seat.mayClaim()) return this.pause(yield* Random.next)
    const sentAt = this.nanos()
    const result = yield* this.calls.attempt(
      "acquire",
      this.store.acquire(name, identity, leaseDuration, config.payload, this.incarnation)
    )
    const replyAt = this.nanos()
    if (Either.isLeft(result)) {
      this.stepFailed(result.left)
      yield* this.failed(result.left)
      return this.pause(yield* Random.next)
    }
    this.stepFailures = 0
    const lease = result.right
    const announce = this.observe(lease)
    if (announce !== undefined) yield* announce
    if (!this.mine(lease)) return this.pause(yield* Random.next, lease, replyAt)
    // A fence a term of ours already used: the database clock stepped back
    // and revived a lease this participant had given up, or let expire.
    // Leading under it again would let the old term's late writes pass for
    // the new term's, so give it up: the next claim takes a fresh fence.
    if (lease.fence <= this.ledUnder) {
      yield* this.releaseLease(lease.fence)
      return this.pause(yield* Random.next)
    }
    // Won, but resigned while the claim was in flight.
    if (this.nanos() < this.heldOffUntil) {
      yield* this.releaseLease(lease.fence)
      return pollNow
    }
    const deadline = localDeadline(sentAt, lease, leaseDuration, safetyMargin)
    // Won, but with too little time left to prove it: the next poll gives it up.
    if (deadline <= this.nanos()) return this.pause(yield* Random.next)
    const reason = yield* this.lead(lease.fence, sentAt, deadline)
    // The term's work failed: let a healthy participant take over.
    // Firm: this participant's own release must not wake it to claim again.
    return reason === "failed" ? { step: "poll" as const, wait: config.workFailureBackoff, firm: true } : pollNow
  }

  // Waits a jittered retryPeriod, then polls; but after a reply (received
  // at `replyAt`) showing someone else's valid lease, claims at the instant
  // it can first be claimed if that comes first: a crashed leader's lease
  // is taken over one round trip after it expires, not at the next poll.
  // The database decides who wins a claim; this only picks when to ask.
  // After polls or claims that failed in a row the wait grows (see
  // `backoff`), so that an overloaded store gets fewer polls; the first
  // answer resets it.
  // The wait is `follow`'s, once the step has returned: what a step built
  // is garbage by then, rather than kept (and promoted) over the wait.
  // `random` (in [0, 1), for the jitter) is drawn by the step, which yields
  // anyway: a plain function here spares each poll an effect of its own.
  private pause(random: number, lease?: Lease.Lease, replyAt = 0n): Next {
    const { config } = this
    const poll = backoff(config.retryPeriod, this.stepFailures, config.leaseDuration, random)
    const next = lease === undefined || Lease.isExpired(lease)
      ? { claim: false, wait: poll }
      : nextStep(poll, Duration.toMillis(Lease.ttl(lease)), Number(this.nanos() - replyAt) / 1_000_000)
    return { step: next.claim ? "claim" : "poll", wait: next.wait }
  }

  // After a failed poll whose step started at `startedAt`. A participant
  // that has had an answer backs off (see `pause`). One that has not keeps
  // its period, counted from the poll's start rather than its failure: a
  // poll that timed out queued behind a start-up burst
  // (stores/internal/gate.ts) has waited its whole timeout already, and
  // a retry period more would leave its election leaderless that long after
  // the others are led. It still polls at most once a (jittered) retry
  // period.
  private repoll(random: number, startedAt: bigint): Next {
    if (this.published.observed()) return this.pause(random)
    const left = Duration.unsafeToNanos(jittered(this.config.retryPeriod, random)) - (this.nanos() - startedAt)
    return left > 0n ? { step: "poll", wait: Duration.nanos(left) } : pollNow
  }

  // Only a participant that has had an answer backs off: one whose first
  // polls failed in a start-up burst (timed out in the queue) would
  // otherwise fall behind those that got in first, and its election stay
  // leaderless for up to maxBackoffFactor retry periods.
  private stepFailed(error: StoreError): void {
    this.stepFailures = error.retryable && this.published.observed() ? this.stepFailures + 1 : 0
  }

  // Advertises this participant (when it is a candidate) and returns the
  // live candidates it prefers to itself; none when the call fails.
  private rivals(): Effect.Effect<ReadonlyArray<Candidate>> {
    const { config, identity, name, standing } = this
    if (standing === undefined) return Effect.succeed([])
    return this.calls.call("advertise", standing.advertise(name, identity, standing.candidacy, config.candidateTtl))
      .pipe(
        Effect.map((candidates) =>
          candidates.filter((c) => c.identity !== identity && outranks(c, standing.candidacy, config.versionPolicy))
        ),
        Effect.catchAll((error) => Effect.as(this.failed(error), []))
      )
  }

  private lead(fence: bigint, sentAt: bigint, deadline: bigint): Effect.Effect<StepDown | "shutdown"> {
    return Effect.acquireUseRelease(
      this.startTerm(fence, deadline),
      ({ stop }) =>
        Watchdog.guarding(this.published, stop, (moved) =>
          Effect.gen(this, function*() {
            const { clock, config } = this
            const first = sentAt + Duration.unsafeToNanos(renewalDelay(config.renewInterval, yield* Random.next, true))
            // Children of this fiber rather than daemons, so TestClock sees them.
            const renewer = yield* Loop.fork(
              clock,
              this.published,
              (loop) => this.renewals(fence, first, stop, moved, loop)
            )
            // No fiber at all for a participant that is no candidate.
            const challenger = this.standing === undefined
              ? undefined
              : yield* Loop.fork(clock, this.published, (loop) => this.challenges(stop, loop))
            return yield* Deferred.await(stop).pipe(
              // Built when the term ends, not kept on the fiber while it lasts.
              Effect.ensuring(Effect.suspend(() =>
                challenger === undefined
                  ? Fiber.interrupt(renewer)
                  : Effect.zipRight(Fiber.interrupt(challenger), Fiber.interrupt(renewer))
              ))
            )
          })),
      (term, exit) => this.endTerm(term, exit)
    )
  }

  private startTerm(fence: bigint, deadline: bigint): Effect.Effect<Term.Term> {
    return Effect.gen(this, function*() {
      const { fork, term } = yield* Term.open(this.published, this.advice, this.config, fence, deadline)
      this.ledUnder = fence
      this.active = term
      yield* this.published.update((s) => ({ ...s, term: Option.some(term) }))
      yield* this.instrumentation.termStarted
      yield* Effect.annotateLogs(Effect.logInfo(`started leading under fence ${fence}`), "fence", String(fence))
      const onStartedLeading = this.onStartedLeading
      if (onStartedLeading !== undefined) {
        // Built inside the fiber, so that a synchronous throw is the work's defect.
        yield* fork("onStartedLeading", Effect.suspend(() => onStartedLeading(fence)))
      }
      return term
    })
  }

  private renewals(
    fence: bigint,
    firstAt: bigint,
    stop: Deferred.Deferred<StepDown>,
    moved: (deadline: bigint) => void,
    { waits }: Loop.Handle
  ): Effect.Effect<void> {
    return Effect.gen(this, function*() {
      const { config, identity, name, store } = this
      const { leaseDuration, payload, safetyMargin } = config
      let nextAt = firstAt
      while (true) {
        if (nextAt > this.nanos()) yield* waits.by(nextAt)
        const sentAt = this.nanos()
        const result = yield* this.calls.attempt(
          "renew",
          store.renew(name, identity, fence, leaseDuration, payload),
          fence
        )
        if (Either.isLeft(result)) {
          yield* this.failed(result.left)
          if (result.left._tag === "LeaseLost") return yield* Deferred.succeed(stop, "lost")
          nextAt = this.nanos() + Duration.unsafeToNanos(config.retryDelay)
          continue
        }
        yield* this.instrumentation.renewed(Duration.nanos(this.nanos() - sentAt))
        const deadline = localDeadline(sentAt, result.right, leaseDuration, safetyMargin)
        const announce = this.observe(result.right, deadline)
        if (announce !== undefined) yield* announce
        moved(deadline)
        // A member above its share in a spread group hands this election
        // over: the term ends as a resignation does, without the hold-off.
        if (this.seat?.handsOver() === true) return yield* Deferred.succeed(stop, "handedOver")
        nextAt = sentAt + Duration.unsafeToNanos(renewalDelay(config.renewInterval, yield* Random.next, false))
      }
    })
  }

  // A preferred candidate that has been alive for preemptAfter takes over:
  // the term ends as a resignation does, without the hold-off.
  private challenges(stop: Deferred.Deferred<StepDown>, { waits }: Loop.Handle): Effect.Effect<void> {
    return Effect.gen(this, function*() {
      const { config } = this
      while (true) {
        yield* waits.by(this.nanos() + Duration.unsafeToNanos(jittered(config.retryPeriod, yield* Random.next)))
        const due = (yield* this.rivals()).find((c) => Duration.greaterThanOrEqualTo(c.aliveFor, config.preemptAfter))
        if (due !== undefined) {
          yield* Effect.logInfo(
            `handing over to ${due.identity}, preferred and alive for ${formatDuration(due.aliveFor)}`
          )
          return yield* Deferred.succeed(stop, "preempted")
        }
      }
    })
  }

  private endTerm(term: Term.Term, exit: Exit.Exit<StepDown>): Effect.Effect<void> {
    return Effect.gen(this, function*() {
      const reason = Exit.getOrElse(exit, () => "shutdown" as const)
      // Not leader from here on, before anything else happens.
      yield* this.published.update((s) => ({ ...s, term: Option.none() }))
      // Nor counted as this member's in a spread group: after a partition
      // the next poll that would say so may be retry periods away, and a
      // member that counts a lost election as its own claims too little.
      this.seat?.seen(undefined)
      yield* this.instrumentation.termEnded(reason)
      if (reason === "expired") yield* this.failed(new LeaseExpiredLocally({ name: this.name, fence: term.fence }))
      yield* Effect.annotateLogs(
        Effect.logInfo(`stopped leading under fence ${term.fence} (${reason})`),
        "fence",
        String(term.fence)
      )
      yield* Scope.close(term.work, Exit.void)
      // A finalizer that fails has still run, as have the others: the
      // release goes ahead.
      yield* this.advice.contain("finalizer", () => Scope.close(term.scope, Exit.void))
      if (reason !== "lost" && !(reason === "shutdown" && this.config.disableRelease)) {
        yield* this.releaseLease(term.fence)
      }
      this.active = undefined
      yield* Deferred.succeed(term.ended, undefined)
      const onStoppedLeading = this.onStoppedLeading
      if (onStoppedLeading !== undefined) yield* this.advice.advise("onStoppedLeading", () => onStoppedLeading)
    })
  }

  private releaseLease(fence: bigint): Effect.Effect<boolean> {
    return this.calls.call("release", this.store.release(this.name, this.identity, fence), fence).pipe(
      Effect.as(true),
      Effect.catchAll((error) => Effect.as(this.failed(error), false))
    )
  }

  private withdrawal(): Effect.Effect<void> {
    const { standing } = this
    if (standing === undefined) return Effect.void
    return this.calls.call("withdraw", standing.withdraw(this.name, this.identity)).pipe(
      Effect.catchAll((error) => this.failed(error))
    )
  }

  private resigning(): Effect.Effect<void> {
    this.heldOffUntil = this.nanos() + Duration.unsafeToNanos(this.config.resignHoldOff)
    const term = this.active
    if (term === undefined) return Effect.void
    return Effect.zipRight(Deferred.succeed(term.stop, "resigned"), Deferred.await(term.ended))
  }

  // At shutdown, in this order: `run` stops, the advisory callbacks settle,
  // and, once the elector's calls have ended, the deadline timer need not
  // outlive them (see deadlines.ts).
  shutdown(): Effect.Effect<void> {
    return (this.runner === undefined ? Effect.void : Fiber.interrupt(this.runner)).pipe(
      Effect.zipRight(Effect.suspend(() => this.advice.settle(this.config.operationTimeout))),
      Effect.zipRight(Effect.sync(() => Deadlines.quiesce(this.clock)))
    )
  }
  // What the steps record of the store's answers.

  // Its logs carry the error's tag, retryability and fence as annotations,
  // which a structured logger (the Promise API's) gets as fields.
  private failed(error: LastError): Effect.Effect<void> {
    return Effect.annotateLogs(
      Effect.gen(this, function*() {
        const { published } = this
        yield* published.update((s) => ({ ...s, lastError: Option.some(error) }))
        if (error._tag === "LeaseExpiredLocally") return yield* Effect.logWarning(error.message)
        // Any answer of the store, an error included, makes the elector ready.
        // Under failFast a fatal first answer fails `ready` instead, and
        // what awaits it (a start, a layer's build) reports it.
        const failsReady = !published.readinessSettled() && this.config.failFast && Store.isFatal(error)
        published.settleReady(failsReady ? Exit.fail(error) : Exit.void)
        if (error._tag === "LeaseLost") return yield* Effect.logWarning(error.message)
        yield* this.instrumentation.storeFailed(error)
        if (error.retryable) {
          // Quieted per store (quiet.ts): the errors of a participant not
          // yet answered, and failed polls, each tried again anyway.
          const why = Option.isNone(published.current.observedAt)
            ? "no answer from the store yet"
            : error.operation === "inspect"
            ? "a poll, tried again at the next"
            : undefined
          return yield* Quiet.warn(this.store, why, this.nanos(), error.message)
        }
        yield* this.calls.fatalFailed(error, failsReady)
      }),
      LogFields.ofError(error)
    )
  }

  // Records what a store call saw, in one change of the state: with the
  // term's new deadline when it is a renewal's answer. What it gives back
  // (a new leader to announce, a collision or a hold-back to report) is
  // what remains to run, if anything.
  private observe(lease: Lease.Lease | undefined, deadline?: bigint): Effect.Effect<void> | undefined {
    const state = this.published.current
    const before = state.leader
    // A lease held back after the database changed is nobody's: while it
    // is, there is no leader to show.
    const heldBack = lease !== undefined && Lease.isHeldBack(lease)
    const held = lease === undefined || heldBack || Lease.isExpired(lease) ? undefined : lease
    // The leader seen last time, seen again (as most answers show it), is
    // kept as it is rather than built anew at every call. Its payload must
    // be the very same object: a store that decodes it afresh gets a new one.
    const seen: Option.Option<Observed> = held === undefined
      ? Option.none()
      : Option.isSome(before) && before.value.holder === held.holder && before.value.fence === held.fence &&
          before.value.payload === held.payload
      ? before
      : Option.some({ holder: held.holder, fence: held.fence, payload: held.payload })
    const collided = this.collisions.seen(
      lease,
      held !== undefined && held.holder === this.identity && !this.mine(held),
      this.nanos()
    )
    this.seat?.seen(Option.isSome(seen) ? seen.value.holder : undefined)
    const wall = this.clock.unsafeCurrentTimeMillis()
    this.published.commit({
      ...state,
      term: deadline === undefined ? state.term : Option.map(state.term, (t) => ({ ...t, deadline })),
      leader: seen,
      observedAt: Option.some(wall),
      identityCollision: collided === undefined ? state.identityCollision : Option.some(wall)
    })
    const noted = collided ?? (heldBack ? this.holdingBack(lease) : undefined)
    const announced = this.announce(before, seen)
    return noted === undefined ? announced : announced === undefined ? noted : Effect.zipRight(noted, announced)
  }

  // A new leader seen is logged and handed to `onNewLeader`.
  private announce(before: Option.Option<Observed>, seen: Option.Option<Observed>): Effect.Effect<void> | undefined {
    if (Option.isNone(seen)) return undefined
    const { fence, holder } = seen.value
    if (Option.isSome(before) && before.value.holder === holder && before.value.fence === fence) return undefined
    const announced = Effect.logInfo(`new leader observed: ${holder} under fence ${fence}`)
    const onNewLeader = this.onNewLeader
    return onNewLeader === undefined
      ? announced
      : Effect.zipRight(announced, this.advice.advise("onNewLeader", () => onNewLeader(holder, fence)))
  }

  // Said once per hold-back (each has a fence of its own): no participant
  // leads until it expires, which is what the operator sees meanwhile.
  private holdingBack(lease: Lease.Lease): Effect.Effect<void> | undefined {
    if (lease.fence === this.heldBack) return undefined
    this.heldBack = lease.fence
    return Effect.annotateLogs(
      Effect.logInfo(
        `lease "${this.name}" is held back until ${lease.expiresAt.toISOString()} under fence ${lease.fence}: ` +
          `the database behind the store changed (a failover or a restart)`
      ),
      "fence",
      String(lease.fence)
    )
  }

  // A lease is this participant's when it is held under its identity and,
  // when the store keeps incarnations, under its incarnation: one under the
  // same identity and another incarnation (or none) is another process's,
  // given the same identity by mistake, and is followed, never released nor
  // renewed (see collisions.ts). A store without incarnations (the contract
  // of 0.1) tells processes apart by identity alone, as 0.1 did.
  private mine(lease: Lease.Lease): boolean {
    return Lease.isHeldBy(lease, this.identity, this.store.incarnations === true ? this.incarnation : undefined)
  }

  /** The local monotonic clock: inside a running effect, what `clock.currentTimeNanos` would give. */
  private nanos(): bigint {
    return this.clock.unsafeCurrentTimeNanos()
  }
}
