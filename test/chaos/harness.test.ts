import { PgClient } from "@effect/sql-pg"
import { it as effectIt } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import * as net from "node:net"
import { promisify } from "node:util"
import pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type FaultProxy, Mode, startProxy } from "./harness/FaultProxy.js"
import { concurrentTime, IntervalOracle } from "./harness/IntervalOracle.js"
import { isAlive, sleep, waitFor } from "./harness/process.js"
import { topologyScoped } from "./harness/scoped.js"
import {
  parseVersion,
  startPgBouncer,
  supportsMaxPreparedStatements,
  type ThrowawayPgBouncer
} from "./harness/ThrowawayPgBouncer.js"
import { startPostgres, type ThrowawayPostgres } from "./harness/ThrowawayPostgres.js"
import { startTopology } from "./harness/Topology.js"

const execFileAsync = promisify(execFile)

const clients: Array<pg.Client> = []

/** A pg client to 127.0.0.1:port; connection errors are swallowed so a broken path never crashes the run. */
const client = (port: number, options: { readonly connectionTimeoutMillis?: number } = {}): pg.Client => {
  const c = new pg.Client({
    host: "127.0.0.1",
    port,
    user: "postgres",
    database: "test",
    connectionTimeoutMillis: options.connectionTimeoutMillis ?? 10_000
  })
  c.on("error", () => {})
  clients.push(c)
  return c
}

const connected = async (port: number): Promise<pg.Client> => {
  const c = client(port)
  await c.connect()
  return c
}

/** Settles with "pending" if `promise` has not settled after `ms`. */
const within = <A>(
  promise: Promise<A>,
  ms: number
): Promise<{ readonly value: A } | { readonly error: unknown } | "pending"> =>
  Promise.race([
    promise.then((value) => ({ value }), (error: unknown) => ({ error })),
    sleep(ms).then(() => "pending" as const)
  ])

/** The error `promise` rejects with within `ms`; fails the test if it resolves or hangs. */
const rejection = async (promise: Promise<unknown>, ms = 5000): Promise<unknown> => {
  const outcome = await within(promise, ms)
  if (outcome === "pending") throw new Error(`still pending after ${ms} ms, expected a rejection`)
  if ("value" in outcome) throw new Error("resolved, expected a rejection")
  return outcome.error
}

/** The `code` (errno name or SQLSTATE) of the error `promise` rejects with. */
const rejectionCode = async (promise: Promise<unknown>, ms = 5000): Promise<unknown> => {
  const error = await rejection(promise, ms)
  return typeof error === "object" && error !== null && "code" in error ? error.code : undefined
}

/** Whether a listener can bind 127.0.0.1:port right now, i.e. nobody holds it. */
const canListen = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const server = net.createServer()
    server.once("error", () => resolve(false))
    server.listen({ host: "127.0.0.1", port }, () => server.close(() => resolve(true)))
  })

const closeClients = async (): Promise<void> => {
  await Promise.all(clients.splice(0).map((c) => within(c.end(), 1000)))
}

