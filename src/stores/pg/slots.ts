/**
 * The SQL of the PostgreSQL store's job slots (`Store.SlotStore`): one
 * statement per operation, each guarded by the caller's lease row in the
 * same statement, so that the guard and the write see one `now()`.
 *
 * A slot is keyed by (election, job, instant in epoch milliseconds): the
 * instant is the schedule's, on the database clock, and a whole number, so
 * every participant names a slot the same way.
 *
 * @internal
 */
import { millis, nowCeil } from "./sql.js"

const nowMillis = `(extract(epoch from ${nowCeil}) * 1000)::int8::text`

const slotColumns = (alias: string): string =>
  [
    `${alias}.job`,
    `${alias}.slot_ms::text AS slot_ms`,
    `${alias}.fence::text AS slot_fence`,
    `${millis(`${alias}.started_at`)} AS started_at`,
    `${millis(`${alias}.completed_at`)} AS completed_at`
  ].join(", ")

/** The statements for a lease table and its slot table, both already quoted. */
export interface SlotStatements {
  /**
   * $1 name, $2 identity, $3 fence, $4 job, $5 instant (ms), $6 reclaim.
   * Returns one row: `held`, `claimed`, the slot's columns (the claimed row,
   * else the one the statement's snapshot saw) and `now`.
   */
  readonly claim: string
  /** $1 name, $2 identity, $3 fence, $4 job, $5 instant (ms). A row (`now`) when recorded. */
  readonly complete: string
  /** $1 name, $2 job. One row: `now` and the latest slot's columns, null when none. */
  readonly last: string
}

/**
 * The claim inserts under the lease guard, or takes the existing row over
 * with `ON CONFLICT ... DO UPDATE ... WHERE`: a conflicting row is re-checked
 * at its latest version, so of two terms racing for one slot exactly one
 * claims it (the same fence again, or a newer one with `reclaim`).
 */
export const statements = (leases: string, slots: string): SlotStatements => ({
  claim: `WITH lease AS (
  SELECT holder = $2 AND fence = $3::int8 AND expires_at > now() AS held FROM ${leases} WHERE name = $1
), claimed AS (
  INSERT INTO ${slots} AS s (name, job, slot_ms, fence, started_at, completed_at)
  SELECT $1, $4, $5::int8, $3::int8, now(), NULL FROM lease WHERE lease.held
  ON CONFLICT (name, job, slot_ms) DO UPDATE SET fence = excluded.fence, started_at = excluded.started_at
  WHERE s.completed_at IS NULL AND (s.fence = excluded.fence OR ($6::boolean AND s.fence < excluded.fence))
  RETURNING s.*
), seen AS (
  SELECT * FROM claimed
  UNION ALL
  SELECT * FROM ${slots} WHERE name = $1 AND job = $4 AND slot_ms = $5::int8 AND NOT EXISTS (SELECT 1 FROM claimed)
)
SELECT coalesce((SELECT held FROM lease), false)::text AS held,
  EXISTS (SELECT 1 FROM claimed)::text AS claimed,
  ${nowMillis} AS now, ${slotColumns("x")}
FROM (SELECT 1) AS one LEFT JOIN seen AS x ON true`,
  complete: `UPDATE ${slots} AS s SET completed_at = coalesce(s.completed_at, now())
FROM ${leases} AS l
WHERE l.name = $1 AND l.holder = $2 AND l.fence = $3::int8 AND l.expires_at > now()
  AND s.name = $1 AND s.job = $4 AND s.slot_ms = $5::int8 AND s.fence = $3::int8
RETURNING ${nowMillis} AS now`,
  last: `SELECT ${nowMillis} AS now, ${slotColumns("x")}
FROM (SELECT 1) AS one LEFT JOIN LATERAL (
  SELECT * FROM ${slots} WHERE name = $1 AND job = $2 ORDER BY slot_ms DESC LIMIT 1
) AS x ON true`
})

/** The slot table's DDL, for an already quoted name. */
export const ddl = (slots: string): string =>
  `CREATE TABLE IF NOT EXISTS ${slots} (
    name         text        NOT NULL,
    job          text        NOT NULL,
    slot_ms      bigint      NOT NULL,
    fence        bigint      NOT NULL,
    started_at   timestamptz NOT NULL,
    completed_at timestamptz,
    PRIMARY KEY (name, job, slot_ms)
);`
