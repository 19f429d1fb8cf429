import * as Cause from "effect/Cause"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as Queue from "effect/Queue"
import * as Random from "effect/Random"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as SubscriptionRef from "effect/SubscriptionRef"
import type { ElectorConfig, ElectorShape, Status } from "../Elector.js"
import {
  AlreadyRunning,
  DuplicateIdentity,
  type IdentityError,
  InvalidConfig,
  type LastError,
  LeaseExpiredLocally
} from "../ElectorError.js"
import * as Lease from "../Lease.js"
import type { LeadershipShape } from "../Leadership.js"
import type * as Metrics from "../Metrics.js"
import * as Store from "../Store.js"
import { type Candidate, type Operation, StoreError } from "../Store.js"
import { outranks } from "./candidacy.js"
import { formatDuration, resolve } from "./config.js"
import * as Instrumentation from "./instrumentation.js"
import { jittered, localDeadline } from "./timing.js"

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

/** How many advisory callbacks may wait for the ones ahead of them. */
const adviceLimit = 64

const initial: State = {
  term: Option.none(),
  leader: Option.none(),
  observedAt: Option.none(),
  lastError: Option.none()
}

/** A store effect that ended without one of its own errors: a defect, or an interruption. */
const storeBroke = (operation: Operation, cause: Cause.Cause<never>): StoreError =>
  Option.match(Cause.dieOption(cause), {
    onSome: (defect) =>
      new StoreError({ operation, retryable: false, reason: `store defect: ${String(defect)}`, cause: defect }),
    onNone: () =>
      new StoreError({ operation, retryable: false, reason: "the store call was interrupted", cause: Cause.squash(cause) })
  })

const outcome = (cause: Cause.Cause<unknown>): "failure" | "defect" | "interrupt" =>
  Option.isSome(Cause.failureOption(cause))
    ? "failure"
    : Option.isSome(Cause.dieOption(cause))
    ? "defect"
    : "interrupt"

// The (name, identity) pairs of the electors alive in this process. Kept on
// globalThis so that two copies of this module (say, one bundled by a
// dependency) still share it.
const registryKey = Symbol.for("effect-leaderelection/electors")
const alive: Set<string> = ((globalThis as Record<symbol, Set<string> | undefined>)[registryKey] ??= new Set())

/** Claims (name, identity) in this process for as long as the scope lives. */
const register = (name: string, identity: string) => {
  const key = JSON.stringify([name, identity])
  return Effect.acquireRelease(
    Effect.suspend(() =>
      alive.has(key) ? Effect.fail(new DuplicateIdentity({ name, identity })) : Effect.sync(() => alive.add(key))
    ),
    () => Effect.sync(() => alive.delete(key))
  )
}

