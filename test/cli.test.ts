import { NodeContext } from "@effect/platform-node"
import { afterAll, describe, expect, it } from "@effect/vitest"
import type { Console } from "effect"
import { Cause, Duration, Effect, Either, Fiber, type Scope } from "effect"
import mysql from "mysql2/promise"
import { execFile } from "node:child_process"
import { EventEmitter } from "node:events"
import pg from "pg"
import { formatMillis, main, render, type Terminal, toJson, untilClosed } from "../packages/cli/src/cli.js"
import type { Lease } from "../src/Lease.js"
import * as MysqlStore from "../src/stores/MysqlStore.js"
import * as PgStore from "../src/stores/PgStore.js"
import { directUrl, mysqlUrl, uniqueTable } from "./support/databases.js"
import { dropMysqlTables, dropPgTables } from "./support/tables.js"
import * as V01Mysql from "./support/v01/mysqlSql.js"
import * as V01Pg from "./support/v01/pgSql.js"

/** Runs the command line in-process with its console captured, as if both streams were pipes. */
const cli = (...args: ReadonlyArray<string>) => cliOn({ stdout: false, stderr: false }, ...args)

const cliOn = (terminal: Terminal, ...args: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const out: Array<string> = []
    const err: Array<string> = []
    const base = yield* Effect.console
    const captured: Console.Console = {
      ...base,
      log: (...line) => Effect.sync(() => void out.push(line.join(" "))),
      error: (...line) => Effect.sync(() => void err.push(line.join(" ")))
    }
    const exit = yield* Effect.exit(
      main(["node", "leaderelection", ...args], terminal).pipe(
        Effect.withConsole(captured),
        Effect.provide(NodeContext.layer)
      )
    )
    return { exit, out, err, stdout: () => out.join("\n"), stderr: () => err.join("\n") }
  })

const cells = (line: string | undefined) => (line ?? "").split(/\s{2,}/)

/**
 * Fills a table with one held lease ("alpha"), one released lease ("beta")
 * and one that ran out ("gamma").
 */
const seed = (store: PgStore.PgStore | MysqlStore.MysqlStore) =>
  Effect.gen(function*() {
    yield* store.ensureSchema
    yield* store.acquire("alpha", "node-a", Duration.seconds(15), null)
    yield* store.acquire("beta", "node-b", Duration.seconds(15), null)
    yield* store.acquire("beta", "node-b", Duration.seconds(15), null)
    yield* store.release("beta", "node-b", 1n)
    yield* store.acquire("gamma", "node-c", Duration.millis(50), new Uint8Array([1, 2, 3]))
    yield* Effect.sleep("100 millis")
  })

interface Dialect {
  readonly name: "PostgreSQL" | "MariaDB"
  readonly url: string
  readonly table: string
  readonly open: (table: string) => Effect.Effect<PgStore.PgStore | MysqlStore.MysqlStore, unknown, Scope.Scope>
  readonly drop: (...tables: ReadonlyArray<string>) => Promise<void>
}

const dialects: ReadonlyArray<Dialect> = [
  {
    name: "PostgreSQL",
    url: directUrl,
    table: uniqueTable("cli"),
    open: (table: string) => PgStore.makeFromUrl(directUrl, { table }),
    drop: dropPgTables
  },
  {
    name: "MariaDB",
    url: mysqlUrl,
    table: uniqueTable("cli"),
    open: (table: string) => MysqlStore.makeFromUrl(mysqlUrl, { table }),
    drop: dropMysqlTables
  }
]

const withPg = async <A>(f: (client: pg.Client) => Promise<A>): Promise<A> => {
  const client = new pg.Client({ connectionString: directUrl })
  await client.connect()
  return f(client).finally(() => client.end())
}
const withMysql = async <A>(f: (connection: mysql.Connection) => Promise<A>): Promise<A> => {
  const connection = await mysql.createConnection(mysqlUrl)
  return f(connection).finally(() => connection.end())
}

