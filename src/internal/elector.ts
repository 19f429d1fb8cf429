import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as FiberId from "effect/FiberId"
import * as HashMap from "effect/HashMap"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as Queue from "effect/Queue"
import * as Random from "effect/Random"
import * as EffectRuntime from "effect/Runtime"
import type * as Scheduler from "effect/Scheduler"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type { ElectorConfig, ElectorShape, ResolvedConfig, Status } from "../Elector.js"
import {
  AlreadyRunning,
  DuplicateIdentity,
  type IdentityError,
  InvalidConfig,
  type LastError,
  LeaseExpiredLocally
} from "../ElectorError.js"
import type { LeadershipShape } from "../Leadership.js"
import * as Lease from "../Lease.js"
import type * as Metrics from "../Metrics.js"
import * as Store from "../Store.js"
import { type Candidacy, type Candidate, type Operation, StoreError } from "../Store.js"
import { outranks } from "./candidacy.js"
import { formatDuration, resolve } from "./config.js"
import * as Deadlines from "./deadlines.js"
import * as Instrumentation from "./instrumentation.js"
import * as Loop from "./loop.js"
import * as Runtime from "./runtime.js"
import { stackless } from "./stackless.js"
import { backoff, jittered, localDeadline, nextStep, renewalDelay } from "./timing.js"

interface Term {
  readonly fence: bigint
  /** Local monotonic nanoseconds by which the term must have ended. */
  readonly deadline: bigint
  readonly leadership: LeadershipShape
  /** Finalizers of the term. */
  readonly scope: Scope.CloseableScope
  /** The term's work; closed first, so work has stopped when finalizers run. */
  readonly work: Scope.CloseableScope
  /** Completed with the reason the term must end, by whichever notices first. */
  readonly stop: Deferred.Deferred<StepDown>
  /** Completed once the term has fully ended: work stopped, finalizers run, lease released. */
  readonly ended: Deferred.Deferred<void>
}

interface Observed {
  readonly holder: string
  readonly fence: bigint
  readonly payload: Uint8Array | null
}

interface State {
  readonly term: Option.Option<Term>
  readonly leader: Option.Option<Observed>
  /** Local wall-clock milliseconds. */
  readonly observedAt: Option.Option<number>
  readonly lastError: Option.Option<LastError>
}

/** Why a term ended, other than shutdown. */
type StepDown = "expired" | "lost" | "failed" | "resigned" | "preempted"

/** A follower's next step: look at the record, or try to take it. */
type Step = "poll" | "claim"

/** The next step, and how long to wait for it (`undefined`: it follows at once). */
interface Next {
  readonly step: Step
  readonly wait: Duration.Duration | undefined
}

/** The next step is a poll, at once. */
const pollNow: Next = { step: "poll", wait: undefined }

/** How many advisory callbacks may wait for the ones ahead of them. */
const adviceLimit = 64

const initial: State = {
  term: Option.none(),
  leader: Option.none(),
  observedAt: Option.none(),
  lastError: Option.none()
}

/** A store effect that ended without one of its own errors: a defect, or an interruption. */
const storeBroke = (operation: Operation, cause: Cause.Cause<unknown>): StoreError =>
  Option.match(Cause.dieOption(cause), {
    onSome: (defect) =>
      new StoreError({ operation, retryable: false, reason: `store defect: ${String(defect)}`, cause: defect }),
    onNone: () =>
      new StoreError({
        operation,
        retryable: false,
        reason: "the store call was interrupted",
        cause: Cause.squash(cause)
      })
  })

const outcome = (cause: Cause.Cause<unknown>): "failure" | "defect" | "interrupt" =>
  Option.isSome(Cause.failureOption(cause))
    ? "failure"
    : Option.isSome(Cause.dieOption(cause))
    ? "defect"
    : "interrupt"

/** The (name, identity) pairs of the electors alive in this process. */
const alive = Runtime.shared("electors", () => new Set<string>())

/**
 * An elector with synchronous reads, for callers outside Effect (the Promise
 * API): they compare the live term's deadline with the clock, as `isLeader`
 * and `fence` do, without running an effect.
 *
 * @internal
 */
export interface Elector extends ElectorShape {
  readonly unsafeIsLeader: () => boolean
  readonly unsafeFence: () => bigint | undefined
}

/** The term in progress in `s`, if its deadline has not passed at `now`. */
const live = (s: State, now: bigint): Term | undefined => {
  const term = Option.getOrUndefined(s.term)
  return term !== undefined && now < term.deadline ? term : undefined
}

