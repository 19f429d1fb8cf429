/**
 * PostgreSQL's statements for the SQL store engine (`internal/sqlStore.ts`):
 * for each operation, the request (the SQL of `sql.ts` and `slots.ts` with
 * its parameters) and the decoding of its rows.
 *
 * Every statement is unnamed (pg only names one when the query config carries
 * a `name`, and these never do), so it is safe behind a transaction-pooling
 * proxy; parameters go as text or bytes and every column comes back as text,
 * so no type parser configured on the pool changes what is sent or decoded.
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Either from "effect/Either"
import type { QueryResult } from "pg"
import type { Lease } from "../../Lease.js"
import type { Candidate, SlotRecord, StoreError } from "../../Store.js"
import * as Dialect from "../internal/dialect.js"
import { quoteIdentifier, validateIdentifier } from "./config.js"
import * as Hints from "./hints.js"
import * as Slots from "./slots.js"
import * as Sql from "./sql.js"

/**
 * Parameters are always sent as text or bytes (an array: of text, which pg
 * writes as an array literal), so the pool's type config cannot change them.
 */
type Param = string | Buffer | null | ReadonlyArray<string | null>

/** Every column a store statement returns is text (or null): decoding is ours alone. */
export type Row = Readonly<Record<string, string | null>>

/** A statement and its parameters. */
export interface Request {
  readonly text: string
  readonly values: Array<Param>
}

/** What a request answers. */
export type Result = QueryResult<Row>

const text = (row: Row, column: string): string => row[column] ?? ""

const instant = (row: Row, column: string): Date => new Date(Number(text(row, column)))

const toLease = (row: Row): Lease => {
  const payload = row["payload"] ?? null
  const incarnation = row["incarnation"] ?? null
  return {
    name: text(row, "name"),
    holder: text(row, "holder"),
    ...(incarnation === null ? {} : { incarnation }),
    fence: BigInt(text(row, "fence")),
    payload: payload === null ? null : new Uint8Array(Buffer.from(payload, "hex")),
    acquiredAt: instant(row, "acquired_at"),
    renewedAt: instant(row, "renewed_at"),
    expiresAt: instant(row, "expires_at"),
    now: instant(row, "now")
  }
}

const toSlot = (row: Row): SlotRecord | undefined => {
  const completed = row["completed_at"] ?? null
  return row["slot_ms"] === null || row["slot_ms"] === undefined ? undefined : {
    job: text(row, "job"),
    at: instant(row, "slot_ms"),
    fence: BigInt(text(row, "slot_fence")),
    startedAt: instant(row, "started_at"),
    completedAt: completed === null ? null : new Date(Number(completed))
  }
}

const toCandidate = (row: Row): Candidate => ({
  identity: text(row, "identity"),
  priority: Number(text(row, "priority")),
  version: row["version"] ?? null,
  aliveFor: Duration.millis(Number(text(row, "alive_for"))),
  ttl: Duration.millis(Number(text(row, "ttl")))
})

const request = (text: string, values: Array<Param>): Request => ({ text, values })

/** The lease of the first row, or none. */
const leaseOrNone = ({ rows }: Result): Lease | undefined => rows[0] === undefined ? undefined : toLease(rows[0])

