/**
 * Validation and quoting of MySQL identifiers (schema and table names).
 *
 * A name is always quoted, never interpolated bare: it is wrapped in
 * backticks and every backtick inside it is doubled, which is the only escape
 * a quoted MySQL identifier has. Names the server would refuse or silently
 * alter are rejected up front with the reason, rather than failing later as
 * a syntax error or, worse, naming a different table.
 *
 * @internal
 */
import * as Either from "effect/Either"

/** MySQL and MariaDB both cap identifiers at 64 characters. */
export const maxIdentifierLength = 64

/** Why `name` cannot be a MySQL identifier, or `undefined` when it can. */
export const identifierProblem = (name: string): string | undefined => {
  if (name.length === 0) return "must not be empty"
  // Both servers reject U+0000 and characters beyond the Basic Multilingual
  // Plane in identifiers; in UTF-16 the latter are exactly the surrogates.
  if (name.includes("\u0000")) return "must not contain a NUL character"
  if (/[\uD800-\uDFFF]/.test(name)) return "must not contain characters outside the Basic Multilingual Plane"
  if (name.length > maxIdentifierLength) return `must be at most ${maxIdentifierLength} characters, got ${name.length}`
  // The server refuses names ending in a space; trimming one silently would
  // name a different table.
  if (name.endsWith(" ")) return "must not end with a space"
  return undefined
}

/** Wraps `name` in backticks, doubling any backtick inside it. */
export const quote = (name: string): string => `\`${name.replaceAll("`", "``")}\``

/** Validates and quotes `name`, or says why it cannot be an identifier. */
export const quoteChecked = (name: string): Either.Either<string, string> => {
  const problem = identifierProblem(name)
  return problem === undefined ? Either.right(quote(name)) : Either.left(problem)
}