describe("FaultProxy", () => {
  let db: ThrowawayPostgres
  let proxy: FaultProxy

  beforeAll(async () => {
    db = await startPostgres()
    await db.sql("CREATE TABLE t (k int PRIMARY KEY, v text)")
  })
  afterAll(async () => {
    await closeClients()
    await db?.destroy()
  })

  const fresh = async (): Promise<FaultProxy> => {
    await proxy?.close()
    await closeClients()
    proxy = await startProxy({ targetPort: db.port })
    return proxy
  }

  it("pass forwards queries and counts bytes and connections", async () => {
    const p = await fresh()
    expect(p.port).toBeGreaterThan(0)
    const c = await connected(p.port)
    const { rows } = await c.query("select 41 + 1 as n")
    expect(rows).toEqual([{ n: 42 }])
    const stats = p.stats()
    expect(stats.connectionsAccepted).toBe(1)
    expect(stats.connectionsActive).toBe(1)
    expect(stats.bytesUp).toBeGreaterThan(0)
    expect(stats.bytesDown).toBeGreaterThan(0)
  })

  it("partition resets open connections and refuses new ones; pass heals", async () => {
    const p = await fresh()
    const c = await connected(p.port)
    p.setMode(Mode.partition)
    await rejection(c.query("select 1"), 5000)
    expect(await rejectionCode(client(p.port).connect(), 5000)).toBe("ECONNRESET")
    expect(p.stats().connectionsRefused).toBe(1)
    expect(p.stats().connectionsActive).toBe(0)
    p.setMode(Mode.pass)
    const healed = await connected(p.port)
    expect((await healed.query("select 1 as n")).rows).toEqual([{ n: 1 }])
  })

  it("blackhole hangs queries and handshakes while sockets stay open, then delivers when healed", async () => {
    const p = await fresh()
    const c = await connected(p.port)
    let socketEvents = 0
    c.on("end", () => socketEvents++)
    c.on("error", () => socketEvents++)
    p.setMode(Mode.blackhole)
    const query = c.query("select 'through the hole' as v")
    expect(await within(query, 1500)).toBe("pending")
    expect(p.stats().connectionsActive).toBe(1)
    expect(socketEvents).toBe(0)
    // A new connection is accepted but its handshake hangs too.
    const newcomer = client(p.port).connect()
    expect(await within(newcomer, 1000)).toBe("pending")
    p.setMode(Mode.pass)
    expect((await query).rows).toEqual([{ v: "through the hole" }])
    await newcomer
  })

  it("dropReplies lands a write whose reply never arrives", async () => {
    const p = await fresh()
    const c = await connected(p.port)
    p.setMode(Mode.dropReplies)
    const write = c.query("insert into t values (1, 'landed')")
    expect(await within(write, 1500)).toBe("pending")
    expect(await db.sql("select v from t where k = 1")).toEqual([{ v: "landed" }])
    expect(p.stats().bytesDropped).toBeGreaterThan(0)
    expect(p.stats().connectionsActive).toBe(1)
    p.resetConnections()
    await rejection(write, 5000)
  })

  it("latency delays each direction", async () => {
    const p = await fresh()
    const c = await connected(p.port)
    p.setMode(Mode.latency(150, 50))
    const started = performance.now()
    await c.query("select 1")
    // One round trip crosses the proxy twice, at least 150 ms each way.
    expect(performance.now() - started).toBeGreaterThanOrEqual(295)
  })

  it("latency with jitter preserves byte order", async () => {
    const echo = net.createServer((socket) => {
      socket.on("error", () => {})
      socket.pipe(socket)
    })
    await new Promise<void>((resolve) => echo.listen({ host: "127.0.0.1", port: 0 }, resolve))
    const address = echo.address()
    if (address === null || typeof address === "string") throw new Error("echo server has no port")
    const p = await startProxy({ targetPort: address.port, mode: Mode.latency(5, 40) })
    try {
      const socket = net.connect({ host: "127.0.0.1", port: p.port, noDelay: true })
      const expected = Array.from({ length: 200 }, (_, i) => `${i};`).join("")
      socket.on("error", () => {})
      let received = ""
      socket.on("data", (data: Buffer) => (received += data.toString()))
      await new Promise<void>((resolve) => socket.once("connect", () => resolve()))
      for (let i = 0; i < 200; i++) {
        socket.write(`${i};`)
        if (i % 20 === 0) await sleep(3)
      }
      for (let waited = 0; received.length < expected.length && waited < 10_000; waited += 50) await sleep(50)
      expect(received).toBe(expected)
      socket.destroy()
    } finally {
      await p.close()
      await new Promise((resolve) => echo.close(resolve))
    }
  })

  it("resetOnFirstUse RSTs a new connection on its first bytes, N times, then passes", async () => {
    const p = await fresh()
    p.setMode(Mode.resetOnFirstUse(2))
    for (let i = 0; i < 2; i++) {
      expect(await rejectionCode(client(p.port).connect(), 5000)).toBe("ECONNRESET")
    }
    const third = await connected(p.port)
    expect((await third.query("select 3 as n")).rows).toEqual([{ n: 3 }])
    expect(p.stats().connectionsReset).toBe(2)
    p.setMode(Mode.resetOnFirstUse())
    expect((await third.query("select 4 as n")).rows).toEqual([{ n: 4 }])
    expect(await rejectionCode(client(p.port).connect(), 5000)).toBe("ECONNRESET")
  })

  it("bandwidth slows a large reply", async () => {
    const p = await fresh()
    const c = await connected(p.port)
    p.setMode(Mode.bandwidth(4000))
    const started = performance.now()
    const { rows } = await c.query("select repeat('x', 8000) as v")
    // 8 kB at 4 kB/s is 2 s; allow for the slicing's rounding.
    expect(performance.now() - started).toBeGreaterThanOrEqual(1500)
    expect(rows[0]?.v).toHaveLength(8000)
  })

  it("flap alternates pass and partition until stopped", async () => {
    const p = await fresh()
    const flapping = p.flap(400, 400)
    const outcomes = { ok: 0, failed: 0 }
    const until = performance.now() + 3200
    while (performance.now() < until) {
      const c = client(p.port, { connectionTimeoutMillis: 2000 })
      const attempt = await within(c.connect().then(() => c.query("select 1")), 2000)
      if (attempt !== "pending" && "value" in attempt) outcomes.ok++
      else outcomes.failed++
      await within(c.end(), 500)
      await sleep(100)
    }
    expect(flapping.transitions).toBeGreaterThanOrEqual(4)
    flapping.stop()
    expect(p.mode).toEqual(Mode.pass)
    expect(outcomes.ok).toBeGreaterThan(0)
    expect(outcomes.failed).toBeGreaterThan(0)
    const after = await connected(p.port)
    expect((await after.query("select 1 as n")).rows).toEqual([{ n: 1 }])
  })

  it("a connection reset while its FIN is on the way out still closes (node refuses that reset and would keep the socket open forever)", async () => {
    const sockets = (): number => process.getActiveResourcesInfo().filter((r) => r === "TCPSocketWrap").length
    const before = sockets()
    const accepted = new Set<net.Socket>()
    const target = net.createServer((socket) => {
      accepted.add(socket)
      socket.on("error", () => {})
      socket.resume()
    })
    await new Promise<void>((resolve) => target.listen({ host: "127.0.0.1", port: 0 }, resolve))
    const address = target.address()
    const p = await startProxy({ targetPort: address !== null && typeof address !== "string" ? address.port : 0 })
    const c = net.connect({ host: "127.0.0.1", port: p.port, allowHalfOpen: true })
    c.on("error", () => {})
    c.resume()
    await waitFor("the connection to reach the target", () => accepted.size === 1)
    // The client's FIN waits in the blackhole; healing sends it on, ending
    // the proxy's socket to the target, and the partition resets that
    // socket in the same tick, with its shutdown still pending.
    p.setMode(Mode.blackhole)
    c.end()
    await sleep(200)
    p.setMode(Mode.pass)
    p.setMode(Mode.partition)
    await p.close()
    c.destroy()
    for (const socket of accepted) socket.destroy()
    await new Promise((resolve) => target.close(resolve))
    await waitFor("every socket of the test to close", () => sockets() === before, 3000)
  })

  it("close frees the port", async () => {
    const p = await fresh()
    const c = await connected(p.port)
    await p.close()
    await rejection(c.query("select 1"), 5000)
    expect(await canListen(p.port)).toBe(true)
  })
})

