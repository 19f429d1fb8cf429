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
import { fenceJump } from "../../Lease.js"

/** `now()` rounded up to the millisecond. */
export const nowCeil = "date_trunc('milliseconds', now() + interval '999 microseconds')"

/** A stored instant as epoch milliseconds, rounded down, in text. */
export const millis = (column: string): string =>
  `(extract(epoch from date_trunc('milliseconds', ${column})) * 1000)::int8::text`

/** Every column as text, so that no type parser configured on the pool can change what is decoded. */
const columns = [
  "name",
  "holder",
  "incarnation",
  "fence::text AS fence",
  "encode(payload, 'hex') AS payload",
  `${millis("acquired_at")} AS acquired_at`,
  `${millis("renewed_at")} AS renewed_at`,
  `${millis("expires_at")} AS expires_at`,
  `(extract(epoch from ${nowCeil}) * 1000)::int8::text AS now`
].join(", ")

const expiry = (ttlParam: string): string => `${nowCeil} + ${ttlParam}::int8 * interval '1 microsecond'`

/**
 * The server a statement runs on: its start instant in microseconds, which a
 * restart or the promotion of a standby changes (a standby has its own
 * start, and `system_identifier` is the same on both). Any role may read it,
 * and it is the server's, not the connection's, so it passes PgBouncer.
 */
export const currentServer = "(extract(epoch from pg_postmaster_start_time()) * 1000000)::int8::text"

const expired = "l.expires_at <= now()"

/** A one-row FROM item that bounds the statement's lock waits; evaluated before the row is written. */
const bounded = (lockTimeout: number): string =>
  `(SELECT set_config('lock_timeout', '${lockTimeout}ms', true)) AS bounded`

/**
 * The row was written on this server, or by 0.1, which records none: an
 * upgrade is not a failover, and an old process's renewals keep it so.
 */
const local = "(l.server IS NULL OR l.server = excluded.server)"
/** The claimant's own term: its identity under its incarnation, or under none for a call that gives none. */
const own = "(l.holder = excluded.holder AND l.incarnation IS NOT DISTINCT FROM excluded.incarnation)"
/** The claim writes the row: it takes it over, continues it, or holds it back. */
const writes = `(${expired} OR ${own})`
/** A row another server wrote, which the claim would write: held back instead, by nobody. */
const holdsBack = `(NOT ${local} AND ${writes})`

