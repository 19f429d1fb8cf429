/**
 * What a log record says about an error, as log annotations: a structured
 * logger (the Promise API's `logger`) gets them as fields, Effect's logfmt
 * as `key=value` pairs.
 *
 * @internal
 */

/** @internal */
export type Fields = Record<string, string | boolean>

/**
 * The error's tag (or class name), whether it is retryable, and the fence it
 * concerns, where it says.
 *
 * @internal
 */
export const ofError = (error: unknown): Fields => {
  if (typeof error !== "object" || error === null) return { error: "Unknown" }
  const fields: Fields = {
    error: "_tag" in error && typeof error._tag === "string"
      ? error._tag
      : error instanceof Error
      ? error.name
      : "Unknown"
  }
  if ("retryable" in error && typeof error.retryable === "boolean") fields.retryable = error.retryable
  if ("fence" in error && typeof error.fence === "bigint") fields.fence = String(error.fence)
  return fields
}