describe("ThrowawayPostgres", () => {
  let db: ThrowawayPostgres

  beforeAll(async () => {
    db = await startPostgres()
    await db.sql("CREATE TABLE t (k int PRIMARY KEY, v text)")
    await db.sql("INSERT INTO t VALUES (1, 'one')")
  })
  afterAll(async () => {
    await closeClients()
    await db?.destroy()
  })

  it("is a fresh server on its own port with a database named test", async () => {
    expect(db.port).not.toBe(5432)
    expect(db.url()).toBe(`postgres://postgres@127.0.0.1:${db.port}/test`)
    const rows = await db.sql<{ db: string; fsync: string }>(
      "select current_database() as db, current_setting('fsync') as fsync"
    )
    expect(rows).toEqual([{ db: "test", fsync: "off" }])
  })

  it("pause freezes the postmaster and its backends; resume thaws them", async () => {
    const c = await connected(db.port)
    db.pause()
    const query = c.query("select 'thawed' as v")
    expect(await within(query, 1500)).toBe("pending")
    const newcomer = client(db.port).connect()
    expect(await within(newcomer, 1000)).toBe("pending")
    db.resume()
    expect((await query).rows).toEqual([{ v: "thawed" }])
    await newcomer
  })

  it("restart breaks open sessions and keeps the data", async () => {
    const c = await connected(db.port)
    await db.restart()
    await rejection(c.query("select 1"), 5000)
    expect(await db.sql("select v from t where k = 1")).toEqual([{ v: "one" }])
  })

  it("kill is a SIGKILL: nothing answers until start runs crash recovery", async () => {
    await db.sql("INSERT INTO t VALUES (2, 'before the crash')")
    const pid = db.postmasterPid()
    await db.kill()
    expect(pid !== undefined && isAlive(pid)).toBe(false)
    expect(await rejectionCode(client(db.port).connect(), 5000)).toBe("ECONNREFUSED")
    await db.start()
    expect(await db.sql("select v from t where k = 2")).toEqual([{ v: "before the crash" }])
    expect(fs.readFileSync(db.logFile, "utf8")).toMatch(/not properly shut down; automatic recovery in progress/)
  })

  it("stop immediate then start also recovers", async () => {
    await db.stop({ mode: "immediate" })
    await db.start()
    expect(await db.sql("select count(*)::int as n from t")).toEqual([{ n: 2 }])
  })

  it("setReadOnly makes an open session's next write fail with 25006 while reads work", async () => {
    const c = await connected(db.port)
    await db.setReadOnly(true)
    try {
      expect(await rejectionCode(c.query("insert into t values (3, 'nope')"), 5000)).toBe("25006")
      expect((await c.query("select v from t where k = 1")).rows).toEqual([{ v: "one" }])
    } finally {
      await db.setReadOnly(false)
    }
    await c.query("insert into t values (3, 'yes')")
    expect(await db.sql("select v from t where k = 3")).toEqual([{ v: "yes" }])
  })

  it("terminateBackends ends every other client session", async () => {
    const a = await connected(db.port)
    const b = await connected(db.port)
    expect(await db.terminateBackends()).toBeGreaterThanOrEqual(2)
    for (const c of [a, b]) {
      await rejection(c.query("select 1"), 5000)
    }
    expect(await db.sql("select 1 as n")).toEqual([{ n: 1 }])
  })

  it("lockTable holds ACCESS EXCLUSIVE from another session until released", async () => {
    const c = await connected(db.port)
    await c.query("set lock_timeout = '300ms'")
    const lock = await db.lockTable("t", "ACCESS EXCLUSIVE")
    expect(await rejectionCode(c.query("select * from t"), 5000)).toBe("55P03")
    await lock.release()
    await lock.release()
    expect((await c.query("select count(*)::int as n from t")).rows).toEqual([{ n: 3 }])
  })

  it("lockRow lets the row be read but not written until released", async () => {
    const c = await connected(db.port)
    await c.query("set lock_timeout = '300ms'")
    const lock = await db.lockRow(["public", "t"], "k = 1")
    expect(lock.rows).toBe(1)
    expect((await c.query("select v from t where k = 1")).rows).toEqual([{ v: "one" }])
    expect(await rejectionCode(c.query("update t set v = 'uno' where k = 1"), 5000)).toBe("55P03")
    await lock.release()
    await c.query("update t set v = 'uno' where k = 1")
    expect(await db.sql("select v from t where k = 1")).toEqual([{ v: "uno" }])
  })

  it("destroy stops the server and removes its directory", async () => {
    const other = await startPostgres()
    const pid = other.postmasterPid()
    expect(pid).toBeDefined()
    await other.destroy()
    expect(fs.existsSync(other.dir)).toBe(false)
    expect(pid !== undefined && isAlive(pid)).toBe(false)
  })
})

