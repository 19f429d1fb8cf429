/**
 * The SQL stores' side of 0.2, on the shared PostgreSQL and MariaDB: the
 * claim rule with incarnations and with rows written on another server
 * (simulated by rewriting a row's `server`), the in-place upgrade of a table
 * made by 0.1, and a rolling upgrade: the statements of 0.1 (kept as they
 * shipped in `support/v01/`) interleaved with 0.2's on one upgraded table.
 */
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Either, Fiber, type Scope } from "effect"
import * as Mysql from "mysql2/promise"
import pg from "pg"
import { inject } from "vitest"
import * as Lease from "../src/Lease.js"
import { currentServer as mysqlServer } from "../src/stores/mysql/sql.js"
import { statements as mysqlStatements } from "../src/stores/mysql/statements.js"
import * as MysqlStore from "../src/stores/MysqlStore.js"
import * as PgSql from "../src/stores/pg/sql.js"
import * as PgStore from "../src/stores/PgStore.js"
import type * as SqlStore from "../src/stores/SqlStore.js"
import { directUrl, mysqlUrl, uniqueTable } from "./support/databases.js"
import { dropMysqlTables, dropPgTables } from "./support/tables.js"
import * as V01Mysql from "./support/v01/mysqlSql.js"
import * as V01Pg from "./support/v01/pgSql.js"

const ttl = Duration.seconds(30)
const ttlMicros = "30000000"
const jump = Lease.fenceJump

/** A row as the database holds it. */
interface Row {
  readonly holder: string
  readonly fence: bigint
  readonly incarnation: string | null
  /** Whether its `server` is the one the statements run on; null when it has none (0.1). */
  readonly here: boolean | null
}

/** What the tests need of a database, beside its store. */
interface Database {
  readonly label: string
  readonly store: (table: string) => Effect.Effect<SqlStore.SqlStore, unknown, Scope.Scope>
  readonly quote: (table: string) => string
  /** Runs one statement on a connection of the test's own. */
  readonly exec: (
    sql: string,
    values?: ReadonlyArray<unknown>
  ) => Promise<{ rows: Array<Record<string, unknown>>; count: number }>
  readonly drop: (...tables: Array<string>) => Promise<void>
  /** The row `name` expired one second ago. */
  readonly expire: (quoted: string) => string
  readonly read: (quoted: string) => string
  /** The columns of `table` in order, as the catalog lists them. */
  readonly columns: (table: string) => Promise<Array<string>>
  /** What 0.1 ran, on a quoted table. */
  readonly v01: {
    readonly ddl: (quoted: string) => string
    readonly acquire: (quoted: string, name: string, identity: string) => Promise<void>
    /** The rows matched. */
    readonly renew: (quoted: string, name: string, identity: string, fence: bigint) => Promise<number>
    readonly release: (quoted: string, name: string, identity: string, fence: bigint) => Promise<void>
  }
}

const pgPool = new pg.Pool({ connectionString: directUrl, max: 2 })
const mysqlPool = Mysql.createPool({ uri: mysqlUrl, connectionLimit: 2 })
afterAll(() => Promise.all([pgPool.end(), mysqlPool.end()]))

const postgres: Database = {
  label: "PostgreSQL",
  store: (table) => PgStore.makeFromUrl(directUrl, { table, maxConnections: 2 }),
  quote: PgStore.quoteIdentifier,
  exec: async (sql, values = []) => {
    const result = await pgPool.query(sql, [...values])
    return { rows: result.rows, count: result.rowCount ?? 0 }
  },
  drop: dropPgTables,
  expire: (quoted) => `UPDATE ${quoted} SET expires_at = now() - interval '1 second' WHERE name = $1`,
  read: (quoted) =>
    `SELECT holder, fence::text AS fence, incarnation, server = ${PgSql.currentServer} AS here FROM ${quoted} WHERE name = $1`,
  columns: async (table) =>
    (await pgPool.query(
      "SELECT attname FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
      [PgStore.quoteIdentifier(table)]
    )).rows.map((row) => row.attname),
  v01: {
    ddl: V01Pg.ddl,
    acquire: async (quoted, name, identity) => {
      await pgPool.query(V01Pg.statements(quoted, 1000).acquire, [name, identity, ttlMicros, null])
    },
    renew: async (quoted, name, identity, fence) =>
      (await pgPool.query(V01Pg.statements(quoted, 1000).renew, [name, identity, String(fence), ttlMicros, null]))
        .rowCount ?? 0,
    release: async (quoted, name, identity, fence) => {
      await pgPool.query(V01Pg.statements(quoted, 1000).release, [name, identity, String(fence)])
    }
  }
}

