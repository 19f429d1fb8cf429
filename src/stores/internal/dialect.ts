/**
 * What a database gives the SQL store engine (`sqlStore.ts`), in two parts,
 * as `@effect/sql` splits a client's acquirer from its compiler:
 *
 * - a {@link Driver}: its pools and connections (a request of several
 *   statements runs as one transaction where the database needs one), the
 *   settings a pool of the store's own is opened with, and the verdict on its
 *   errors;
 * - its {@link Statements}: for each operation, the request and the decoding
 *   of its answer into the store's models, or into "no row" when the
 *   statement matched none.
 *
 * Neither decides what an answer means for the Store contract: the engine
 * turns "no row" into `LeaseLost` or `NoLease`, the same way for every
 * database. The helpers at the end are the dialects' common ground.
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import type * as Effect from "effect/Effect"
import type * as Either from "effect/Either"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import type { InvalidConfig } from "../../ElectorError.js"
import type { Lease } from "../../Lease.js"
import type { Candidate, SlotClaim, SlotRecord, SlotStore, StoreError, StoreShape, WakeUps } from "../../Store.js"
import type { Classification, OwnedPoolOptions } from "../SqlStore.js"
import type * as Batch from "./batch.js"
import type * as Call from "./call.js"

/**
 * One operation's request, and the decoding of what it answered. `Row` is
 * `X | undefined` for an operation the contract guards: `undefined` when the
 * statement matched no row (nothing held, nothing recorded).
 */
export interface Statement<Request, Result, Row> {
  readonly request: Request
  readonly decode: (result: Result) => Row
}

/** A lease table as `ensureSchema` upgrades it: quoted, and as the catalog names it. */
export interface LeaseTable {
  readonly quoted: string
  /** The `schema` option: the schema (PostgreSQL) or database (MySQL); `undefined` for the connection's. */
  readonly schema: string | undefined
  readonly name: string
}

/** The quoted, possibly schema-qualified tables of a store. */
export interface Tables {
  readonly leases: string
  readonly candidates: string
}

/**
 * The statements on the leases' and the candidates' tables, one per
 * operation of `Store`, each taking the operation's arguments (checked
 * already against the contract's limits).
 */
export interface LeaseStatements<Request, Result> {
  /** The resulting record, whoever holds it. */
  readonly acquire: (...args: Parameters<StoreShape["acquire"]>) => Statement<Request, Result, Lease>
  /** The renewed record; none when the guard matched nothing. */
  readonly renew: (...args: Parameters<StoreShape["renew"]>) => Statement<Request, Result, Lease | undefined>
  /**
   * Several renewals in one request (see `batch.ts`), each row under its own
   * guard: for each renewal, in order, the renewed record, or none.
   */
  readonly renewAll: (
    renewals: ReadonlyArray<Batch.Renewal>
  ) => Statement<Request, Result, ReadonlyArray<Lease | undefined>>
  /** Its answer carries nothing: releasing a lease no longer held succeeds. */
  readonly release: (...args: Parameters<StoreShape["release"]>) => Request
  /** The record; none when the election has none. */
  readonly inspect: (...args: Parameters<StoreShape["inspect"]>) => Statement<Request, Result, Lease | undefined>
  /**
   * Several elections' records in one statement (see `batch.ts`), each with
   * the now `inspect` would report: for each name, in order, its record, or
   * none.
   */
  readonly inspectAll: (names: ReadonlyArray<string>) => Statement<Request, Result, ReadonlyArray<Lease | undefined>>
  readonly list: Statement<Request, Result, ReadonlyArray<Lease>>
  readonly advertise: (
    ...args: Parameters<NonNullable<StoreShape["advertise"]>>
  ) => Statement<Request, Result, ReadonlyArray<Candidate>>
  readonly withdraw: (...args: Parameters<NonNullable<StoreShape["withdraw"]>>) => Request
  readonly candidates: Statement<Request, Result, ReadonlyArray<Candidate & { readonly name: string }>>
}

/** The statements on a slot table, each guarded by the caller's lease row: none when it is not held. */
export interface SlotStatements<Request, Result> {
  readonly claim: (...args: Parameters<SlotStore["claim"]>) => Statement<Request, Result, SlotClaim | undefined>
  /** The database's now; none when the lease or the slot's fence is not the caller's. */
  readonly complete: (...args: Parameters<SlotStore["complete"]>) => Statement<Request, Result, Date | undefined>
  readonly last: (
    ...args: Parameters<SlotStore["last"]>
  ) => Statement<Request, Result, { readonly now: Date; readonly slot: SlotRecord | undefined }>
}

