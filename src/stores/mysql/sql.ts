/**
 * The SQL of the MySQL / MariaDB store's leases and candidates, portable
 * between MySQL 8 and MariaDB 10.11 (the job slots' is in `slots.ts`; the
 * decoding of the rows in `statements.ts`).
 *
 * Every instant is produced by the server (`UTC_TIMESTAMP(6)`, which is UTC
 * whatever the session `time_zone`, and constant within one statement) and
 * travels back as an integer count of microseconds since the epoch, computed
 * by `TIMESTAMPDIFF` on `DATETIME(6)` values and cast to text: no timezone
 * conversion anywhere, none in the driver, no precision lost to a double.
 *
 * Portability between MySQL 8 and MariaDB 10.11, and how it is handled:
 *
 * - `RETURNING` exists on MariaDB only (and not for `UPDATE`): the row is
 *   read back by a `SELECT ... FOR UPDATE` in the same transaction instead.
 * - `VALUES(col)` in `ON DUPLICATE KEY UPDATE` is deprecated since MySQL
 *   8.0.20 and its replacement, the `AS new` row alias, is a syntax error on
 *   MariaDB: the new values are passed again as parameters.
 * - Assignments in `ON DUPLICATE KEY UPDATE` run left to right seeing
 *   earlier ones (MariaDB's SIMULTANEOUS_ASSIGNMENT mode makes them see the
 *   old row): the statement is written to mean the same under both.
 * - `utf8mb4_bin` is a PAD SPACE collation on both (`'a' = 'a '`), and the
 *   NO PAD binary collations differ (`utf8mb4_0900_bin` on MySQL,
 *   `utf8mb4_nopad_bin` on MariaDB): `name` and `holder` are
 *   `VARBINARY(1020)` (255 utf8mb4 characters), compared byte for byte, so
 *   `'A'`, `'a'` and `'a '` are three elections.
 * - `FOR SHARE` is MySQL 8 only: the store uses `FOR UPDATE` alone.
 * - `UTC_TIMESTAMP(6)`, `TIMESTAMPDIFF(MICROSECOND, ...)`, `DATETIME(6)`,
 *   `CAST(... AS CHAR CHARACTER SET utf8mb4)` and `CAST(? AS SIGNED)` mean
 *   the same on both.
 *
 * Timestamps are `DATETIME(6)` written from `UTC_TIMESTAMP(6)` and returned
 * as microseconds since the epoch computed in SQL, so neither the session
 * `time_zone` nor the driver can shift them. Converting to millisecond
 * `Date`s, `now`, `acquiredAt` and `renewedAt` round up and `expiresAt`
 * rounds down: a TTL derived from a returned lease is never longer than the
 * server's. A name or identity longer than 1020 bytes fails with 1406
 * (fatal) under the default strict `sql_mode`; a server in a non-strict mode
 * would truncate it instead.
 *
 * @internal
 */
import { fenceJump } from "../../Lease.js"

/** The statement that creates the table, given its quoted, qualified name. */
export const createTable = (table: string): string =>
  `CREATE TABLE IF NOT EXISTS ${table} (
  name        VARBINARY(1020) NOT NULL,
  holder      VARBINARY(1020) NOT NULL,
  fence       BIGINT          NOT NULL,
  acquired_at DATETIME(6)     NOT NULL,
  renewed_at  DATETIME(6)     NOT NULL,
  expires_at  DATETIME(6)     NOT NULL,
  payload     LONGBLOB        NULL,
  incarnation VARBINARY(64)   NULL,
  server      VARBINARY(255)  NULL,
  PRIMARY KEY (name)
) ENGINE = InnoDB DEFAULT CHARACTER SET = utf8mb4 COLLATE = utf8mb4_bin`

/** The columns of 0.2: the holder's incarnation and the server that wrote the row (see {@link currentServer}). */
const added = [["incarnation", "VARBINARY(64) NULL"], ["server", "VARBINARY(255) NULL"]] as const

/**
 * What a table made by 0.1 lacks, added in place on MariaDB: nullable
 * columns appended (`ALGORITHM=INSTANT`: the catalog only, never a copy of
 * the table), so statements of 0.1, which name their columns, keep working
 * beside it. `WAIT 1` bounds the wait for the table's metadata lock, behind
 * which every statement on the table queues: 1205 (retryable) after a
 * second instead of stalling the running electors behind a long transaction.
 */
export const upgradeMariaDb = (table: string): string =>
  `ALTER TABLE ${table} WAIT 1 ${
    added.map(([column, type]) => `ADD COLUMN IF NOT EXISTS ${column} ${type}`).join(", ")
  }, ALGORITHM=INSTANT`