const mysqlExec = async (sql: string, values: ReadonlyArray<unknown> = []) => {
  const [result] = await mysqlPool.query(sql.replaceAll(/\$\d/g, "?"), [...values])
  return Array.isArray(result)
    ? { rows: result as Array<Record<string, unknown>>, count: result.length }
    : { rows: [], count: (result as Mysql.ResultSetHeader).affectedRows }
}

const mariadb: Database = {
  label: "MariaDB",
  store: (table) => MysqlStore.makeFromUrl(mysqlUrl, { table, maxConnections: 2 }),
  quote: MysqlStore.quoteIdentifier,
  exec: mysqlExec,
  drop: dropMysqlTables,
  expire: (quoted) => `UPDATE ${quoted} SET expires_at = UTC_TIMESTAMP(6) - INTERVAL 1 SECOND WHERE name = ?`,
  read: (quoted) =>
    `SELECT CAST(holder AS CHAR) AS holder, CAST(fence AS CHAR) AS fence, CAST(incarnation AS CHAR) AS incarnation, ` +
    `server = ${mysqlServer} AS here FROM ${quoted} WHERE name = ?`,
  columns: async (table) =>
    (await mysqlExec(
      "SELECT column_name AS c FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = ? " +
        "ORDER BY ordinal_position",
      [table]
    )).rows.map((row) => String(row["c"])),
  v01: {
    ddl: V01Mysql.createTable,
    acquire: async (quoted, name, identity) => {
      await mysqlExec(V01Mysql.upsert(quoted), [
        name,
        identity,
        ttlMicros,
        null,
        identity,
        null,
        identity,
        identity,
        identity,
        ttlMicros
      ])
    },
    renew: async (quoted, name, identity, fence) =>
      (await mysqlExec(V01Mysql.renew(quoted), [null, ttlMicros, name, identity, String(fence)])).count,
    release: async (quoted, name, identity, fence) => {
      await mysqlExec(V01Mysql.release(quoted), [name, identity, String(fence)])
    }
  }
}