/** What a database's SQL is: names, tables and one statement per operation. */
export interface Statements<Request, Result> {
  /** Checks `name` as an identifier and quotes it; a refusal names `field`. */
  readonly identifier: (field: string, name: string) => Either.Either<string, InvalidConfig>
  /**
   * The DDL of each table, for an already quoted name, and `upgrade`: what a
   * lease table made by an older release lacks, for migration tools.
   */
  readonly ddl: {
    readonly leases: (table: string) => string
    readonly upgrade: (table: string) => string
    readonly slots: (table: string) => string
    readonly candidates: (table: string) => string
  }
  /** A request that runs one statement without parameters (the DDL). */
  readonly script: (sql: string) => Request
  /**
   * How `ensureSchema` brings a lease table an older release made up to
   * date, in place, beside running electors of both releases: the check
   * reads the catalog (so a role that may not alter the table passes once it
   * is up to date) and answers the DDL requests still to run, in order, none
   * when there is nothing to add. Each waits for the table's lock a moment
   * at most and fails with a retryable error rather than stall the running
   * electors' statements queued behind it.
   */
  readonly upgrade: (table: LeaseTable) => Statement<Request, Result, ReadonlyArray<Request>>
  /** Errors of DDL racing another replica's: what it creates or adds is there. */
  readonly alreadyThere?: (error: StoreError) => boolean
  /** The statements of a store's tables, whose calls are bounded by `timeout`. */
  readonly leases: (tables: Tables, timeout: Duration.Duration) => LeaseStatements<Request, Result>
  /** The statements of `slotTable`, guarded by the rows of `leases`. */
  readonly slots: (leases: string, slotTable: string) => SlotStatements<Request, Result>
}

/**
 * What a database's driver is to the engine. `Pool` is the driver's pool,
 * `Connection` one of its connections, `Settings` what a pool is opened
 * with, `Client` the app's `@effect/sql` client and `Owned` the options of a
 * pool the store owns.
 */
export interface Driver<Pool, Connection, Request, Result, Settings, Client, Owned extends OwnedPoolOptions> {
  /** The connections of `pool`, as the engine's calls use them. */
  readonly connections: (pool: Pool) => Call.Driver<Connection, Request, Result>
  /** The pool's size, which bounds the store's calls in flight. */
  readonly capacity: (pool: Pool) => number
  /** Why the store cannot run on the app's `pool`, or `undefined` when it can. */
  readonly poolProblem: (pool: Pool) => string | undefined
  /** The verdict on an error of the driver, the pool, the server or the store's own calls. */
  readonly classify: (error: unknown) => Classification
  /** The connection settings of a URL; a refusal never echoes it. */
  readonly fromUrl: (url: string) => Either.Either<Settings, InvalidConfig>
  /** The connection settings of the app's client in context (the store never loads its package). */
  readonly fromClient: Effect.Effect<Settings, InvalidConfig, Client>
  /** The settings of a pool the store owns: `settings` with the dialect's options and the store's bounds. */
  readonly ownPool: (
    settings: Settings,
    options: Partial<Owned>,
    maxConnections: number,
    timeout: Duration.Duration
  ) => Either.Either<Settings, InvalidConfig>
  readonly openPool: (settings: Settings) => Pool
  /** Ends `pool`, calling `done` once every connection is closed. */
  readonly endPool: (pool: Pool, done: () => void) => void
  /**
   * Optional: the wake-up hints of a store that owns its pool, heard for the
   * scope on a connection of their own, when its `options` ask for them.
   */
  readonly listen?: (
    settings: Settings,
    options: Partial<Owned>,
    table: string,
    timeout: Duration.Duration
  ) => Effect.Effect<WakeUps | undefined, InvalidConfig, Scope.Scope>
}

/** A `Redacted` value's text, or `undefined`. */
export const revealOptional = (value: Redacted.Redacted | undefined): string | undefined =>
  value === undefined ? undefined : Redacted.value(value)

/** exactOptionalPropertyTypes: driver options are optional, never `undefined`. */
export const definedOnly = <A extends Record<string, unknown>>(
  record: A
): { [K in keyof A]?: Exclude<A[K], undefined> } =>
  Object.fromEntries(Object.entries(record).filter(([, value]) => value !== undefined)) as {
    [K in keyof A]?: Exclude<A[K], undefined>
  }

/** A TTL in whole microseconds, as text: the unit both databases' interval arithmetic takes. */
export const microseconds = (ttl: Duration.Duration): string => (Duration.unsafeToNanos(ttl) / 1000n).toString()

/** A payload as the drivers send bytes, without a copy. */
export const bytes = (payload: Uint8Array | null): Buffer | null =>
  payload === null ? null : Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength)

/** A renewal's guard as one key: a batch's answers matched to its renewals. */
export const guardOf = (name: string, holder: string, fence: bigint): string =>
  JSON.stringify([name, holder, fence.toString()])

/** Rows of several elections, in no order, as `inspectAll` answers them: for each of `names`, in order, its lease or none. */
export const leasesOf = <Row>(
  names: ReadonlyArray<string>,
  rows: ReadonlyArray<Row>,
  nameOf: (row: Row) => string,
  toLease: (name: string, row: Row) => Lease
): ReadonlyArray<Lease | undefined> => {
  const found = new Map(rows.map((row) => [nameOf(row), row]))
  return names.map((name) => {
    const row = found.get(name)
    return row === undefined ? undefined : toLease(name, row)
  })
}
