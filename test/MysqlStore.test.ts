import { MysqlClient } from "@effect/sql-mysql2"
import { afterAll, describe, expect, it, vi } from "@effect/vitest"
import { Context, Duration, Effect, Either, Exit, Fiber, Layer, Redacted } from "effect"
import * as fc from "fast-check"
import * as MysqlCallback from "mysql2"
import * as Mysql from "mysql2/promise"
import * as net from "node:net"
import type * as ElectorError from "../src/ElectorError.js"
import * as Lease from "../src/Lease.js"
import * as Store from "../src/Store.js"
import * as Sql from "../src/stores/mysql/sql.js"
import * as MysqlStore from "../src/stores/MysqlStore.js"
import { StoreSuite } from "../src/testing.js"

const { uniqueName } = StoreSuite
import { Mode } from "./chaos/harness/FaultProxy.js"
import { proxyScoped } from "./chaos/harness/scoped.js"
import { dropMysqlTables } from "./support/tables.js"

// The shared MariaDB every machine runs. Nothing here is skipped when it is
// absent: the tests fail, loudly.
const server = { host: "127.0.0.1", port: 3306, user: "root", database: "test" }
const url = "mysql://root@127.0.0.1:3306/test"
const runId = `${process.pid}_${Date.now().toString(36)}`
let tableCounter = 0
const tables: Array<string> = []
/** A table name unique to this run; dropped when the file is done. */
const freshTable = (label: string) => {
  const name = `st_${runId}_${label}_${tableCounter++}`
  tables.push(name)
  return name
}
const table = freshTable("suite")

const admin = Effect.acquireRelease(
  Effect.promise(() => Mysql.createConnection(server)),
  (connection) => Effect.promise(() => connection.end())
)

afterAll(() => dropMysqlTables(...tables))

StoreSuite.run("MariaDB", MysqlStore.layerFromUrl(url, { table, ensureSchema: true }), {
  live: true,
  modelRuns: 10,
  // Makes the row look written by another server: a failover to a standby, or a restart.
  writtenElsewhere: (name) =>
    Effect.promise(async () => {
      const connection = await Mysql.createConnection(server)
      await connection.query(`UPDATE ${MysqlStore.quoteIdentifier(table)} SET server = 'elsewhere' WHERE name = ?`, [
        name
      ])
        .finally(() => connection.end())
    })
})

const storeError = (u: unknown) => {
  expect(Store.isStoreError(u)).toBe(true)
  return u as Store.StoreError
}

