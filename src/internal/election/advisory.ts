/**
 * The elector's advisory callbacks (onNewLeader, onStoppedLeading): they run
 * in order on a fiber of their own, never on the path that claims, renews or
 * releases the lease. The fiber is started for a callback when none runs,
 * and ends once none is left: an elector whose callbacks are not due holds
 * no fiber for them. `advise` bounds the queue at `adviceLimit`.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import type * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import type { ElectorConfig, ResolvedConfig } from "../../Elector.js"
import type * as Metrics from "../../Metrics.js"
import { formatDuration } from "../config/config.js"
import type * as Instrumentation from "../metrics/instrumentation.js"
import { Published } from "./published.js"

/** How many advisory callbacks may wait for the ones ahead of them. */
const adviceLimit = 64

const outcome = (cause: Cause.Cause<unknown>): "failure" | "defect" | "interrupt" =>
  Option.isSome(Cause.failureOption(cause))
    ? "failure"
    : Option.isSome(Cause.dieOption(cause))
    ? "defect"
    : "interrupt"

/** @internal */
export class Advising extends Published {
  advisory: Array<Effect.Effect<void>> = []
  adviser: Fiber.RuntimeFiber<void> | undefined = undefined
  // The callbacks of the configuration, not the configuration itself: it
  // may hold objects of its own (Durations) the resolved config replaces.
  readonly onNewLeader: ElectorConfig["onNewLeader"]
  readonly onStartedLeading: ElectorConfig["onStartedLeading"]
  readonly onStoppedLeading: ElectorConfig["onStoppedLeading"]

  constructor(
    input: ElectorConfig,
    config: ResolvedConfig,
    clock: Clock.Clock,
    instrumentation: Instrumentation.Instrumentation
  ) {
    super(config, clock, instrumentation)
    this.onNewLeader = input.onNewLeader
    this.onStartedLeading = input.onStartedLeading
    this.onStoppedLeading = input.onStoppedLeading
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
}
