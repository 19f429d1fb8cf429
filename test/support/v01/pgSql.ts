// The SQL of effect-leaderelection 0.1 (git show b88ca0e:src/stores/pg/sql.ts), kept as
// it shipped: what a process of 0.1 runs beside 0.2 during a rolling upgrade.
/**
 * The SQL of the PostgreSQL store: one statement per operation.
 *
 * Time. Every statement reads the clock once, as `now()` (the start of its
 * own implicit transaction, so every mention of it inside one statement is
 * the same instant). PostgreSQL keeps microseconds and a JS `Date`
 * milliseconds, so instants are rounded in the direction that can only make
 * a lease look SHORTER than the database will hold it: the `now` a statement
 * reports is `now()` rounded UP to the millisecond, and every stored instant
 * is reported rounded DOWN. Leases written here start on that rounded-up
 * millisecond, so `expiresAt - now` is exactly the TTL that was asked for,
 * while expiry itself is always decided against the true `now()`.
 *
 * @internal
 */
import * as Duration from "effect/Duration"

/** `now()` rounded up to the millisecond. */
export const nowCeil = "date_trunc('milliseconds', now() + interval '999 microseconds')"

/** A stored instant as epoch milliseconds, rounded down, in text. */
export const millis = (column: string): string =>
  `(extract(epoch from date_trunc('milliseconds', ${column})) * 1000)::int8::text`

/** Every column as text, so that no type parser configured on the pool can change what is decoded. */
const columns = [
  "name",
  "holder",
  "fence::text AS fence",
  "encode(payload, 'hex') AS payload",
  `${millis("acquired_at")} AS acquired_at`,
  `${millis("renewed_at")} AS renewed_at`,
  `${millis("expires_at")} AS expires_at`,
  `(extract(epoch from ${nowCeil}) * 1000)::int8::text AS now`
].join(", ")

const expiry = (ttlParam: string): string => `${nowCeil} + ${ttlParam}::int8 * interval '1 microsecond'`

const expired = "l.expires_at <= now()"

/** A one-row FROM item that bounds the statement's lock waits; evaluated before the row is written. */
const bounded = (lockTimeout: number): string =>
  `(SELECT set_config('lock_timeout', '${lockTimeout}ms', true)) AS bounded`
const wins = `(${expired} OR l.holder = excluded.holder)`

/** The statements of one table. Parameters: see each field. */
export interface Statements {
  /** $1 name, $2 identity, $3 ttl in microseconds, $4 payload. */
  readonly acquire: string
  /** $1 name, $2 identity, $3 fence, $4 ttl in microseconds, $5 payload. */
  readonly renew: string
  /** $1 name, $2 identity, $3 fence. */
  readonly release: string
  /** $1 name. */
  readonly inspect: string
  /** Every election in the table, by name; no parameters. */
  readonly list: string
}

/** The statements of the candidates' table. */
export interface CandidateStatements {
  /**
   * $1 name, $2 identity, $3 priority, $4 ttl in microseconds, $5 version.
   * The caller's row and every other live one, durations in milliseconds.
   */
  readonly advertise: string
  /** $1 name, $2 identity. */
  readonly withdraw: string
  /** Every live candidate of every election, by name; no parameters. */
  readonly candidates: string
}

/** Durations in whole milliseconds, rounded so that a candidate never looks older or longer-lived than it is. */
const candidateColumns = (alias: string) =>
  `${alias}.name, ${alias}.identity, ${alias}.priority::text AS priority, ${alias}.version, ` +
  `floor(extract(epoch from now() - ${alias}.since) * 1000)::int8::text AS alive_for, ` +
  `floor(extract(epoch from ${alias}.expires_at - now()) * 1000)::int8::text AS ttl`

/**
 * The lock wait bound of a store whose calls time out after
 * `operationTimeout`, in whole milliseconds: a quarter of it. A write on a
 * held row waits at most twice (for its turn in the row's queue, then for the
 * holder), so the server answers within half the call's time.
 */
export const lockTimeoutFor = (operationTimeout: Duration.Duration): number =>
  Math.max(1, Math.floor(Duration.toMillis(operationTimeout) / 4))

