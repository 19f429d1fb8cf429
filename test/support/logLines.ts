import { Effect, FiberRef, HashSet, Logger, LogLevel } from "effect"

/**
 * Every line logged at `minimum` or above, as "LEVEL message", while the
 * scope lasts, by this fiber and the fibers it forks from now on (the
 * default logger still prints them).
 */
export const logLines = (minimum: LogLevel.LogLevel) =>
  Effect.gen(function*() {
    const lines: Array<string> = []
    const logger = Logger.make(({ logLevel, message }) => {
      if (LogLevel.greaterThanEqual(logLevel, minimum)) {
        lines.push(`${logLevel.label} ${Array.isArray(message) ? message.join(" ") : String(message)}`)
      }
    })
    yield* Effect.locallyScopedWith(FiberRef.currentLoggers, HashSet.add(logger))
    return lines
  })