describe("ThrowawayPgBouncer", () => {
  let db: ThrowawayPostgres
  let bouncer: ThrowawayPgBouncer

  beforeAll(async () => {
    db = await startPostgres()
    bouncer = await startPgBouncer({ targetPort: db.port })
  })
  afterAll(async () => {
    await closeClients()
    await bouncer?.destroy()
    await db?.destroy()
  })

  it("reads its version and only writes max_prepared_statements where it is known", () => {
    expect(parseVersion("PgBouncer 1.18.0\nlibevent 2.1.12-stable")).toEqual([1, 18, 0])
    expect(supportsMaxPreparedStatements([1, 18, 0])).toBe(false)
    expect(supportsMaxPreparedStatements([1, 21, 0])).toBe(true)
    expect(supportsMaxPreparedStatements([2, 0, 0])).toBe(true)
    const ini = fs.readFileSync(`${bouncer.dir}/pgbouncer.ini`, "utf8")
    expect(ini.includes("max_prepared_statements")).toBe(supportsMaxPreparedStatements(bouncer.version))
    expect(bouncer.url()).toBe(`postgres://postgres@127.0.0.1:${bouncer.port}/test`)
  })

  it("pools by transaction: two clients share one server connection's named statements", async () => {
    const first = await connected(bouncer.port)
    await first.query({ name: "s1", text: "select $1::int as n", values: [1] })
    const second = await connected(bouncer.port)
    await expect(second.query({ name: "s1", text: "select $1::text as n", values: ["x"] }))
      .rejects.toThrow(/prepared statement "s1" already exists/)
    const pools = await bouncer.admin("SHOW POOLS")
    expect(pools.find((row) => row["database"] === "test")?.["pool_mode"]).toBe("transaction")
    // Direct, each session has its own backend and both succeed.
    const a = await connected(db.port)
    const b = await connected(db.port)
    expect((await a.query({ name: "s1", text: "select $1::int as n", values: [1] })).rows).toEqual([{ n: 1 }])
    expect((await b.query({ name: "s1", text: "select $1::text as n", values: ["x"] })).rows).toEqual([{ n: "x" }])
  })

  it("restart breaks live clients; new ones connect on the same port", async () => {
    await closeClients()
    const c = await connected(bouncer.port)
    expect((await c.query("select 1 as n")).rows).toEqual([{ n: 1 }])
    const port = bouncer.port
    await bouncer.restart()
    await rejection(c.query("select 1"), 5000)
    expect(bouncer.port).toBe(port)
    const again = await connected(bouncer.port)
    expect((await again.query("select 2 as n")).rows).toEqual([{ n: 2 }])
  })

  it("pause holds queries without breaking connections; resume lets them through", async () => {
    const c = await connected(bouncer.port)
    await c.query("select 1")
    await bouncer.pause()
    try {
      const held = c.query("select 'resumed' as v")
      expect(await within(held, 1500)).toBe("pending")
      await bouncer.resume()
      expect((await held).rows).toEqual([{ v: "resumed" }])
    } finally {
      await bouncer.resume().catch(() => {})
    }
  })

  it("stop closes the listener", async () => {
    await closeClients()
    await bouncer.stop()
    expect(await rejectionCode(client(bouncer.port).connect(), 5000)).toBe("ECONNREFUSED")
    await bouncer.start()
    const c = await connected(bouncer.port)
    expect((await c.query("select 3 as n")).rows).toEqual([{ n: 3 }])
  })
})