/**
 * MySQL 8 has neither `IF NOT EXISTS` for a column nor `WAIT`: one ALTER
 * per column (1060, duplicate column, means it is there), each between
 * `SET SESSION lock_wait_timeout` and its reset, on one connection, which
 * the store destroys when the request fails: nothing outlives the request.
 */
export const upgradeMysql = (table: string): ReadonlyArray<ReadonlyArray<string>> =>
  added.map(([column, type]) => [
    "SET SESSION lock_wait_timeout = 1",
    `ALTER TABLE ${table} ADD COLUMN ${column} ${type}, ALGORITHM=INSTANT`,
    "SET SESSION lock_wait_timeout = DEFAULT"
  ])

/** Both forms of the upgrade, for migration tools: MariaDB's to run, MySQL 8's as comments. */
export const upgrade = (table: string): string =>
  [
    `-- A table made by effect-leaderelection 0.1 gains two columns. MariaDB:`,
    `${upgradeMariaDb(table)};`,
    `-- MySQL 8, each column it lacks:`,
    ...added.map(([column, type]) => `-- ALTER TABLE ${table} ADD COLUMN ${column} ${type}, ALGORITHM=INSTANT;`)
  ].join("\n")

/**
 * How many of the columns of 0.2 the table has, and the server's version
 * (MariaDB names itself in it). Parameters: the schema (null: the
 * connection's), the table, both as the catalog names them.
 */
export const upgraded = `SELECT CAST(COUNT(*) AS CHAR) AS present, VERSION() AS version ` +
  `FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = COALESCE(?, DATABASE()) ` +
  `AND CAST(TABLE_NAME AS BINARY) = CAST(? AS BINARY) AND COLUMN_NAME IN ('incarnation', 'server')`

/** The candidates' table, given its quoted, qualified name. */
export const createCandidatesTable = (table: string): string =>
  `CREATE TABLE IF NOT EXISTS ${table} (
  name        VARBINARY(1020) NOT NULL,
  identity    VARBINARY(1020) NOT NULL,
  priority    INT             NOT NULL,
  version     VARBINARY(255)  NULL,
  since       DATETIME(6)     NOT NULL,
  expires_at  DATETIME(6)     NOT NULL,
  PRIMARY KEY (name, identity)
) ENGINE = InnoDB DEFAULT CHARACTER SET = utf8mb4 COLLATE = utf8mb4_bin`

const now = "UTC_TIMESTAMP(6)"
const expired = `expires_at <= ${now}`

/**
 * The server a statement runs on: its `server_id` and its start, in whole
 * seconds, which a restart or a failover to another server changes. Both
 * terms of the start are read at the statement's start (the server derives
 * `Uptime` from the query's start time too), so it does not jitter at a
 * second boundary: 20,000 calls over 4 s on MariaDB 10.11 gave one value.
 * `Uptime` is in `information_schema` on MariaDB (the `/*M!` comment
 * runs there only) and in `performance_schema` on MySQL 8, where
 * MariaDB's, disabled by default, reads NULL. Any user may read them. It
 * needs row-based (or MIXED) replication: a standby replaying statements
 * would evaluate it itself.
 */
export const currentServer = `CONCAT(@@server_id, '/', UNIX_TIMESTAMP() - CAST(COALESCE(` +
  `/*M! (SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'UPTIME'), */ ` +
  `(SELECT VARIABLE_VALUE FROM performance_schema.global_status WHERE VARIABLE_NAME = 'Uptime')) AS SIGNED))`

/**
 * {@link currentServer} as a one-row derived table, `here.id`: read once per
 * statement however often the statement names it (each mention of the
 * expression itself reads the server's status again, 0.1 to 0.5 ms each).
 */
const here = `(SELECT ${currentServer} AS id) AS here`

/** The row was written on this server, or by 0.1, which records none: an upgrade is not a failover. */
const local = "(server IS NULL OR server = here.id)"

/** The claimant's own term: its identity under its incarnation (or under none). Parameters: identity, incarnation. */
const own = "(holder = ? AND incarnation <=> ?)"
const micros = (expression: string) => `CAST(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', ${expression}) AS CHAR)`

/**
 * Reads the lease row `WHERE name = ?` together with the database's now, as
 * `nowExpression` computes it, in one statement.
 */
export const selectLease = (table: string, nowExpression: string, lock: boolean): string =>
  `SELECT ${leaseColumns(nowExpression)} FROM ${table} WHERE name = ?${lock ? " FOR UPDATE" : ""}`

