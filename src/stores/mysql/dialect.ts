/**
 * MySQL / MariaDB for the SQL store engine (`internal/sqlStore.ts`): mysql2
 * as the driver, the statements of `statements.ts` and `slots.ts`, and the
 * decoding of their rows.
 *
 * A mysql2 query cannot be cancelled: the connection stays busy until the
 * server answers, which a hung server or a blackholed path never does, and
 * the pool behind `@effect/sql-mysql2` takes such a connection back once the
 * query returns, if it ever does. Here a connection goes back to the pool
 * only if its request succeeded; on an error, or silence past its grace, it
 * is destroyed, which also makes the server roll back whatever transaction it
 * had open. Nothing a failed call did can survive it.
 *
 * A transaction (`acquire`, `renew`, a slot write, `advertise`) is sent as
 * ONE request, its statements separated by `;`, when the pool's connections
 * allow several statements per request (the store's own pools do): one round
 * trip per operation. On a caller's pool that does not, the statements go one
 * by one on the same connection. Either way the request carries no `SET` and
 * no user variable, and its last statement is the `COMMIT`.
 *
 * Statements go through mysql2's `query` (COM_QUERY, values escaped by the
 * driver), never `execute`: server-side prepared statements live in the
 * session, which a multiplexing proxy such as ProxySQL has to pin or track.
 *
 * @internal
 */
import type * as MysqlClient from "@effect/sql-mysql2/MysqlClient"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Predicate from "effect/Predicate"
import * as Redacted from "effect/Redacted"
import type * as Mysql from "mysql2"
import { createRequire } from "node:module"
import * as limits from "../../internal/config/limits.js"
import { stackless } from "../../internal/runtime/stackless.js"
import { LeaseLost, NoLease, type Operation, StoreError } from "../../Store.js"
import * as SqlStore from "../internal/sqlStore.js"
import { classify } from "./classify.js"
import { identifier, parseUrl } from "./config.js"
import { Mysql as Driver } from "./driver.js"
import * as SlotSql from "./slots.js"
import * as Sql from "./statements.js"

/** One statement and its values, escaped by the driver. */
interface Statement {
  readonly sql: string
  readonly values: ReadonlyArray<unknown>
}

/** The options of a pool the store owns. */
export interface OwnedOptions extends SqlStore.OwnedPoolOptions {
  /** Bound on opening one connection, handshake included. Defaults to 5 seconds. */
  readonly connectTimeout?: Duration.DurationInput | undefined
}

// Per query, so that a caller's pool configured otherwise decodes the
// store's rows the way the store reads them.
const decoding = { rowsAsArray: false, nestTables: false } as const

const send = (
  connection: Mysql.PoolConnection,
  statements: ReadonlyArray<Statement>,
  together: boolean,
  callback: (error: Error | undefined, results: ReadonlyArray<unknown>) => void
): void => {
  if (together) {
    const sql = statements.map((statement) => statement.sql).join(";\n")
    const values = statements.flatMap((statement) => statement.values)
    // Several statements answer with one result each, in order.
    connection.query(
      { sql, values, ...decoding },
      (error, result) => callback(error ?? undefined, result as ReadonlyArray<unknown>)
    )
    return
  }
  const results: Array<unknown> = []
  const next = (statement: Statement | undefined): void => {
    if (statement === undefined) return callback(undefined, results)
    connection.query({ sql: statement.sql, values: [...statement.values], ...decoding }, (error, result) => {
      if (error !== null) return callback(error, results)
      results.push(result)
      next(statements[results.length])
    })
  }
  next(statements[0])
}

/**
 * The collation ids of utf8mb4. mysql2 exposes its table through a getter on
 * its CommonJS exports, which an ES module namespace import does not see; it
 * is read on first use, from a pool that already proves mysql2 is installed.
 */
const utf8mb4 = (): ReadonlySet<number> => {
  const { Charsets } = createRequire(import.meta.url)("mysql2") as { readonly Charsets: Record<string, number> }
  return new Set(Object.entries(Charsets).flatMap(([name, id]) => name.toLowerCase().startsWith("utf8mb4") ? [id] : []))
}

/** The connection settings mysql2 derived from a pool's options; not in its typings. */
interface ConnectionSettings {
  readonly charsetNumber?: number
  readonly clientFlags?: number
  readonly multipleStatements?: boolean
}

const settingsOf = (pool: Mysql.Pool): ConnectionSettings =>
  (pool.config as { readonly connectionConfig?: ConnectionSettings }).connectionConfig ?? {}

const rows = (result: unknown): ReadonlyArray<Record<string, unknown>> =>
  Array.isArray(result) ? result.filter(Predicate.isRecord) : []

const affectedRows = (result: unknown): number =>
  Predicate.isRecord(result) && typeof result["affectedRows"] === "number" ? result["affectedRows"] : 0