/** The PostgreSQL statements. */
export const statements: Dialect.Statements<Request, Result> = {
  identifier: (field, name) => Either.map(validateIdentifier(field, name), quoteIdentifier),
  ddl: { leases: Sql.ddl, upgrade: Sql.upgrade, slots: Slots.ddl, candidates: Sql.candidatesDdl },
  script: (text) => request(text, []),
  upgrade: ({ quoted }) => ({
    request: request(Sql.upgraded, [quoted]),
    decode: ({ rows }) => rows[0]?.["present"] === "2" ? [] : [request(Sql.upgrading(quoted), [])]
  }),
  alreadyThere: (error: StoreError) => error.code === "23505" || error.code === "42P07" || error.code === "42710",
  leases: (tables, timeout) => {
    const sql = Sql.statements(tables.leases, Sql.lockTimeoutFor(timeout))
    const release = Hints.notifying(sql.release, Hints.channelOf(tables.leases))
    const candidates = Sql.candidateStatements(tables.candidates)
    return {
      acquire: (name, identity, ttl, payload, incarnation) => ({
        request: request(sql.acquire, [
          name,
          identity,
          Dialect.microseconds(ttl),
          Dialect.bytes(payload),
          incarnation ?? null
        ]),
        decode: ({ rows }) => toLease(rows[0] ?? {})
      }),
      renew: (name, identity, fence, ttl, payload) => ({
        request: request(sql.renew, [
          name,
          identity,
          fence.toString(),
          Dialect.microseconds(ttl),
          Dialect.bytes(payload)
        ]),
        decode: leaseOrNone
      }),
      // The rows renewed come back in no order: each is matched to its
      // renewal by its whole guard, so one election renewed twice in a batch
      // under two holders still answers each its own.
      renewAll: (renewals) => ({
        request: request(sql.renewAll, [
          renewals.map((renewal) => renewal.name),
          renewals.map((renewal) => renewal.identity),
          renewals.map((renewal) => renewal.fence.toString()),
          renewals.map((renewal) => Dialect.microseconds(renewal.ttl)),
          renewals.map((renewal) => Dialect.bytes(renewal.payload)?.toString("hex") ?? null)
        ]),
        decode: ({ rows }) => {
          const renewed = new Map(rows.map((row) => {
            const lease = toLease(row)
            return [Dialect.guardOf(lease.name, lease.holder, lease.fence), lease]
          }))
          return renewals.map((renewal) => renewed.get(Dialect.guardOf(renewal.name, renewal.identity, renewal.fence)))
        }
      }),
      release: (name, identity, fence) => request(release, [name, identity, fence.toString()]),
      inspect: (name) => ({ request: request(sql.inspect, [name]), decode: leaseOrNone }),
      inspectAll: (names) => ({
        request: request(sql.inspectAll, [names]),
        decode: ({ rows }) => Dialect.leasesOf(names, rows, (row) => text(row, "name"), (_, row) => toLease(row))
      }),
      list: { request: request(sql.list, []), decode: ({ rows }) => rows.map(toLease) },
      advertise: (name, identity, { priority, version }, ttl) => ({
        request: request(candidates.advertise, [name, identity, String(priority), Dialect.microseconds(ttl), version]),
        decode: ({ rows }) => rows.map(toCandidate)
      }),
      withdraw: (name, identity) => request(candidates.withdraw, [name, identity]),
      candidates: {
        request: request(candidates.candidates, []),
        decode: ({ rows }) => rows.map((row) => ({ name: text(row, "name"), ...toCandidate(row) }))
      }
    }
  },
  slots: (leases, slotTable) => {
    const sql = Slots.statements(leases, slotTable)
    return {
      claim: (name, identity, fence, job, at, reclaim) => ({
        request: request(sql.claim, [
          name,
          identity,
          fence.toString(),
          job,
          at.getTime().toString(),
          reclaim.toString()
        ]),
        decode: ({ rows }) => {
          const row = rows[0] ?? {}
          return row["held"] !== "true"
            ? undefined
            : { claimed: row["claimed"] === "true", slot: toSlot(row), now: instant(row, "now") }
        }
      }),
      complete: (name, identity, fence, job, at) => ({
        request: request(sql.complete, [name, identity, fence.toString(), job, at.getTime().toString()]),
        decode: ({ rows }) => rows[0] === undefined ? undefined : instant(rows[0], "now")
      }),
      last: (name, job) => ({
        request: request(sql.last, [name, job]),
        decode: ({ rows }) => {
          const row = rows[0] ?? {}
          return { now: instant(row, "now"), slot: toSlot(row) }
        }
      })
    }
  }
}
