/**
 * MySQL / MariaDB's statements for the SQL store engine
 * (`internal/sqlStore.ts`): for each operation, the request (the SQL of
 * `sql.ts` and `slots.ts` with its values) and the decoding of its rows.
 *
 * A request of several statements is one short transaction on one
 * connection (see `driver.ts`): the write, then the row read back under the
 * write's lock (it is there: the store never deletes one). A slot write
 * first reads the caller's lease row under `FOR UPDATE` (its guard and the
 * server's now; the lock holds a successor's takeover off until the end),
 * then writes, guarded again inside its own statement.
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Predicate from "effect/Predicate"
import type { Lease } from "../../Lease.js"
import type { Candidate, SlotRecord } from "../../Store.js"
import type { Renewal } from "../internal/batch.js"
import * as Dialect from "../internal/dialect.js"
import { identifier } from "./config.js"
import * as SlotSql from "./slots.js"
import * as Sql from "./sql.js"

/** One statement and its values, escaped by the driver. */
export interface Statement {
  readonly sql: string
  readonly values: ReadonlyArray<unknown>
}

/** One statement, or several: one transaction (see `driver.ts`). */
export type Request = ReadonlyArray<Statement>

/** What each statement of a request answered, in order. */
export type Result = ReadonlyArray<unknown>

const rows = (result: unknown): ReadonlyArray<Record<string, unknown>> =>
  Array.isArray(result) ? result.filter(Predicate.isRecord) : []

const affectedRows = (result: unknown): number =>
  Predicate.isRecord(result) && typeof result["affectedRows"] === "number" ? result["affectedRows"] : 0

const text = (row: Record<string, unknown>, key: string): string => String(row[key])

// Instants that start something round up to the millisecond and the expiry
// rounds down, so a TTL derived from the returned Dates is never longer
// than the server's.
const floorMillis = (us: string): Date => new Date(Number(BigInt(us) / 1000n))
const ceilMillis = (us: string): Date => new Date(Number((BigInt(us) + 999n) / 1000n))

/** Decodes one row of `Sql.selectLease`. */
const toLease = (name: string, row: Record<string, unknown>): Lease => {
  const payload = row["payload"]
  const incarnation = row["incarnation"]
  return {
    name,
    holder: text(row, "holder"),
    ...(incarnation === null ? {} : { incarnation: String(incarnation) }),
    fence: BigInt(text(row, "fence")),
    payload: payload instanceof Uint8Array ? new Uint8Array(payload) : null,
    acquiredAt: ceilMillis(text(row, "acquired_us")),
    renewedAt: ceilMillis(text(row, "renewed_us")),
    expiresAt: floorMillis(text(row, "expires_us")),
    now: ceilMillis(text(row, "now_us"))
  }
}

/** Whole milliseconds, rounded down: a candidate never looks older or longer-lived than it is. */
const millisDown = (us: string): Duration.Duration => Duration.millis(Number(BigInt(us) / 1000n))

/** Decodes one row of `Sql.liveCandidates`. */
const toCandidate = (row: Record<string, unknown>): Candidate & { readonly name: string } => ({
  name: text(row, "name"),
  identity: text(row, "identity"),
  priority: Number(text(row, "priority")),
  version: row["version"] === null ? null : text(row, "version"),
  aliveFor: millisDown(text(row, "alive_us")),
  ttl: millisDown(text(row, "ttl_us"))
})

const millis = (us: unknown): Date => new Date(Number(BigInt(String(us)) / 1000n))

/** The server's now of a row, in milliseconds rounded down. */
const toNow = (row: Record<string, unknown>): Date => millis(row["now_us"])

/** Decodes the slot columns of a row; `undefined` when the row has none. */
const toSlot = (row: Record<string, unknown>): SlotRecord | undefined =>
  row["slot_ms"] === null || row["slot_ms"] === undefined ? undefined : {
    job: String(row["job"]),
    at: new Date(Number(row["slot_ms"])),
    fence: BigInt(String(row["slot_fence"])),
    startedAt: millis(row["started_us"]),
    completedAt: row["completed_us"] === null ? null : millis(row["completed_us"])
  }

/** The guard's values of the caller's term. */
const held = (name: string, identity: string, fence: bigint) => [name, identity, fence.toString()]

/** A renewal: its guarded write, then its row read back under the write's lock. */
const renewing = (
  table: string,
  { fence, identity, name, payload, ttl }: Renewal
): ReadonlyArray<Statement> => [
  {
    sql: Sql.renew(table),
    values: [Dialect.bytes(payload), Dialect.microseconds(ttl), name, identity, fence.toString()]
  },
  { sql: Sql.selectAfterRenew(table), values: [name] }
]

/**
 * The lease the `i`th renewal of a request renewed, or none. The read-back of
 * a renewal that matched nothing reads someone else's row, or none: it is not
 * decoded. Committing a write that changed nothing is harmless.
 */
const renewed = (name: string, results: Result, i: number): Lease | undefined =>
  affectedRows(results[2 * i]) === 0 ? undefined : toLease(name, rows(results[2 * i + 1])[0]!)