/** What a candidate needs of the store, and where it stands. */
interface Standing {
  readonly candidacy: Candidacy
  readonly advertise: NonNullable<Store.StoreShape["advertise"]>
  readonly withdraw: NonNullable<Store.StoreShape["withdraw"]>
}

/** How long a fatal error stays quiet in the log once logged. */
const repeatFatalAfter = Duration.unsafeToNanos(Duration.minutes(1))

/**
 * One participant. Its state is the fields of one object and its steps are
 * methods, built into effects when they run: a process may run thousands of
 * electors, and an elector that kept each step as closures and effects of its
 * own held ~12 KB before it ever ran (~8 KB as methods; 4.6 KB with its
 * public effects built when read and one finalizer: see README, Memory).
 */
class Participant implements Elector {
  readonly name: string
  readonly identity: string
  /** Nanoseconds: every store call gives control back after this long. */
  readonly timeout: bigint
  /**
   * Whether store calls run on the caller's fiber: the store promises to
   * answer within operationTimeout, and to give control back at once when
   * interrupted (`answersWithin`, the SQL stores).
   */
  readonly onCaller: boolean

  // The state is a plain field, so that reading it takes no fiber: the
  // deadline is compared with the clock on every read (isLeader, fence,
  // status). `commit` alone changes it, and hands the new state to each
  // `changes` subscriber in the same synchronous step: in order, none lost,
  // one per change.
  state: State = initial
  /** The queues of `changes` subscribers; made for the first. */
  subscribers: Set<Queue.Enqueue<State>> | undefined = undefined
  // Advisory callbacks run in order on a fiber of their own, never on the
  // path that claims, renews or releases the lease. The fiber is started
  // for a callback when none runs, and ends once none is left: an elector
  // whose callbacks are not due holds no fiber for them. `advise` bounds
  // the queue.
  advisory: Array<Effect.Effect<void>> = []
  adviser: Fiber.RuntimeFiber<void> | undefined = undefined
  // Whether `run`'s fiber has a tracer that reads spans (see
  // instrumentation.ts): read once when it starts, not at every call.
  traced = false
  // Settled by the first answer of the store: failed with a fatal error
  // under failFast, succeeded otherwise. Kept as an Exit, with a Deferred
  // only for a wait that starts before it is settled: few callers wait at
  // all, and a Deferred per elector is half a kilobyte.
  readiness: Exit.Exit<void, StoreError> | undefined = undefined
  readyWaiter: Deferred.Deferred<void, StoreError> | undefined = undefined
  /** Operations currently failing with fatal errors; made for the first. */
  fatal: Set<Operation> | undefined = undefined
  /** When a fatal error was last logged, and how many were not since. */
  fatalLoggedAt = 0n
  fatalUnlogged = 0
  /** The highest fence any term of this participant has used. */
  ledUnder = -1n
  /** The term that has started and not yet fully ended. */
  active: Term | undefined = undefined
  /** Local monotonic nanoseconds until which this participant stays out of the election. */
  heldOffUntil = 0n
  /** Whether the last poll saw a live candidate this participant prefers to itself. */
  outranked = false
  // Polls and claims that failed in a row with retryable errors (shed,
  // timed out: the store is overloaded or unreachable), since the last
  // answer. A fatal error needs an operator, not fewer polls.
  stepFailures = 0
  /** The fiber running `run`, so that closing the elector's scope stops it. */
  runner: Fiber.RuntimeFiber<never, AlreadyRunning> | undefined = undefined

  // The public surface: getters on the prototype, each building an effect
  // that calls a method when it is read, rather than effects and closures
  // kept on every elector (~1.3 KB each, and a process may run thousands).
  get isLeader(): Effect.Effect<boolean> {
    return Effect.sync(() => this.unsafeIsLeader())
  }
  get fence(): Effect.Effect<Option.Option<bigint>> {
    return Effect.sync(() => Option.fromNullable(this.unsafeFence()))
  }
  get status(): Effect.Effect<Status> {
    return Effect.sync(() => this.snapshot(this.state))
  }
  get changes(): Stream.Stream<Status> {
    return Stream.map(this.states(), (s) => this.snapshot(s))
  }
  get run(): Effect.Effect<never, AlreadyRunning> {
    return Effect.suspend(() => this.running())
  }
  get ready(): Effect.Effect<void, StoreError> {
    return Effect.suspend(() => {
      if (this.readiness !== undefined) return this.readiness
      this.readyWaiter ??= Deferred.unsafeMake<void, StoreError>(FiberId.none)
      return Deferred.await(this.readyWaiter)
    })
  }
  // changes starts with the current state, so a term in progress is returned at once.
  get leadership(): Effect.Effect<LeadershipShape> {
    return Effect.suspend(() =>
      this.states().pipe(
        Stream.filterMap((s) => Option.map(s.term, (term) => term.leadership)),
        Stream.runHead,
        Effect.flatten,
        Effect.orDie
      )
    )
  }
  get resign(): Effect.Effect<void> {
    return Effect.suspend(() => this.resigning())
  }
  unsafeIsLeader(): boolean {
    return this.leading() !== undefined
  }
  unsafeFence(): bigint | undefined {
    return this.leading()?.fence
  }

