/**
 * An elector's advisory callbacks (onNewLeader, onStoppedLeading): they run
 * in order on a fiber of their own, never on the path that claims, renews or
 * releases the lease. The fiber is started for a callback when none runs,
 * and ends once none is left: an elector whose callbacks are not due holds
 * no fiber for them. `advise` bounds the queue at `adviceLimit`.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import type * as Clock from "effect/Clock"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import type * as Metrics from "../../Metrics.js"
import { formatDuration } from "../config/config.js"
import type * as Instrumentation from "../metrics/instrumentation.js"
import * as Loop from "../runtime/loop.js"
import * as Runtime from "../runtime/runtime.js"

/** How many advisory callbacks may wait for the ones ahead of them. */
const adviceLimit = 64

const outcome = (cause: Cause.Cause<unknown>): "failure" | "defect" | "interrupt" =>
  Option.isSome(Cause.failureOption(cause))
    ? "failure"
    : Option.isSome(Cause.dieOption(cause))
    ? "defect"
    : "interrupt"

/**
 * The advisory callbacks of one elector (see the module's note), and how
 * user code is contained: what it does is logged and counted, never thrown
 * at the election.
 *
 * @internal
 */
export class Advisory {
  private readonly queue: Array<Effect.Effect<void>> = []
  private adviser: Fiber.RuntimeFiber<void> | undefined = undefined

  constructor(
    private readonly clock: Clock.Clock,
    private readonly instrumentation: Instrumentation.Instrumentation,
    /** The elector's log annotations (election, identity). */
    private readonly annotations: Readonly<Record<string, string>>
  ) {}

  annotate<A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> {
    return Effect.annotateLogs(effect, this.annotations)
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

  advise(callback: Metrics.Callback, f: () => Effect.Effect<unknown>): Effect.Effect<void> {
    return Effect.suspend(() => {
      if (this.queue.length >= adviceLimit) {
        return Effect.zipRight(
          Effect.logWarning(`${callback} dropped: ${adviceLimit} advisory callbacks are already waiting`),
          this.instrumentation.callbackDropped
        )
      }
      this.queue.push(this.contain(callback, f))
      if (this.advising() !== undefined) return Effect.void
      // The callbacks' store calls are theirs, not those of the loop that queued them.
      return Effect.asVoid(Effect.tap(Effect.forkDaemon(Loop.detached(this.drain())), (fiber) => {
        this.adviser = fiber
      }))
    })
  }

  // At shutdown, after `run` has stopped: the callbacks still queued get at
  // most `timeout` (operationTimeout).
  settle(timeout: Duration.Duration): Effect.Effect<void> {
    const running = this.advising()
    if (running === undefined) return Effect.void
    // Interruptible, so that the race does not wait for its loser.
    return Effect.raceFirst(
      Effect.interruptible(Effect.as(Fiber.await(running), true)),
      Effect.interruptible(Effect.as(this.clock.sleep(timeout), false))
    ).pipe(
      Effect.flatMap((drained) =>
        drained ? Effect.void : Effect.zipRight(
          this.annotate(Effect.logWarning(
            `advisory callbacks still running at shutdown after operationTimeout (${
              formatDuration(timeout)
            }): interrupted`
          )),
          Fiber.interruptFork(running)
        )
      )
    )
  }

  private advising(): Fiber.RuntimeFiber<void> | undefined {
    return this.adviser !== undefined && Runtime.isRunning(this.adviser) ? this.adviser : undefined
  }

  private drain(): Effect.Effect<void> {
    return Effect.gen(this, function*() {
      let next = this.queue.shift()
      while (next !== undefined) {
        yield* next
        next = this.queue.shift()
      }
    }).pipe((effect) => this.annotate(effect), Effect.withClock(this.clock))
  }
}