describe.each([postgres, mariadb])("$label store, 0.2", (db) => {
  const made: Array<string> = []
  afterAll(() => db.drop(...made))
  const fresh = (label: string) => {
    const table = uniqueTable(label)
    made.push(table)
    return table
  }
  const row = async (table: string, name: string): Promise<Row | undefined> => {
    const found = (await db.exec(db.read(db.quote(table)), [name])).rows[0]
    return found === undefined ? undefined : {
      holder: String(found["holder"]),
      fence: BigInt(String(found["fence"])),
      incarnation: found["incarnation"] === null ? null : String(found["incarnation"]),
      here: found["here"] === null ? null : Boolean(Number(found["here"]))
    }
  }
  const sql = (text: string, values: ReadonlyArray<unknown> = []) => Effect.promise(() => db.exec(text, values))
  /** Rewrites the row as if another server had written it (the last write a standby received). */
  const elsewhere = (table: string, name: string) =>
    sql(`UPDATE ${db.quote(table)} SET server = 'elsewhere' WHERE name = $1`, [name])
  const expire = (table: string, name: string) => sql(db.expire(db.quote(table)), [name])
  const ready = (table: string) => Effect.tap(db.store(table), (store) => store.ensureSchema)

  it.scopedLive("same identity, another incarnation: it neither continues nor takes over a live lease", () =>
    Effect.gen(function*() {
      const table = fresh("inc")
      const store = yield* ready(table)
      const name = "e"
      const first = yield* store.acquire(name, "a", ttl, new Uint8Array([1]), "i1")
      expect(first).toMatchObject({ holder: "a", incarnation: "i1", fence: 1n })
      expect(store.incarnations).toBe(true)
      // Another process given the same identity, and a call with no incarnation: the lease is not theirs.
      for (const other of ["i2", undefined]) {
        const seen = yield* store.acquire(name, "a", ttl, new Uint8Array([2]), other)
        expect(seen).toMatchObject({ holder: "a", incarnation: "i1", fence: 1n, payload: new Uint8Array([1]) })
        expect(Lease.isHeldBy(seen, "a", "i1")).toBe(true)
        expect(seen.renewedAt).toEqual(first.renewedAt)
      }
      // The same incarnation continues its term.
      const again = yield* store.acquire(name, "a", ttl, new Uint8Array([3]), "i1")
      expect(again).toMatchObject({ holder: "a", incarnation: "i1", fence: 1n, payload: new Uint8Array([3]) })
      expect((yield* store.inspect(name)).incarnation).toBe("i1")
      // A term begun without an incarnation has none, reads none, and is continued by a call without one only.
      yield* store.release(name, "a", 1n)
      const bare = yield* store.acquire(name, "a", ttl, null)
      expect(bare).toMatchObject({ holder: "a", fence: 2n })
      expect("incarnation" in bare).toBe(false)
      expect(yield* store.acquire(name, "a", ttl, null, "i1")).toMatchObject({ holder: "a", fence: 2n })
      expect((yield* store.acquire(name, "a", ttl, new Uint8Array([4]))).payload).toEqual(new Uint8Array([4]))
      const [listed] = (yield* store.list).filter((lease) => lease.name === name)
      expect(listed).toMatchObject({ holder: "a", fence: 2n })
      expect("incarnation" in listed!).toBe(false)
      // Taken over by another incarnation once expired.
      yield* expire(table, name)
      expect(yield* store.acquire(name, "a", ttl, null, "i2")).toMatchObject({ incarnation: "i2", fence: 3n })
    }))

  it.scopedLive("a row written on another server: held back when expired or the claimant's own, else left to its holder", () =>
    Effect.gen(function*() {
      const table = fresh("srv")
      const store = yield* ready(table)
      const name = "e"
      yield* store.acquire(name, "a", ttl, new Uint8Array([1]), "ia")
      expect(yield* Effect.promise(() => row(table, name))).toEqual({
        holder: "a",
        fence: 1n,
        incarnation: "ia",
        here: true
      })
      // Someone else's live lease: left alone, and its holder's renewal continues and records this server.
      yield* elsewhere(table, name)
      expect(yield* store.acquire(name, "b", ttl, null, "ib")).toMatchObject({
        holder: "a",
        incarnation: "ia",
        fence: 1n
      })
      expect((yield* Effect.promise(() => row(table, name)))?.here).toBe(false)
      const renewed = yield* store.renew(name, "a", 1n, ttl, null)
      expect(renewed).toMatchObject({ holder: "a", incarnation: "ia", fence: 1n })
      expect((yield* Effect.promise(() => row(table, name)))?.here).toBe(true)
      expect(yield* store.acquire(name, "b", ttl, null, "ib")).toMatchObject({ holder: "a", fence: 1n })
      // The claimant's own live lease, written elsewhere: held back, by nobody, under fence + 2^32.
      yield* elsewhere(table, name)
      const held = yield* store.acquire(name, "a", Duration.seconds(20), new Uint8Array([2]), "ia")
      expect(held).toMatchObject({ holder: "", fence: 1n + jump, payload: null })
      expect("incarnation" in held).toBe(false)
      expect(Lease.isHeldBack(held)).toBe(true)
      // It begins at the database's now, like a term.
      expect(held.acquiredAt).toEqual(held.now)
      expect(held.renewedAt).toEqual(held.now)
      // For the claimant's ttl, from the database's now.
      expect(held.expiresAt.getTime() - held.now.getTime()).toBeGreaterThan(19_000)
      expect(held.expiresAt.getTime() - held.now.getTime()).toBeLessThanOrEqual(20_000)
      expect(yield* Effect.promise(() => row(table, name))).toEqual({
        holder: "",
        fence: 1n + jump,
        incarnation: null,
        here: true
      })
      // Nobody holds it: the old term cannot renew, and no claim starts a term until it expires.
      expect((yield* Effect.flip(store.renew(name, "a", 1n, ttl, null)))._tag).toBe("LeaseLost")
      expect(yield* store.acquire(name, "a", ttl, null, "ia")).toMatchObject({ holder: "", fence: 1n + jump })
      expect(yield* store.acquire(name, "b", ttl, null, "ib")).toMatchObject({ holder: "", fence: 1n + jump })
      // Then the next claim takes it over, one fence further.
      yield* expire(table, name)
      expect(yield* store.acquire(name, "b", ttl, null, "ib")).toMatchObject({
        holder: "b",
        incarnation: "ib",
        fence: 2n + jump
      })
      // An expired row written elsewhere is held back too, whoever claims it.
      yield* elsewhere(table, name)
      yield* expire(table, name)
      expect(yield* store.acquire(name, "c", ttl, null, "ic")).toMatchObject({ holder: "", fence: 2n + 2n * jump })
      // A row without a server (written by 0.1) is this server's: no hold-back.
      yield* expire(table, name)
      yield* sql(`UPDATE ${db.quote(table)} SET server = NULL WHERE name = $1`, [name])
      expect(yield* store.acquire(name, "c", ttl, null, "ic")).toMatchObject({ holder: "c", fence: 3n + 2n * jump })
      yield* sql(`UPDATE ${db.quote(table)} SET server = NULL WHERE name = $1`, [name])
      expect(yield* store.acquire(name, "c", ttl, null, "ic")).toMatchObject({ holder: "c", fence: 3n + 2n * jump })
      expect((yield* Effect.promise(() => row(table, name)))?.here).toBe(true)
    }))

  it.scopedLive("ensureSchema upgrades a table made by 0.1 in place, twice harmlessly; its rows stay and their fences go on", () =>
    Effect.gen(function*() {
      const table = fresh("v01")
      const quoted = db.quote(table)
      yield* sql(db.v01.ddl(quoted))
      yield* Effect.promise(() => db.v01.acquire(quoted, "e", "old"))
      const before = yield* Effect.promise(() => db.columns(table))
      expect(before).not.toContain("server")
      const store = yield* ready(table)
      yield* store.ensureSchema
      yield* Effect.all([store.ensureSchema, store.ensureSchema], { concurrency: "unbounded" })
      expect(yield* Effect.promise(() => db.columns(table))).toEqual([...before, "incarnation", "server"])
      const kept = yield* store.inspect("e")
      expect(kept).toMatchObject({ holder: "old", fence: 1n })
      expect("incarnation" in kept).toBe(false)
      expect(yield* Effect.promise(() => row(table, "e"))).toEqual({
        holder: "old",
        fence: 1n,
        incarnation: null,
        here: null
      })
      yield* expire(table, "e")
      expect(yield* store.acquire("e", "new", ttl, null, "i1")).toMatchObject({
        holder: "new",
        incarnation: "i1",
        fence: 2n
      })
    }))

  it.scopedLive("a rolling upgrade: 0.1's statements keep working beside 0.2's, and 0.1 respects a held-back lease", () =>
    Effect.gen(function*() {
      const table = fresh("roll")
      const quoted = db.quote(table)
      yield* sql(db.v01.ddl(quoted))
      const store = yield* ready(table)
      const v01 = db.v01
      // 0.1 leads; 0.2 follows it.
      yield* Effect.promise(() => v01.acquire(quoted, "r", "old"))
      expect(yield* Effect.promise(() => row(table, "r"))).toEqual({
        holder: "old",
        fence: 1n,
        incarnation: null,
        here: null
      })
      expect(yield* store.acquire("r", "new", ttl, null, "i1")).toMatchObject({ holder: "old", fence: 1n })
      expect(yield* Effect.promise(() => v01.renew(quoted, "r", "old", 1n))).toBe(1)
      yield* Effect.promise(() => v01.release(quoted, "r", "old", 1n))
      // 0.2 takes over what 0.1 released; 0.1 then follows it.
      expect(yield* store.acquire("r", "new", ttl, null, "i1")).toMatchObject({ holder: "new", fence: 2n })
      yield* Effect.promise(() => v01.acquire(quoted, "r", "old"))
      expect(yield* Effect.promise(() => row(table, "r"))).toEqual({
        holder: "new",
        fence: 2n,
        incarnation: "i1",
        here: true
      })
      expect(yield* Effect.promise(() => v01.renew(quoted, "r", "old", 2n))).toBe(0)
      // A hold-back: 0.1 sees a live lease of nobody's and leaves it.
      yield* elsewhere(table, "r")
      expect(yield* store.acquire("r", "new", ttl, null, "i1")).toMatchObject({ holder: "", fence: 2n + jump })
      yield* Effect.promise(() => v01.acquire(quoted, "r", "old"))
      expect(yield* Effect.promise(() => row(table, "r"))).toEqual({
        holder: "",
        fence: 2n + jump,
        incarnation: null,
        here: true
      })
      expect(yield* Effect.promise(() => v01.renew(quoted, "r", "old", 2n + jump))).toBe(0)
      // Once it expired, 0.1 claims it as before, above the jump.
      yield* expire(table, "r")
      yield* Effect.promise(() => v01.acquire(quoted, "r", "old"))
      expect(yield* Effect.promise(() => row(table, "r"))).toMatchObject({ holder: "old", fence: 3n + jump })
      expect(yield* store.acquire("r", "new", ttl, null, "i1")).toMatchObject({ holder: "old", fence: 3n + jump })
      expect(yield* Effect.promise(() => v01.renew(quoted, "r", "old", 3n + jump))).toBe(1)
    }))
})

