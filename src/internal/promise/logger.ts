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
import * as LogFields from "../metrics/logFields.js"

/**
 * What the elector needs of a logger: pino, winston and `console` all have
 * these methods.
 *
 * @internal
 */
export interface Sink {
  debug(first: unknown, second: unknown): unknown
  info(first: unknown, second: unknown): unknown
  warn(first: unknown, second: unknown): unknown
  error(first: unknown, second: unknown): unknown
  fatal?(first: unknown, second: unknown): unknown
  readonly log?: unknown
}

// Called as methods, so that each keeps its logger as `this` (pino's need it).
const write = (sink: Sink, level: LogLevel.LogLevel, first: unknown, second: unknown): unknown => {
  switch (level._tag) {
    case "Fatal":
      return sink.fatal === undefined ? sink.error(first, second) : sink.fatal(first, second)
    case "Error":
      return sink.error(first, second)
    case "Warning":
      return sink.warn(first, second)
    case "Info":
      return sink.info(first, second)
    default:
      // console.trace would print a stack: Trace goes with Debug.
      return sink.debug(first, second)
  }
}

const textOf = (message: unknown): string =>
  Array.isArray(message) ? message.map((part) => Inspectable.toStringUnknown(part, 0)).join(" ") : String(message)

/**
 * The record's fields: what its cause says of the error (tag, retryability,
 * fence), then its annotations, then the cause itself, pretty-printed.
 *
 * @internal
 */
export const fieldsOf = (
  annotations: HashMap.HashMap<string, unknown>,
  cause: Cause.Cause<unknown>
): Record<string, unknown> => {
  const fields: Record<string, unknown> = Cause.isEmpty(cause) ? {} : LogFields.ofError(Cause.squash(cause))
  for (const [key, value] of annotations) fields[key] = typeof value === "bigint" ? String(value) : value
  if (!Cause.isEmpty(cause)) fields.cause = Cause.pretty(cause)
  return fields
}

/**
 * A logger that writes to `sink`. pino and bunyan take the fields first,
 * `info(fields, message)`; a logger with a `log` method of its own (winston,
 * `console`, consola, log4js) takes the message first, `info(message, fields)`.
 * A sink that throws is untrusted code like any callback: the record goes to
 * Effect's default logger instead, with the throw in its cause.
 *
 * @internal
 */
export const make = (sink: Sink): Logger.Logger<unknown, void> => {
  const messageFirst = typeof sink.log === "function"
  return Logger.make((options) => {
    const text = textOf(options.message)
    const fields = fieldsOf(options.annotations, options.cause)
    try {
      if (messageFirst) write(sink, options.logLevel, text, fields)
      else write(sink, options.logLevel, fields, text)
    } catch (thrown) {
      Logger.defaultLogger.log({ ...options, cause: Cause.sequential(options.cause, Cause.die(thrown)) })
    }
  })
}