/** @internal */
export const make = (
  input: ElectorConfig
): Effect.Effect<ElectorShape, InvalidConfig | IdentityError | DuplicateIdentity, Store.Store | Scope.Scope> =>
  Effect.gen(function*() {
    const config = yield* resolve(input)
    const { identity, leaseDuration, name, payload, safetyMargin } = config
    yield* register(name, identity)
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
    const state = yield* SubscriptionRef.make(initial)
    const nowNanos = clock.currentTimeNanos
    const instrumentation = yield* Instrumentation.make(name, identity)
    const annotate = Effect.annotateLogs({ election: name, identity })

    // User code is untrusted: whatever it does (fail, die, throw while
    // building its effect, interrupt itself) is logged with its cause and
    // counted, and the elector carries on.
    const reported = (callback: Metrics.Callback, cause: Cause.Cause<unknown>) =>
      Effect.zipRight(
        Effect.logError(`${callback} failed`, cause),
        instrumentation.callbackFailed(callback, outcome(cause))
      )
    const contain = (callback: Metrics.Callback, f: () => Effect.Effect<unknown, unknown>): Effect.Effect<void> =>
      Effect.suspend(f).pipe(Effect.catchAllCause((cause) => reported(callback, cause)), Effect.asVoid)

    // Advisory callbacks run in order on a fiber of their own, never on the
    // path that claims, renews or releases the lease. The queue is unbounded
    // so that shutdown's marker always fits; `advise` bounds it.
    const advisory = yield* Queue.unbounded<Effect.Effect<void>>()
    const adviser = yield* Effect.forever(Effect.flatten(Queue.take(advisory))).pipe(
      annotate,
      Effect.withClock(clock),
      Effect.forkDaemon
    )
    const advise = (callback: Metrics.Callback, f: () => Effect.Effect<unknown>) =>
      Effect.flatMap(Queue.size(advisory), (waiting) =>
        waiting >= adviceLimit
          ? Effect.zipRight(
            Effect.logWarning(`${callback} dropped: ${adviceLimit} advisory callbacks are already waiting`),
            instrumentation.callbackDropped
          )
          : Queue.offer(advisory, contain(callback, f)))
    // At shutdown, after `run` has stopped (finalizers run in reverse order):
    // the callbacks already queued get at most operationTimeout.
    yield* Effect.addFinalizer(() =>
      Effect.gen(function*() {
        const drained = yield* Deferred.make<boolean>()
        yield* Queue.offer(advisory, Deferred.succeed(drained, true))
        const timer = yield* clock.sleep(config.operationTimeout).pipe(
          Effect.zipRight(Deferred.succeed(drained, false)),
          Effect.interruptible,
          Effect.forkDaemon
        )
        if (!(yield* Deferred.await(drained))) {
          yield* Effect.logWarning(
            `advisory callbacks still running at shutdown after operationTimeout (${
              formatDuration(config.operationTimeout)
            }): interrupted`
          ).pipe(annotate)
        }
        yield* Fiber.interruptFork(timer)
        yield* Fiber.interruptFork(adviser)
      })
    )

    const live = (s: State, now: bigint): Option.Option<Term> => Option.filter(s.term, (term) => now < term.deadline)
    const current = Effect.zipWith(SubscriptionRef.get(state), nowNanos, live)

    const snapshot = (s: State): Effect.Effect<Status> =>
      Effect.gen(function*() {
        const now = yield* nowNanos
        const wall = yield* clock.currentTimeMillis
        const term = live(s, now)
        return {
          isLeader: Option.isSome(term),
          fence: Option.map(term, (t) => t.fence),
          identity,
          leader: Option.map(s.leader, (o) => o.holder),
          leaderFence: Option.map(s.leader, (o) => o.fence),
          leaderPayload: Option.flatMap(s.leader, (o) => Option.fromNullable(o.payload)),
          observedAt: Option.map(s.observedAt, (ms) => new Date(ms)),
          validUntil: Option.map(term, (t) => new Date(wall + Number((t.deadline - now) / 1_000_000n))),
          lastError: s.lastError
        }
      })

    // Every store call gives control back at operationTimeout, whatever the
    // store does with the interruption: the attempt and its timer run as
    // daemon fibers, never children of the caller (a fiber waits for its
    // children when it exits, so a driver that takes its time to cancel would
    // hold up the step-down that interrupts the caller). The caller waits on a
    // Deferred and, on exit, interrupts both in the background. The race is
    // settled through the Deferred rather than by interrupting the waiter, so
    // it holds in uninterruptible regions too (the release at step-down).
    // Whatever the store's effect ends with that is not one of its errors
    // (a defect, an interruption) becomes a fatal StoreError.
    const call = <A, E>(
      operation: Operation,
      effect: Effect.Effect<A, E>,
      fence?: bigint
    ): Effect.Effect<A, E | StoreError> =>
      Effect.uninterruptibleMask((restore) =>
        Effect.gen(function*() {
          const result = yield* Deferred.make<A, E | StoreError>()
          const attempt = yield* Effect.catchAllCause(effect, (cause) =>
            Either.match(Cause.failureOrCause(cause), {
              onLeft: (error): Effect.Effect<never, E | StoreError> => Effect.fail(error),
              onRight: (other) => Effect.fail(storeBroke(operation, other))
            })).pipe(Effect.intoDeferred(result), Effect.interruptible, Effect.forkDaemon)
          const timer = yield* clock.sleep(config.operationTimeout).pipe(
            Effect.zipRight(Deferred.fail(
              result,
              new StoreError({
                operation,
                retryable: true,
                reason: `no answer within ${formatDuration(config.operationTimeout)}`,
                cause: undefined
              })
            )),
            Effect.interruptible,
            Effect.forkDaemon
          )
          return yield* restore(Deferred.await(result)).pipe(
            Effect.ensuring(Effect.zipRight(Fiber.interruptFork(attempt), Fiber.interruptFork(timer))),
            Effect.tapBoth({
              onSuccess: () => answered(operation),
              // "No record" is an answer too; the other errors are the caller's to report.
              onFailure: (error) => Predicate.isTagged(error, "NoLease") ? answered(operation) : Effect.void
            })
          )
        })
      ).pipe(instrumentation.span(operation, fence))

    // Completed by the first answer of the store: failed with a fatal error
    // under failFast, succeeded otherwise.
    const ready = yield* Deferred.make<void, StoreError>()

    // Operations currently failing with fatal errors, and when that was last logged.
    const fatal = new Set<Operation>()
    let fatalLoggedAt = 0n
    let fatalUnlogged = 0
    const repeatFatalAfter = Duration.unsafeToNanos(Duration.minutes(1))

    // A fatal error (bad credentials, missing table, no privilege) needs an
    // operator, and retrying will not fix it: log it at ERROR, but once, then
    // at most once a minute, not once per poll. Its end is logged at ERROR
    // too, so that an error-only log pipeline shows the incident closed.
    const fatalFailed = (error: StoreError) =>
      Effect.gen(function*() {
        const now = yield* nowNanos
        const first = fatal.size === 0
        fatal.add(error.operation)
        yield* instrumentation.storeFatal(true)
        if (first) {
          fatalLoggedAt = now
          fatalUnlogged = 0
          return yield* Effect.logError(
            `${error.message}; the store needs an operator (retrying; repeats logged at most once a minute)`
          )
        }
        if (now - fatalLoggedAt < repeatFatalAfter) {
          fatalUnlogged++
          return
        }
        yield* Effect.logError(`${error.message} (still failing; ${fatalUnlogged} more since last logged)`)
        fatalLoggedAt = now
        fatalUnlogged = 0
      })

    const answered = (operation: Operation) =>
      Effect.gen(function*() {
        // Only a success of the operation that failed clears its error; a
        // lost or expired lease is cleared by a lease this participant holds.
        yield* SubscriptionRef.update(state, (s) => {
          const clears = Option.exists(s.lastError, (error) =>
            error._tag === "StoreError"
              ? error.operation === operation
              : operation === "renew" || operation === "acquire")
          return clears ? { ...s, lastError: Option.none() } : s
        })
        yield* Deferred.succeed(ready, undefined)
        if (!fatal.delete(operation) || fatal.size > 0) return
        yield* instrumentation.storeFatal(false)
        yield* Effect.logError(`store calls succeed again (${operation}): no longer failing fatally`)
      })

    const failed = (error: LastError) =>
      Effect.gen(function*() {
        yield* SubscriptionRef.update(state, (s) => ({ ...s, lastError: Option.some(error) }))
        if (error._tag === "LeaseExpiredLocally") return yield* Effect.logWarning(error.message)
        // Any answer of the store, an error included, makes the elector ready.
        if (config.failFast && Store.isFatal(error)) yield* Deferred.fail(ready, error)
        else yield* Deferred.succeed(ready, undefined)
        if (error._tag === "LeaseLost") return yield* Effect.logWarning(error.message)
        yield* instrumentation.storeFailed(error)
        if (error.retryable) return yield* Effect.logWarning(error.message)
        yield* fatalFailed(error)
      })

    const observe = (lease: Lease.Lease | undefined) =>
      Effect.gen(function*() {
        const wall = yield* clock.currentTimeMillis
        const seen: Option.Option<Observed> = lease === undefined || Lease.isExpired(lease)
          ? Option.none()
          : Option.some({ holder: lease.holder, fence: lease.fence, payload: lease.payload })
        const before = yield* SubscriptionRef.modify(state, (s) => [s.leader, {
          ...s,
          leader: seen,
          observedAt: Option.some(wall)
        }])
        if (Option.isNone(seen)) return
        const { fence, holder } = seen.value
        if (Option.isSome(before) && before.value.holder === holder && before.value.fence === fence) return
        yield* Effect.logInfo(`new leader observed: ${holder} under fence ${fence}`)
        const onNewLeader = input.onNewLeader
        if (onNewLeader !== undefined) yield* advise("onNewLeader", () => onNewLeader(holder, fence))
      })

    const pause = Effect.flatMap(Random.next, (u) => clock.sleep(jittered(config.retryPeriod, u)))

    // Advertises this participant (when it is a candidate) and returns the
    // live candidates it prefers to itself; none when the call fails.
    const rivals: Effect.Effect<ReadonlyArray<Candidate>> = standing === undefined
      ? Effect.succeed([])
      : call("advertise", standing.advertise(name, identity, standing.candidacy, config.candidateTtl)).pipe(
        Effect.map((candidates) =>
          candidates.filter((c) => c.identity !== identity && outranks(c, standing.candidacy, config.versionPolicy))
        ),
        Effect.catchAll((error) => Effect.as(failed(error), []))
      )
    const withdrawal: Effect.Effect<void> = standing === undefined
      ? Effect.void
      : call("withdraw", standing.withdraw(name, identity)).pipe(Effect.catchAll(failed))

    const releaseLease = (fence: bigint) =>
      call("release", store.release(name, identity, fence), fence).pipe(
        Effect.as(true),
        Effect.catchAll((error) => Effect.as(failed(error), false))
      )

    // The highest fence any term of this participant has used.
    let ledUnder = -1n
    // The term that has started and not yet fully ended.
    let active: Term | undefined
    // Local monotonic nanoseconds until which this participant stays out of the election.
    let heldOffUntil = 0n

    const startTerm = (fence: bigint, deadline: bigint) =>
      Effect.gen(function*() {
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
                    reported(callback, exit.cause),
                    config.onWorkFailure === "stepDown" ? Deferred.succeed(stop, "failed") : Effect.void
                  )
              )
            ),
            work
          )
        const leadership: LeadershipShape = {
          name,
          identity,
          fence,
          scope,
          isLeader: Effect.map(current, Option.exists((term) => term.fence === fence)),
          fork: (effect) => fork("work", effect)
        }
        const term: Term = { fence, deadline, leadership, scope, work, stop, ended }
        ledUnder = fence
        active = term
        yield* SubscriptionRef.update(state, (s) => ({ ...s, term: Option.some(term) }))
        yield* instrumentation.termStarted
        yield* Effect.logInfo(`started leading under fence ${fence}`)
        const onStartedLeading = input.onStartedLeading
        if (onStartedLeading !== undefined) {
          // Built inside the fiber, so that a synchronous throw is the work's defect.
          yield* fork("onStartedLeading", Effect.suspend(() => onStartedLeading(fence)))
        }
        return term
      })

    // Ends the term at its deadline. It reads nothing but the clock and the
    // deadline the renewals leave behind, so no store call can delay it.
    // Loops are plain `while` loops in one generator: a generator that
    // re-enters itself (`return yield* self()`) keeps one frame per
    // iteration alive, for as long as the term lasts.
    const watchdog = (stop: Deferred.Deferred<StepDown>, wake: Queue.Dequeue<void>): Effect.Effect<void> =>
      Effect.gen(function*() {
        while (true) {
          const term = Option.getOrUndefined((yield* SubscriptionRef.get(state)).term)
          const now = yield* nowNanos
          if (term === undefined || now >= term.deadline) return yield* Deferred.succeed(stop, "expired")
          yield* Effect.raceFirst(clock.sleep(Duration.nanos(term.deadline - now)), Queue.take(wake))
        }
      })

    const renewals = (
      fence: bigint,
      firstAt: bigint,
      stop: Deferred.Deferred<StepDown>,
      wake: Queue.Enqueue<void>
    ): Effect.Effect<void> =>
      Effect.gen(function*() {
        let nextAt = firstAt
        while (true) {
          const wait = nextAt - (yield* nowNanos)
          if (wait > 0n) yield* clock.sleep(Duration.nanos(wait))
          const sentAt = yield* nowNanos
          const result = yield* Effect.either(
            call("renew", store.renew(name, identity, fence, leaseDuration, payload), fence)
          )
          if (Either.isLeft(result)) {
            yield* failed(result.left)
            if (result.left._tag === "LeaseLost") return yield* Deferred.succeed(stop, "lost")
            nextAt = (yield* nowNanos) + Duration.unsafeToNanos(config.retryDelay)
            continue
          }
          yield* instrumentation.renewed(Duration.nanos((yield* nowNanos) - sentAt))
          const deadline = localDeadline(sentAt, result.right, leaseDuration, safetyMargin)
          yield* SubscriptionRef.update(state, (s) => ({ ...s, term: Option.map(s.term, (t) => ({ ...t, deadline })) }))
          yield* Queue.offer(wake, undefined)
          yield* observe(result.right)
          nextAt = sentAt + Duration.unsafeToNanos(config.renewInterval)
        }
      })

    const endTerm = (term: Term, exit: Exit.Exit<StepDown>) =>
      Effect.gen(function*() {
        const reason = Exit.getOrElse(exit, () => "shutdown" as const)
        // Not leader from here on, before anything else happens.
        yield* SubscriptionRef.update(state, (s) => ({ ...s, term: Option.none() }))
        yield* instrumentation.termEnded(reason)
        if (reason === "expired") yield* failed(new LeaseExpiredLocally({ name, fence: term.fence }))
        yield* Effect.logInfo(`stopped leading under fence ${term.fence} (${reason})`)
        yield* Scope.close(term.work, Exit.void)
        // A finalizer that fails has still run, as have the others: the
        // release goes ahead.
        yield* contain("finalizer", () => Scope.close(term.scope, Exit.void))
        if (reason !== "lost" && !(reason === "shutdown" && config.disableRelease)) yield* releaseLease(term.fence)
        active = undefined
        yield* Deferred.succeed(term.ended, undefined)
        const onStoppedLeading = input.onStoppedLeading
        if (onStoppedLeading !== undefined) yield* advise("onStoppedLeading", () => onStoppedLeading)
      })

    // A preferred candidate that has been alive for preemptAfter takes over:
    // the term ends as a resignation does, without the hold-off.
    const challenges = (stop: Deferred.Deferred<StepDown>): Effect.Effect<void> =>
      Effect.gen(function*() {
        while (true) {
          yield* pause
          const due = (yield* rivals).find((c) => Duration.greaterThanOrEqualTo(c.aliveFor, config.preemptAfter))
          if (due !== undefined) {
            yield* Effect.logInfo(`handing over to ${due.identity}, preferred and alive for ${formatDuration(due.aliveFor)}`)
            return yield* Deferred.succeed(stop, "preempted")
          }
        }
      })

    const lead = (fence: bigint, sentAt: bigint, deadline: bigint) =>
      Effect.acquireUseRelease(
        startTerm(fence, deadline),
        ({ stop }) =>
          Effect.gen(function*() {
            const wake = yield* Queue.sliding<void>(1)
            // Children of this fiber rather than daemons, so TestClock sees them.
            const guard = yield* Effect.fork(watchdog(stop, wake))
            const renewer = yield* Effect.fork(
              renewals(fence, sentAt + Duration.unsafeToNanos(config.renewInterval), stop, wake)
            )
            const challenger = yield* Effect.fork(standing === undefined ? Effect.void : challenges(stop))
            return yield* Deferred.await(stop).pipe(
              Effect.ensuring(
                Effect.zipRight(Fiber.interrupt(challenger), Effect.zipRight(Fiber.interrupt(renewer), Fiber.interrupt(guard)))
              )
            )
          }),
        endTerm
      )

    const claim = Effect.gen(function*() {
      const sentAt = yield* nowNanos
      const result = yield* Effect.either(call("acquire", store.acquire(name, identity, leaseDuration, payload)))
      if (Either.isLeft(result)) {
        yield* failed(result.left)
        return yield* pause
      }
      const lease = result.right
      yield* observe(lease)
      if (!Lease.isHeldBy(lease, identity)) return yield* pause
      // A fence a term of ours already used: the database clock stepped back
      // and revived a lease this participant had given up, or let expire.
      // Leading under it again would let the old term's late writes pass for
      // the new term's, so give it up: the next claim takes a fresh fence.
      if (lease.fence <= ledUnder) {
        yield* releaseLease(lease.fence)
        return yield* pause
      }
      // Won, but resigned while the claim was in flight.
      if ((yield* nowNanos) < heldOffUntil) {
        yield* releaseLease(lease.fence)
        return
      }
      const deadline = localDeadline(sentAt, lease, leaseDuration, safetyMargin)
      // Won, but with too little time left to prove it: the next poll gives it up.
      if (deadline <= (yield* nowNanos)) return yield* pause
      const reason = yield* lead(lease.fence, sentAt, deadline)
      // The term's work failed: let a healthy participant take over.
      if (reason === "failed") yield* clock.sleep(config.workFailureBackoff)
    })

    const poll = Effect.gen(function*() {
      // Resigned: out of the election until the hold-off ends (a second resign extends it).
      let wait = heldOffUntil - (yield* nowNanos)
      if (wait > 0n) yield* withdrawal
      while (wait > 0n) {
        yield* clock.sleep(Duration.nanos(wait))
        wait = heldOffUntil - (yield* nowNanos)
      }
      const preferred = yield* rivals
      const seen = yield* Effect.either(call("inspect", store.inspect(name)))
      if (Either.isLeft(seen) && seen.left._tag !== "NoLease") {
        yield* failed(seen.left)
        return yield* pause
      }
      const lease = Either.getOrUndefined(seen)
      yield* observe(lease)
      if (lease !== undefined && Lease.isHeldBy(lease, identity)) {
        // A valid lease of ours that no term of ours is using: an earlier term
        // that stepped down locally, or an acquire whose reply was lost. Give
        // it up, so that the next term is told apart by a fresh fence.
        if (!(yield* releaseLease(lease.fence))) return yield* pause
      } else if (lease !== undefined && !Lease.isExpired(lease)) {
        return yield* pause
      }
      // Free, and a preferred candidate is alive: leave the lease to it, for
      // as long as a live candidate needs to claim it (it may have died since
      // its last advertisement).
      if (
        lease !== undefined && preferred.length > 0 &&
        lease.now.getTime() - lease.expiresAt.getTime() < Duration.toMillis(config.candidateTtl)
      ) return yield* pause
      yield* claim
    })

    // The fiber running `run`, so that closing the elector's scope stops it.
    let runner: Fiber.RuntimeFiber<never, AlreadyRunning> | undefined
    yield* Effect.addFinalizer(() => runner === undefined ? Effect.void : Fiber.interrupt(runner))

    const run: Effect.Effect<never, AlreadyRunning> = Effect.withFiberRuntime<never, AlreadyRunning>((fiber) => {
      if (runner !== undefined) return new AlreadyRunning({ name, identity })
      runner = fiber
      return Effect.forever(poll).pipe(
        // Nothing the store or user code does ends the loop; should anything
        // else, say so loudly rather than linger as a silent non-participant.
        // (Interrupting `run` from outside skips this: that is how it stops.)
        Effect.tapErrorCause((cause) =>
          Effect.zipRight(Effect.logFatal("the elector stopped", cause), Deferred.failCause(ready, cause))
        ),
        Effect.ensuring(Effect.zipRight(
          withdrawal,
          Effect.sync(() => {
            runner = undefined
          })
        )),
        Effect.withClock(clock),
        annotate
      )
    })

    // changes starts with the current state, so a term in progress is returned at once.
    const leadership = state.changes.pipe(
      Stream.filterMap((s) => Option.map(s.term, (term) => term.leadership)),
      Stream.runHead,
      Effect.flatten,
      Effect.orDie
    )

    const resign = Effect.gen(function*() {
      heldOffUntil = (yield* nowNanos) + Duration.unsafeToNanos(config.resignHoldOff)
      const term = active
      if (term === undefined) return
      yield* Deferred.succeed(term.stop, "resigned")
      yield* Deferred.await(term.ended)
    })

    return {
      config,
      resign,
      isLeader: Effect.map(current, Option.isSome),
      fence: Effect.map(current, Option.map((term) => term.fence)),
      status: Effect.flatMap(SubscriptionRef.get(state), snapshot),
      changes: Stream.mapEffect(state.changes, snapshot),
      run,
      ready: Deferred.await(ready),
      leadership
    }
  })
