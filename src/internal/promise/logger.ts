/**
 * The Promise API's `logger` option as an Effect `Logger`: each record is one
 * call of the logger's method for its level, with the message and the
 * record's fields (its log annotations, and what its cause says of the error).
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import type * as HashMap from "effect/HashMap"
import * as Inspectable from "effect/Inspectable"
import * as Logger from "effect/Logger"
import type * as LogLevel from "effect/LogLevel"
import type { PromiseLogger } from "../../promise.js"
import * as LogFields from "../metrics/logFields.js"

// A method as the elector calls it: the fields and the message in the order
// the logger takes them, which PromiseLogger's type (pino's order) cannot say.
type Method = (first: unknown, second: unknown) => unknown

const methodOf = (logger: PromiseLogger, level: LogLevel.LogLevel): Method => {
  switch (level._tag) {
    case "Fatal":
      return (logger.fatal ?? logger.error) as Method
    case "Error":
      return logger.error as Method
    case "Warning":
      return logger.warn as Method
    case "Info":
      return logger.info as Method
    default:
      // console.trace would print a stack: Trace goes with Debug.
      return logger.debug as Method
  }
}

const textOf = (message: unknown): string =>
  Array.isArray(message) ? message.map((part) => Inspectable.toStringUnknown(part, 0)).join(" ") : String(message)

// The record's fields: what its cause says of the error (tag, retryability,
// fence), then its annotations, then the cause itself, pretty-printed.
const fieldsOf = (
  annotations: HashMap.HashMap<string, unknown>,
  cause: Cause.Cause<unknown>
): Record<string, unknown> => {
  const fields: Record<string, unknown> = Cause.isEmpty(cause) ? {} : LogFields.ofError(Cause.squash(cause))
  for (const [key, value] of annotations) fields[key] = typeof value === "bigint" ? String(value) : value
  if (!Cause.isEmpty(cause)) fields.cause = Cause.pretty(cause)
  return fields
}

/**
 * A logger that writes to `logger`. pino and bunyan take the fields first,
 * `info(fields, message)`; a logger with a `log` method of its own (winston,
 * `console`, consola, log4js) takes the message first, `info(message, fields)`.
 * A logger that throws is untrusted code like any callback: the record goes to
 * Effect's default logger instead, with the throw in its cause.
 *
 * @internal
 */
export const make = (logger: PromiseLogger): Logger.Logger<unknown, void> => {
  const messageFirst = "log" in logger && typeof logger.log === "function"
  return Logger.make((options) => {
    const text = textOf(options.message)
    const fields = fieldsOf(options.annotations, options.cause)
    try {
      // Called on the logger, which pino's methods need as `this`.
      const method = methodOf(logger, options.logLevel)
      if (messageFirst) method.call(logger, text, fields)
      else method.call(logger, fields, text)
    } catch (thrown) {
      Logger.defaultLogger.log({ ...options, cause: Cause.sequential(options.cause, Cause.die(thrown)) })
    }
  })
}
