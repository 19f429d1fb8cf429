/**
 * Construction-time validation for the PostgreSQL store: identifiers and
 * connection URLs are refused with a typed error naming the field and the
 * reason, before anything reaches the database.
 *
 * @internal
 */
import * as Either from "effect/Either"
import { InvalidConfig } from "../../ElectorError.js"
import * as limits from "../../internal/config/limits.js"

/** PostgreSQL's NAMEDATALEN - 1: longer names are silently truncated by the server. */
const maxIdentifierBytes = 63

/**
 * Checks that `value` names exactly one PostgreSQL identifier once quoted:
 * not empty, no NUL (the protocol cannot carry it), well-formed Unicode (a
 * lone surrogate would be sent as U+FFFD and name another object) and at most
 * 63 bytes of UTF-8 (the server would truncate it and name another object).
 */
export const validateIdentifier = (field: string, value: string): Either.Either<string, InvalidConfig> =>
  limits.text(field, value, maxIdentifierBytes)

/**
 * Quotes an identifier for PostgreSQL: wrapped in double quotes, embedded
 * double quotes doubled. The result always names exactly `value`, case and
 * all; validate it first with {@link validateIdentifier}.
 */
export const quoteIdentifier = (value: string): string => `"${value.replaceAll("\"", "\"\"")}"`

/**
 * Validates a connection URL: it must parse and use the `postgres:` or
 * `postgresql:` scheme.
 */
export const validateUrl = (url: string): Either.Either<string, InvalidConfig> => {
  if (!URL.canParse(url)) {
    return Either.left(new InvalidConfig({ field: "url", reason: "is not a URL" }))
  }
  const scheme = new URL(url).protocol
  return scheme === "postgres:" || scheme === "postgresql:"
    ? Either.right(url)
    : Either.left(new InvalidConfig({ field: "url", reason: `scheme must be postgres: or postgresql:, got ${scheme}` }))
}