  // The callbacks of the configuration, not the configuration itself: it
  // may hold objects of its own (Durations) the resolved config replaces.
  readonly onNewLeader: ElectorConfig["onNewLeader"]
  readonly onStartedLeading: ElectorConfig["onStartedLeading"]
  readonly onStoppedLeading: ElectorConfig["onStoppedLeading"]

  constructor(
    input: ElectorConfig,
    readonly config: ResolvedConfig,
    readonly store: Store.StoreShape,
    readonly standing: Standing | undefined,
    readonly clock: Clock.Clock,
    readonly instrumentation: Instrumentation.Instrumentation
  ) {
    this.name = config.name
    this.identity = config.identity
    this.onNewLeader = input.onNewLeader
    this.onStartedLeading = input.onStartedLeading
    this.onStoppedLeading = input.onStoppedLeading
    this.timeout = Duration.unsafeToNanos(config.operationTimeout)
    const promised = store.answersWithin
    this.onCaller = promised !== undefined && Duration.lessThanOrEqualTo(promised, config.operationTimeout)
  }

  /** The local monotonic clock: inside a running effect, what `clock.currentTimeNanos` would give. */
  nanos(): bigint {
    return this.clock.unsafeCurrentTimeNanos()
  }

  annotate<A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> {
    return Effect.annotateLogs(effect, { election: this.name, identity: this.identity })
  }

  // User code is untrusted: whatever it does (fail, die, throw while
  // building its effect, interrupt itself) is logged with its cause and
  // counted, and the elector carries on.
  reported(callback: Metrics.Callback, cause: Cause.Cause<unknown>): Effect.Effect<void> {
    return Effect.zipRight(
      Effect.logError(`${callback} failed`, cause),
      this.instrumentation.callbackFailed(callback, outcome(cause))
    )
  }

  contain(callback: Metrics.Callback, f: () => Effect.Effect<unknown, unknown>): Effect.Effect<void> {
    return Effect.suspend(f).pipe(Effect.catchAllCause((cause) => this.reported(callback, cause)), Effect.asVoid)
  }

  advising(): Fiber.RuntimeFiber<void> | undefined {
    return this.adviser !== undefined && this.adviser.unsafePoll() === null ? this.adviser : undefined
  }

  drain(): Effect.Effect<void> {
    return Effect.gen(this, function*() {
      let next = this.advisory.shift()
      while (next !== undefined) {
        yield* next
        next = this.advisory.shift()
      }
    }).pipe((effect) => this.annotate(effect), Effect.withClock(this.clock))
  }

  advise(callback: Metrics.Callback, f: () => Effect.Effect<unknown>): Effect.Effect<void> {
    return Effect.suspend(() => {
      if (this.advisory.length >= adviceLimit) {
        return Effect.zipRight(
          Effect.logWarning(`${callback} dropped: ${adviceLimit} advisory callbacks are already waiting`),
          this.instrumentation.callbackDropped
        )
      }
      this.advisory.push(this.contain(callback, f))
      if (this.advising() !== undefined) return Effect.void
      return Effect.asVoid(Effect.tap(Effect.forkDaemon(this.drain()), (fiber) => {
        this.adviser = fiber
      }))
    })
  }

  // At shutdown, after `run` has stopped (see `shutdown`): the callbacks
  // still queued get at most operationTimeout.
  settleAdvice(): Effect.Effect<void> {
    const running = this.advising()
    if (running === undefined) return Effect.void
    const { operationTimeout } = this.config
    // Interruptible, so that the race does not wait for its loser.
    return Effect.raceFirst(
      Effect.interruptible(Effect.as(Fiber.await(running), true)),
      Effect.interruptible(Effect.as(this.clock.sleep(operationTimeout), false))
    ).pipe(
      Effect.flatMap((drained) =>
        drained ? Effect.void : Effect.zipRight(
          this.annotate(Effect.logWarning(
            `advisory callbacks still running at shutdown after operationTimeout (${
              formatDuration(operationTimeout)
            }): interrupted`
          )),
          Fiber.interruptFork(running)
        )
      )
    )
  }

