// The SQL of effect-leaderelection 0.1 (git show b88ca0e:src/stores/mysql/sql.ts), kept as
// it shipped: what a process of 0.1 runs beside 0.2 during a rolling upgrade.
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
  PRIMARY KEY (name)
) ENGINE = InnoDB DEFAULT CHARACTER SET = utf8mb4 COLLATE = utf8mb4_bin`

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
const micros = (expression: string) => `CAST(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', ${expression}) AS CHAR)`

/**
 * Reads the lease row `WHERE name = ?` together with the database's now, as
 * `nowExpression` computes it, in one statement.
 */
export const selectLease = (table: string, nowExpression: string, lock: boolean): string =>
  `SELECT ${leaseColumns(nowExpression)} FROM ${table} WHERE name = ?${lock ? " FOR UPDATE" : ""}`

const leaseColumns = (nowExpression: string): string =>
  `CAST(holder AS CHAR CHARACTER SET utf8mb4) AS holder, CAST(fence AS CHAR) AS fence, ` +
  `${micros("acquired_at")} AS acquired_us, ${micros("renewed_at")} AS renewed_us, ` +
  `${micros("expires_at")} AS expires_us, ${micros(nowExpression)} AS now_us, payload`

/**
 * Takes over a missing or expired lease (fence + 1), continues one held by
 * the same identity (same fence, new payload and expiry), and otherwise
 * changes nothing.
 *
 * MySQL applies the assignments of `ON DUPLICATE KEY UPDATE` left to right,
 * each seeing the columns already assigned (MariaDB too, unless its
 * SIMULTANEOUS_ASSIGNMENT mode makes them all see the old row). So the
 * columns the conditions read, `holder` and `expires_at`, are assigned last,
 * and the one condition evaluated after `holder` has changed, the expiry's,
 * gives the same answer either way: when the lease is taken over, the new
 * holder is the caller. The new values are passed again as parameters
 * instead of `VALUES(col)` (deprecated since MySQL 8.0.20) or a row alias
 * (MySQL 8.0.19+ only, a syntax error on MariaDB).
 *
 * Parameters: name, identity, ttl µs, payload, identity, payload, identity,
 * identity, identity, ttl µs.
 */
export const upsert = (table: string): string =>
  `INSERT INTO ${table} (name, holder, fence, acquired_at, renewed_at, expires_at, payload) ` +
  `VALUES (?, ?, 1, ${now}, ${now}, ${now} + INTERVAL ? MICROSECOND, ?) ON DUPLICATE KEY UPDATE ` +
  `fence = IF(${expired}, fence + 1, fence), ` +
  `acquired_at = IF(${expired}, ${now}, acquired_at), ` +
  `payload = IF(${expired} OR holder = ?, ?, payload), ` +
  `renewed_at = IF(${expired} OR holder = ?, ${now}, renewed_at), ` +
  `holder = IF(${expired}, ?, holder), ` +
  `expires_at = IF(${expired} OR holder = ?, ${now} + INTERVAL ? MICROSECOND, expires_at)`

/**
 * After the upsert, in the same transaction and under its row lock. When the
 * caller holds the lease, the upsert just wrote `renewed_at` with the same
 * clock read as the expiry, so that is the now to report; otherwise the row
 * is unchanged and locked, and this statement's own clock read is later than
 * any write to it. Parameters: identity, name.
 */
export const selectAfterUpsert = (table: string): string =>
  selectLease(table, `IF(holder = ?, renewed_at, ${now})`, true)

const guard = `WHERE name = ? AND holder = ? AND fence = CAST(? AS SIGNED) AND expires_at > ${now}`

/** Parameters: payload, ttl µs, name, identity, fence. */
export const renew = (table: string): string =>
  `UPDATE ${table} SET payload = ?, renewed_at = ${now}, expires_at = ${now} + INTERVAL ? MICROSECOND ${guard}`

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

/** Every row, by name, each with the same now as {@link inspect} would report. */
export const list = (table: string): string =>
  `SELECT CAST(name AS CHAR CHARACTER SET utf8mb4) AS name, ${
    leaseColumns(`GREATEST(${now}, renewed_at)`)
  } FROM ${table} ORDER BY name`

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
