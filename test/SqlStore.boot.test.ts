/**
 * A store built with `ensureSchema: true` while its database cannot be
 * reached waits for it (the app's start does not fail, so an orchestrator
 * does not restart it in a loop) and is ready once the database answers; a
 * fatal error (no such database, a wrong password) still fails at once. The
 * database "comes up" when a proxy to the shared server starts listening on
 * the port the store was given.
 */
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Fiber, LogLevel } from "effect"
import * as net from "node:net"
import * as MysqlStore from "../src/stores/MysqlStore.js"
import * as PgStore from "../src/stores/PgStore.js"
import { directUrl, mysqlUrl, uniqueTable } from "./support/databases.js"
import { logLines } from "./support/logLines.js"
import { dropMysqlTables, dropPgTables } from "./support/tables.js"

const pgTables: Array<string> = []
const mysqlTables: Array<string> = []
afterAll(() => Promise.all([dropPgTables(...pgTables), dropMysqlTables(...mysqlTables)]))

/** A loopback port nothing listens on, for now. */
const freePort = Effect.async<number>((resume) => {
  const server = net.createServer().listen(0, "127.0.0.1", () => {
    const { port } = server.address() as net.AddressInfo
    server.close(() => resume(Effect.succeed(port)))
  })
})

/** Starts forwarding `port` to the server at `target` (the database comes up), for the scope. */
const comeUp = (port: number, target: URL) => {
  const sockets = new Set<net.Socket>()
  return Effect.acquireRelease(
    Effect.async<net.Server>((resume) => {
      const server = net.createServer((client) => {
        const upstream = net.connect(Number(target.port), target.hostname)
        for (const socket of [client, upstream]) {
          sockets.add(socket)
          socket.on("error", () => {
            client.destroy()
            upstream.destroy()
          })
        }
        client.pipe(upstream).pipe(client)
      })
      server.listen(port, "127.0.0.1", () => resume(Effect.succeed(server)))
    }),
    (server) =>
      Effect.async<void>((resume) => {
        server.close(() => resume(Effect.void))
        sockets.forEach((socket) => socket.destroy())
      })
  )
}

/** Polls `done` on the real clock; the test's timeout bounds it. */
const until = (done: () => boolean): Effect.Effect<void> =>
  Effect.suspend(() => done() ? Effect.void : Effect.zipRight(Effect.sleep(Duration.millis(20)), until(done)))

const databases = [
  {
    label: "PostgreSQL",
    server: new URL(directUrl),
    tables: pgTables,
    make: (url: string, table: string) =>
      PgStore.makeFromUrl(url, { table, ensureSchema: true, operationTimeout: "1 second" }),
    fatal: {
      url: directUrl.replace(/\/[^/]*$/, "/le_no_such_database"),
      code: "3D000"
    }
  },
  {
    label: "MariaDB",
    server: new URL(mysqlUrl),
    tables: mysqlTables,
    make: (url: string, table: string) =>
      MysqlStore.makeFromUrl(url, { table, ensureSchema: true, operationTimeout: "1 second" }),
    fatal: {
      url: mysqlUrl.replace("root@", "root:le_wrong_password@"),
      code: "1045"
    }
  }
] as const

describe.each(databases)("ensureSchema with the $label server down at boot", (db) => {
  it.scopedLive("waits for the database, says why, and is ready once it answers", () =>
    Effect.gen(function*() {
      const warnings = yield* logLines(LogLevel.Warning)
      const port = yield* freePort
      const url = new URL(db.server.href)
      url.port = String(port)
      const table = uniqueTable("boot")
      db.tables.push(table)
      const building = yield* Effect.forkScoped(db.make(url.href, table))
      yield* until(() => warnings.length > 0)
      expect(warnings[0]).toMatch(
        /^WARN ensureSchema: not done yet \(1 failed attempt, the last: /
      )
      expect(warnings[0]).toContain("ECONNREFUSED")
      expect(building.unsafePoll()).toBeNull()
      yield* comeUp(port, db.server)
      const store = yield* Fiber.join(building)
      const lease = yield* store.acquire("jobs", "a", Duration.seconds(15), null)
      expect(lease.holder).toBe("a")
    }), 30_000)

  it.scopedLive("a fatal error still fails at once, with the database's reason", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(db.make(db.fatal.url, uniqueTable("boot_fatal")))
      expect(error).toMatchObject({
        _tag: "StoreError",
        operation: "ensureSchema",
        retryable: false,
        code: db.fatal.code
      })
    }), 30_000)
})