describe("PostgreSQL upgrade", () => {
  const made: Array<string> = []
  afterAll(() => dropPgTables(...made))
  const v01Table = (label: string) =>
    Effect.gen(function*() {
      const table = uniqueTable(label)
      made.push(table)
      yield* Effect.promise(() => pgPool.query(V01Pg.ddl(PgStore.quoteIdentifier(table))))
      return table
    })

  it.scopedLive("runs through PgBouncer in transaction pooling mode", () =>
    Effect.gen(function*() {
      const table = yield* v01Table("bouncer")
      yield* PgStore.makeFromUrl(inject("pgbouncerUrl"), { table, ensureSchema: true, maxConnections: 2 })
      expect(yield* Effect.promise(() => postgres.columns(table))).toContain("server")
    }))

  it.scopedLive("waits 100 ms at most for the table's lock, fails retryably, and ensureSchema: true tries again", () =>
    Effect.gen(function*() {
      const table = yield* v01Table("locked")
      const blocker = new pg.Client({ connectionString: directUrl })
      yield* Effect.acquireRelease(Effect.promise(() => blocker.connect()), () => Effect.promise(() => blocker.end()))
      yield* Effect.promise(() =>
        blocker.query(`BEGIN; LOCK TABLE ${PgStore.quoteIdentifier(table)} IN ACCESS SHARE MODE`)
      )
      const store = yield* PgStore.makeFromUrl(directUrl, { table, maxConnections: 1 })
      for (let attempt = 0; attempt < 2; attempt++) {
        const started = Date.now()
        const error = yield* Effect.flip(store.ensureSchema)
        expect(Date.now() - started).toBeLessThan(2_000)
        // The second attempt, on the same connection, shows it came back clean: no transaction left open.
        expect(error).toMatchObject({ operation: "ensureSchema", retryable: true, code: "55P03" })
      }
      const building = yield* Effect.fork(
        PgStore.makeFromUrl(directUrl, { table, ensureSchema: true, maxConnections: 1 })
      )
      yield* Effect.sleep("300 millis")
      expect(building.unsafePoll()).toBeNull()
      yield* Effect.promise(() => blocker.query("COMMIT"))
      yield* Fiber.join(building)
      expect(yield* Effect.promise(() => postgres.columns(table))).toContain("incarnation")
      // Upgraded, it reads the catalog and runs no ALTER: the lock is no obstacle (nor a missing right to alter).
      yield* Effect.promise(() =>
        blocker.query(`BEGIN; LOCK TABLE ${PgStore.quoteIdentifier(table)} IN ACCESS SHARE MODE`)
      )
      yield* store.ensureSchema
      yield* Effect.promise(() => blocker.query("COMMIT"))
    }))
})