describe("IntervalOracle", () => {
  /** An oracle on a clock the test moves by hand. */
  const manual = (options: { readonly strictFences?: boolean } = {}) => {
    let t = 0
    const oracle = new IntervalOracle({ now: () => t, ...options })
    return {
      oracle,
      at: (ms: number): IntervalOracle => {
        t = ms
        return oracle
      }
    }
  }
  const tags = (oracle: IntervalOracle) => oracle.violations().map((v) => v._tag)

  it("accepts back-to-back terms, including one ending at the instant the next starts", () => {
    const { at, oracle } = manual()
    at(0).started("a", 1n)
    at(10).stopped("a")
    at(10).started("b", 2n)
    at(20).stopped("b")
    at(25).started("b", 3n)
    expect(oracle.violations()).toEqual([])
    expect(() => oracle.assertSafe()).not.toThrow()
    expect(oracle.intervals().map((i) => [i.id, i.fence, i.start, i.end])).toEqual([
      ["a", 1n, 0, 10],
      ["b", 2n, 10, 20],
      ["b", 3n, 25, undefined]
    ])
    expect(oracle.leaders().map((i) => i.id)).toEqual(["b"])
  })

  it("reports two leaders at once, open or closed, even a long term spanning later ones", () => {
    const { at, oracle } = manual()
    at(0).started("a", 1n)
    at(5).started("b", 2n)
    expect(tags(oracle)).toEqual(["Overlap"])
    at(6).stopped("b")
    at(7).started("c", 3n)
    at(8).stopped("c")
    at(9).stopped("a")
    expect(tags(oracle)).toEqual(["Overlap", "Overlap"])
    expect(() => oracle.assertSafe()).toThrow(/two leaders at once: a#1 \[0\.0, 9\.0\] overlaps b#2/)
  })

  it("catches an overlap of a single millisecond", () => {
    const { at, oracle } = manual()
    at(0).started("a", 1n)
    at(10.001).stopped("a")
    at(10).started("b", 2n)
    expect(tags(oracle)).toEqual(["Overlap"])
  })

  it("reports fences going backwards and a fence used by two participants", () => {
    const { at, oracle } = manual()
    at(0).started("a", 5n)
    at(1).stopped("a")
    at(2).started("b", 4n)
    at(3).stopped("b")
    at(4).started("c", 5n)
    at(5).stopped("c")
    expect(tags(oracle)).toEqual(["FenceWentBackwards", "FenceReused"])
  })

  it("lets one participant keep its fence across terms unless fences must be strict", () => {
    for (const strictFences of [false, true]) {
      const { at, oracle } = manual({ strictFences })
      at(0).started("a", 7)
      at(1).stopped("a")
      at(2).started("a", 7)
      expect(tags(oracle)).toEqual(strictFences ? ["FenceWentBackwards"] : [])
    }
  })

  it("measures how long terms overlapped and which fences more than one term held", () => {
    const { at, oracle } = manual()
    at(0).started("a", 1n)
    at(10).started("b", 1n)
    at(15).started("c", 2n)
    at(20).stopped("b")
    at(30).stopped("a")
    at(30).started("b", 3n)
    expect(oracle.overlapMs()).toBe(20)
    at(40).stopped("c")
    expect(oracle.overlapMs()).toBe(30)
    expect(oracle.reusedFences()).toEqual([1n])
    at(41).stopped("b")
    at(42).started("b", 3n)
    expect(oracle.overlapMs()).toBe(30)
    expect(oracle.reusedFences()).toEqual([1n, 3n])
  })

  it("concurrentTime counts back-to-back and empty spans as nothing", () => {
    expect(concurrentTime([])).toBe(0)
    expect(concurrentTime([{ start: 0, end: 10 }, { start: 10, end: 20 }, { start: 5, end: 5 }])).toBe(0)
    expect(concurrentTime([{ start: 0, end: 10 }, { start: 2, end: 4 }, { start: 3, end: 12 }])).toBe(8)
  })

  it("reports protocol misuse: starting twice, stopping without starting", () => {
    const { at, oracle } = manual()
    at(0).started("a", 1n)
    at(1).started("a", 1n)
    at(2).stopped("b")
    expect(tags(oracle)).toEqual(["StartedTwice", "StoppedWithoutStarting"])
  })

  it("measures on one monotonic clock by default", async () => {
    const oracle = new IntervalOracle()
    oracle.started("a", 1n)
    await sleep(20)
    oracle.stopped("a")
    const [interval] = oracle.intervals()
    expect(interval?.end).toBeDefined()
    expect((interval?.end ?? 0) - (interval?.start ?? 0)).toBeGreaterThanOrEqual(15)
  })

  it("assertSomeoneLeadsWithin resolves on the next start, at once if someone leads, and rejects on silence", async () => {
    const oracle = new IntervalOracle()
    await expect(oracle.assertSomeoneLeadsWithin(100)).rejects.toThrow(/nobody led within 100 ms/)
    const waiting = oracle.assertSomeoneLeadsWithin(5000)
    setTimeout(() => oracle.started("late", 9n), 50)
    expect((await waiting).id).toBe("late")
    expect((await oracle.assertSomeoneLeadsWithin(0)).id).toBe("late")
  })
})

describe("Topology", () => {
  it("gives each participant its own breakable path through the pooler", async () => {
    const topology = await startTopology({ participants: ["a", "b"], pooled: true })
    try {
      expect(() => topology.proxy("c")).toThrow(/no participant c/)
      const a = new pg.Client({ connectionString: topology.url("a"), connectionTimeoutMillis: 5000 })
      const b = new pg.Client({ connectionString: topology.url("b"), connectionTimeoutMillis: 5000 })
      for (const c of [a, b]) {
        c.on("error", () => {})
        clients.push(c)
        await c.connect()
      }
      // Through the pooler: SHOW POOLS lists the participants' database.
      await a.query("select 1")
      const pools = await topology.bouncer?.admin("SHOW POOLS")
      expect(pools?.some((row) => row["database"] === "test")).toBe(true)
      topology.proxy("a").setMode(Mode.partition)
      await rejection(a.query("select 1"), 5000)
      expect((await b.query("select 'b still leads' as v")).rows).toEqual([{ v: "b still leads" }])
      topology.setAll(Mode.partition)
      await rejection(b.query("select 1"), 5000)
    } finally {
      await closeClients()
      await topology.destroy()
    }
    expect(fs.existsSync(topology.db.dir)).toBe(false)
    expect(topology.bouncer !== undefined && fs.existsSync(topology.bouncer.dir)).toBe(false)
  })
})

describe("exit hook", () => {
  it("kills a leftover server and removes its directory when the process exits without cleaning up", async () => {
    const script = [
      `import { startPostgres } from ${
        JSON.stringify(new URL("./harness/ThrowawayPostgres.ts", import.meta.url).pathname)
      }`,
      "const db = await startPostgres()",
      "console.log(JSON.stringify({ pid: db.postmasterPid(), dir: db.dir }))",
      "process.exit(0)"
    ].join("\n")
    const { stdout } = await execFileAsync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
      cwd: new URL("../..", import.meta.url).pathname,
      timeout: 60_000
    })
    const left = JSON.parse(stdout.trim().split("\n").pop() ?? "{}") as { readonly pid?: number; readonly dir?: string }
    expect(left.pid).toBeGreaterThan(0)
    await waitFor("the orphaned postmaster to die", () => left.pid !== undefined && !isAlive(left.pid), 10_000)
    expect(left.dir !== undefined && fs.existsSync(left.dir)).toBe(false)
  })
})