/** The statements of one table. Parameters: see each field. */
export interface Statements {
  /** $1 name, $2 identity, $3 ttl in microseconds, $4 payload, $5 incarnation. */
  readonly acquire: string
  /** $1 name, $2 identity, $3 fence, $4 ttl in microseconds, $5 payload. */
  readonly renew: string
  /**
   * Several renewals: $1 names, $2 identities, $3 fences, $4 ttls in
   * microseconds, $5 payloads in hex, one array element per renewal. The
   * renewed rows, in no order.
   */
  readonly renewAll: string
  /** $1 name, $2 identity, $3 fence. */
  readonly release: string
  /** $1 name. */
  readonly inspect: string
  /** $1 names (text[]): the rows of those that have one, in no order. */
  readonly inspectAll: string
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
 * (the update is HOT thanks to fillfactor 70). Its rule, on the old row
 * (every CASE reads `l`, never another assignment):
 *
 * 1. no row: the claimant's, fence 1;
 * 2. written on this server and expired: taken over, fence + 1;
 * 3. written on this server, live, the claimant's own: continued;
 * 4. written on another server (a promoted standby, a restart) and expired
 *    or the claimant's own: held back, by nobody (holder `''`, no
 *    incarnation, no payload) for the claimant's ttl, its fence moved on by
 *    `Lease.fenceJump`: a term the old server handed out after the last write
 *    this one received may still run, under a fence this one never saw;
 * 5. anything else (someone else's live lease) stays as it is: a leader
 *    whose lease survived a failover renews it.
 *
 * Every write records the current server.
 */
export const statements = (table: string, lockTimeout: number): Statements => ({
  acquire:
    `INSERT INTO ${table} AS l (name, holder, incarnation, fence, server, acquired_at, renewed_at, expires_at, payload)
SELECT $1, $2, $5::text, 1, ${currentServer}, ${nowCeil}, ${nowCeil}, ${expiry("$3")}, $4::bytea FROM ${
      bounded(lockTimeout)
    }
ON CONFLICT (name) DO UPDATE SET
  holder = CASE WHEN ${holdsBack} THEN '' WHEN ${writes} THEN excluded.holder ELSE l.holder END,
  incarnation = CASE WHEN ${holdsBack} THEN NULL WHEN ${writes} THEN excluded.incarnation ELSE l.incarnation END,
  fence = CASE WHEN ${holdsBack} THEN l.fence + ${fenceJump} WHEN ${expired} THEN l.fence + 1 ELSE l.fence END,
  server = CASE WHEN ${writes} THEN excluded.server ELSE l.server END,
  acquired_at = CASE WHEN ${holdsBack} OR ${expired} THEN excluded.acquired_at ELSE l.acquired_at END,
  renewed_at = CASE WHEN ${writes} THEN excluded.renewed_at ELSE l.renewed_at END,
  expires_at = CASE WHEN ${writes} THEN excluded.expires_at ELSE l.expires_at END,
  payload = CASE WHEN ${holdsBack} THEN NULL WHEN ${writes} THEN excluded.payload ELSE l.payload END
RETURNING ${columns}`,
  renew: `UPDATE ${table}
SET renewed_at = ${nowCeil}, expires_at = ${expiry("$4")}, payload = $5::bytea, server = ${currentServer}
FROM ${bounded(lockTimeout)}
WHERE name = $1 AND holder = $2 AND fence = $3::int8 AND expires_at > now()
RETURNING ${columns}`,
  // Each row under its own guard and with its own ttl, from the renewal it
  // joins, all with the statement's one now(). The renewals' columns have
  // names no column of the table has: nothing the statement names is ambiguous.
  renewAll: `UPDATE ${table}
SET renewed_at = ${nowCeil}, expires_at = ${expiry("r.t")}, payload = decode(r.p, 'hex'), server = ${currentServer}
FROM ${bounded(lockTimeout)},
  unnest($1::text[], $2::text[], $3::int8[], $4::int8[], $5::text[]) AS r(n, h, f, t, p)
WHERE name = r.n AND holder = r.h AND fence = r.f AND expires_at > now()
RETURNING ${columns}`,
  release: `UPDATE ${table}
SET expires_at = now(), renewed_at = now()
FROM ${bounded(lockTimeout)}
WHERE name = $1 AND holder = $2 AND fence = $3::int8 AND expires_at > now()`,
  inspect: `SELECT ${columns} FROM ${table} WHERE name = $1`,
  inspectAll: `SELECT ${columns} FROM ${table} WHERE name = ANY($1::text[])`,
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

/**
 * The DDL, as the reference describes it, for an already quoted name, with
 * the two columns of 0.2: the holder's `incarnation` and the `server` that
 * wrote the row (see {@link currentServer}).
 */
export const ddl = (table: string): string =>
  `CREATE TABLE IF NOT EXISTS ${table} (
    name        text        PRIMARY KEY,
    holder      text        NOT NULL,
    fence       bigint      NOT NULL,
    acquired_at timestamptz NOT NULL,
    renewed_at  timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL,
    payload     bytea,
    incarnation text,
    server      text
) WITH (fillfactor = 70);`

/**
 * What a table made by 0.1 lacks, added in place: nullable columns without a
 * default, so the ALTER only writes the catalog, and statements of 0.1 (which
 * name their columns) keep working beside it.
 */
export const upgrade = (table: string): string =>
  `ALTER TABLE ${table} ADD COLUMN IF NOT EXISTS incarnation text, ADD COLUMN IF NOT EXISTS server text;`

/** How long the ALTER of `ensureSchema` may wait for the table's lock (see {@link upgrading}). */
export const upgradeLockTimeout = "100ms"

/**
 * {@link upgrade} as `ensureSchema` runs it: one simple query, so one implicit
 * transaction, whose `SET LOCAL` ends with it. While the ALTER waits for its
 * exclusive lock, every statement on the table queues behind it: it gives up
 * after {@link upgradeLockTimeout} (55P03, retryable) rather than stall the
 * running electors' renewals behind a long transaction. No `BEGIN`: an error
 * would skip the `COMMIT` and leave the connection in an aborted transaction.
 */
export const upgrading = (table: string): string =>
  `SET LOCAL lock_timeout = '${upgradeLockTimeout}'; ${upgrade(table)}`

/** How many of the columns of 0.2 the table has; $1 its quoted name. Reads the catalog only: any role may. */
export const upgraded =
  "SELECT count(*)::text AS present FROM pg_attribute WHERE attrelid = $1::regclass AND attname IN ('incarnation', 'server') AND NOT attisdropped"

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
