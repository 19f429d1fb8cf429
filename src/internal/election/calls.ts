/**
 * An elector's store calls: how each is made (on the caller's fiber, or
 * apart, each with its `Store.CallContext`), given control back at
 * operationTimeout, and settled into an outcome the loop's steps look at;
 * and the accounting of fatal errors (logged once, then at most once a
 * minute). Recording what an answer showed is the participant's.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as FiberId from "effect/FiberId"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as EffectRuntime from "effect/Runtime"
import type { ResolvedConfig } from "../../Elector.js"
import * as Store from "../../Store.js"
import { type Operation, StoreError } from "../../Store.js"
import { formatDuration } from "../config/config.js"
import type * as Instrumentation from "../metrics/instrumentation.js"
import * as Deadlines from "../runtime/deadlines.js"
import * as Runtime from "../runtime/runtime.js"
import { stackless } from "../runtime/stackless.js"
import type { Published } from "./published.js"

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

/** The context of a call made apart: it names no caller, whose loop it is not on. */
class ApartContext implements Store.CallContextShape {
  readonly caller = undefined
  constructor(private readonly published: Published) {}
  get joining(): boolean {
    return !this.published.observed()
  }
}

/**
 * The store calls of one elector (see the module's note).
 *
 * @internal
 */
export class StoreCalls {
  /** Nanoseconds: every store call gives control back after this long. */
  private readonly timeout: bigint
  /**
   * Whether store calls run on the caller's fiber: the store promises to
   * answer within operationTimeout, and to give control back at once when
   * interrupted (`answersWithin`, the SQL stores).
   */
  private readonly onCaller: boolean
  // Whether `run`'s fiber has a tracer that reads spans (see
  // instrumentation.ts): read once when it starts, not at every call.
  private traced = false
  /** Operations currently failing with fatal errors; made for the first. */
  private fatal: Set<Operation> | undefined = undefined
  /** When a fatal error was last logged, and how many were not since. */
  private fatalLoggedAt = 0n
  private fatalUnlogged = 0
  /** The context of every call made apart: whether the participant is joining, and no caller. */
  private readonly apartContext: Store.CallContextShape

  constructor(
    store: Store.StoreShape,
    private readonly config: ResolvedConfig,
    private readonly instrumentation: Instrumentation.Instrumentation,
    /** Told of every answer (it clears the operation's error, settles readiness). */
    private readonly published: Published
  ) {
    this.timeout = Duration.unsafeToNanos(config.operationTimeout)
    const promised = store.answersWithin
    this.onCaller = promised !== undefined && Duration.lessThanOrEqualTo(promised, config.operationTimeout)
    this.apartContext = new ApartContext(published)
  }

  /** Whether calls are traced as spans: set when `run` starts, from its fiber's tracer. */
  trace(traced: boolean): void {
    this.traced = traced
  }

  // One step settles the call, into an Either, as `Effect.either` would
  // give it (the loop's steps look at every outcome): an answer ("no
  // record" is one too) is counted; an error of the store's is the caller's
  // to report; anything else the store's effect ends with on the caller's
  // fiber (a defect, an interruption of its own) is a fatal StoreError, as
  // it is when the call runs in a fiber of its own.
  //
  //
  // The call's context (`Store.CallContext`) is the loop's that makes it,
  // on the loop's fiber (see loop.ts).
  attempt<A, E>(
    operation: Operation,
    effect: Effect.Effect<A, E>,
    fence?: bigint
  ): Effect.Effect<Either.Either<A, E | StoreError>> {
    const made = this.onCaller ? effect : this.apart(operation, effect)
    const settled = Effect.matchCauseEffect(made, {
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
      const now = this.published.nanos()
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

  // Every store call gives control back at operationTimeout, whatever the
  // store does with the interruption. A store that promises to answer
  // within that time, and to give control back at once when interrupted
  // (`answersWithin`: the SQL stores), runs on the caller's fiber.
  // Any other store's attempt runs in a fiber of its own, started on the
  // caller's runtime (its clock, tracer, span and log annotations, and the
  // call's context) but never a child of the caller (a fiber waits for its
  // children when it exits, so a driver that takes its time to cancel would
  // hold up the step-down that interrupts the caller). The attempt starts at
  // once, on the caller's stack, up to its first asynchronous step. The
  // caller waits in `Effect.async`, resumed by the attempt's end or by the
  // timer, whichever comes first; the attempt is then interrupted without
  // waiting for it. The race is settled by resuming the waiter rather than
  // by interrupting it, so it holds in uninterruptible regions too (the
  // release at step-down). Whatever the store's effect ends with that is
  // not one of its errors (a defect, an interruption of its own) becomes a
  // fatal StoreError. The attempt is interrupted when it is given up, so its
  // context names no caller: it keeps its canceller.
  private apart<A, E>(operation: Operation, effect: Effect.Effect<A, E>): Effect.Effect<A, E | StoreError> {
    const { config, published: { clock } } = this
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
          if (!ended) Runtime.interruptNow(attempt)
          resume(outcome)
        }
        // Interruptible even when the caller is not (the release at step-down).
        const attempt = Runtime.forkOn(
          EffectRuntime.provideService(runtime, Store.CallContext, this.apartContext),
          Effect.interruptible(effect)
        )
        Runtime.observe(attempt, (exit) =>
          settle(
            Exit.isSuccess(exit) ? exit : Either.match(Cause.failureOrCause(exit.cause), {
              onLeft: (error) => Exit.fail(error),
              onRight: (other) => Exit.fail(storeBroke(operation, other))
            }),
            true
          ))
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

  // Called at every answer, as it comes; what it gives back is what remains
  // to run, if anything: the end of a fatal incident, logged.
  private answered(operation: Operation): Effect.Effect<void> | undefined {
    this.published.answered(operation)
    const fatal = this.fatal
    if (fatal === undefined || !fatal.delete(operation) || fatal.size > 0) return undefined
    return Effect.zipRight(
      this.instrumentation.storeFatal(false),
      Effect.logError(`store calls succeed again (${operation}): no longer failing fatally`)
    )
  }
}