  commit(next: State): void {
    this.state = next
    if (this.subscribers === undefined) return
    for (const subscriber of this.subscribers) subscriber.unsafeOffer(next)
  }

  update(f: (s: State) => State): Effect.Effect<void> {
    return Effect.sync(() => this.commit(f(this.state)))
  }

  // Built for each subscription: few electors are ever subscribed to, and a
  // stream is a tree of objects.
  states(): Stream.Stream<State> {
    return Stream.unwrapScoped(Effect.map(
      Effect.acquireRelease(
        Effect.flatMap(Queue.unbounded<State>(), (queue) =>
          Effect.sync(() => {
            ;(this.subscribers ??= new Set()).add(queue)
            queue.unsafeOffer(this.state)
            return queue
          })),
        (queue) => Effect.zipRight(Effect.sync(() => this.subscribers?.delete(queue)), Queue.shutdown(queue))
      ),
      (queue) => Stream.fromQueue(queue)
    ))
  }

  /** The term in progress, if its deadline has not passed. */
  leading(): Term | undefined {
    return live(this.state, this.nanos())
  }

  snapshot(s: State): Status {
    const now = this.nanos()
    const wall = this.clock.unsafeCurrentTimeMillis()
    const term = Option.fromNullable(live(s, now))
    return {
      isLeader: Option.isSome(term),
      fence: Option.map(term, (t) => t.fence),
      identity: this.identity,
      leader: Option.map(s.leader, (o) => o.holder),
      leaderFence: Option.map(s.leader, (o) => o.fence),
      leaderPayload: Option.flatMap(s.leader, (o) => Option.fromNullable(o.payload)),
      observedAt: Option.map(s.observedAt, (ms) => new Date(ms)),
      validUntil: Option.map(term, (t) => new Date(wall + Number((t.deadline - now) / 1_000_000n))),
      lastError: s.lastError
    }
  }

  // Every store call gives control back at operationTimeout, whatever the
  // store does with the interruption. A store that promises to answer
  // within that time, and to give control back at once when interrupted
  // (`answersWithin`: the SQL stores), runs on the caller's fiber.
  // Any other store's attempt runs in a fiber of its own, started on the
  // caller's runtime (its clock, tracer, span and log annotations) but never
  // a child of the caller (a fiber waits for its children when it exits,
  // so a driver that takes its time to cancel would hold up the step-down
  // that interrupts the caller). The attempt starts at once, on the caller's
  // stack, up to its first asynchronous step. The caller waits in
  // `Effect.async`, resumed by the attempt's end or by the timer, whichever
  // comes first; the attempt is then interrupted without waiting for it.
  // The race is settled by resuming the waiter rather than by interrupting
  // it, so it holds in uninterruptible regions too (the release at
  // step-down). Whatever the store's effect ends with that is not one of its
  // errors (a defect, an interruption of its own) becomes a fatal StoreError.
  apart<A, E>(operation: Operation, effect: Effect.Effect<A, E>): Effect.Effect<A, E | StoreError> {
    const { clock, config } = this
    return Effect.flatMap(Effect.runtime<never>(), (runtime) =>
      Effect.async<A, E | StoreError>((resume) => {
        const scheduler = Runtime.schedulerOfRuntime(runtime)
        const deadline = clock.unsafeCurrentTimeNanos() + this.timeout
        let settled = false
        let cancelDeadline: (() => void) | undefined
        // Interrupts the attempt unless it has ended: the store's answer settled the call.
        const settle = (outcome: Exit.Exit<A, E | StoreError>, ended: boolean) => {
          if (settled) return
          settled = true
          cancelDeadline?.()
          if (!ended) attempt.unsafeInterruptAsFork(FiberId.none)
          resume(outcome)
        }
        // Interruptible even when the caller is not (the release at step-down).
        const attempt = EffectRuntime.runFork(runtime)(Effect.interruptible(effect))
        attempt.addObserver((exit) =>
          settle(
            Exit.isSuccess(exit) ? exit : Either.match(Cause.failureOrCause(exit.cause), {
              onLeft: (error) => Exit.fail(error),
              onRight: (other) => Exit.fail(storeBroke(operation, other))
            }),
            true
          )
        )
        // Answered already, on this stack: no deadline to keep.
        if (settled) return
        // The error is built only for a call that times out.
        cancelDeadline = Deadlines.schedule(clock, scheduler, deadline, () =>
          settle(
            Exit.fail(stackless(() =>
              new StoreError({
                operation,
                retryable: true,
                reason: `no answer within ${formatDuration(config.operationTimeout)}`,
                cause: undefined
              })
            )),
            false
          ))
        return Effect.sync(() => settle(Exit.interrupt(FiberId.none), false))
      }))
  }