const leaseColumns = (nowExpression: string): string =>
  `CAST(holder AS CHAR CHARACTER SET utf8mb4) AS holder, CAST(incarnation AS CHAR) AS incarnation, ` +
  `CAST(fence AS CHAR) AS fence, ` +
  `${micros("acquired_at")} AS acquired_us, ${micros("renewed_at")} AS renewed_us, ` +
  `${micros("expires_at")} AS expires_us, ${micros(nowExpression)} AS now_us, payload`

/**
 * The claim of `acquire` on a row written on this server (see {@link holdBack}
 * for the others): takes over a missing or expired lease (fence + 1),
 * continues the claimant's own (same fence, new payload and expiry), and
 * otherwise changes nothing. Every write records the current server.
 *
 * MySQL applies the assignments of `ON DUPLICATE KEY UPDATE` left to right,
 * each seeing the columns already assigned (MariaDB too, unless its
 * SIMULTANEOUS_ASSIGNMENT mode makes them all see the old row). So the
 * columns the conditions read come last, `holder`, `incarnation`, `server`,
 * `expires_at`, and each condition gives the same answer on the old row and
 * on the row as assigned so far: a write makes the row the claimant's own
 * and this server's, which the conditions after it accept, and a row left
 * alone is unchanged. The new values are passed again as parameters instead
 * of `VALUES(col)` (deprecated since MySQL 8.0.20) or a row alias (MySQL
 * 8.0.19+ only, a syntax error on MariaDB). The row is an `INSERT ... SELECT`
 * over {@link here}, whose column `ON DUPLICATE KEY UPDATE` may name.
 *
 * Parameters: {@link upsertValues}.
 */
export const upsert = (table: string): string => {
  const writes = `${local} AND (${expired} OR ${own})`
  const takes = `${local} AND ${expired}`
  return `INSERT INTO ${table} ` +
    `(name, holder, incarnation, fence, server, acquired_at, renewed_at, expires_at, payload) ` +
    `SELECT ?, ?, ?, 1, here.id, ${now}, ${now}, ${now} + INTERVAL ? MICROSECOND, ? FROM ${here} ` +
    `ON DUPLICATE KEY UPDATE ` +
    `fence = IF(${takes}, fence + 1, fence), ` +
    `acquired_at = IF(${takes}, ${now}, acquired_at), ` +
    `payload = IF(${writes}, ?, payload), ` +
    `renewed_at = IF(${writes}, ${now}, renewed_at), ` +
    `holder = IF(${writes}, ?, holder), ` +
    `incarnation = IF(${writes}, ?, incarnation), ` +
    `server = IF(${writes}, here.id, server), ` +
    `expires_at = IF(${writes}, ${now} + INTERVAL ? MICROSECOND, expires_at)`
}

/**
 * The parameters of {@link upsert}: the new row's, then each assignment's
 * condition and, where it takes one, its new value.
 */
export const upsertValues = (
  name: string,
  identity: string,
  incarnation: string | null,
  ttlMicros: string,
  payload: Buffer | null
): Array<unknown> => {
  const own = [identity, incarnation]
  return [
    ...[name, identity, incarnation, ttlMicros, payload],
    ...[...own, payload], // payload
    ...own, // renewed_at
    ...[...own, identity], // holder
    ...[...own, incarnation], // incarnation
    ...own, // server
    ...[...own, ttlMicros] // expires_at
  ]
}

/**
 * After the {@link upsert}, under its row lock: the claim on a row another
 * server wrote (a promoted standby, a restart), which the upsert left
 * alone. When it has expired, or is the claimant's own, it is held back, by
 * nobody (holder `''`, no incarnation, no payload) for the claimant's ttl,
 * its fence moved on by `Lease.fenceJump`: a term the old server handed out
 * after the last write this one received may still run, under a fence this
 * one never saw. Someone else's live lease stays as it is: a leader whose
 * lease survived a failover renews it. The assignments read no column the
 * others write. The server is compared last: a follower's claim on a live
 * lease (the common one) stops before it and never reads the server's
 * status. Parameters: ttl µs, name, identity, incarnation.
 */
export const holdBack = (table: string): string =>
  `UPDATE ${table} SET holder = '', incarnation = NULL, fence = fence + ${fenceJump}, ` +
  `server = ${currentServer}, acquired_at = ${now}, renewed_at = ${now}, ` +
  `expires_at = ${now} + INTERVAL ? MICROSECOND, payload = NULL ` +
  `WHERE name = ? AND (${expired} OR ${own}) AND server <> ${currentServer}`