/**
 * `table` is an already quoted, possibly schema-qualified name; `lockTimeout`
 * a whole number of milliseconds, at least 1.
 *
 * No write waits for a row lock longer than `lockTimeout`: each sets
 * `lock_timeout` for its own implicit transaction (`set_config(..., true)`,
 * gone when the statement ends, so nothing outlives it on a pooled
 * connection) before it touches the row. A row that another transaction
 * holds (a broken neighbour election, an operator's open transaction) then
 * fails the call with 55P03 (retryable) before the store gives up on it,
 * instead of leaving a server backend waiting on the lock after every
 * timed-out call: through PgBouncer such waits filled every server connection
 * and starved the healthy elections sharing the table. Writes racing in a
 * healthy election hold the row for one statement and wait as before.
 *
 * acquire always takes the DO UPDATE branch and decides with CASE rather than
 * with `DO UPDATE ... WHERE`: a losing upsert returns no row, and a fallback
 * SELECT in the same statement reads the statement's snapshot, which does not
 * contain a row that a concurrent winner has just committed. Writing the row
 * back unchanged instead returns the winner's latest version in every case
 * (the update is HOT thanks to fillfactor 70).
 */
export const statements = (table: string, lockTimeout: number): Statements => ({
  acquire: `INSERT INTO ${table} AS l (name, holder, fence, acquired_at, renewed_at, expires_at, payload)
SELECT $1, $2, 1, ${nowCeil}, ${nowCeil}, ${expiry("$3")}, $4::bytea FROM ${bounded(lockTimeout)}
ON CONFLICT (name) DO UPDATE SET
  holder = CASE WHEN ${expired} THEN excluded.holder ELSE l.holder END,
  fence = CASE WHEN ${expired} THEN l.fence + 1 ELSE l.fence END,
  acquired_at = CASE WHEN ${expired} THEN excluded.acquired_at ELSE l.acquired_at END,
  renewed_at = CASE WHEN ${wins} THEN excluded.renewed_at ELSE l.renewed_at END,
  expires_at = CASE WHEN ${wins} THEN excluded.expires_at ELSE l.expires_at END,
  payload = CASE WHEN ${wins} THEN excluded.payload ELSE l.payload END
RETURNING ${columns}`,
  renew: `UPDATE ${table}
SET renewed_at = ${nowCeil}, expires_at = ${expiry("$4")}, payload = $5::bytea
FROM ${bounded(lockTimeout)}
WHERE name = $1 AND holder = $2 AND fence = $3::int8 AND expires_at > now()
RETURNING ${columns}`,
  release: `UPDATE ${table}
SET expires_at = now(), renewed_at = now()
FROM ${bounded(lockTimeout)}
WHERE name = $1 AND holder = $2 AND fence = $3::int8 AND expires_at > now()`,
  inspect: `SELECT ${columns} FROM ${table} WHERE name = $1`,
  list: `SELECT ${columns} FROM ${table} ORDER BY name`
})

/** `candidates` is an already quoted, possibly schema-qualified name. */
export const candidateStatements = (candidates: string): CandidateStatements => ({
  // One statement: the CTEs' changes are invisible to its other parts, so
  // the caller's row comes from the upsert's RETURNING and the rest from the
  // table. Only rows expired for a whole TTL are collected.
  advertise: `WITH gone AS (
  DELETE FROM ${candidates}
  WHERE name = $1 AND identity <> $2 AND expires_at <= now() - $4::int8 * interval '1 microsecond'
), me AS (
  INSERT INTO ${candidates} AS c (name, identity, priority, version, since, expires_at)
  VALUES ($1, $2, $3::int4, $5, now(), now() + $4::int8 * interval '1 microsecond')
  ON CONFLICT (name, identity) DO UPDATE SET
    priority = excluded.priority,
    version = excluded.version,
    since = CASE WHEN c.expires_at <= now() THEN now() ELSE c.since END,
    expires_at = excluded.expires_at
  RETURNING c.*
)
SELECT ${candidateColumns("me")} FROM me
UNION ALL
SELECT ${candidateColumns("o")} FROM ${candidates} o
WHERE o.name = $1 AND o.identity <> $2 AND o.expires_at > now()`,
  withdraw: `DELETE FROM ${candidates} WHERE name = $1 AND identity = $2`,
  candidates: `SELECT ${
    candidateColumns("c")
  } FROM ${candidates} c WHERE c.expires_at > now() ORDER BY c.name, c.priority DESC, c.identity`
})

/** The DDL, exactly as the reference describes it, for an already quoted name. */
export const ddl = (table: string): string =>
  `CREATE TABLE IF NOT EXISTS ${table} (
    name        text        PRIMARY KEY,
    holder      text        NOT NULL,
    fence       bigint      NOT NULL,
    acquired_at timestamptz NOT NULL,
    renewed_at  timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL,
    payload     bytea
) WITH (fillfactor = 70);`

/** The candidates' table, for an already quoted name. */
export const candidatesDdl = (candidates: string): string =>
  `CREATE TABLE IF NOT EXISTS ${candidates} (
    name        text        NOT NULL,
    identity    text        NOT NULL,
    priority    integer     NOT NULL,
    version     text,
    since       timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL,
    PRIMARY KEY (name, identity)
) WITH (fillfactor = 70);`