describe("MysqlStore schema", () => {
  it.scopedLive("ensureSchema is idempotent and safe to race, and builds the documented table", () =>
    Effect.gen(function*() {
      const name = freshTable("ddl")
      const store = yield* MysqlStore.make({ table: name })
      yield* Effect.all(Array.from({ length: 8 }, () => store.ensureSchema), { concurrency: "unbounded" })
      yield* store.ensureSchema
      const connection = yield* admin
      const [columns] = yield* Effect.promise(() =>
        connection.query<Array<Mysql.RowDataPacket>>(
          "SELECT column_name AS c, column_type AS t, is_nullable AS n FROM information_schema.columns " +
            "WHERE table_schema = 'test' AND table_name = ? ORDER BY ordinal_position",
          [name]
        )
      )
      expect(columns.map((row) => `${row["c"]} ${row["t"]} ${row["n"]}`)).toEqual([
        "name varbinary(1020) NO",
        "holder varbinary(1020) NO",
        "fence bigint(20) NO",
        "acquired_at datetime(6) NO",
        "renewed_at datetime(6) NO",
        "expires_at datetime(6) NO",
        "payload longblob YES",
        "incarnation varbinary(64) YES",
        "server varbinary(255) YES"
      ])
      expect(Either.getOrThrow(MysqlStore.schema("", name))).toContain(`CREATE TABLE IF NOT EXISTS \`${name}\``)
    }).pipe(Effect.provide(MysqlClient.layer({ host: "127.0.0.1", port: 3306, username: "root", database: "test" }))))

  it("schema() returns the DDL for the default table and a qualified one", () => {
    const ddl = Either.getOrThrow(MysqlStore.schema("", MysqlStore.defaultTable))
    expect(ddl).toMatch(/^CREATE TABLE IF NOT EXISTS `leader_election` \(/)
    expect(ddl).toContain("PRIMARY KEY (name)")
    expect(ddl).toContain("ENGINE = InnoDB")
    expect(Either.getOrThrow(MysqlStore.schema("app", "le"))).toMatch(/^CREATE TABLE IF NOT EXISTS `app`\.`le` \(/)
  })

  it.scopedLive("a custom schema-qualified table with hostile characters works end to end", () =>
    Effect.gen(function*() {
      const name = freshTable("we`ird 'na\"me; DROP")
      const store = yield* MysqlStore.make({ schema: "test", table: name, ensureSchema: true })
      expect(store.table).toBe(`\`test\`.${MysqlStore.quoteIdentifier(name)}`)
      const lease = yield* store.acquire("e", "a", Duration.seconds(30), null)
      expect(lease.fence).toBe(1n)
      const connection = yield* admin
      const [found] = yield* Effect.promise(() =>
        connection.query<Array<Mysql.RowDataPacket>>(
          `SELECT CAST(holder AS CHAR) AS h FROM ${MysqlStore.quoteIdentifier(name)}`
        )
      )
      expect(found.map((row) => row["h"])).toEqual(["a"])
    }).pipe(Effect.provide(MysqlClient.layer({ url: Redacted.make(url) }))))

  it.scopedLive("'A', 'a' and 'a ' are three elections, and 'x' and 'x ' two identities", () =>
    Effect.gen(function*() {
      const store = yield* MysqlStore.make({ table, ensureSchema: true })
      const base = uniqueName("case")
      const long = Duration.minutes(5)
      for (const name of [`${base}A`, `${base}a`, `${base}a `]) {
        expect((yield* store.acquire(name, name, long, null)).holder).toBe(name)
      }
      const held = yield* store.acquire(`${base}A`, `${base}A `, long, null)
      expect(Lease.isHeldBy(held, `${base}A `)).toBe(false)
      const renewed = yield* Effect.flip(store.renew(`${base}A`, `${base}A `, held.fence, long, null))
      expect(renewed._tag).toBe("LeaseLost")
      expect(renewed.message).toBe(`lease "${base}A" is no longer held by ${base}A  under fence ${held.fence}`)
    }).pipe(Effect.provide(MysqlClient.layer({ url: Redacted.make(url) }))))
})

describe("MysqlStore takeover statement", () => {
  it.scopedLive("means the same whether ON DUPLICATE KEY UPDATE assigns left to right or simultaneously", () =>
    Effect.gen(function*() {
      const connection = yield* admin
      const [[version]] = yield* Effect.promise(() =>
        connection.query<Array<Mysql.RowDataPacket>>("SELECT VERSION() AS v")
      )
      // SIMULTANEOUS_ASSIGNMENT is MariaDB's; MySQL always assigns left to right.
      const modes = String(version!["v"]).includes("MariaDB") ? ["", "SIMULTANEOUS_ASSIGNMENT"] : [""]
      for (const mode of modes) {
        // Session state on this test's own connection only, never the store's.
        yield* Effect.promise(() =>
          connection.query("SET SESSION sql_mode = CONCAT(@@GLOBAL.sql_mode, ?)", [mode === "" ? "" : `,${mode}`])
        )
        const name = freshTable(`upsert${mode === "" ? "" : "_sim"}`)
        const quoted = MysqlStore.quoteIdentifier(name)
        yield* Effect.promise(() => connection.query(Sql.createTable(quoted)))
        // The claim as the store makes it, without its transaction: this connection is the only writer.
        const claim = (who: string, incarnation: string | null, payload: number) =>
          Effect.promise(async () => {
            const bytes = Buffer.from([payload])
            await connection.query(Sql.upsert(quoted), Sql.upsertValues("e", who, incarnation, "60000000", bytes))
            await connection.query(Sql.holdBack(quoted), ["60000000", "e", who, incarnation])
            // Late, as under load: the read-back still reports the claim's own instant when the claim wrote the row.
            await new Promise((resolve) => setTimeout(resolve, 3))
            const [[back]] = await connection.query<Array<Mysql.RowDataPacket>>(Sql.selectAfterUpsert(quoted), [
              who,
              incarnation,
              "e"
            ])
            const [[row]] = await connection.query<Array<Mysql.RowDataPacket>>(
              `SELECT CAST(holder AS CHAR) AS holder, CAST(incarnation AS CHAR) AS incarnation, fence, ` +
                `HEX(payload) AS payload, acquired_at = renewed_at AS fresh, expires_at > UTC_TIMESTAMP(6) AS valid, ` +
                `server = ${Sql.currentServer} AS here FROM ${quoted} WHERE name = 'e'`
            )
            return {
              holder: row!["holder"],
              incarnation: row!["incarnation"],
              fence: Number(row!["fence"]),
              payload: row!["payload"],
              fresh: row!["fresh"],
              valid: row!["valid"],
              here: row!["here"],
              wrote: back!["now_us"] === back!["renewed_us"]
            }
          })
        const set = (assignments: string) =>
          Effect.promise(() => connection.query(`UPDATE ${quoted} SET ${assignments} WHERE name = 'e'`))
        const expire = set("expires_at = UTC_TIMESTAMP(6) - INTERVAL 1 SECOND")
        const mine = {
          holder: "a",
          incarnation: "i1",
          fence: 1,
          payload: "01",
          fresh: 1,
          valid: 1,
          here: 1,
          wrote: true
        }
        expect(yield* claim("a", "i1", 1)).toEqual(mine)
        const seen = { ...mine, wrote: false }
        expect(yield* claim("b", null, 2)).toEqual(seen)
        expect(yield* claim("a", "i2", 2)).toEqual(seen)
        expect(yield* claim("a", null, 2)).toEqual(seen)
        yield* Effect.sleep("5 millis")
        expect(yield* claim("a", "i1", 3)).toEqual({ ...mine, payload: "03", fresh: 0 })
        yield* expire
        const b = { holder: "b", incarnation: null, fence: 2, payload: "04", fresh: 1, valid: 1, here: 1, wrote: true }
        expect(yield* claim("b", null, 4)).toEqual(b)
        // A row of 0.1 (no server) is this server's.
        yield* set("server = NULL")
        yield* Effect.sleep("5 millis")
        expect(yield* claim("b", null, 5)).toEqual({ ...b, payload: "05", fresh: 0 })
        yield* expire
        expect(yield* claim("a", "i1", 6)).toEqual({ ...mine, fence: 3, payload: "06" })
        // Written on another server: someone else's live lease stays; the claimant's own is held back.
        yield* set("server = 'elsewhere'")
        const elsewhere = { ...mine, fence: 3, payload: "06", here: 0, wrote: false }
        expect(yield* claim("b", null, 7)).toEqual(elsewhere)
        expect(yield* claim("a", "i2", 7)).toEqual(elsewhere)
        const heldBack = {
          holder: "",
          incarnation: null,
          fence: 3 + 2 ** 32,
          payload: null,
          fresh: 1,
          valid: 1,
          here: 1,
          wrote: true
        }
        expect(yield* claim("a", "i1", 7)).toEqual(heldBack)
        expect(yield* claim("a", "i1", 8)).toEqual({ ...heldBack, wrote: false })
        yield* expire
        expect(yield* claim("b", null, 9)).toEqual({ ...b, fence: 4 + 2 ** 32, payload: "09" })
        // An expired row of another server is held back too.
        yield* set("server = 'elsewhere'")
        yield* expire
        expect(yield* claim("a", "i1", 10)).toEqual({ ...heldBack, fence: 4 + 2 * 2 ** 32 })
      }
    }))
})

describe("MysqlStore identifier quoting", () => {
  const unquote = (quoted: string) => quoted.slice(1, -1).replaceAll("``", "`")
  const bmpChar = fc.oneof(
    fc.constantFrom("`", "'", "\"", " ", ".", "\\", ";", "-", "é", "ß", "中"),
    fc.string({ unit: "grapheme-ascii", minLength: 1, maxLength: 1 })
  )
  const validName = fc.string({ unit: bmpChar, minLength: 1, maxLength: 40 }).filter((s) =>
    s.length <= 64 && !s.endsWith(" ")
  )

  it("quoting round-trips, and the quoted form has no lone backtick inside", () =>
    fc.assert(fc.property(fc.string({ unit: "binary" }), (name) => {
      const quoted = MysqlStore.quoteIdentifier(name)
      expect(quoted.startsWith("`") && quoted.endsWith("`")).toBe(true)
      expect(unquote(quoted)).toBe(name)
      expect(quoted.slice(1, -1).replaceAll("``", "")).not.toContain("`")
    })))

  it("names the server would refuse are rejected with field and reason", () => {
    const reject = (schemaName: string, name: string, field: string, reason: RegExp) => {
      const error = Either.getLeft(MysqlStore.schema(schemaName, name))
      expect(error._tag).toBe("Some")
      if (error._tag === "Some") {
        expect(error.value).toMatchObject({ _tag: "InvalidConfig", field })
        expect(error.value.reason).toMatch(reason)
        expect(error.value.message).toContain(`${field}: `)
      }
    }
    reject("", "", "table", /empty/)
    reject("", "a".repeat(65), "table", /at most 64/)
    reject("", "a\u0000b", "table", /NUL/)
    reject("", "trailing ", "table", /end with a space/)
    reject("", "rocket🚀", "table", /Basic Multilingual Plane/)
    reject("db ", "ok", "schema", /end with a space/)
    expect(Either.isRight(MysqlStore.schema("", "a".repeat(64)))).toBe(true)
    fc.assert(fc.property(
      fc.oneof(
        fc.string().map((s) => `${s} `),
        fc.string({ minLength: 65, maxLength: 100 }),
        fc.tuple(fc.string(), fc.string()).map(([a, b]) => `${a}\u0000${b}`)
      ),
      (name) => Either.isLeft(MysqlStore.schema("", name))
    ))
  })

  it.scopedLive("every accepted name creates exactly that table on the server", () =>
    Effect.gen(function*() {
      const connection = yield* admin
      yield* Effect.promise(() =>
        fc.assert(
          fc.asyncProperty(validName, async (suffix) => {
            const name = `q${tableCounter++}_${suffix}`.slice(0, 64).replace(/ +$/, "")
            tables.push(name)
            await connection.query(Either.getOrThrow(MysqlStore.schema("test", name)))
            const [rows] = await connection.query<Array<Mysql.RowDataPacket>>(
              "SELECT table_name AS t FROM information_schema.tables WHERE table_schema = 'test' AND table_name = ?",
              [name]
            )
            expect(rows.map((row) => row["t"])).toEqual([name])
            await connection.query(`DROP TABLE ${MysqlStore.quoteIdentifier(name)}`)
          }),
          { numRuns: 25 }
        )
      )
    }))
})

describe("MysqlStore configuration", () => {
  const configError = (layer: Layer.Layer<Store.Store, unknown>) => Effect.flip(Effect.provide(Store.Store, layer))

  it.effect("bad URLs and options are refused with field and reason, without leaking the password", () =>
    Effect.gen(function*() {
      const cases: Array<[string, MysqlStore.MysqlStoreUrlOptions, string, RegExp]> = [
        ["not a url", {}, "url", /not a URL/],
        ["postgres://u:secret@h/db", {}, "url", /scheme must be mysql: or mariadb:/],
        ["mysql:///db", {}, "url", /no host/],
        ["mysql://u:secret@h/db?ssl=true", {}, "url", /query parameters are not supported: ssl/],
        [url, { maxConnections: 0 }, "maxConnections", /positive integer/],
        [url, { table: "" }, "table", /empty/],
        [url, { connectTimeout: "30 days" }, "connectTimeout", /at most 2147483647ms/]
      ]
      for (const [target, options, field, reason] of cases) {
        const error = yield* configError(MysqlStore.layerFromUrl(target, options))
        expect(error).toMatchObject({ _tag: "InvalidConfig", field })
        expect((error as ElectorError.InvalidConfig).reason).toMatch(reason)
        expect((error as ElectorError.InvalidConfig).message).not.toContain("secret")
      }
    }))

  it("parses URLs, decoding credentials and defaulting the port", () => {
    expect(Either.getOrThrow(MysqlStore.parseUrl("mariadb://us%40er:p%3Ass@[::1]/my%20db"))).toEqual({
      host: "::1",
      port: 3306,
      user: "us@er",
      password: "p:ss",
      database: "my db"
    })
    expect(Either.getOrThrow(MysqlStore.parseUrl("mysql://root@db:3307"))).toEqual({
      host: "db",
      port: 3307,
      user: "root",
      password: ""
    })
  })

  it.scopedLive("the layer over a MysqlClient takes its connection settings", () =>
    Effect.gen(function*() {
      const store = yield* Store.Store
      const lease = yield* store.acquire(uniqueName("client"), "a", Duration.seconds(10), null)
      expect(lease.holder).toBe("a")
    }).pipe(
      Effect.provide(
        MysqlStore.layer({ table, ensureSchema: true }).pipe(
          Layer.provide(MysqlClient.layer({
            host: "127.0.0.1",
            port: 3306,
            username: "root",
            password: Redacted.make(""),
            database: "test"
          }))
        )
      )
    ))
})

describe("MysqlStore error classification", () => {
  const cases: Array<[unknown, boolean, string | undefined]> = [
    [{ errno: 1146, code: "ER_NO_SUCH_TABLE", sqlMessage: "no table" }, false, "1146"],
    [{ errno: 1142, code: "ER_TABLEACCESS_DENIED_ERROR" }, false, "1142"],
    [{ errno: 1044, code: "ER_DBACCESS_DENIED_ERROR" }, false, "1044"],
    [{ errno: 1045, code: "ER_ACCESS_DENIED_ERROR", fatal: true }, false, "1045"],
    [{ errno: 1049, code: "ER_BAD_DB_ERROR", fatal: true }, false, "1049"],
    [{ errno: 1698, code: "ER_ACCESS_DENIED_NO_PASSWORD_ERROR", fatal: true }, false, "1698"],
    [{ errno: 1064, code: "ER_PARSE_ERROR" }, false, "1064"],
    [{ errno: 1205, code: "ER_LOCK_WAIT_TIMEOUT" }, true, "1205"],
    [{ errno: 1213, code: "ER_LOCK_DEADLOCK" }, true, "1213"],
    [{ errno: 1290, code: "ER_OPTION_PREVENTS_STATEMENT" }, true, "1290"],
    [{ errno: 1836, code: "ER_READ_ONLY_MODE" }, true, "1836"],
    [{ errno: 1040, code: "ER_CON_COUNT_ERROR" }, true, "1040"],
    [{ errno: 2002 }, true, "2002"],
    [{ errno: 2003 }, true, "2003"],
    [{ errno: 2006 }, true, "2006"],
    [{ errno: 2013 }, true, "2013"],
    [{ errno: -111, code: "ECONNREFUSED", message: "connect ECONNREFUSED" }, true, "ECONNREFUSED"],
    [{ errno: -104, code: "ECONNRESET" }, true, "ECONNRESET"],
    [{ code: "PROTOCOL_CONNECTION_LOST", fatal: true }, true, "PROTOCOL_CONNECTION_LOST"],
    [{ code: "ETIMEDOUT", fatal: true }, true, "ETIMEDOUT"],
    [{ code: "SOMETHING_ELSE", fatal: true }, true, "SOMETHING_ELSE"],
    [new Error("no code at all"), false, undefined],
    ["a string", false, undefined]
  ]
  it("maps each code to retryable or fatal, keeping the code and a readable reason", () => {
    for (const [error, retryable, code] of cases) {
      const result = MysqlStore.classify(error)
      expect({ error, retryable: result.retryable, code: result.code }).toEqual({ error, retryable, code })
    }
    expect(MysqlStore.classify(cases[0]![0]).reason).toBe("ER_NO_SUCH_TABLE: no table")
    expect(MysqlStore.classify("a string").reason).toBe("a string")
  })

  it.scopedLive("real server errors reach the caller as classified StoreErrors", () =>
    Effect.gen(function*() {
      const missing = yield* MysqlStore.make({ table: `missing_${runId}` })
      const noTable = storeError(yield* Effect.flip(missing.inspect("e")))
      expect(noTable).toMatchObject({ operation: "inspect", retryable: false, code: "1146" })
      expect(noTable.message).toMatch(/^inspect failed \(fatal\) \[1146\]: ER_NO_SUCH_TABLE: Table '.*' doesn't exist$/)
      const noTableAcquire = storeError(yield* Effect.flip(missing.acquire("e", "a", Duration.seconds(1), null)))
      expect(noTableAcquire).toMatchObject({ operation: "acquire", retryable: false, code: "1146" })
      expect(Store.isFatal(noTableAcquire)).toBe(true)
      // The failed call's connection was destroyed, not reused mid-transaction.
      const store = yield* MysqlStore.make({ table, maxConnections: 1 })
      const name = uniqueName("after-error")
      const lease = yield* store.acquire(name, "a", Duration.seconds(5), null)
      expect(lease.fence).toBe(1n)
      const absent = yield* Effect.flip(store.inspect(`${name}-absent`))
      expect(absent.message).toBe(`no lease record for "${name}-absent"`)
    }).pipe(Effect.provide(MysqlClient.layer({ url: Redacted.make(url) }))))

  it.scopedLive("connection and credential failures are classified too", () =>
    Effect.gen(function*() {
      const refused = yield* Effect.flip(
        Effect.flatMap(Store.Store, (store) => store.inspect("e")).pipe(
          Effect.provide(MysqlStore.layerFromUrl("mysql://root@127.0.0.1:1/test"))
        )
      )
      expect(storeError(refused)).toMatchObject({ retryable: true, code: "ECONNREFUSED" })
      const badDb = yield* Effect.flip(
        Effect.flatMap(Store.Store, (store) => store.inspect("e")).pipe(
          Effect.provide(MysqlStore.layerFromUrl(`mysql://root@127.0.0.1:3306/nodb_${runId}`, { table }))
        )
      )
      expect(storeError(badDb)).toMatchObject({ retryable: false, code: "1049" })
      const badUser = yield* Effect.flip(
        Effect.flatMap(Store.Store, (store) => store.release("e", "a", 1n)).pipe(
          Effect.provide(MysqlStore.layerFromUrl(`mysql://nobody_${process.pid}:x@127.0.0.1:3306/test`, { table }))
        )
      )
      expect(storeError(badUser)).toMatchObject({ operation: "release", retryable: false })
      // MariaDB answers an unknown user with 1698 here, MySQL with 1045.
      expect(["1045", "1698"]).toContain(storeError(badUser).code)
    }))
})

describe("MysqlStore statement path", () => {
  it.scopedLive("store statements use the text protocol (query), never server-side prepared statements", () =>
    Effect.gen(function*() {
      const base = Object.getPrototypeOf(MysqlCallback.Connection.prototype) as Record<
        "query" | "execute" | "prepare",
        (...args: Array<unknown>) => unknown
      >
      const query = vi.spyOn(base, "query")
      const execute = vi.spyOn(base, "execute")
      const prepare = vi.spyOn(base, "prepare")
      yield* Effect.addFinalizer(() => Effect.sync(() => vi.restoreAllMocks()))
      const count = () => ({
        query: query.mock.calls.length,
        execute: execute.mock.calls.length,
        prepare: prepare.mock.calls.length
      })

      const store = yield* MysqlStore.make({ table, ensureSchema: true })
      const before = count()
      const name = uniqueName("unprepared")
      const lease = yield* store.acquire(name, "a", Duration.seconds(5), null)
      yield* store.renew(name, "a", lease.fence, Duration.seconds(5), null)
      yield* store.inspect(name)
      yield* store.release(name, "a", lease.fence)
      const after = count()
      // One request per operation: acquire and renew send START, write,
      // read and COMMIT together; inspect and release are one statement.
      expect(after.query - before.query).toBe(4)
      expect(after.execute - before.execute).toBe(0)
      expect(after.prepare - before.prepare).toBe(0)

      // The control: the same spies do see @effect/sql-mysql2's ordinary path prepare.
      const sql = yield* MysqlClient.MysqlClient
      yield* sql`SELECT 1 AS one`
      expect(execute.mock.calls.length - after.execute).toBe(1)
    }).pipe(Effect.provide(MysqlClient.layer({ url: Redacted.make(url) }))))
})

/**
 * A TCP relay to the shared server that reads the client's side of the MySQL
 * protocol: each packet is a 3-byte length and a sequence number, and a
 * packet numbered 0 starts a new command (a request, answered in one round
 * trip). It counts those commands.
 */
const commandCounter = Effect.acquireRelease(
  Effect.async<{ readonly port: number; readonly commands: () => number; readonly server: net.Server }>((resume) => {
    let commands = 0
    const server = net.createServer((client) => {
      const upstream = net.connect(3306, "127.0.0.1")
      let pending = Buffer.alloc(0)
      client.on("data", (chunk: Buffer) => {
        pending = Buffer.concat([pending, chunk])
        while (pending.length >= 4 && pending.length >= 4 + pending.readUIntLE(0, 3)) {
          if (pending[3] === 0) commands += 1
          pending = pending.subarray(4 + pending.readUIntLE(0, 3))
        }
        upstream.write(chunk)
      })
      upstream.pipe(client)
      client.on("error", () => upstream.destroy())
      upstream.on("error", () => client.destroy())
      client.on("close", () => upstream.destroy())
    })
    server.listen(0, "127.0.0.1", () => {
      resume(Effect.succeed({ port: (server.address() as net.AddressInfo).port, commands: () => commands, server }))
    })
  }),
  ({ server }) =>
    Effect.async<void>((resume) => {
      server.close(() => resume(Effect.void))
    })
)

describe("MysqlStore round trips", () => {
  it.scopedLive("each operation is one request on the wire, the transactions of acquire and renew included", () =>
    Effect.gen(function*() {
      const relay = yield* commandCounter
      const store = yield* MysqlStore.makeFromUrl(`mysql://root@127.0.0.1:${relay.port}/test`, {
        table,
        ensureSchema: true,
        maxConnections: 1
      })
      const name = uniqueName("round-trips")
      const counted = <A, E>(effect: Effect.Effect<A, E>) =>
        Effect.gen(function*() {
          const before = relay.commands()
          const result = yield* effect
          return [result, relay.commands() - before] as const
        })
      const [lease, acquire] = yield* counted(store.acquire(name, "a", Duration.seconds(30), null))
      const [, renew] = yield* counted(store.renew(name, "a", lease.fence, Duration.seconds(30), null))
      const [lost] = yield* counted(Effect.flip(store.renew(name, "b", lease.fence, Duration.seconds(30), null)))
      const [, inspect] = yield* counted(store.inspect(name))
      const [, release] = yield* counted(store.release(name, "a", lease.fence))
      expect(lost._tag).toBe("LeaseLost")
      expect({ acquire, renew, inspect, release }).toEqual({ acquire: 1, renew: 1, inspect: 1, release: 1 })
      // The lease read back after a renewal in the same request is the renewed one.
      const again = yield* store.acquire(name, "a", Duration.seconds(30), null)
      expect(again.fence).toBe(lease.fence + 1n)
    }))
})

describe("MysqlStore against a server that stops answering", () => {
  const timed = <A, E>(effect: Effect.Effect<A, E>) =>
    Effect.gen(function*() {
      const start = performance.now()
      const exit = yield* Effect.exit(effect)
      return { exit, millis: Math.round(performance.now() - start) }
    })

  it.scopedLive("interrupted calls return promptly, wedged connections are destroyed, and it recovers", () =>
    Effect.gen(function*() {
      const proxy = yield* proxyScoped({ targetPort: 3306 })
      const proxied = `mysql://root@127.0.0.1:${proxy.port}/test`
      const store = yield* Effect.map(
        Layer.build(
          MysqlStore.layerFromUrl(proxied, {
            table,
            ensureSchema: true,
            maxConnections: 2,
            connectTimeout: "2 seconds"
          })
        ),
        Context.get(Store.Store)
      )
      const name = uniqueName("hang")
      const lease = yield* store.acquire(name, "a", Duration.seconds(30), null)
      const timeout = Duration.seconds(1)

      proxy.setMode(Mode.blackhole)
      const one = yield* timed(
        store.renew(name, "a", lease.fence, Duration.seconds(30), null).pipe(Effect.timeout(timeout))
      )
      // More interrupted calls than the pool has connections, all at once.
      const many = yield* timed(
        Effect.all(
          Array.from({ length: 5 }, () => store.inspect(name).pipe(Effect.timeout(timeout), Effect.exit)),
          { concurrency: "unbounded" }
        )
      )
      proxy.setMode(Mode.pass)
      const recovered = yield* timed(store.inspect(name).pipe(Effect.timeout("5 seconds")))
      console.log(
        `[hang] one interrupted renew: ${one.millis} ms; 5 concurrent interrupted inspects: ${many.millis} ms; ` +
          `first call after healing: ${recovered.millis} ms; proxy connections accepted ${proxy.stats().connectionsAccepted}, open ${proxy.stats().connectionsActive}`
      )
      expect(Exit.isFailure(one.exit)).toBe(true)
      expect(one.millis).toBeLessThan(Duration.toMillis(timeout) + 1500)
      expect(many.millis).toBeLessThan(Duration.toMillis(timeout) + 1500)
      expect(Exit.isSuccess(recovered.exit)).toBe(true)
      if (Exit.isSuccess(recovered.exit)) expect(recovered.exit.value.holder).toBe("a")
      // The wedged connections were closed, not kept: at most the pool's size remain.
      expect(proxy.stats().connectionsActive).toBeLessThanOrEqual(2)
    }))

  it.scopedLive("for contrast: @effect/sql-mysql2's own pool keeps the wedged connection after healing", () =>
    Effect.gen(function*() {
      const proxy = yield* proxyScoped({ targetPort: 3306 })
      const result = yield* Effect.gen(function*() {
        const sql = yield* MysqlClient.MysqlClient
        yield* sql`SELECT 1`
        proxy.setMode(Mode.sinkhole)
        const hung = yield* timed(sql`SELECT 1`.pipe(Effect.timeout("1 second")))
        proxy.setMode(Mode.pass)
        const after = yield* timed(sql`SELECT 1`.pipe(Effect.timeout("2 seconds")))
        // Let the client's pool close: reset the wedged connection it would wait on.
        proxy.resetConnections()
        return { hung, after }
      }).pipe(
        Effect.provide(
          MysqlClient.layer({ url: Redacted.make(`mysql://root@127.0.0.1:${proxy.port}/test`), maxConnections: 1 })
        )
      )
      console.log(
        `[hang] stock client: interrupted query ${result.hung.millis} ms; next query after healing: ` +
          `${Exit.isSuccess(result.after.exit) ? "succeeded" : "timed out"} after ${result.after.millis} ms`
      )
      expect(Exit.isFailure(result.after.exit)).toBe(true)
    }))

  it.scopedLive("a call interrupted while queued for a connection does not leak it", () =>
    Effect.gen(function*() {
      const store = yield* MysqlStore.make({ table, ensureSchema: true, maxConnections: 1 })
      const name = uniqueName("queued")
      yield* store.acquire(name, "a", Duration.seconds(30), null)
      const locker = yield* admin
      yield* Effect.promise(() => locker.query("START TRANSACTION"))
      yield* Effect.promise(() =>
        locker.query(`SELECT * FROM ${MysqlStore.quoteIdentifier(table)} WHERE name = ? FOR UPDATE`, [name])
      )
      // Holds the only connection, waiting on the row lock.
      const blocked = yield* Effect.fork(store.acquire(name, "b", Duration.seconds(30), null))
      yield* Effect.sleep("200 millis")
      const queued = yield* Effect.exit(store.inspect(name).pipe(Effect.timeout("300 millis")))
      expect(Exit.isFailure(queued)).toBe(true)
      yield* Effect.promise(() => locker.query("COMMIT"))
      expect((yield* Fiber.join(blocked)).holder).toBe("a")
      // The connection handed to the abandoned waiter went back to the pool.
      const next = yield* store.inspect(name).pipe(Effect.timeout("3 seconds"))
      expect(next.holder).toBe("a")
    }).pipe(Effect.provide(MysqlClient.layer({ url: Redacted.make(url) }))))
})
