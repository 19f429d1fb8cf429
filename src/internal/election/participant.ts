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
import type { ElectorConfig, ResolvedConfig } from "../../Elector.js"
import { AlreadyRunning, LeaseExpiredLocally } from "../../ElectorError.js"
import * as Lease from "../../Lease.js"
import type * as Store from "../../Store.js"
import type { Candidate, StoreError } from "../../Store.js"
import { formatDuration } from "../config/config.js"
import * as Instrumentation from "../metrics/instrumentation.js"
import * as Deadlines from "../runtime/deadlines.js"
import * as Loop from "../runtime/loop.js"
import * as Runtime from "../runtime/runtime.js"
import { Calling } from "./calls.js"
import { outranks, type Standing } from "./candidacy.js"
import type { Elector, StepDown } from "./published.js"
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
 * lead, renew until the deadline, step down). The state, the advisory
 * callbacks and the store calls are the concerns of the classes it extends
 * (published.ts, advisory.ts, calls.ts), methods over this one object.
 * electors.ts makes it, for the life of a scope.
 *
 * @internal
 */
export class Participant extends Calling implements Elector {
  /** The highest fence any term of this participant has used. */
  ledUnder = -1n
  /** The term that has started and not yet fully ended. */
  active: Term.Term | undefined = undefined
  /** Local monotonic nanoseconds until which this participant stays out of the election. */
  heldOffUntil = 0n
  /** Whether the last poll saw a live candidate this participant prefers to itself. */
  outranked = false
  // Polls and claims that failed in a row with retryable errors (shed,
  // timed out: the store is overloaded or unreachable), since the last
  // answer. A fatal error needs an operator, not fewer polls.
  stepFailures = 0
  // Wake-up hints (see Store.WakeUps): whether one came since the current
  // step started, and whether the follow loop is in a wait one may cut short.
  hinted = false
  wakeable = false
  /** The follow loop's waits, while it runs. */
  following: Deadlines.Waits | undefined = undefined
  /** The fiber running `run`, so that closing the elector's scope stops it. */
  runner: Fiber.RuntimeFiber<never, AlreadyRunning> | undefined = undefined

  constructor(
    input: ElectorConfig,
    config: ResolvedConfig,
    store: Store.StoreShape,
    readonly standing: Standing | undefined,
    clock: Clock.Clock,
    instrumentation: Instrumentation.Instrumentation
  ) {
    super(input, config, clock, instrumentation, store)
  }

  get run(): Effect.Effect<never, AlreadyRunning> {
    return Effect.suspend(() => this.running())
  }
  get resign(): Effect.Effect<void> {
    return Effect.suspend(() => this.resigning())
  }

  /** `run`: the loop on the caller's fiber, with the elector's clock and log annotations. */
  running(): Effect.Effect<never, AlreadyRunning> {
    return Effect.uninterruptibleMask((restore) =>
      Effect.withFiberRuntime<never, AlreadyRunning>((fiber) => {
        if (this.runner !== undefined) return new AlreadyRunning({ name: this.name, identity: this.identity })
        this.runner = fiber
        this.traced = !Instrumentation.isNative(Runtime.tracerOf(fiber))
        const loop = (waits: Deadlines.Waits) =>
          restore(
            this.follow(waits).pipe(
              // Nothing the store or user code does ends the loop; should anything
              // else, say so loudly rather than linger as a silent non-participant.
              // (Interrupting `run` from outside skips this: that is how it stops.)
              Effect.tapErrorCause((cause) =>
                Effect.zipRight(
                  Effect.logFatal("the elector stopped", cause),
                  Effect.sync(() => this.settleReady(Exit.failCause(cause)))
                )
              )
            )
          )
        // Once the loop is released (its call in flight abandoned), the
        // withdrawal's call gets a canceller of its own.
        return Loop.run(this.clock, { election: this.name, identity: this.identity }, loop, () =>
          Effect.zipRight(
            this.withdrawal(),
            Effect.sync(() => {
              this.runner = undefined
              this.following = undefined
            })
          ))
      })
    )
  }