/** The MySQL / MariaDB statements. */
export const statements: Dialect.Statements<Request, Result> = {
  identifier,
  ddl: {
    leases: Sql.createTable,
    upgrade: Sql.upgrade,
    slots: SlotSql.createTable,
    candidates: Sql.createCandidatesTable
  },
  script: (sql) => [{ sql, values: [] }],
  upgrade: ({ name, quoted, schema }) => ({
    request: [{ sql: Sql.upgraded, values: [schema ?? null, name] }],
    decode: (results) => {
      const row = rows(results[0])[0] ?? {}
      if (text(row, "present") === "2") return []
      return text(row, "version").includes("MariaDB")
        ? [[{ sql: Sql.upgradeMariaDb(quoted), values: [] }]]
        : Sql.upgradeMysql(quoted).map((sqls) => sqls.map((sql) => ({ sql, values: [] })))
    }
  }),
  alreadyThere: (error) => error.code === "1060",
  leases: ({ candidates, leases }) => ({
    acquire: (name, identity, ttl, payload, incarnation) => {
      const us = Dialect.microseconds(ttl)
      const data = Dialect.bytes(payload)
      const mine = incarnation ?? null
      const own = [identity, mine]
      return {
        request: [
          {
            sql: Sql.upsert(leases),
            values: Sql.upsertValues(name, identity, mine, us, data)
          },
          { sql: Sql.holdBack(leases), values: [us, name, ...own] },
          { sql: Sql.selectAfterUpsert(leases), values: [...own, name] }
        ],
        decode: (results) => toLease(name, rows(results[2])[0]!)
      }
    },
    renew: (name, identity, fence, ttl, payload) => ({
      request: renewing(leases, { name, identity, fence, ttl, payload }),
      decode: (results) => renewed(name, results, 0)
    }),
    // Each renewal's own two statements, all in one transaction sent as one
    // request: one round trip, each row under its own guard, as alone.
    renewAll: (renewals) => ({
      request: renewals.flatMap((renewal) => renewing(leases, renewal)),
      decode: (results) => renewals.map((renewal, i) => renewed(renewal.name, results, i))
    }),
    release: (name, identity, fence) => [{ sql: Sql.release(leases), values: held(name, identity, fence) }],
    inspect: (name) => ({
      request: [{ sql: Sql.inspect(leases), values: [name] }],
      decode: (results) => {
        const row = rows(results[0])[0]
        return row === undefined ? undefined : toLease(name, row)
      }
    }),
    inspectAll: (names) => ({
      request: [{ sql: Sql.inspectAll(leases, names.length), values: [...names] }],
      decode: (results) => Dialect.leasesOf(names, rows(results[0]), (row) => String(row["name"]), toLease)
    }),
    list: {
      request: [{ sql: Sql.list(leases), values: [] }],
      decode: (results) => rows(results[0]).map((row) => toLease(String(row["name"]), row))
    },
    advertise: (name, identity, { priority, version }, ttl) => {
      const us = Dialect.microseconds(ttl)
      return {
        request: [
          { sql: Sql.collectCandidates(candidates), values: [name, identity, us] },
          { sql: Sql.advertise(candidates), values: [name, identity, priority, version, us, priority, version, us] },
          { sql: Sql.liveCandidates(candidates), values: [name] }
        ],
        decode: (results) =>
          rows(results[2]).map((row) => {
            const { name: _, ...candidate } = toCandidate(row)
            return candidate
          })
      }
    },
    withdraw: (name, identity) => [{ sql: Sql.withdraw(candidates), values: [name, identity] }],
    candidates: {
      request: [{ sql: Sql.allCandidates(candidates), values: [] }],
      decode: (results) => rows(results[0]).map(toCandidate)
    }
  }),
  slots: (leases, slotTable) => {
    const lockLease = (name: string, identity: string, fence: bigint): Statement => ({
      sql: SlotSql.lockLease(leases),
      values: [identity, fence.toString(), name]
    })
    /** The server's now, when the locked lease row is the caller's. */
    const guard = (results: Result): Date | undefined => {
      const lease = rows(results[0])[0]
      return lease?.["held"] === "1" ? toNow(lease) : undefined
    }
    return {
      claim: (name, identity, fence, job, at, reclaim) => {
        const ms = at.getTime().toString()
        const f = fence.toString()
        return {
          request: [
            lockLease(name, identity, fence),
            {
              sql: SlotSql.upsert(slotTable, leases),
              values: [name, job, ms, f, ...held(name, identity, fence), reclaim, f, reclaim, f, f]
            },
            { sql: SlotSql.selectSlot(slotTable), values: [name, job, ms] }
          ],
          decode: (results) => {
            const now = guard(results)
            if (now === undefined) return undefined
            const slot = toSlot(rows(results[2])[0] ?? {})
            return { claimed: slot !== undefined && slot.fence === fence && slot.completedAt === null, slot, now }
          }
        }
      },
      complete: (name, identity, fence, job, at) => ({
        request: [
          lockLease(name, identity, fence),
          {
            sql: SlotSql.complete(slotTable, leases),
            values: [name, job, at.getTime().toString(), fence.toString(), ...held(name, identity, fence)]
          }
        ],
        decode: (results) => {
          const now = guard(results)
          return now === undefined || affectedRows(results[1]) === 0 ? undefined : now
        }
      }),
      last: (name, job) => ({
        request: [{ sql: SlotSql.last(slotTable), values: [name, job] }],
        decode: (results) => {
          const row = rows(results[0])[0] ?? {}
          return { now: toNow(row), slot: toSlot(row) }
        }
      })
    }
  }
}