describe("MySQL / MariaDB upgrade", () => {
  const made: Array<string> = []
  afterAll(() => dropMysqlTables(...made))

  it("MariaDB adds both columns in one ALTER; MySQL 8, without IF NOT EXISTS, one per column; an upgraded table none", () => {
    const { decode, request } = mysqlStatements.upgrade({ quoted: "`le`", schema: undefined, name: "le" })
    expect(request).toEqual([{ sql: expect.stringContaining("information_schema.COLUMNS"), values: [null, "le"] }])
    const sqls = (present: string, version: string) =>
      decode([[{ present, version }]]).map((statements) => statements.map(({ sql }) => sql))
    expect(sqls("2", "10.11.6-MariaDB")).toEqual([])
    expect(sqls("2", "8.0.36")).toEqual([])
    expect(sqls("0", "10.11.6-MariaDB-0+deb12u1")).toEqual([[
      "ALTER TABLE `le` WAIT 1 ADD COLUMN IF NOT EXISTS incarnation VARBINARY(64) NULL, " +
      "ADD COLUMN IF NOT EXISTS server VARBINARY(255) NULL, ALGORITHM=INSTANT"
    ]])
    const mysql8 = ["incarnation VARBINARY(64) NULL", "server VARBINARY(255) NULL"].map((column) => [
      "SET SESSION lock_wait_timeout = 1",
      `ALTER TABLE \`le\` ADD COLUMN ${column}, ALGORITHM=INSTANT`,
      "SET SESSION lock_wait_timeout = DEFAULT"
    ])
    expect(sqls("1", "8.0.36")).toEqual(mysql8)
    expect(sqls("0", "8.4.0-commercial")).toEqual(mysql8)
    expect(mysqlStatements.alreadyThere?.({ code: "1060" } as never)).toBe(true)
    expect(Either.getOrThrow(MysqlStore.schemaUpgrade("ops", "le"))).toBe(
      [
        "-- A table made by effect-leaderelection 0.1 gains two columns. MariaDB:",
        "ALTER TABLE `ops`.`le` WAIT 1 ADD COLUMN IF NOT EXISTS incarnation VARBINARY(64) NULL, " +
        "ADD COLUMN IF NOT EXISTS server VARBINARY(255) NULL, ALGORITHM=INSTANT;",
        "-- MySQL 8, each column it lacks:",
        "-- ALTER TABLE `ops`.`le` ADD COLUMN incarnation VARBINARY(64) NULL, ALGORITHM=INSTANT;",
        "-- ALTER TABLE `ops`.`le` ADD COLUMN server VARBINARY(255) NULL, ALGORITHM=INSTANT;"
      ].join("\n")
    )
  })

  it.scopedLive("waits a second at most for the table's metadata lock, fails retryably, then passes; in a named database too", () =>
    Effect.gen(function*() {
      const table = uniqueTable("mdl")
      made.push(table)
      const quoted = MysqlStore.quoteIdentifier(table)
      yield* Effect.promise(() => mysqlExec(V01Mysql.createTable(quoted)))
      const blocker = yield* Effect.acquireRelease(
        Effect.promise(() => Mysql.createConnection(mysqlUrl)),
        (connection) => Effect.promise(() => connection.end())
      )
      yield* Effect.promise(() => blocker.query("START TRANSACTION"))
      yield* Effect.promise(() => blocker.query(`SELECT * FROM ${quoted}`))
      const store = yield* MysqlStore.makeFromUrl(mysqlUrl, { schema: "test", table, maxConnections: 2 })
      const error = yield* Effect.flip(store.ensureSchema)
      expect(error).toMatchObject({ operation: "ensureSchema", retryable: true, code: "1205" })
      yield* Effect.promise(() => blocker.query("COMMIT"))
      yield* store.ensureSchema
      expect(yield* Effect.promise(() => mariadb.columns(table))).toContain("server")
      // Upgraded, it reads the catalog and runs no ALTER: the lock is no obstacle.
      yield* Effect.promise(() => blocker.query("START TRANSACTION"))
      yield* Effect.promise(() => blocker.query(`SELECT * FROM ${quoted}`))
      yield* store.ensureSchema
      yield* Effect.promise(() => blocker.query("COMMIT"))
    }))
})
