/**
 * The SQL of the MySQL / MariaDB store's job slots (`Store.SlotStore`),
 * portable between MySQL 8 and MariaDB 10.11 like the lease statements
 * beside it. A claim or a completion is one short transaction: the lease
 * row read under `FOR UPDATE` (which holds off a successor's takeover until
 * the transaction ends, and decides the guard on the server's clock), the
 * slot write, the slot read back under the write's lock.
 *
 * @internal
 */
const now = "UTC_TIMESTAMP(6)"
const micros = (expression: string) => `CAST(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', ${expression}) AS CHAR)`

/** The statement that creates the slot table, given its quoted, qualified name. */
export const createTable = (slots: string): string =>
  `CREATE TABLE IF NOT EXISTS ${slots} (
  name         VARBINARY(1020) NOT NULL,
  job          VARBINARY(1020) NOT NULL,
  slot_ms      BIGINT          NOT NULL,
  fence        BIGINT          NOT NULL,
  started_at   DATETIME(6)     NOT NULL,
  completed_at DATETIME(6)     NULL,
  PRIMARY KEY (name, job, slot_ms)
) ENGINE = InnoDB DEFAULT CHARACTER SET = utf8mb4 COLLATE = utf8mb4_bin`

/**
 * The caller's guard on the lease row, locked, with the server's now.
 * Parameters: identity, fence, name.
 */
export const lockLease = (leases: string): string =>
  `SELECT CAST(holder = ? AND fence = CAST(? AS SIGNED) AND expires_at > ${now} AS CHAR) AS held, ` +
  `${micros(now)} AS now_us FROM ${leases} WHERE name = ? FOR UPDATE`

/** The caller's lease is held, as a condition. Parameters: name, identity, fence. */
const holds = (leases: string) =>
  `EXISTS (SELECT 1 FROM ${leases} WHERE name = ? AND holder = ? AND fence = CAST(? AS SIGNED) AND expires_at > ${now})`

/**
 * Inserts the slot under the caller's fence, only while the caller holds the
 * lease; an existing one is taken over only for a reclaim of a run an older
 * term never completed. The inserted values come from a derived table whose
 * column names differ from the slot table's, so that the update's names are
 * the slot row's. `fence` is assigned last, so both conditions read the old
 * row under either assignment order. Parameters: name, job, instant ms,
 * fence, the guard's (name, identity, fence), then the condition's
 * (reclaim, fence) twice, then fence.
 */
export const upsert = (slots: string, leases: string): string => {
  const reclaims = "completed_at IS NULL AND ? AND fence < CAST(? AS SIGNED)"
  return `INSERT INTO ${slots} (name, job, slot_ms, fence, started_at, completed_at) ` +
    `SELECT v_name, v_job, v_slot, v_fence, ${now}, NULL FROM (SELECT ? AS v_name, ? AS v_job, ` +
    `CAST(? AS SIGNED) AS v_slot, CAST(? AS SIGNED) AS v_fence) AS v WHERE ${holds(leases)} ` +
    `ON DUPLICATE KEY UPDATE ` +
    `started_at = IF(${reclaims}, ${now}, started_at), ` +
    `fence = IF(${reclaims}, CAST(? AS SIGNED), fence)`
}

const slotColumns = (alias: string): string =>
  `CAST(${alias}.job AS CHAR CHARACTER SET utf8mb4) AS job, CAST(${alias}.slot_ms AS CHAR) AS slot_ms, ` +
  `CAST(${alias}.fence AS CHAR) AS slot_fence, ${micros(`${alias}.started_at`)} AS started_us, ` +
  `${micros(`${alias}.completed_at`)} AS completed_us`

/** One slot, locked. Parameters: name, job, instant ms. */
export const selectSlot = (slots: string): string =>
  `SELECT ${slotColumns("s")} FROM ${slots} AS s WHERE name = ? AND job = ? AND slot_ms = CAST(? AS SIGNED) FOR UPDATE`

/** Parameters: name, job, instant ms, fence, the guard's (name, identity, fence). */
export const complete = (slots: string, leases: string): string =>
  `UPDATE ${slots} SET completed_at = IFNULL(completed_at, ${now}) ` +
  `WHERE name = ? AND job = ? AND slot_ms = CAST(? AS SIGNED) AND fence = CAST(? AS SIGNED) AND ${holds(leases)}`

/** The job's latest slot, if any, with the server's now. Parameters: name, job. */
export const last = (slots: string): string =>
  `SELECT ${micros(now)} AS now_us, ${slotColumns("x")} FROM (SELECT 1 AS one) AS o LEFT JOIN ` +
  `(SELECT * FROM ${slots} WHERE name = ? AND job = ? ORDER BY slot_ms DESC LIMIT 1) AS x ON TRUE`
