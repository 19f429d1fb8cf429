/**
 * PostgreSQL for the SQL store engine (`internal/sqlStore.ts`): node-postgres
 * as the driver, the statements of `sql.ts` and `slots.ts`, and the decoding
 * of their rows.
 *
 * A call's connection is checked out of a `pg.Pool` and given back through
 * `release(error)`, which makes pg-pool drop it and pg destroy its socket when
 * the call failed at the transport level or never answered: a wedged
 * connection is never handed out again. (`@effect/sql-pg` would answer an
 * interruption with `pg_cancel_backend` on another connection, wait up to
 * 5 s, then hand the same connection back to the pool, where the next query
 * queues behind the one that hung; behind PgBouncer the pid it cancels is not
 * even a backend.)
 *
 * Every statement is unnamed (pg only names one when the query config carries
 * a `name`, and these never do), so it is safe behind a transaction-pooling
 * proxy; parameters go as text or bytes and every column comes back as text,
 * so no type parser configured on the pool changes what is sent or decoded.
 *
 * @internal
 */
import type * as PgClient from "@effect/sql-pg/PgClient"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { constVoid } from "effect/Function"
import * as Redacted from "effect/Redacted"
import type { Pool, PoolClient, PoolConfig, QueryResult } from "pg"
import { InvalidConfig } from "../../ElectorError.js"
import * as limits from "../../internal/config/limits.js"
import { stackless } from "../../internal/runtime/stackless.js"
import * as WakeUps from "../../internal/runtime/wakeUps.js"
import type { Lease } from "../../Lease.js"
import { type Candidate, LeaseLost, NoLease, type SlotRecord, type StoreError } from "../../Store.js"
import * as Rules from "../internal/rules.js"
import * as SqlStore from "../internal/sqlStore.js"
import { toStoreError } from "./classify.js"
import { quoteIdentifier, validateIdentifier, validateUrl } from "./config.js"
import { Pg } from "./driver.js"
import * as Hints from "./hints.js"
import * as Slots from "./slots.js"
import { candidatesDdl, candidateStatements, ddl, lockTimeoutFor, statements } from "./sql.js"

/** Parameters are always sent as text or bytes, so the pool's type config cannot change them. */
type Param = string | Buffer | null

/** Every column a store statement returns is text (or null): decoding is ours alone. */
type Row = Readonly<Record<string, string | null>>

/** A statement and its parameters. */
interface Request {
  readonly text: string
  readonly values: Array<Param>
}

/** The options of a pool the store owns. */
export interface OwnedOptions extends SqlStore.OwnedPoolOptions {
  /** An idle connection is closed after this long. Defaults to 30 seconds. */
  readonly idleTimeout?: Duration.DurationInput | undefined
  /** No connection is used for longer than this. Defaults to 5 minutes. */
  readonly maxLifetime?: Duration.DurationInput | undefined
  /**
   * Wake-up hints (see `Store.WakeUps`): on a release, this process's
   * followers of the election claim at once instead of at their next poll,
   * so a clean handover takes one round trip. It opens ONE more connection,
   * for the store's life, that runs `LISTEN`: `true` when the store's own
   * URL reaches PostgreSQL directly; `{ url }`, a direct URL, when it goes
   * through a transaction pooler such as PgBouncer, which cannot keep a
   * `LISTEN` (the releases' `pg_notify` goes through it). A hint decides
   * nothing; a lost listening connection is logged, counted
   * (`Metrics.hintListenerLosses`) and retried while followers poll.
   * Defaults to off.
   */
  readonly listen?: boolean | { readonly url: string | Redacted.Redacted<string> } | undefined
}

const text = (row: Row, column: string): string => row[column] ?? ""

const instant = (row: Row, column: string): Date => new Date(Number(text(row, column)))