describe("scoped resources", () => {
  effectIt.live("a topology lives exactly as long as its scope", () =>
    Effect.gen(function*() {
      const topology = yield* Effect.scoped(
        Effect.gen(function*() {
          const topology = yield* topologyScoped({ participants: ["a"] })
          const rows = yield* Effect.promise(() => topology.db.sql<{ n: number }>("select 1 as n"))
          expect(rows).toEqual([{ n: 1 }])
          expect(topology.proxy("a").port).toBeGreaterThan(0)
          return topology
        })
      )
      expect(fs.existsSync(topology.db.dir)).toBe(false)
      expect(yield* Effect.promise(() => canListen(topology.proxy("a").port))).toBe(true)
    }))

  effectIt.live(
    "@effect/sql-pg reaches the database through a participant's proxy and the pooler",
    () =>
      Effect.gen(function*() {
        const topology = yield* topologyScoped({ participants: ["a"], pooled: true })
        const client = PgClient.layer({ url: Redacted.make(topology.url("a")), maxConnections: 2 })
        const rows = yield* Effect.flatMap(PgClient.PgClient, (sql) => sql<{ n: number }>`select ${41}::int + 1 as n`)
          .pipe(Effect.provide(client), Effect.orDie)
        expect(rows).toEqual([{ n: 42 }])
        expect(topology.proxy("a").stats().bytesUp).toBeGreaterThan(0)
      }).pipe(Effect.scoped)
  )
})
