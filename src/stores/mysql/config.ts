/**
 * Construction-time validation for the MySQL / MariaDB store: identifiers
 * and connection URLs are refused with a typed error naming the field and
 * the reason, before anything reaches the database.
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
import type * as Mysql from "mysql2"
import { InvalidConfig } from "../../ElectorError.js"

/** MySQL and MariaDB both cap identifiers at 64 characters. */
const maxIdentifierLength = 64

/** Why `name` cannot be a MySQL identifier, or `undefined` when it can. */
const identifierProblem = (name: string): string | undefined => {
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

/**
 * Quotes a MySQL identifier: backticks around it, embedded backticks
 * doubled. Use `schema` or the store options, which also validate.
 */
export const quoteIdentifier = (name: string): string => `\`${name.replaceAll("`", "``")}\``

/** Validates and quotes `name`, or says why it cannot be an identifier. */
export const identifier = (field: string, name: string): Either.Either<string, InvalidConfig> => {
  const reason = identifierProblem(name)
  return reason === undefined ? Either.right(quoteIdentifier(name)) : Either.left(new InvalidConfig({ field, reason }))
}

/**
 * Parses a `mysql://user:password@host:port/database` (or `mariadb://`) URL
 * into connection options. Query parameters are refused rather than
 * ignored: pass driver options through the `MysqlClient` config instead.
 */
export const parseUrl = (url: string): Either.Either<Mysql.ConnectionOptions, InvalidConfig> => {
  const invalid = (reason: string) => Either.left(new InvalidConfig({ field: "url", reason }))
  if (!URL.canParse(url)) return invalid("not a URL")
  const parsed = new URL(url)
  if (parsed.protocol !== "mysql:" && parsed.protocol !== "mariadb:") {
    return invalid(`scheme must be mysql: or mariadb:, got ${parsed.protocol}`)
  }
  if (parsed.hostname === "") return invalid("has no host")
  const parameters = [...parsed.searchParams.keys()]
  if (parameters.length > 0) return invalid(`query parameters are not supported: ${parameters.join(", ")}`)
  const database = decodeURIComponent(parsed.pathname.slice(1))
  return Either.right({
    host: parsed.hostname.replace(/^\[(.*)\]$/, "$1"),
    port: parsed.port === "" ? 3306 : Number(parsed.port),
    user: decodeURIComponent(parsed.username),
    password: decodeURIComponent(parsed.password),
    ...(database === "" ? {} : { database })
  })
}