const toLease = (row: Row): Lease => {
  const payload = row["payload"] ?? null
  return {
    name: text(row, "name"),
    holder: text(row, "holder"),
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

/** The PostgreSQL dialect. */
export const dialect: SqlStore.Dialect<
  Pool,
  PoolClient,
  Request,
  QueryResult<Row>,
  PoolConfig,
  PgClient.PgClient,
  OwnedOptions
> = {
  identifier: (field, name) => Either.map(validateIdentifier(field, name), quoteIdentifier),
  ddl: { leases: ddl, slots: Slots.ddl, candidates: candidatesDdl },
  statement: (text) => ({ text, values: [] }),
  lostCreateRace: (error: StoreError) => error.code === "23505" || error.code === "42P07" || error.code === "42710",
  toStoreError,
  operations: (run, tables, timeout) => {
    const sql = statements(tables.leases, lockTimeoutFor(timeout))
    const release = Hints.notifying(sql.release, Hints.channelOf(tables.leases))
    const candidateSql = candidateStatements(tables.candidates)
    const request = (text: string, values: Array<Param>): Request => ({ text, values })
    const toLeaseOr = <E>(lost: () => E) => (result: QueryResult<Row>) =>
      result.rows[0] === undefined ? Effect.fail(lost()) : Effect.succeed(toLease(result.rows[0]))
    const held = (name: string, identity: string, fence: bigint) => () => new LeaseLost({ name, identity, fence })
    return {
      acquire: (name, identity, ttl, payload) =>
        run(
          "acquire",
          request(sql.acquire, [name, identity, SqlStore.microseconds(ttl), SqlStore.bytes(payload)]),
          (result) => Effect.succeed(toLease(result.rows[0] ?? {}))
        ),
      renew: (name, identity, fence, ttl, payload) =>
        run(
          "renew",
          request(sql.renew, [name, identity, fence.toString(), SqlStore.microseconds(ttl), SqlStore.bytes(payload)]),
          toLeaseOr(held(name, identity, fence))
        ),
      release: (name, identity, fence) =>
        run("release", request(release, [name, identity, fence.toString()]), () => Effect.void),
      // Stackless: an empty election answers every poll with it.
      inspect: (name) =>
        run("inspect", request(sql.inspect, [name]), toLeaseOr(() => stackless(() => new NoLease({ name })))),
      list: run("inspect", request(sql.list, []), (result) => Effect.succeed(result.rows.map(toLease))),
      advertise: (name, identity, { priority, version }, ttl) =>
        run(
          "advertise",
          request(candidateSql.advertise, [name, identity, String(priority), SqlStore.microseconds(ttl), version]),
          (result) => Effect.succeed(result.rows.map(toCandidate))
        ),
      withdraw: (name, identity) =>
        run("withdraw", request(candidateSql.withdraw, [name, identity]), () => Effect.void),
      candidates: run(
        "inspect",
        request(candidateSql.candidates, []),
        (result) => Effect.succeed(result.rows.map((row) => ({ name: text(row, "name"), ...toCandidate(row) })))
      ),
      slots: (slotTable) => {
        const slotSql = Slots.statements(tables.leases, slotTable)
        return {
          claim: (name, identity, fence, job, at, reclaim) =>
            run(
              "claimSlot",
              request(slotSql.claim, [
                name,
                identity,
                fence.toString(),
                job,
                at.getTime().toString(),
                reclaim.toString()
              ]),
              (result) => {
                const row = result.rows[0] ?? {}
                return row["held"] !== "true"
                  ? Effect.fail(held(name, identity, fence)())
                  : Effect.succeed({ claimed: row["claimed"] === "true", slot: toSlot(row), now: instant(row, "now") })
              }
            ),
          complete: (name, identity, fence, job, at) =>
            run(
              "completeSlot",
              request(slotSql.complete, [name, identity, fence.toString(), job, at.getTime().toString()]),
              (result) =>
                result.rows[0] === undefined
                  ? Effect.fail(held(name, identity, fence)())
                  : Effect.succeed(instant(result.rows[0], "now"))
            ),
          last: (name, job) =>
            run("lastSlot", request(slotSql.last, [name, job]), (result) => {
              const row = result.rows[0] ?? {}
              return Effect.succeed({ now: instant(row, "now"), slot: toSlot(row) })
            })
        }
      }
    }
  },
  // pg-pool fills in its default size (10) when none was given.
  capacity: (pool) => pool.options.max ?? 10,
  driver: (pool) => ({
    connect: (callback) => pool.connect((error, client) => callback(error ?? undefined, client)),
    run: (client, { text, values }, callback) => {
      // pg also reports socket failures to the active query's callback, which
      // is where they are handled; without a listener they would crash the process.
      client.on("error", constVoid)
      client.query<Row>({ text, values }, (error, result) => {
        client.off("error", constVoid)
        callback(error ?? undefined, result)
      })
    },
    // An answer, even a server-reported error, leaves the connection in sync
    // and reusable; anything else (a dead socket, no answer) means it must go.
    release: (client, error) => client.release(error instanceof Pg.DatabaseError ? undefined : error)
  }),
  poolProblem: () => undefined,
  parseUrl: (url) => Either.map(validateUrl(url), (connectionString) => ({ connectionString })),
  // PgStore never loads `@effect/sql-pg` at run time (only `pg`). Its
  // declarations do name `PgClient`'s types, so a PgStore app installs
  // `@effect/sql-pg` for its type-check (README, Install).
  client: Context.GenericTag<PgClient.PgClient>("@effect/sql-pg/PgClient"),
  clientSettings: ({ config }) =>
    Either.right(SqlStore.definedOnly({
      connectionString: SqlStore.revealOptional(config.url),
      host: config.host,
      port: config.port,
      database: config.database,
      user: config.username,
      password: SqlStore.revealOptional(config.password),
      ssl: config.ssl,
      stream: config.stream
    })),
  ownPool: (settings, options, max, timeout) =>
    Either.all([
      limits.duration("idleTimeout", options.idleTimeout ?? Duration.seconds(30)),
      limits.duration("maxLifetime", options.maxLifetime ?? Duration.minutes(5))
    ]).pipe(Either.map(([idle, lifetime]) => ({
      ...settings,
      max,
      idleTimeoutMillis: Duration.toMillis(idle),
      maxLifetimeSeconds: Duration.toSeconds(lifetime),
      // A connection attempt the store gave up on is abandoned by the pool when its grace ends.
      connectionTimeoutMillis: Duration.toMillis(Rules.grace(timeout)),
      keepAlive: true,
      application_name: "effect-leaderelection"
    }))),
  openPool: (settings) => new Pg.Pool(settings).on("error", constVoid),
  endPool: (pool, done) => void pool.end().then(done, done),
  listen: (settings, { listen }, table, timeout) =>
    Effect.gen(function*() {
      if (listen === undefined || listen === false) return undefined
      const direct: PoolConfig = listen === true ? settings : {
        connectionString: yield* Either.mapLeft(
          validateUrl(Redacted.isRedacted(listen.url) ? Redacted.value(listen.url) : listen.url),
          ({ reason }) => new InvalidConfig({ field: "listen.url", reason })
        )
      }
      const hints = WakeUps.make()
      yield* Hints.listen(direct, Hints.channelOf(table), hints, timeout)
      return { subscribe: hints.subscribe }
    })
}