const begin: Statement = { sql: "START TRANSACTION", values: [] }
const commit: Statement = { sql: "COMMIT", values: [] }

/** The MySQL / MariaDB dialect. */
export const dialect: SqlStore.Dialect<
  Mysql.Pool,
  Mysql.PoolConnection,
  ReadonlyArray<Statement>,
  ReadonlyArray<unknown>,
  Mysql.PoolOptions,
  MysqlClient.MysqlClient,
  OwnedOptions
> = {
  identifier,
  ddl: { leases: Sql.createTable, slots: SlotSql.createTable, candidates: Sql.createCandidatesTable },
  statement: (sql) => [{ sql, values: [] }],
  toStoreError: (operation: Operation, cause: unknown) =>
    stackless(() => new StoreError({ operation, ...classify(cause), cause })),
  operations: (run, { candidates, leases }) => {
    // One statement, one request: its result.
    const one = <B, E = never>(
      operation: Operation,
      sql: string,
      values: ReadonlyArray<unknown>,
      answer: (result: unknown) => Effect.Effect<B, E | StoreError>
    ) => run(operation, [{ sql, values }], (results) => answer(results[0]))
    // One short transaction on one connection: the write, then the row read
    // back under the write's lock (it is there: the store never deletes one),
    // then COMMIT. The connection, and with it the open transaction, is
    // destroyed if anything fails.
    const transaction = <B, E = never>(
      operation: Operation,
      statements: ReadonlyArray<Statement>,
      answer: (results: ReadonlyArray<unknown>) => Effect.Effect<B, E | StoreError>
    ) => run(operation, [begin, ...statements, commit], (results) => answer(results.slice(1)))
    // A slot write: the caller's lease row read under FOR UPDATE (its guard
    // and the server's now; the lock holds a successor's takeover off until
    // the end), the write, guarded again inside its own statement, then COMMIT.
    const guarded = <B>(
      operation: "claimSlot" | "completeSlot",
      name: string,
      identity: string,
      fence: bigint,
      writes: ReadonlyArray<Statement>,
      answer: (now: Date, results: ReadonlyArray<unknown>) => Effect.Effect<B, LeaseLost>
    ) =>
      transaction(
        operation,
        [{ sql: SlotSql.lockLease(leases), values: [identity, fence.toString(), name] }, ...writes],
        (results) => {
          const lease = rows(results[0])[0]
          return lease?.["held"] === "1"
            ? answer(SlotSql.toNow(lease), results.slice(1))
            : Effect.fail(new LeaseLost({ name, identity, fence }))
        }
      )
    const held = (name: string, identity: string, fence: bigint) => [name, identity, fence.toString()]
    return {
      acquire: (name, identity, ttl, payload) => {
        const us = SqlStore.microseconds(ttl)
        const data = SqlStore.bytes(payload)
        return transaction("acquire", [
          {
            sql: Sql.upsert(leases),
            values: [name, identity, us, data, identity, data, identity, identity, identity, us]
          },
          { sql: Sql.selectAfterUpsert(leases), values: [identity, name] }
        ], (results) => Effect.succeed(Sql.toLease(name, rows(results[1])[0]!)))
      },
      // The read-back of a renewal that matched nothing reads someone else's
      // row, or none: it is not decoded. Committing a write that changed
      // nothing is harmless.
      renew: (name, identity, fence, ttl, payload) =>
        transaction("renew", [
          {
            sql: Sql.renew(leases),
            values: [SqlStore.bytes(payload), SqlStore.microseconds(ttl), name, identity, fence.toString()]
          },
          { sql: Sql.selectAfterRenew(leases), values: [name] }
        ], (results) =>
          affectedRows(results[0]) === 0
            ? Effect.fail(new LeaseLost({ name, identity, fence }))
            : Effect.succeed(Sql.toLease(name, rows(results[1])[0]!))),
      release: (name, identity, fence) =>
        one("release", Sql.release(leases), held(name, identity, fence), () => Effect.void),
      inspect: (name) =>
        one("inspect", Sql.inspect(leases), [name], (result) => {
          const row = rows(result)[0]
          // Stackless: an empty election answers every poll with it.
          return row === undefined
            ? Effect.fail(stackless(() => new NoLease({ name })))
            : Effect.succeed(Sql.toLease(name, row))
        }),
      list: one(
        "inspect",
        Sql.list(leases),
        [],
        (result) => Effect.succeed(rows(result).map((row) => Sql.toLease(String(row["name"]), row)))
      ),
      advertise: (name, identity, { priority, version }, ttl) => {
        const us = SqlStore.microseconds(ttl)
        return transaction("advertise", [
          { sql: Sql.collectCandidates(candidates), values: [name, identity, us] },
          { sql: Sql.advertise(candidates), values: [name, identity, priority, version, us, priority, version, us] },
          { sql: Sql.liveCandidates(candidates), values: [name] }
        ], (results) =>
          Effect.succeed(
            rows(results[2]).map((row) => {
              const { name: _, ...candidate } = Sql.toCandidate(row)
              return candidate
            })
          ))
      },
      withdraw: (name, identity) => one("withdraw", Sql.withdraw(candidates), [name, identity], () => Effect.void),
      candidates: one(
        "inspect",
        Sql.allCandidates(candidates),
        [],
        (result) => Effect.succeed(rows(result).map(Sql.toCandidate))
      ),
      slots: (slotTable) => ({
        claim: (name, identity, fence, job, at, reclaim) => {
          const ms = at.getTime().toString()
          const f = fence.toString()
          return guarded("claimSlot", name, identity, fence, [
            {
              sql: SlotSql.upsert(slotTable, leases),
              values: [name, job, ms, f, ...held(name, identity, fence), reclaim, f, reclaim, f, f]
            },
            { sql: SlotSql.selectSlot(slotTable), values: [name, job, ms] }
          ], (now, results) => {
            const slot = SlotSql.toSlot(rows(results[1])[0] ?? {})
            return Effect.succeed({
              claimed: slot !== undefined && slot.fence === fence && slot.completedAt === null,
              slot,
              now
            })
          })
        },
        complete: (name, identity, fence, job, at) =>
          guarded("completeSlot", name, identity, fence, [
            {
              sql: SlotSql.complete(slotTable, leases),
              values: [name, job, at.getTime().toString(), fence.toString(), ...held(name, identity, fence)]
            }
          ], (now, results) =>
            affectedRows(results[0]) === 0
              ? Effect.fail(new LeaseLost({ name, identity, fence }))
              : Effect.succeed(now)),
        last: (name, job) =>
          one("lastSlot", SlotSql.last(slotTable), [name, job], (result) => {
            const row = rows(result)[0] ?? {}
            return Effect.succeed({ now: SlotSql.toNow(row), slot: SlotSql.toSlot(row) })
          })
      })
    }
  },
  // mysql2 fills in its default limit (10) when none was given.
  capacity: (pool) => pool.config.connectionLimit ?? 10,
  driver: (pool) => {
    const severalPerRequest = settingsOf(pool).multipleStatements === true
    return {
      connect: (callback) =>
        pool.getConnection((error, connection) =>
          callback(error ?? undefined, error === null ? connection : undefined)
        ),
      run: (connection, statements, callback) =>
        send(connection, statements, severalPerRequest && statements.length > 1, callback),
      // Only a request that succeeded is known to have left no transaction open.
      release: (connection, error) => error === undefined ? connection.release() : connection.destroy()
    }
  },
  // Names and identities are sent and read back as utf8mb4 text: under
  // another connection charset two different identities could reach the
  // server as the same bytes. And `renew` counts matched rows (FOUND_ROWS),
  // not changed ones.
  poolProblem: (pool) => {
    const settings = settingsOf(pool)
    if (settings.charsetNumber === undefined || !utf8mb4().has(settings.charsetNumber)) {
      return "its connections must use a utf8mb4 charset (mysql2's default)"
    }
    // The client capability flag CLIENT_FOUND_ROWS.
    if (((settings.clientFlags ?? 0) & 2) === 0) {
      return "its connections must keep the FOUND_ROWS flag (mysql2's default)"
    }
    return undefined
  },
  parseUrl,
  // Found by its key: MysqlStore never loads `@effect/sql-mysql2`, which an
  // app that hands it no `MysqlClient` need not install.
  client: Context.GenericTag<MysqlClient.MysqlClient>("@effect/sql-mysql2/MysqlClient"),
  clientSettings: ({ config }) =>
    Either.map(
      config.url === undefined
        ? Either.right(SqlStore.definedOnly({
          host: config.host,
          port: config.port,
          database: config.database,
          user: config.username,
          password: SqlStore.revealOptional(config.password)
        }))
        : parseUrl(Redacted.value(config.url)),
      (connection) => ({ ...config.poolConfig, ...connection })
    ),
  ownPool: (settings, options, connectionLimit) =>
    Either.map(limits.duration("connectTimeout", options.connectTimeout ?? Duration.seconds(5)), (connectTimeout) => ({
      ...settings,
      connectionLimit,
      maxIdle: connectionLimit,
      waitForConnections: true,
      connectTimeout: Duration.toMillis(connectTimeout),
      enableKeepAlive: true,
      // The statements rely on these; a caller's poolConfig must not undo them.
      // mysql2 looks its charsets up in upper case.
      charset: "utf8mb4_general_ci",
      flags: ["FOUND_ROWS"],
      // One request per transaction: one round trip per operation.
      multipleStatements: true,
      typeCast: true
    })),
  openPool: (settings) => Driver.createPool(settings),
  endPool: (pool, done) => pool.end(() => done())
}