  follow(waits: Deadlines.Waits): Effect.Effect<never> {
    this.following = waits
    return Effect.gen(this, function*() {
      let step: Step = "poll"
      while (true) {
        // Resigned: out of the election until the hold-off ends (a second
        // resign extends it); no hint cuts the hold-off short.
        if (this.heldOffUntil > this.nanos()) {
          yield* this.withdrawal()
          while (this.heldOffUntil > this.nanos()) yield* waits.until(this.heldOffUntil)
        }
        this.hinted = false
        // Claiming at a seen lease's expiry skips the look at the record:
        // not while a preferred candidate is alive, which may claim it.
        const next: Next = yield* (step === "claim" && !this.outranked ? this.claim() : this.poll())
        step = next.step
        const firm = next.firm === true
        // A hint during the step: its answer may predate the release.
        if (!firm && this.hinted) step = "claim"
        else if (next.wait !== undefined) {
          const at = this.nanos() + Duration.unsafeToNanos(next.wait)
          this.wakeable = !firm
          // A claim at a lease's expiry goes at that instant; a poll may go
          // early, on the grain it shares with other loops' routine steps.
          // Not before the first answer: joiners whose polls timed out in a
          // start-up burst would come back in bursts again.
          yield* next.step === "claim" || Option.isNone(this.state.observedAt) ? waits.until(at) : waits.by(at)
          this.wakeable = false
          if (!firm && this.hinted) step = "claim"
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
    if (this.active !== undefined) return
    this.hinted = true
    if (!this.wakeable) return
    this.wakeable = false
    this.following?.wake()
  }

  *poll() {
    const startedAt = this.nanos()
    // No candidacy, no rivals: outranked stays false.
    if (this.standing !== undefined) this.outranked = (yield* this.rivals()).length > 0
    const seen = yield* this.attempt("inspect", this.store.inspect(this.name))
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
    if (lease !== undefined && Lease.isHeldBy(lease, this.identity)) {
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
  *claim() {
    const { config, identity, name } = this
    const { leaseDuration, safetyMargin } = config
    const sentAt = this.nanos()
    const result = yield* this.attempt("acquire", this.store.acquire(name, identity, leaseDuration, config.payload))
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
    if (!Lease.isHeldBy(lease, identity)) return this.pause(yield* Random.next, lease, replyAt)
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
  pause(random: number, lease?: Lease.Lease, replyAt = 0n): Next {
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
  // (stores/internal/admission.ts) has waited its whole timeout already, and
  // a retry period more would leave its election leaderless that long after
  // the others are led. It still polls at most once a (jittered) retry
  // period.
  repoll(random: number, startedAt: bigint): Next {
    if (Option.isSome(this.state.observedAt)) return this.pause(random)
    const left = Duration.unsafeToNanos(jittered(this.config.retryPeriod, random)) - (this.nanos() - startedAt)
    return left > 0n ? { step: "poll", wait: Duration.nanos(left) } : pollNow
  }

  // Only a participant that has had an answer backs off: one whose first
  // polls failed in a start-up burst (timed out in the queue) would
  // otherwise fall behind those that got in first, and its election stay
  // leaderless for up to maxBackoffFactor retry periods.
  stepFailed(error: StoreError): void {
    this.stepFailures = error.retryable && Option.isSome(this.state.observedAt) ? this.stepFailures + 1 : 0
  }

  // Advertises this participant (when it is a candidate) and returns the
  // live candidates it prefers to itself; none when the call fails.
  rivals(): Effect.Effect<ReadonlyArray<Candidate>> {
    const { config, identity, name, standing } = this
    if (standing === undefined) return Effect.succeed([])
    return this.call("advertise", standing.advertise(name, identity, standing.candidacy, config.candidateTtl)).pipe(
      Effect.map((candidates) =>
        candidates.filter((c) => c.identity !== identity && outranks(c, standing.candidacy, config.versionPolicy))
      ),
      Effect.catchAll((error) => Effect.as(this.failed(error), []))
    )
  }

  lead(fence: bigint, sentAt: bigint, deadline: bigint): Effect.Effect<StepDown | "shutdown"> {
    return Effect.acquireUseRelease(
      this.startTerm(fence, deadline),
      ({ stop }) =>
        Watchdog.guarding(this, stop, (moved) =>
          Effect.gen(this, function*() {
            const { clock, config } = this
            const first = sentAt + Duration.unsafeToNanos(renewalDelay(config.renewInterval, yield* Random.next, true))
            // Children of this fiber rather than daemons, so TestClock sees them.
            const renewer = yield* Loop.fork(clock, (waits) => this.renewals(fence, first, stop, moved, waits))
            // No fiber at all for a participant that is no candidate.
            const challenger = this.standing === undefined
              ? undefined
              : yield* Loop.fork(clock, (waits) => this.challenges(stop, waits))
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

  startTerm(fence: bigint, deadline: bigint): Effect.Effect<Term.Term> {
    return Effect.gen(this, function*() {
      const { fork, term } = yield* Term.open(this, fence, deadline)
      this.ledUnder = fence
      this.active = term
      yield* this.update((s) => ({ ...s, term: Option.some(term) }))
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

  renewals(
    fence: bigint,
    firstAt: bigint,
    stop: Deferred.Deferred<StepDown>,
    moved: (deadline: bigint) => void,
    waits: Deadlines.Waits
  ): Effect.Effect<void> {
    return Effect.gen(this, function*() {
      const { config, identity, name, store } = this
      const { leaseDuration, payload, safetyMargin } = config
      let nextAt = firstAt
      while (true) {
        if (nextAt > this.nanos()) yield* waits.by(nextAt)
        const sentAt = this.nanos()
        const result = yield* this.attempt("renew", store.renew(name, identity, fence, leaseDuration, payload), fence)
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
        nextAt = sentAt + Duration.unsafeToNanos(renewalDelay(config.renewInterval, yield* Random.next, false))
      }
    })
  }

  // A preferred candidate that has been alive for preemptAfter takes over:
  // the term ends as a resignation does, without the hold-off.
  challenges(stop: Deferred.Deferred<StepDown>, waits: Deadlines.Waits): Effect.Effect<void> {
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

  endTerm(term: Term.Term, exit: Exit.Exit<StepDown>): Effect.Effect<void> {
    return Effect.gen(this, function*() {
      const reason = Exit.getOrElse(exit, () => "shutdown" as const)
      // Not leader from here on, before anything else happens.
      yield* this.update((s) => ({ ...s, term: Option.none() }))
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
      yield* this.contain("finalizer", () => Scope.close(term.scope, Exit.void))
      if (reason !== "lost" && !(reason === "shutdown" && this.config.disableRelease)) {
        yield* this.releaseLease(term.fence)
      }
      this.active = undefined
      yield* Deferred.succeed(term.ended, undefined)
      const onStoppedLeading = this.onStoppedLeading
      if (onStoppedLeading !== undefined) yield* this.advise("onStoppedLeading", () => onStoppedLeading)
    })
  }

  releaseLease(fence: bigint): Effect.Effect<boolean> {
    return this.call("release", this.store.release(this.name, this.identity, fence), fence).pipe(
      Effect.as(true),
      Effect.catchAll((error) => Effect.as(this.failed(error), false))
    )
  }

  withdrawal(): Effect.Effect<void> {
    const { standing } = this
    if (standing === undefined) return Effect.void
    return this.call("withdraw", standing.withdraw(this.name, this.identity)).pipe(
      Effect.catchAll((error) => this.failed(error))
    )
  }

  resigning(): Effect.Effect<void> {
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
      Effect.zipRight(Effect.suspend(() => this.settleAdvice())),
      Effect.zipRight(Effect.sync(() => Deadlines.quiesce(this.clock)))
    )
  }
}
