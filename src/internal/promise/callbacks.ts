/**
 * How the Promise API runs user code and its own programs: the runtime its
 * logs go through, a callback's outcome as a promise that never rejects,
 * waiting for one at most a while, and a term's work with its AbortSignal.
 * Shared by `createElector` and `createSpread`.
 *
 * @internal
 */
import type * as Cause from "effect/Cause"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Option from "effect/Option"
import type * as EffectRuntime from "effect/Runtime"
import type { PromiseLogger } from "../../promise.js"
import { formatDuration } from "../config/config.js"
import * as Logs from "./logger.js"

/**
 * The runtime everything of one Promise object runs on: its log
 * annotations, level and logger.
 *
 * @internal
 */
export const runtime = (
  annotations: Record<string, string>,
  logLevel: LogLevel.Literal | undefined,
  logger: PromiseLogger | undefined
): EffectRuntime.Runtime<never> =>
  Effect.runSync(
    Effect.runtime<never>().pipe(
      Effect.annotateLogs(annotations),
      Logger.withMinimumLogLevel(LogLevel.fromLiteral(logLevel ?? "Info")),
      Effect.provide(
        logger === undefined ? Layer.empty : Logger.replace(Logger.defaultLogger, Logs.make(logger))
      )
    )
  )

/**
 * A callback's outcome, as a promise that never rejects; a synchronous throw counts as a rejection.
 *
 * @internal
 */
export const invoke = (f: () => unknown): Promise<Exit.Exit<unknown, unknown>> =>
  Promise.resolve().then(f).then(Exit.succeed, Exit.fail)

/**
 * Waits for a callback to settle, at most `within`, and logs an overrun
 * instead of waiting on.
 *
 * @internal
 */
export const settled = (
  within: Duration.Duration,
  callback: string,
  outcome: Promise<Exit.Exit<unknown, unknown>>,
  onFailure: (cause: Cause.Cause<unknown>) => Effect.Effect<void>
): Effect.Effect<void> =>
  // Interruptible, so that the timeout also holds where it is awaited in a finalizer.
  Effect.interruptible(Effect.promise(() => outcome)).pipe(
    Effect.timeoutOption(within),
    Effect.flatMap(Option.match({
      onNone: () =>
        Effect.logWarning(
          `${callback} did not settle within leaseDuration (${formatDuration(within)}); going on without it`
        ),
      onSome: Exit.match({ onSuccess: () => Effect.void, onFailure })
    }))
  )

/**
 * A term's work, `f` called as `callback`: the signal is aborted when the
 * term's fiber ends, which is at the end of the term even when the callback
 * returned long before; the term's end then waits for it at most `within`.
 *
 * @internal
 */
export const term = (
  within: Duration.Duration,
  callback: string,
  f: (signal: AbortSignal) => void | Promise<void>
): Effect.Effect<never, unknown> =>
  Effect.suspend(() => {
    const controller = new AbortController()
    const outcome = invoke(() => f(controller.signal))
    return Effect.promise(() => outcome).pipe(
      Effect.flatten,
      Effect.zipRight(Effect.never),
      Effect.onInterrupt(() =>
        Effect.zipRight(
          Effect.sync(() => controller.abort()),
          // Rejecting once aborted is how callbacks usually stop: not an error.
          settled(within, callback, outcome, (cause) => Effect.logDebug(`${callback} ended`, cause))
        )
      ),
      Effect.ensuring(Effect.sync(() => controller.abort()))
    )
  })