for (const dialect of dialects) {
  describe(`leaderelection CLI against ${dialect.name}`, () => {
    const empty = `${dialect.table}_empty`
    afterAll(() => dialect.drop(dialect.table, empty))

    it.live("status shows who leads each election, its fence, remaining lease and term age", () =>
      Effect.gen(function*() {
        yield* Effect.scoped(Effect.flatMap(dialect.open(dialect.table), seed))
        const run = yield* cli("status", "--url", dialect.url, "--table", dialect.table)
        expect(run.err).toEqual([])
        expect(run.exit._tag).toBe("Success")
        const [header, alpha, beta, gamma, ...rest] = run.stdout().split("\n")
        expect(rest).toEqual([])
        expect(cells(header)).toEqual(["ELECTION", "HOLDER", "FENCE", "REMAINING", "TERM AGE", "STATE"])
        const [name, holder, fence, remaining, age, state] = cells(alpha)
        expect([name, holder, fence, state]).toEqual(["alpha", "node-a", "1", "leading"])
        expect(remaining).toMatch(/^1[0-5]\.\ds$/)
        expect(age).toMatch(/^(\d+ms|\d\.\ds)$/)
        // Vacant rows: no remaining lease, no term age; how long ago they were released or ran out.
        expect(cells(beta)).toEqual([
          "beta",
          "node-b",
          "1",
          "-",
          "-",
          expect.stringMatching(/^released \d+ms ago \(nobody leads\)$/)
        ])
        expect(cells(gamma)).toEqual([
          "gamma",
          "node-c",
          "1",
          "-",
          "-",
          expect.stringMatching(/^expired \d+ms ago \(nobody leads\)$/)
        ])
      }))

    it.live("status shows each election's live candidates with their priorities, and none without their table", () =>
      Effect.gen(function*() {
        const table = `${dialect.table}_p`
        const bare = `${dialect.table}_q`
        yield* Effect.scoped(Effect.gen(function*() {
          const store = yield* dialect.open(table)
          yield* store.ensureSchema
          yield* store.acquire("alpha", "node-a", Duration.seconds(15), null)
          yield* store.advertise("alpha", "node-a", { priority: 5, version: "2.0" }, Duration.seconds(15))
          yield* store.advertise("alpha", "node-b", { priority: 1, version: null }, Duration.seconds(15))
        }))
        // Only the lease table, as a deployment that never used priorities has.
        const ddl = Either.getOrThrow(
          dialect.name === "PostgreSQL" ? PgStore.schema("", bare) : MysqlStore.schema("", bare)
        )
        yield* Effect.promise(async () => {
          if (dialect.name === "PostgreSQL") await withPg((c) => c.query(ddl))
          else await withMysql((c) => c.query(ddl))
        })
        const run = yield* cli("status", "--url", dialect.url, "--table", table)
        expect(run.err).toEqual([])
        const lines = run.stdout().split("\n")
        expect(lines[2]).toBe("")
        expect(cells(lines[3])).toEqual(["ELECTION", "CANDIDATE", "PRIORITY", "VERSION", "ALIVE FOR", "STATE"])
        expect(cells(lines[4])).toEqual(["alpha", "node-a", "5", "2.0", expect.stringMatching(/^\d+ms$/), "leading"])
        expect(cells(lines[5])).toEqual(["alpha", "node-b", "1", "-", expect.stringMatching(/^\d+ms$/), "standing"])
        const json = JSON.parse((yield* cli("status", "--json", "--url", dialect.url, "--table", table)).out[0] ?? "")
        expect(json.candidates.map((c: { identity: string; priority: number }) => [c.identity, c.priority])).toEqual([
          ["node-a", 5],
          ["node-b", 1]
        ])
        const none = yield* cli("status", "--url", dialect.url, "--table", bare)
        expect(none.err).toEqual([])
        expect(none.stdout()).toBe(`no elections in ${dialect.name === "PostgreSQL" ? `"${bare}"` : `\`${bare}\``}`)
      }).pipe(Effect.ensuring(Effect.promise(() => dialect.drop(`${dialect.table}_p`, `${dialect.table}_q`)))))

    it.live("status --json is one object: every election with its state and durations", () =>
      Effect.gen(function*() {
        const run = yield* cli("status", "--json", "--url", dialect.url, "--table", dialect.table)
        expect(run.err).toEqual([])
        expect(run.out).toHaveLength(1)
        const snapshot = JSON.parse(run.out[0] ?? "")
        expect(snapshot.at).toMatch(/^\d{4}-\d\d-\d\dT[\d:.]+Z$/)
        expect(snapshot.table).toContain(dialect.table)
        const [alpha, beta, gamma] = snapshot.elections
        expect(alpha).toMatchObject({
          name: "alpha",
          holder: "node-a",
          fence: "1",
          state: "leading",
          vacantForMs: null,
          payload: null
        })
        expect(alpha.remainingMs).toBeGreaterThan(10_000)
        expect(alpha.remainingMs).toBeLessThanOrEqual(15_000)
        expect(alpha.termAgeMs).toBeGreaterThanOrEqual(0)
        expect(Date.parse(alpha.expiresAt) - Date.parse(alpha.now)).toBe(alpha.remainingMs)
        expect(beta).toMatchObject({ name: "beta", state: "released", remainingMs: null, termAgeMs: null })
        expect(beta.vacantForMs).toBeGreaterThanOrEqual(0)
        expect(gamma).toMatchObject({ name: "gamma", state: "expired", fence: "1", payload: "AQID", remainingMs: null })
        expect(gamma.vacantForMs).toBeGreaterThanOrEqual(50)
      }))

    it.live("status on an empty table says so; the URL can come from DATABASE_URL", () =>
      Effect.gen(function*() {
        yield* Effect.scoped(Effect.flatMap(dialect.open(empty), (store) => store.ensureSchema))
        const saved = process.env["DATABASE_URL"]
        process.env["DATABASE_URL"] = dialect.url
        const run = yield* cli("status", "--table", empty).pipe(Effect.ensuring(Effect.sync(() => {
          if (saved === undefined) delete process.env["DATABASE_URL"]
          else process.env["DATABASE_URL"] = saved
        })))
        expect(run.exit._tag).toBe("Success")
        expect(run.out).toEqual([expect.stringMatching(/^no elections in ["`]le_cli_.*_empty["`]$/)])
      }))

    it.live("a missing table is one clear line and a failure", () =>
      Effect.gen(function*() {
        const run = yield* cli("status", "--url", dialect.url, "--table", "le_cli_no_such_table")
        expect(run.exit._tag).toBe("Failure")
        expect(run.out).toEqual([])
        expect(run.err).toHaveLength(1)
        expect(run.err[0]).toMatch(/^leaderelection: table ["`]le_cli_no_such_table["`] does not exist: create it/)
        expect(run.err[0]).toMatch(dialect.name === "PostgreSQL" ? /\[42P01\]/ : /\[1146\]/)
      }))

    it.live("watch refreshes the status until interrupted", () =>
      Effect.gen(function*() {
        const fiber = yield* Effect.fork(
          cli("watch", "--url", dialect.url, "--table", dialect.table, "--interval", "1")
        )
        const run = yield* Effect.gen(function*() {
          // Poll the captured output without touching the fiber.
          for (;;) {
            yield* Effect.sleep("100 millis")
            const snapshot = fiber.unsafePoll()
            if (snapshot !== null) return yield* snapshot
          }
        }).pipe(Effect.timeoutOption("2500 millis"))
        expect(run._tag).toBe("None")
        yield* Fiber.interrupt(fiber)
      }))
  })
}

describe("leaderelection watch output", () => {
  const table = uniqueTable("cliwatch")
  afterAll(() => dropPgTables(table))

  it.live("prints a timestamped snapshot every interval", () =>
    Effect.gen(function*() {
      yield* Effect.scoped(Effect.flatMap(PgStore.makeFromUrl(directUrl, { table }), seed))
      const out: Array<string> = []
      const base = yield* Effect.console
      const captured: Console.Console = { ...base, log: (...line) => Effect.sync(() => void out.push(line.join(" "))) }
      const fiber = yield* Effect.fork(
        main(["node", "leaderelection", "watch", "--url", directUrl, "--table", table, "--interval", "1"]).pipe(
          Effect.withConsole(captured),
          Effect.provide(NodeContext.layer)
        )
      )
      yield* Effect.sleep("1500 millis")
      yield* Fiber.interrupt(fiber)
      expect(out).toHaveLength(2)
      for (const snapshot of out) {
        const [header, columns, alpha] = snapshot.split("\n")
        expect(header).toMatch(/^-- \d{4}-\d\d-\d\dT[\d:.]+Z, every 1s \(Ctrl-C to stop\)$/)
        expect(cells(columns)[0]).toBe("ELECTION")
        expect(cells(alpha).slice(0, 3)).toEqual(["alpha", "node-a", "1"])
      }
    }))

  it.live("refuses an interval under a second", () =>
    Effect.gen(function*() {
      const run = yield* cli("watch", "--url", directUrl, "--interval", "0")
      expect(run.exit._tag).toBe("Failure")
      expect(run.err).toEqual(["leaderelection: --interval must be at least 1 second"])
    }))
})

describe("leaderelection --json and terminals", () => {
  const table = uniqueTable("clijson")
  afterAll(() => dropPgTables(table))

  it.live("watch --json prints one JSON object per line, per interval", () =>
    Effect.gen(function*() {
      yield* Effect.scoped(Effect.flatMap(PgStore.makeFromUrl(directUrl, { table }), seed))
      const out: Array<string> = []
      const base = yield* Effect.console
      const captured: Console.Console = { ...base, log: (...line) => Effect.sync(() => void out.push(line.join(" "))) }
      const fiber = yield* Effect.fork(
        main(["node", "leaderelection", "watch", "--json", "--url", directUrl, "--table", table, "--interval", "1"])
          .pipe(
            Effect.withConsole(captured),
            Effect.provide(NodeContext.layer)
          )
      )
      yield* Effect.sleep("1500 millis")
      yield* Fiber.interrupt(fiber)
      expect(out).toHaveLength(2)
      for (const line of out) {
        expect(line).not.toContain("\n")
        const snapshot = JSON.parse(line)
        expect(snapshot.elections.map((e: { state: string }) => e.state)).toEqual(["leading", "released", "expired"])
      }
    }))

  it.live("no ANSI escapes on a stream that is not a terminal; @effect/cli's styling on one that is", () =>
    Effect.gen(function*() {
      const escape = "\u001b["
      const piped = yield* cli("--help")
      expect(piped.stdout()).toContain("leaderelection")
      expect(piped.stdout()).not.toContain(escape)
      const tty = yield* cliOn({ stdout: true, stderr: true }, "--help")
      expect(tty.stdout()).toContain(escape)
      // eslint-disable-next-line no-control-regex -- ESC starts every ANSI sequence
      expect(tty.stdout().replace(/\u001b\[[0-9;]*m/g, "")).toBe(piped.stdout())
      const saved = process.env["DATABASE_URL"]
      delete process.env["DATABASE_URL"]
      const missing = yield* cli("status").pipe(Effect.ensuring(Effect.sync(() => {
        if (saved !== undefined) process.env["DATABASE_URL"] = saved
      })))
      expect(missing.stderr() + missing.stdout()).toContain("--url")
      expect(missing.stderr() + missing.stdout()).not.toContain(escape)
    }))

  it.live("untilClosed ends on EPIPE and dies on any other error of the stream", () =>
    Effect.gen(function*() {
      const stream = new EventEmitter()
      const closing = yield* Effect.fork(untilClosed(stream))
      yield* Effect.yieldNow()
      stream.emit("error", Object.assign(new Error("write EPIPE"), { code: "EPIPE" }))
      expect((yield* Fiber.await(closing))._tag).toBe("Success")
      // Still listening: a later write's EPIPE must not crash the process while finalizers run.
      expect(stream.listenerCount("error")).toBe(1)
      stream.emit("error", Object.assign(new Error("write EPIPE"), { code: "EPIPE" }))
      const interrupted = yield* Effect.fork(untilClosed(stream))
      yield* Effect.yieldNow()
      yield* Fiber.interrupt(interrupted)
      expect(stream.listenerCount("error")).toBe(1)
      const failing = yield* Effect.fork(untilClosed(stream))
      yield* Effect.yieldNow()
      stream.emit("error", Object.assign(new Error("write EIO"), { code: "EIO" }))
      const exit = yield* Fiber.await(failing)
      expect(exit._tag === "Failure" && Cause.isDie(exit.cause)).toBe(true)
    }))
})

describe("leaderelection errors", () => {
  it.live("a URL that is not one, or of another scheme", () =>
    Effect.gen(function*() {
      const notUrl = yield* cli("status", "--url", "not a url")
      expect(notUrl.err).toEqual(["leaderelection: --url is not a URL"])
      const http = yield* cli("status", "--url", "http://db/x")
      expect(http.exit._tag).toBe("Failure")
      expect(http.err).toEqual([
        "leaderelection: unsupported URL scheme http: (use postgres://, postgresql://, mysql:// or mariadb://)"
      ])
    }))

  it.live("a table name the store refuses", () =>
    Effect.gen(function*() {
      const run = yield* cli("status", "--url", directUrl, "--table", "x".repeat(64))
      expect(run.exit._tag).toBe("Failure")
      expect(run.err).toEqual([
        "leaderelection: invalid config: table: must be at most 63 bytes of UTF-8, got 64"
      ])
    }))

  it.live("a server that is not there", () =>
    Effect.gen(function*() {
      const run = yield* cli("status", "--url", "postgres://postgres@127.0.0.1:1/test")
      expect(run.exit._tag).toBe("Failure")
      expect(run.err).toHaveLength(1)
      expect(run.err[0]).toMatch(/^leaderelection: inspect failed \(retryable\) \[ECONNREFUSED\]/)
    }))

  const role = `le_cli_noperm_${process.pid}`
  const table = uniqueTable("clinoperm")
  afterAll(async () => {
    await dropPgTables(table)
    await withPg((client) => client.query(`DROP ROLE IF EXISTS ${role}`))
  })

  it.live("a user without privileges on the table", () =>
    Effect.gen(function*() {
      yield* Effect.scoped(Effect.flatMap(PgStore.makeFromUrl(directUrl, { table }), (store) => store.ensureSchema))
      yield* Effect.promise(() => withPg((client) => client.query(`CREATE ROLE ${role} LOGIN`)))
      const run = yield* cli("status", "--url", `postgres://${role}@127.0.0.1:5432/test`, "--table", table)
      expect(run.exit._tag).toBe("Failure")
      expect(run.err).toHaveLength(1)
      expect(run.err[0]).toMatch(/^leaderelection: no privilege to read "le_clinoperm_.*": grant SELECT .*\[42501\]/)
    }))

  it.live("a missing --url with no DATABASE_URL is reported by @effect/cli", () =>
    Effect.gen(function*() {
      const saved = process.env["DATABASE_URL"]
      delete process.env["DATABASE_URL"]
      const run = yield* cli("status").pipe(Effect.ensuring(Effect.sync(() => {
        if (saved !== undefined) process.env["DATABASE_URL"] = saved
      })))
      expect(run.exit._tag).toBe("Failure")
      expect(run.stderr() + run.stdout()).toContain("--url")
    }))
})

describe("leaderelection schema", () => {
  it.live("prints the PostgreSQL DDL by default, and the MySQL DDL with --dialect mysql, each with its upgrade of 0.1", () =>
    Effect.gen(function*() {
      const pgDdl = yield* cli("schema")
      expect(pgDdl.out).toEqual([
        `${Either.getOrThrow(PgStore.schema("", "leader_election"))}\n${
          Either.getOrThrow(PgStore.schemaUpgrade("", "leader_election"))
        }`
      ])
      expect(pgDdl.out[0]).toMatch(/\);\nALTER TABLE "leader_election" ADD COLUMN IF NOT EXISTS incarnation text/)
      const mysqlDdl = yield* cli("schema", "--dialect", "mysql", "--schema", "ops", "--table", "jobs")
      expect(mysqlDdl.out).toEqual([
        `${Either.getOrThrow(MysqlStore.schema("ops", "jobs"))};\n${
          Either.getOrThrow(MysqlStore.schemaUpgrade("ops", "jobs"))
        }`
      ])
      expect(mysqlDdl.out[0]).toMatch(/^CREATE TABLE IF NOT EXISTS `ops`\.`jobs`/)
    }))

  it.live("its DDL runs, twice, on PostgreSQL and MariaDB, and upgrades a table of 0.1", () =>
    Effect.gen(function*() {
      const table = uniqueTable("clischema")
      const old = uniqueTable("clischema01")
      yield* Effect.addFinalizer(() =>
        Effect.promise(() => Promise.all([dropPgTables(table, old), dropMysqlTables(table, old)]))
      )
      yield* Effect.promise(() => withPg((client) => client.query(V01Pg.ddl(PgStore.quoteIdentifier(old)))))
      yield* Effect.promise(() =>
        withMysql((connection) => connection.query(V01Mysql.createTable(MysqlStore.quoteIdentifier(old))))
      )
      // As a migration tool runs a script: several statements in one go.
      const script = (sql: string) =>
        Effect.promise(async () => {
          const connection = await mysql.createConnection({ uri: mysqlUrl, multipleStatements: true })
          await connection.query(sql).finally(() => connection.end())
        })
      for (const name of [table, old]) {
        const pgDdl = (yield* cli("schema", "--table", name)).out.join("\n")
        const mysqlDdl = (yield* cli("schema", "--dialect", "mysql", "--table", name)).out.join("\n")
        for (let run = 0; run < 2; run++) {
          yield* Effect.promise(() => withPg((client) => client.query(pgDdl)))
          yield* script(mysqlDdl)
        }
        const { rows } = yield* Effect.promise(() =>
          withPg((client) =>
            client.query("SELECT attname FROM pg_attribute WHERE attrelid = $1::regclass AND attname = 'server'", [
              PgStore.quoteIdentifier(name)
            ])
          )
        )
        expect(rows).toHaveLength(1)
        const [columns] = yield* Effect.promise(() =>
          withMysql((connection) =>
            connection.query(
              "SELECT column_name FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = ? AND column_name = 'server'",
              [name]
            )
          )
        )
        expect(columns).toHaveLength(1)
      }
    }).pipe(Effect.scoped))

  it.live("refuses a name it cannot quote", () =>
    Effect.gen(function*() {
      const run = yield* cli("schema", "--dialect", "mysql", "--table", "bad ")
      expect(run.exit._tag).toBe("Failure")
      expect(run.err).toEqual(["leaderelection: invalid config: table: must not end with a space"])
    }))
})

describe("status of a held-back lease, and of a lease's incarnation", () => {
  const at = (seconds: number) => new Date(Date.UTC(2026, 0, 1, 10, 0, 0, seconds * 1000))
  // Held back after a failover, 4.5s before it can be claimed.
  const heldBack: Lease = {
    name: "alpha",
    holder: "",
    fence: 4294967297n,
    payload: null,
    acquiredAt: at(10),
    renewedAt: at(10),
    expiresAt: at(25),
    now: at(20.5)
  }
  const held: Lease = { ...heldBack, name: "beta", holder: "node-b", incarnation: "9f2c41aa", fence: 3n }

  it("shows no holder and no term, only how long until it can be claimed", () => {
    const [header, alpha, beta] = render("t", [heldBack, held]).split("\n")
    expect(cells(header)).toEqual(["ELECTION", "HOLDER", "FENCE", "REMAINING", "TERM AGE", "STATE"])
    expect(cells(alpha)).toEqual([
      "alpha",
      "-",
      "4294967297",
      "4.5s",
      "-",
      "held back (nobody leads: the database changed)"
    ])
    expect(cells(beta)).toEqual(["beta", "node-b", "3", "4.5s", "10.5s", "leading"])
  })

  it("--json names the state heldBack, and gives each lease's incarnation", () => {
    expect(toJson(heldBack)).toMatchObject({
      holder: "",
      incarnation: null,
      state: "heldBack",
      remainingMs: 4500,
      termAgeMs: null,
      vacantForMs: null
    })
    expect(toJson(held)).toMatchObject({ holder: "node-b", incarnation: "9f2c41aa", state: "leading" })
  })
})

describe("formatMillis", () => {
  it("is short and signed at every scale", () => {
    expect(formatMillis(850)).toBe("850ms")
    expect(formatMillis(-850)).toBe("-850ms")
    expect(formatMillis(12_345)).toBe("12.3s")
    expect(formatMillis(-245_000)).toBe("-4m05s")
    expect(formatMillis(7_800_000)).toBe("2h10m")
    expect(formatMillis(3 * 86_400_000 + 4 * 3_600_000)).toBe("3d04h")
  })
})

describe("the leaderelection bin", () => {
  const bin = (...args: Array<string>) =>
    new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
      execFile(
        "node_modules/.bin/tsx",
        ["packages/cli/src/bin.ts", ...args],
        { timeout: 30_000 },
        (error, stdout, stderr) => resolve({ code: error === null ? 0 : (error.code as number | null), stdout, stderr })
      )
    )

  it("exits 0 with the output on success", async () => {
    const run = await bin("schema", "--dialect", "mysql")
    expect(run.code).toBe(0)
    expect(run.stdout).toMatch(/^CREATE TABLE IF NOT EXISTS `leader_election` [^]*;\n-- A table made by/)
  })

  it("prints no ANSI escapes into a pipe", async () => {
    const run = await bin("--help")
    expect(run.code).toBe(0)
    expect(run.stdout).toContain("USAGE")
    expect(run.stdout).not.toContain("\u001b[")
  })

  it("watch piped into `head -1` exits cleanly when head goes away", async () => {
    // A table of its own, not the default one: the shared database keeps no table of the test's.
    const table = uniqueTable("clibin")
    await withPg((client) => client.query(Either.getOrThrow(PgStore.schema("", table))))
    const run = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
      execFile(
        "bash",
        [
          "-c",
          `set -o pipefail; node_modules/.bin/tsx packages/cli/src/bin.ts watch --url ${directUrl} --table ${table} --interval 1 | head -1`
        ],
        { timeout: 30_000 },
        (error, stdout, stderr) => resolve({ code: error === null ? 0 : (error.code as number | null), stdout, stderr })
      )
    ).finally(() => dropPgTables(table))
    expect(run.stderr).toBe("")
    expect(run.code).toBe(0)
    expect(run.stdout).toMatch(/^-- .*\(Ctrl-C to stop\)\n$/)
  })

  it("exits non-zero with one line on stderr on failure", async () => {
    const run = await bin("status", "--url", "http://db/x")
    expect(run.code).toBe(1)
    expect(run.stdout).toBe("")
    expect(run.stderr).toBe(
      "leaderelection: unsupported URL scheme http: (use postgres://, postgresql://, mysql:// or mariadb://)\n"
    )
  })
})