  // One step settles the call, into an Either, as `Effect.either` would
  // give it (the loop's steps look at every outcome): an answer ("no
  // record" is one too) is recorded; an error of the store's is the
  // caller's to report; anything else the store's effect ends with on the
  // caller's fiber (a defect, an interruption of its own) is a fatal
  // StoreError, as it is when the call runs in a fiber of its own.
  attempt<A, E>(
    operation: Operation,
    effect: Effect.Effect<A, E>,
    fence?: bigint
  ): Effect.Effect<Either.Either<A, E | StoreError>> {
    const settled = Effect.matchCauseEffect(this.onCaller ? effect : this.apart(operation, effect), {
      onSuccess: (value) => {
        const rest = this.answered(operation)
        return rest === undefined ? Effect.succeed(Either.right(value)) : Effect.as(rest, Either.right(value))
      },
      onFailure: (cause): Effect.Effect<Either.Either<A, E | StoreError>> => {
        const error = Cause.failureOption(cause)
        if (Option.isSome(error)) {
          const left = Effect.succeed(Either.left(error.value))
          return Predicate.isTagged(error.value, "NoLease")
            ? Effect.zipRight(this.answered(operation) ?? Effect.void, left)
            : left
        }
        // A defect, or an interruption of the store's own: an interruption
        // of the caller skips this step, or waits (uninterruptible) for the
        // call to end, so it never ends a call here.
        return Effect.succeed(Either.left(storeBroke(operation, cause)))
      }
    })
    return this.traced ? this.instrumentation.span(operation, fence)(settled) : settled
  }

  // The same, its outcome as the effect's: for the calls that only catch errors.
  call<A, E>(operation: Operation, effect: Effect.Effect<A, E>, fence?: bigint): Effect.Effect<A, E | StoreError> {
    return Effect.flatMap(
      this.attempt(operation, effect, fence),
      (outcome): Effect.Effect<A, E | StoreError> => outcome
    )
  }

  settleReady(exit: Exit.Exit<void, StoreError>): void {
    if (this.readiness !== undefined) return
    this.readiness = exit
    if (this.readyWaiter !== undefined) Deferred.unsafeDone(this.readyWaiter, exit)
    this.readyWaiter = undefined
  }

  // A fatal error (bad credentials, missing table, no privilege) needs an
  // operator, and retrying will not fix it: log it at ERROR, but once, then
  // at most once a minute, not once per poll. Its end is logged at ERROR
  // too, so that an error-only log pipeline shows the incident closed.
  fatalFailed(error: StoreError): Effect.Effect<void> {
    return Effect.gen(this, function*() {
      const now = this.nanos()
      const fatal = this.fatal ??= new Set()
      const first = fatal.size === 0
      fatal.add(error.operation)
      yield* this.instrumentation.storeFatal(true)
      if (first) {
        this.fatalLoggedAt = now
        this.fatalUnlogged = 0
        return yield* Effect.logError(
          `${error.message}; the store needs an operator (retrying; repeats logged at most once a minute)`
        )
      }
      if (now - this.fatalLoggedAt < repeatFatalAfter) {
        this.fatalUnlogged++
        return
      }
      yield* Effect.logError(`${error.message} (still failing; ${this.fatalUnlogged} more since last logged)`)
      this.fatalLoggedAt = now
      this.fatalUnlogged = 0
    })
  }

  // Called at every answer, as it comes (so it changes the state only when
  // an error clears); what it gives back is what remains to run, if anything.
  answered(operation: Operation): Effect.Effect<void> | undefined {
    const { state } = this
    // Only a success of the operation that failed clears its error; a
    // lost or expired lease is cleared by a lease this participant holds.
    const clears = Option.exists(state.lastError, (error) =>
      error._tag === "StoreError"
        ? error.operation === operation
        : operation === "renew" || operation === "acquire")
    if (clears) this.commit({ ...state, lastError: Option.none() })
    this.settleReady(Exit.void)
    const fatal = this.fatal
    if (fatal === undefined || !fatal.delete(operation) || fatal.size > 0) return undefined
    return Effect.zipRight(
      this.instrumentation.storeFatal(false),
      Effect.logError(`store calls succeed again (${operation}): no longer failing fatally`)
    )
  }