/**
 * After the claim, in the same transaction and under its row lock. When the
 * claim wrote the row, it wrote `renewed_at` with the same clock read as the
 * expiry, so that is the now to report; otherwise this statement's own
 * clock read is later than any write to the row. The upsert wrote it exactly
 * when it is the claimant's own now (a row of the claimant's it left alone
 * was another server's, which the hold-back gave to nobody), the hold-back
 * when that statement, the one before this, changed a row (`ROW_COUNT()`).
 * Parameters: identity, incarnation, name.
 */
export const selectAfterUpsert = (table: string): string =>
  selectLease(table, `IF(${own} OR ROW_COUNT() > 0, renewed_at, ${now})`, true)

const guard = `WHERE name = ? AND holder = ? AND fence = CAST(? AS SIGNED) AND expires_at > ${now}`

/** Parameters: payload, ttl µs, name, identity, fence. It records the current server: the lease survived on it. */
export const renew = (table: string): string =>
  `UPDATE ${table} SET payload = ?, renewed_at = ${now}, expires_at = ${now} + INTERVAL ? MICROSECOND, ` +
  `server = ${currentServer} ${guard}`

/** After a renewal, under its row lock: `renewed_at` is the renewal's now. */
export const selectAfterRenew = (table: string): string => selectLease(table, "renewed_at", true)

/**
 * Expires the lease now but keeps the row, so its fence keeps counting; the
 * renewal time is set to the same instant, which marks the row as released.
 * Parameters: name, identity, fence.
 */
export const release = (table: string): string =>
  `UPDATE ${table} SET expires_at = ${now}, renewed_at = ${now} ${guard}`

/**
 * A plain read. Its now is never earlier than the row's last renewal, so a
 * TTL derived from it cannot exceed the one the writer got.
 */
export const inspect = (table: string): string => selectLease(table, `GREATEST(${now}, renewed_at)`, false)

/** Rows with their names, each with the same now as {@link inspect} would report. */
const named = (table: string): string =>
  `SELECT CAST(name AS CHAR CHARACTER SET utf8mb4) AS name, ${
    leaseColumns(`GREATEST(${now}, renewed_at)`)
  } FROM ${table}`

/** Every row, by name. */
export const list = (table: string): string => `${named(table)} ORDER BY name`

/** The rows of `count` elections, in no order. Parameters: each name. */
export const inspectAll = (table: string, count: number): string =>
  `${named(table)} WHERE name IN (${Array.from({ length: count }, () => "?").join(", ")})`

/**
 * Collects the election's advertisements that expired a whole TTL ago, the
 * caller's excepted. Parameters: name, identity, ttl µs.
 */
export const collectCandidates = (table: string): string =>
  `DELETE FROM ${table} WHERE name = ? AND identity <> ? AND expires_at <= ${now} - INTERVAL ? MICROSECOND`

/**
 * The caller's advertisement; `since` restarts when the row had expired (it
 * is assigned before `expires_at`, so it reads the old expiry). Parameters:
 * name, identity, priority, version, ttl µs, priority, version, ttl µs.
 */
export const advertise = (table: string): string =>
  `INSERT INTO ${table} (name, identity, priority, version, since, expires_at) ` +
  `VALUES (?, ?, ?, ?, ${now}, ${now} + INTERVAL ? MICROSECOND) ON DUPLICATE KEY UPDATE ` +
  `priority = ?, version = ?, since = IF(expires_at <= ${now}, ${now}, since), ` +
  `expires_at = ${now} + INTERVAL ? MICROSECOND`

const candidateColumns = `CAST(name AS CHAR CHARACTER SET utf8mb4) AS name, ` +
  `CAST(identity AS CHAR CHARACTER SET utf8mb4) AS identity, CAST(priority AS CHAR) AS priority, ` +
  `CAST(version AS CHAR CHARACTER SET utf8mb4) AS version, ` +
  `CAST(TIMESTAMPDIFF(MICROSECOND, since, ${now}) AS CHAR) AS alive_us, ` +
  `CAST(TIMESTAMPDIFF(MICROSECOND, ${now}, expires_at) AS CHAR) AS ttl_us`

/** The election's live candidates, durations from one clock read. Parameters: name. */
export const liveCandidates = (table: string): string =>
  `SELECT ${candidateColumns} FROM ${table} WHERE name = ? AND expires_at > ${now}`

/** Every live candidate of every election. */
export const allCandidates = (table: string): string =>
  `SELECT ${candidateColumns} FROM ${table} WHERE expires_at > ${now} ORDER BY name, priority DESC, identity`

/** Parameters: name, identity. */
export const withdraw = (table: string): string => `DELETE FROM ${table} WHERE name = ? AND identity = ?`
