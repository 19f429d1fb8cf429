/**
 * The elector's store calls: each gives control back at operationTimeout
 * and settles into an outcome the loop's steps look at, and each answer or
 * error is recorded (the last error, readiness, fatal errors logged once).
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import type * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as FiberId from "effect/FiberId"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as EffectRuntime from "effect/Runtime"
import type { ElectorConfig, ResolvedConfig } from "../../Elector.js"
import type { LastError } from "../../ElectorError.js"
import * as Lease from "../../Lease.js"
import * as Store from "../../Store.js"
import { type Operation, StoreError } from "../../Store.js"
import { formatDuration } from "../config/config.js"
import type * as Instrumentation from "../metrics/instrumentation.js"
import * as LogFields from "../metrics/logFields.js"
import * as Unanswered from "../metrics/unanswered.js"
import * as Deadlines from "../runtime/deadlines.js"
import * as Runtime from "../runtime/runtime.js"
import { stackless } from "../runtime/stackless.js"
import { Advising } from "./advisory.js"
import type { Observed } from "./published.js"

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

/** How long a fatal error stays quiet in the log once logged. */
const repeatFatalAfter = Duration.unsafeToNanos(Duration.minutes(1))

/** @internal */
export class Calling extends Advising {
  /** Nanoseconds: every store call gives control back after this long. */
  readonly timeout: bigint
  /**
   * Whether store calls run on the caller's fiber: the store promises to
   * answer within operationTimeout, and to give control back at once when
   * interrupted (`answersWithin`, the SQL stores).
   */
  readonly onCaller: boolean
  // Whether `run`'s fiber has a tracer that reads spans (see
  // instrumentation.ts): read once when it starts, not at every call.
  traced = false
  /** Operations currently failing with fatal errors; made for the first. */
  fatal: Set<Operation> | undefined = undefined
  /** When a fatal error was last logged, and how many were not since. */
  fatalLoggedAt = 0n
  fatalUnlogged = 0

  constructor(
    input: ElectorConfig,
    config: ResolvedConfig,
    clock: Clock.Clock,
    instrumentation: Instrumentation.Instrumentation,
    readonly store: Store.StoreShape
  ) {
    super(input, config, clock, instrumentation)
    this.timeout = Duration.unsafeToNanos(config.operationTimeout)
    const promised = store.answersWithin
    this.onCaller = promised !== undefined && Duration.lessThanOrEqualTo(promised, config.operationTimeout)
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

  // A fatal error (bad credentials, missing table, no privilege) needs an
  // operator, and retrying will not fix it: log it at ERROR, but once, then
  // at most once a minute, not once per poll. Its end is logged at ERROR
  // too, so that an error-only log pipeline shows the incident closed. An
  // error `reported` elsewhere (a failed `ready`) is not logged a first time.
  fatalFailed(error: StoreError, reported: boolean): Effect.Effect<void> {
    return Effect.gen(this, function*() {
      const now = this.nanos()
      const fatal = this.fatal ??= new Set()
      const first = fatal.size === 0
      fatal.add(error.operation)
      yield* this.instrumentation.storeFatal(true)
      if (first) {
        this.fatalLoggedAt = now
        this.fatalUnlogged = 0
        if (reported) return
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

  // Its logs carry the error's tag, retryability and fence as annotations,
  // which a structured logger (the Promise API's) gets as fields.
  failed(error: LastError): Effect.Effect<void> {
    return Effect.annotateLogs(
      Effect.gen(this, function*() {
        yield* this.update((s) => ({ ...s, lastError: Option.some(error) }))
        if (error._tag === "LeaseExpiredLocally") return yield* Effect.logWarning(error.message)
        // Any answer of the store, an error included, makes the elector ready.
        // Under failFast a fatal first answer fails `ready` instead, and
        // what awaits it (a start, a layer's build) reports it.
        const failsReady = this.readiness === undefined && this.config.failFast && Store.isFatal(error)
        this.settleReady(failsReady ? Exit.fail(error) : Exit.void)
        if (error._tag === "LeaseLost") return yield* Effect.logWarning(error.message)
        yield* this.instrumentation.storeFailed(error)
        if (error.retryable) {
          return yield* Unanswered.warn(this.store, this.state.observedAt, this.nanos(), error.message)
        }
        yield* this.fatalFailed(error, failsReady)
      }),
      LogFields.ofError(error)
    )
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
}