  failed(error: LastError): Effect.Effect<void> {
    return Effect.gen(this, function*() {
      yield* this.update((s) => ({ ...s, lastError: Option.some(error) }))
      if (error._tag === "LeaseExpiredLocally") return yield* Effect.logWarning(error.message)
      // Any answer of the store, an error included, makes the elector ready.
      this.settleReady(this.config.failFast && Store.isFatal(error) ? Exit.fail(error) : Exit.void)
      if (error._tag === "LeaseLost") return yield* Effect.logWarning(error.message)
      yield* this.instrumentation.storeFailed(error)
      if (error.retryable) return yield* Effect.logWarning(error.message)
      yield* this.fatalFailed(error)
    })
  }

  // Records what a store call saw, in one change of the state: with the
  // term's new deadline when it is a renewal's answer. What it gives back
  // (a new leader to announce) is what remains to run, if anything.
  observe(lease: Lease.Lease | undefined, deadline?: bigint): Effect.Effect<void> | undefined {
    const { state } = this
    const before = state.leader
    // The leader seen last time, seen again (as most answers show it), is
    // kept as it is rather than built anew at every call. Its payload must
    // be the very same object: a store that decodes it afresh gets a new one.
    const seen: Option.Option<Observed> = lease === undefined || Lease.isExpired(lease)
      ? Option.none()
      : Option.isSome(before) && before.value.holder === lease.holder && before.value.fence === lease.fence &&
          before.value.payload === lease.payload
      ? before
      : Option.some({ holder: lease.holder, fence: lease.fence, payload: lease.payload })
    this.commit({
      ...state,
      term: deadline === undefined ? state.term : Option.map(state.term, (t) => ({ ...t, deadline })),
      leader: seen,
      observedAt: Option.some(this.clock.unsafeCurrentTimeMillis())
    })
    if (Option.isNone(seen)) return undefined
    const { fence, holder } = seen.value
    if (Option.isSome(before) && before.value.holder === holder && before.value.fence === fence) return undefined
    const announced = Effect.logInfo(`new leader observed: ${holder} under fence ${fence}`)
    const onNewLeader = this.onNewLeader
    return onNewLeader === undefined
      ? announced
      : Effect.zipRight(announced, this.advise("onNewLeader", () => onNewLeader(holder, fence)))
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

  // Only a participant that has had an answer backs off: one whose first
  // polls were shed in a start-up burst would otherwise fall behind those
  // that got in first, and its election stay leaderless for up to
  // maxBackoffFactor retry periods.
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

  withdrawal(): Effect.Effect<void> {
    const { standing } = this
    if (standing === undefined) return Effect.void
    return this.call("withdraw", standing.withdraw(this.name, this.identity)).pipe(
      Effect.catchAll((error) => this.failed(error))
    )
  }

  releaseLease(fence: bigint): Effect.Effect<boolean> {
    return this.call("release", this.store.release(this.name, this.identity, fence), fence).pipe(
      Effect.as(true),
      Effect.catchAll((error) => Effect.as(this.failed(error), false))
    )
  }

  startTerm(fence: bigint, deadline: bigint): Effect.Effect<Term> {
    return Effect.gen(this, function*() {
      const scope = yield* Scope.make()
      const work = yield* Scope.make()
      const stop = yield* Deferred.make<StepDown>()
      const ended = yield* Deferred.make<void>()
      // Work that fails or dies ends the term (unless told to keep
      // leading): a leader whose work is dead would otherwise hold the
      // lease while doing nothing. Interruption is how a term ends, not a
      // failure.
      const fork = <A, E, R>(callback: Metrics.Callback, effect: Effect.Effect<A, E, R>) =>
        Effect.forkIn(
          Effect.interruptible(effect).pipe(
            Effect.onExit((exit) =>
              Exit.isSuccess(exit) || Cause.isInterruptedOnly(exit.cause)
                ? Effect.void
                : Effect.zipRight(
                  this.reported(callback, exit.cause),
                  this.config.onWorkFailure === "stepDown" ? Deferred.succeed(stop, "failed") : Effect.void
                )
            )
          ),
          work
        )
      const leadership: LeadershipShape = {
        name: this.name,
        identity: this.identity,
        fence,
        scope,
        isLeader: Effect.sync(() => this.leading()?.fence === fence),
        fork: (effect) => fork("work", effect)
      }
      const term: Term = { fence, deadline, leadership, scope, work, stop, ended }
      this.ledUnder = fence
      this.active = term
      yield* this.update((s) => ({ ...s, term: Option.some(term) }))
      yield* this.instrumentation.termStarted
      yield* Effect.logInfo(`started leading under fence ${fence}`)
      const onStartedLeading = this.onStartedLeading
      if (onStartedLeading !== undefined) {
        // Built inside the fiber, so that a synchronous throw is the work's defect.
        yield* fork("onStartedLeading", Effect.suspend(() => onStartedLeading(fence)))
      }
      return term
    })
  }

  // Ends the term at its deadline. It reads nothing but the clock and the
  // deadline the renewals leave behind, so no store call can delay it. It
  // is an alarm on the process's deadline timer (deadlines.ts), not a
  // fiber of its own: when it goes off, the term ends unless a renewal has
  // moved the deadline later since, and then the next alarm is set for the
  // deadline in force. A renewal that moves the deadline later leaves the
  // alarm be; only an earlier one moves it.
  watchdog(stop: Deferred.Deferred<StepDown>, scheduler: Scheduler.Scheduler) {
    let disarm = (): void => {}
    let alarmAt = 0n
    const check = (): void => {
      const term = Option.getOrUndefined(this.state.term)
      if (term === undefined || this.nanos() >= term.deadline) {
        Deferred.unsafeDone(stop, Exit.succeed("expired"))
        return
      }
      alarmAt = term.deadline
      disarm = Deadlines.schedule(this.clock, scheduler, alarmAt, check)
    }
    check()
    return {
      moved: (deadline: bigint): void => {
        if (deadline >= alarmAt) return
        disarm()
        check()
      },
      disarm: () => disarm()
    }
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

  endTerm(term: Term, exit: Exit.Exit<StepDown>): Effect.Effect<void> {
    return Effect.gen(this, function*() {
      const reason = Exit.getOrElse(exit, () => "shutdown" as const)
      // Not leader from here on, before anything else happens.
      yield* this.update((s) => ({ ...s, term: Option.none() }))
      yield* this.instrumentation.termEnded(reason)
      if (reason === "expired") yield* this.failed(new LeaseExpiredLocally({ name: this.name, fence: term.fence }))
      yield* Effect.logInfo(`stopped leading under fence ${term.fence} (${reason})`)
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

  lead(fence: bigint, sentAt: bigint, deadline: bigint): Effect.Effect<StepDown | "shutdown"> {
    return Effect.acquireUseRelease(
      this.startTerm(fence, deadline),
      ({ stop }) =>
        Effect.gen(this, function*() {
          const { clock, config } = this
          const guard = this.watchdog(stop, yield* Runtime.scheduler)
          const first = sentAt + Duration.unsafeToNanos(renewalDelay(config.renewInterval, yield* Random.next, true))
          // Children of this fiber rather than daemons, so TestClock sees them.
          const renewer = yield* Loop.fork(clock, (waits) => this.renewals(fence, first, stop, guard.moved, waits))
          // No fiber at all for a participant that is no candidate.
          const challenger = this.standing === undefined
            ? undefined
            : yield* Loop.fork(clock, (waits) => this.challenges(stop, waits))
          return yield* Deferred.await(stop).pipe(
            // Built when the term ends, not kept on the fiber while it lasts.
            Effect.ensuring(Effect.suspend(() => {
              guard.disarm()
              return challenger === undefined
                ? Fiber.interrupt(renewer)
                : Effect.zipRight(Fiber.interrupt(challenger), Fiber.interrupt(renewer))
            }))
          )
        }),
      (term, exit) => this.endTerm(term, exit)
    )
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
    return reason === "failed" ? { step: "poll" as const, wait: config.workFailureBackoff } : pollNow
  }

  *poll() {
    // No candidacy, no rivals: outranked stays false.
    if (this.standing !== undefined) this.outranked = (yield* this.rivals()).length > 0
    const seen = yield* this.attempt("inspect", this.store.inspect(this.name))
    const replyAt = this.nanos()
    if (Either.isLeft(seen) && seen.left._tag !== "NoLease") {
      this.stepFailed(seen.left)
      yield* this.failed(seen.left)
      return this.pause(yield* Random.next)
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

  follow(waits: Deadlines.Waits): Effect.Effect<never> {
    return Effect.gen(this, function*() {
      let step: Step = "poll"
      while (true) {
        // Resigned: out of the election until the hold-off ends (a second resign extends it).
        if (this.heldOffUntil > this.nanos()) {
          yield* this.withdrawal()
          while (this.heldOffUntil > this.nanos()) yield* waits.until(this.heldOffUntil)
        }
        // Claiming at a seen lease's expiry skips the look at the record:
        // not while a preferred candidate is alive, which may claim it.
        const next: Next = yield* (step === "claim" && !this.outranked ? this.claim() : this.poll())
        if (next.wait !== undefined) {
          const at = this.nanos() + Duration.unsafeToNanos(next.wait)
          // A claim at a lease's expiry goes at that instant; a poll may go early.
          yield* next.step === "claim" ? waits.until(at) : waits.by(at)
        }
        step = next.step
      }
    })
  }

  /** `run`: the loop on the caller's fiber, with the elector's clock and log annotations. */
  running(): Effect.Effect<never, AlreadyRunning> {
    return Effect.uninterruptibleMask((restore) =>
      Effect.withFiberRuntime<never, AlreadyRunning>((fiber) => {
        if (this.runner !== undefined) return new AlreadyRunning({ name: this.name, identity: this.identity })
        this.runner = fiber
        this.traced = !Instrumentation.isNative(Runtime.tracerOf(fiber))
        const { clock } = this
        const settings = Runtime.settingsOf(fiber)
        const { annotations, services } = settings
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
        return Effect.zipRight(
          // The loop runs with the elector's clock and log annotations.
          Runtime.set({
            // The fiber's own services when they hold the elector's clock
            // already (as they do unless the clock was provided to `make`
            // alone): a copy per elector would be a map of its own.
            services: Context.get(services, Clock.Clock) === clock
              ? services
              : Context.add(services, Clock.Clock, clock),
            annotations: HashMap.set(HashMap.set(annotations, "election", this.name), "identity", this.identity)
          }),
          // Once the loop is released (its call in flight abandoned), the
          // withdrawal's call gets a canceller of its own.
          Loop.run(clock, loop, () =>
            Effect.zipRight(
              this.withdrawal(),
              Effect.zipRight(
                Effect.sync(() => {
                  this.runner = undefined
                }),
                Runtime.set(settings)
              )
            ))
        )
      })
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

/** @internal */
export const make = (
  input: ElectorConfig
): Effect.Effect<Elector, InvalidConfig | IdentityError | DuplicateIdentity, Store.Store | Scope.Scope> =>
  Effect.gen(function*() {
    const config = yield* resolve(input)
    const { identity, name } = config
    const store = yield* Store.Store
    const { advertise, withdraw } = store
    const { candidacy } = config
    const standing = candidacy === null || advertise === undefined || withdraw === undefined
      ? undefined
      : { candidacy, advertise, withdraw }
    if (candidacy !== null && standing === undefined) {
      return yield* new InvalidConfig({
        field: input.priority === undefined ? "version" : "priority",
        reason: "needs a store with the candidate operations (advertise, withdraw)"
      })
    }
    const clock = yield* Effect.clock
    const scope = yield* Effect.scope
    const tags = yield* Instrumentation.infoTags(name, identity)
    // Claims (name, identity) in this process, joins the election's metric
    // series and adds the elector's one finalizer, in one step that nothing
    // interrupts. One finalizer, straight on the scope (`Effect.addFinalizer`
    // would keep a copy of the fiber's references for it, and a process may run
    // thousands of electors), built when it runs: it stops the elector, then
    // leaves the series and gives the claim back.
    const key = JSON.stringify([name, identity])
    const { elector, initial } = yield* Effect.uninterruptible(Effect.suspend(() => {
      if (alive.has(key)) return Effect.fail(new DuplicateIdentity({ name, identity }))
      alive.add(key)
      const { initial, instrumentation, leave } = Instrumentation.join(name, identity, tags)
      const elector = new Participant(input, config, store, standing, clock, instrumentation)
      const release = Effect.suspend(() =>
        Effect.ensuring(
          elector.shutdown(),
          Effect.sync(() => {
            leave()
            alive.delete(key)
          })
        )
      )
      return Effect.as(Scope.addFinalizer(scope, release), { elector, initial })
    }))
    yield* initial
    return elector
  })
