/**
 * Scale benchmark: N elections x 3 participants in this one process, over one
 * pool, side by side with a "raw driver" baseline in the same invocation.
 *
 * - raw: a plain `pg` / `mysql2` loop per participant (raw.ts) running the store's own
 *   SQL (the statements of src/stores/pg/sql.ts and
 *   src/stores/mysql/sql.ts) at the elector's rates and jitter
 *   (renewals every renewInterval less up to a tenth, polls every jittered
 *   retryPeriod) on a pool of the same size, with no timeouts and no
 *   watchdog; on MariaDB a claim or renewal is one multi-statement request,
 *   as the store sends it on its own pool;
 * - library: the same elections through `Elector.joinAll` over one store
 *   (`PgStore.makeFromPool` / `MysqlStore.makeFromPool`) on that pool size.
 *
 * Each phase runs in a process of its own (raw first), so that its RSS, heap
 * and GC are not the other phase's leftovers, on this script and the library
 * compiled by tsc (into node_modules/.cache/bench) and run by plain
 * node, as an application runs the published package: not through tsx, whose
 * transform gives every function a `name` property of its own (at 1,000 x 3,
 * ~25 MB more heap and the CPU to match). Each warms up, then measures
 * for `--seconds`: CPU (process.cpuUsage, % of one core), GC pauses (% of
 * the window), renew latency p50/p99 (from the call to its answer,
 * time-outs included), event-loop delay p99 (perf_hooks), peak RSS (and
 * its peak over the window's first and last minute: flat or growing),
 * connections the pool opened, requests/s (queries sent on the driver's
 * connections), and elections with no participant that believes it leads
 * (sampled each second).
 *
 *   npm run bench:scale -- --elections 100 --timing fast --store both --seconds 30
 *
 * Options: --elections N (default 10), --timing fast|default (fast: lease 3 s,
 * renew 750 ms, retry 500 ms, operationTimeout 500 ms; default: 15 s / 5 s /
 * 3 s / 3 s), --store pg|mysql|both (default pg), --seconds S (default 30),
 * --warmup S (default: 2 x retryPeriod + 2 s), --pool P (default 10),
 * --only raw|library, --heap (also the heap left after a full collection at
 * the window's start and each minute: a leak or a heap that only grows; the
 * collections cost CPU, so leave it off for CPU figures), --max-old-space MB
 * (node's --max-old-space-size for both phases' processes: V8 lets its heap
 * grow to several times what is live before it collects, unless capped),
 * --rounds R (default 1: raw then library, R times in a row, a table each,
 * then the CPU ratio of each round and their median: one round's ratio moves
 * by ~15 % with the machine's noise), --participants P (default 3; 1: one
 * member leading every election, whose renewals are all its requests). PostgreSQL from LE_PG_URL (default the shared test
 * server), MariaDB from LE_MYSQL_URL. Each run uses a table of its own,
 * dropped at the end.
 */
import { Cause, Duration, Effect, Exit, Logger, LogLevel, Option, Predicate, Scope } from "effect"
import * as Mysql from "mysql2"
import { spawn } from "node:child_process"
import * as os from "node:os"
import { monitorEventLoopDelay, PerformanceObserver } from "node:perf_hooks"
import { parseArgs } from "node:util"
import { setFlagsFromString } from "node:v8"
import { runInNewContext } from "node:vm"
import pg from "pg"
import * as Elector from "../src/Elector.js"
import * as Store from "../src/Store.js"
import * as MysqlSql from "../src/stores/mysql/sql.js"
import * as MysqlStore from "../src/stores/MysqlStore.js"
import { quoteIdentifier } from "../src/stores/pg/config.js"
import { ddl } from "../src/stores/pg/sql.js"
import * as PgStore from "../src/stores/PgStore.js"
import {
  compile,
  mysqlRaw,
  type Op,
  pgRaw,
  type RawDriver,
  rawParticipant,
  type RawTiming,
  type Recorder,
  sleep,
  statementsSent
} from "./raw.js"

const { values: args } = parseArgs({
  options: {
    elections: { type: "string", default: "10" },
    timing: { type: "string", default: "fast" },
    store: { type: "string", default: "pg" },
    seconds: { type: "string", default: "30" },
    warmup: { type: "string" },
    pool: { type: "string", default: "10" },
    only: { type: "string" },
    heap: { type: "boolean", default: false },
    "max-old-space": { type: "string" },
    rounds: { type: "string", default: "1" },
    participants: { type: "string", default: "3" },
    child: { type: "boolean", default: false }
  }
})

const timings = {
  fast: { leaseDuration: 3_000, renewInterval: 750, retryPeriod: 500, operationTimeout: 500 },
  default: { leaseDuration: 15_000, renewInterval: 5_000, retryPeriod: 3_000, operationTimeout: 3_000 }
} as const
if (args.timing !== "fast" && args.timing !== "default") throw new Error("--timing is fast or default")
const timing = timings[args.timing]
const rawTiming: RawTiming = {
  ...timing,
  safetyMargin: Math.max(timing.leaseDuration / 10, 1_000),
  retryDelay: Math.max(timing.renewInterval / 4, 50)
}
const elections = Number(args.elections)
const participants = Number(args.participants)
const seconds = Number(args.seconds)
const rounds = Number(args.rounds)
const warmup = args.warmup === undefined ? (2 * timing.retryPeriod + 2_000) / 1000 : Number(args.warmup)
const poolSize = Number(args.pool)
const pgUrl = process.env["LE_PG_URL"] ?? "postgres://postgres@127.0.0.1:5432/test"
const mysqlUrl = process.env["LE_MYSQL_URL"] ?? "mysql://root@127.0.0.1:3306/test"
const table = `bench_scale_${process.pid}`

/**
 * The heap left after a full collection (--heap: at the window's start, then
 * each minute; the collections cost CPU, so the CPU figure is not comparable).
 */
const liveHeap = (): number => {
  setFlagsFromString("--expose-gc")
  const gc = runInNewContext("gc") as () => void
  gc()
  return process.memoryUsage().heapUsed / 2 ** 20
}

// ---------------------------------------------------------------------------
// What each phase measures

interface Measured extends Recorder {
  measuring: boolean
  renewMs: Array<number>
  /**
   * Summed duration of every store call in the window: busyMs / window is the
   * mean number of calls in flight (Little's law), waiting for a connection
   * included.
   */
  busyMs: number
  calls: number
  failures: number
  /** Failed calls by operation and error: `inspect Saturated`, `renew LeaseLost`, ... */
  readonly failed: Record<string, number>
  record(op: Op, ms: number, ok: boolean, error?: string): void
}

const recorder = (): Measured => ({
  measuring: false,
  renewMs: [],
  busyMs: 0,
  calls: 0,
  failures: 0,
  failed: {},
  record(op, ms, ok, error) {
    if (!this.measuring) return
    this.calls++
    this.busyMs += ms
    if (!ok) {
      this.failures++
      const key = `${op} ${error ?? "error"}`
      this.failed[key] = (this.failed[key] ?? 0) + 1
    }
    if (op === "renew") this.renewMs.push(ms)
  }
})

interface Result {
  readonly phase: "raw" | "library"
  readonly cpuPercent: number
  readonly gcPercent: number
  readonly renewP50: number
  readonly renewP99: number
  readonly loopP99: number
  readonly rssMb: number
  /** Peak RSS over the window's first and last minute (its first and last tenth if shorter): flat or growing. */
  readonly rssFirstMb: number
  readonly rssLastMb: number
  /** With --heap: the heap left after a full collection, at the window's start and end. */
  readonly heapFirstMb: number
  readonly heapLastMb: number
  readonly connections: number
  readonly connectionsInWindow: number
  readonly statementsPerSecond: number
  readonly callsPerSecond: number
  readonly meanCallMs: number
  readonly busyConnections: number
  readonly failures: number
  readonly failed: Record<string, number>
  readonly leaderlessEnd: number
  readonly leaderlessMax: number
  readonly leaderlessMean: number
  /** The seconds of the window whose sample found an election without a leader, if any. */
  readonly leaderlessAt: ReadonlyArray<number>
  /** Seconds from the start of the phase until every election had a leader (sampled every 100 ms); NaN: never. */
  readonly allLedAfter: number
}

const percentile = (samples: ReadonlyArray<number>, p: number): number => {
  const sorted = [...samples].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? Number.NaN
}

interface Running {
  /** How many elections have no participant that believes it leads, now. */
  readonly leaderless: () => number
  readonly stop: () => Promise<void>
}

/** Warms up, measures for `seconds`, stops: the same for both phases. */
const measure = async (
  phase: Result["phase"],
  rec: Measured,
  connections: { total: number },
  start: () => Promise<Running>
): Promise<Result> => {
  const startedAt = performance.now()
  const running = await start()
  let allLedAfter = Number.NaN
  const allLed = setInterval(() => {
    if (running.leaderless() > 0) return
    allLedAfter = (performance.now() - startedAt) / 1000
    clearInterval(allLed)
  }, 100)
  await sleep(warmup * 1000)
  const loop = monitorEventLoopDelay({ resolution: 10 })
  const leaderless: Array<number> = []
  const rss: Array<number> = []
  const heap: Array<number> = args.heap ? [liveHeap()] : []
  const connectionsBefore = connections.total
  const statementsBefore = statementsSent()
  rec.measuring = true
  loop.enable()
  let gcMs = 0
  const gcPauses = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) gcMs += entry.duration
  })
  gcPauses.observe({ entryTypes: ["gc"] })
  const cpu = process.cpuUsage()
  const t0 = performance.now()
  while (performance.now() - t0 < seconds * 1000) {
    await sleep(1000)
    leaderless.push(running.leaderless())
    rss.push(process.memoryUsage().rss / 2 ** 20)
    if (args.heap && rss.length % 60 === 0) heap.push(liveHeap())
  }
  const elapsed = performance.now() - t0
  const used = process.cpuUsage(cpu)
  gcPauses.disconnect()
  loop.disable()
  rec.measuring = false
  const statements = statementsSent() - statementsBefore
  const edge = Math.max(1, Math.min(60, Math.floor(rss.length / 10)))
  const connectionsInWindow = connections.total - connectionsBefore
  clearInterval(allLed)
  await running.stop()
  return {
    phase,
    cpuPercent: ((used.user + used.system) / 1000 / elapsed) * 100,
    gcPercent: (gcMs / elapsed) * 100,
    renewP50: percentile(rec.renewMs, 50),
    renewP99: percentile(rec.renewMs, 99),
    loopP99: loop.percentile(99) / 1e6,
    rssMb: Math.max(...rss),
    rssFirstMb: Math.max(...rss.slice(0, edge)),
    rssLastMb: Math.max(...rss.slice(-edge)),
    heapFirstMb: heap[0] ?? Number.NaN,
    heapLastMb: heap.at(-1) ?? Number.NaN,
    connections: connections.total,
    connectionsInWindow,
    statementsPerSecond: statements / (elapsed / 1000),
    callsPerSecond: rec.calls / (elapsed / 1000),
    meanCallMs: rec.calls === 0 ? Number.NaN : rec.busyMs / rec.calls,
    busyConnections: rec.busyMs / elapsed,
    failures: rec.failures,
    failed: rec.failed,
    leaderlessEnd: leaderless.at(-1) ?? Number.NaN,
    leaderlessMax: Math.max(...leaderless),
    leaderlessMean: leaderless.reduce((a, b) => a + b, 0) / leaderless.length,
    leaderlessAt: leaderless.flatMap((count, i) => count > 0 ? [i + 1] : []),
    allLedAfter
  }
}

// ---------------------------------------------------------------------------
// The raw driver: the store's SQL, at the elector's rates, nothing else

const startRaw = (driver: RawDriver, rec: Measured, prefix: string) => async (): Promise<Running> => {
  const all = Array.from(
    { length: elections },
    (_, e) =>
      Array.from({ length: participants }, (_, p) => rawParticipant(driver, rawTiming, rec, `${prefix}-${e}`, `p${p}`))
  )
  return {
    leaderless: () => all.filter((election) => !election.some((participant) => participant.leads())).length,
    stop: async () => {
      await Promise.all(all.flat().map((participant) => participant.stop()))
    }
  }
}

// ---------------------------------------------------------------------------
// The library: every election through Elector.joinAll over one store

/** The store, with each call timed from the elector's call to its answer (or its time-out). */
/** A failed call's error: its tag, and what a StoreError's cause is. */
const describe = (cause: Cause.Cause<unknown>): string =>
  Option.match(Cause.failureOption(cause), {
    onNone: () => "defect or interruption",
    onSome: (error) => {
      const inner = Predicate.isTagged(error, "StoreError") && Predicate.hasProperty(error, "cause")
        ? error.cause
        : undefined
      return Predicate.isTagged(inner, "Saturated")
        ? "shed"
        : Predicate.isTagged(inner, "OperationTimeout")
        ? "timed out"
        : Predicate.hasProperty(error, "_tag")
        ? String(error._tag)
        : "error"
    }
  })

const timedStore = (store: Store.StoreShape, rec: Measured): Store.StoreShape => {
  const timed = <A, E>(op: Op, effect: Effect.Effect<A, E>): Effect.Effect<A, E> => {
    const t0 = performance.now()
    // One step, as the raw phase's try/catch: timing is the benchmark's own work.
    return Effect.matchCauseEffect(effect, {
      onSuccess: (value) => {
        rec.record(op, performance.now() - t0, true)
        return Effect.succeed(value)
      },
      onFailure: (cause) => {
        rec.record(op, performance.now() - t0, false, describe(cause))
        return Effect.failCause(cause)
      }
    })
  }
  // Timing a call keeps the store's promise to answer within its timeout:
  // the spread keeps it.
  return {
    ...store,
    acquire: (...a) => timed("acquire", store.acquire(...a)),
    renew: (...a) => timed("renew", store.renew(...a)),
    release: (...a) => timed("release", store.release(...a)),
    inspect: (...a) => timed("inspect", store.inspect(...a))
  }
}

const startLibrary = (store: Store.StoreShape, rec: Measured, prefix: string) => async (): Promise<Running> => {
  const scope = Effect.runSync(Scope.make())
  const configs = Array.from(
    { length: elections },
    (_, e) =>
      Array.from({ length: participants }, (_, p): Elector.ElectorConfig => ({
        name: `${prefix}-${e}`,
        identity: `p${p}`,
        leaseDuration: Duration.millis(timing.leaseDuration),
        renewInterval: Duration.millis(timing.renewInterval),
        retryPeriod: Duration.millis(timing.retryPeriod),
        operationTimeout: Duration.millis(timing.operationTimeout)
      }))
  ).flat()
  const { electors } = await Effect.runPromise(
    Elector.joinAll(configs).pipe(
      Effect.provideService(Store.Store, timedStore(store, rec)),
      Scope.extend(scope),
      // Warnings (time-outs, lost leases) would flood the terminal under overload.
      Logger.withMinimumLogLevel(LogLevel.Error)
    )
  )
  return {
    // One fiber for the whole sample: a fiber per elector read would be
    // the benchmark's own load, counted as the library's.
    leaderless: () => {
      const leading = Effect.runSync(Effect.forEach(electors, (elector) => elector.isLeader))
      let count = 0
      for (let e = 0; e < elections; e++) {
        if (!leading.slice(e * participants, (e + 1) * participants).some(Boolean)) count++
      }
      return count
    },
    stop: () => Effect.runPromise(Scope.close(scope, Exit.void))
  }
}

// ---------------------------------------------------------------------------
// Per store: one table, one pool per phase of the same size

interface Target {
  readonly label: string
  /** Runs a statement on a connection of its own (DDL, clean-up). */
  readonly admin: (statement: string) => Promise<void>
  readonly closeAdmin: () => Promise<void>
  readonly createTable: string
  readonly dropTable: string
  /** A pool of `poolSize` that counts the connections it opens; the raw driver and the store over it; its end. */
  readonly open: (connections: { total: number }) => {
    readonly raw: RawDriver
    readonly store: Effect.Effect<Store.StoreShape, unknown>
    readonly end: () => Promise<void>
  }
}

const storeOptions = { table, operationTimeout: Duration.millis(timing.operationTimeout) }

const pgTarget = async (): Promise<Target> => {
  const quoted = quoteIdentifier(table)
  const admin = new pg.Client({ connectionString: pgUrl })
  await admin.connect()
  return {
    label: "PostgreSQL",
    admin: async (statement) => void (await admin.query(statement)),
    closeAdmin: () => admin.end(),
    createTable: ddl(quoted),
    dropTable: `DROP TABLE IF EXISTS ${quoted}`,
    open: (connections) => {
      // The settings PgStore.layerFromUrl gives the pool it owns.
      const pool = new pg.Pool({
        connectionString: pgUrl,
        max: poolSize,
        idleTimeoutMillis: 30_000,
        maxLifetimeSeconds: 300,
        connectionTimeoutMillis: 2 * timing.operationTimeout,
        keepAlive: true,
        application_name: "bench-scale"
      }).on("error", () => {}).on("connect", () => connections.total++)
      return {
        raw: pgRaw(pool, quoted, rawTiming),
        store: PgStore.makeFromPool(pool, storeOptions),
        end: () => pool.end()
      }
    }
  }
}

const mysqlTarget = async (): Promise<Target> => {
  const quoted = `\`${table}\``
  const admin = Mysql.createConnection({ uri: mysqlUrl }).promise()
  return {
    label: "MariaDB",
    admin: async (statement) => void (await admin.query(statement)),
    closeAdmin: () => admin.end(),
    createTable: MysqlSql.createTable(quoted),
    dropTable: `DROP TABLE IF EXISTS ${quoted}`,
    open: (connections) => {
      // As MysqlStore.layerFromUrl's own pool: one request per transaction.
      const pool = Mysql.createPool({
        uri: mysqlUrl,
        connectionLimit: poolSize,
        connectTimeout: 5_000,
        enableKeepAlive: true,
        multipleStatements: true
      })
      pool.on("connection", () => connections.total++)
      return {
        raw: mysqlRaw(pool, quoted, rawTiming),
        store: MysqlStore.makeFromPool(pool, storeOptions),
        end: () => new Promise<void>((resolve) => pool.end(() => resolve()))
      }
    }
  }
}

/** Runs `phase` on `target` in this process, and reports its result on a line of its own. */
const runPhase = async (target: Target, phase: Result["phase"]): Promise<Result> => {
  await target.admin(target.createTable)
  try {
    const connections = { total: 0 }
    const opened = target.open(connections)
    const rec = recorder()
    const start = phase === "raw"
      ? startRaw(opened.raw, rec, "raw")
      : startLibrary(await Effect.runPromise(opened.store), rec, "library")
    const result = await measure(phase, rec, connections, start)
    await opened.end()
    return result
  } finally {
    await target.admin(target.dropTable)
    await target.closeAdmin()
  }
}

const resultPrefix = "bench:scale result "

/**
 * Runs `phase` in a process of its own (this script with `--only`), so that
 * each phase's RSS, heap and GC are its own, not the other phase's leftovers.
 */
const runApart = (store: "pg" | "mysql", phase: Result["phase"]): Promise<Result> =>
  new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [
        ...(args["max-old-space"] === undefined ? [] : [`--max-old-space-size=${args["max-old-space"]}`]),
        compiled!,
        ...process.argv.slice(2),
        ...["--store", store, "--only", phase, "--child"]
      ],
      { stdio: ["ignore", "pipe", "inherit"] }
    )
    let output = ""
    child.stdout.on("data", (chunk: Buffer) => {
      output += chunk.toString()
    })
    child.on("error", reject)
    child.on("exit", (code) => {
      const line = output.split("\n").find((l) => l.startsWith(resultPrefix))
      if (code !== 0 || line === undefined) return reject(new Error(`${store} ${phase} phase exited with ${code}`))
      const result = JSON.parse(line.slice(resultPrefix.length)) as Result
      console.log(`${store} ${phase} done: ${JSON.stringify(result)}`)
      resolve(result)
    })
  })

/** This script as tsc compiles it, with the library it imports (see raw.ts). */
let compiled: string | undefined

const targets = {
  pg: { label: "PostgreSQL", open: () => pgTarget() },
  mysql: { label: "MariaDB", open: () => mysqlTarget() }
}

const runStore = async (store: "pg" | "mysql"): Promise<void> => {
  if (args.child) {
    const result = await runPhase(await targets[store].open(), args.only === "raw" ? "raw" : "library")
    console.log(`${resultPrefix}${JSON.stringify(result)}`)
    return
  }
  const ratios: Array<number> = []
  for (let round = 1; round <= rounds; round++) {
    const results: Array<Result> = []
    for (const phase of phases) results.push(await runApart(store, phase))
    print(`${targets[store].label}${rounds > 1 ? ` (round ${round} of ${rounds})` : ""}`, results)
    const [raw, library] = results
    if (raw !== undefined && library !== undefined) ratios.push(library.cpuPercent / raw.cpuPercent)
  }
  if (ratios.length > 1) {
    const sorted = [...ratios].sort((a, b) => a - b)
    const mid = sorted.length >> 1
    const median = sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
    console.log(
      `\n${targets[store].label}: CPU library / raw by round ${ratios.map((r) => `${fixed(r, 2)}x`).join(", ")}; ` +
        `median ${fixed(median, 2)}x`
    )
  }
}

const phases: ReadonlyArray<Result["phase"]> = args.only === "raw"
  ? ["raw"]
  : args.only === "library"
  ? ["library"]
  : ["raw", "library"]

const fixed = (n: number, digits = 1) => Number.isFinite(n) ? n.toFixed(digits) : "-"

const print = (store: string, results: ReadonlyArray<Result>) => {
  const rows: ReadonlyArray<readonly [string, (r: Result) => string]> = [
    ["CPU (% of one core)", (r) => fixed(r.cpuPercent)],
    ["GC pauses (% of the time)", (r) => fixed(r.gcPercent)],
    ["renew p50 (ms)", (r) => fixed(r.renewP50)],
    ["renew p99 (ms)", (r) => fixed(r.renewP99)],
    ["event-loop delay p99 (ms)", (r) => fixed(r.loopP99)],
    ["peak RSS (MB)", (r) => fixed(r.rssMb, 0)],
    ["  first / last minute", (r) => `${fixed(r.rssFirstMb, 0)} / ${fixed(r.rssLastMb, 0)}`],
    ...(args.heap
      ? [
        [
          "heap after full GC, start / end (MB)",
          (r: Result) => `${fixed(r.heapFirstMb)} / ${fixed(r.heapLastMb)}`
        ] as const
      ]
      : []),
    ["connections opened (all / in window)", (r) => `${r.connections} / ${r.connectionsInWindow}`],
    ["requests/s (driver queries)", (r) => fixed(r.statementsPerSecond, 0)],
    ["store calls/s", (r) => fixed(r.callsPerSecond, 0)],
    ["mean call (ms)", (r) => fixed(r.meanCallMs, 2)],
    ["calls in flight (calls/s x mean call)", (r) => fixed(r.busyConnections, 2)],
    ["failed calls", (r) => String(r.failures)],
    ...Array.from(new Set(results.flatMap((r) => Object.keys(r.failed)))).sort().map((kind) =>
      [`  ${kind}`, (r: Result) => String(r.failed[kind] ?? 0)] as const
    ),
    [
      "leaderless elections (end / max / mean)",
      (r) => `${r.leaderlessEnd} / ${r.leaderlessMax} / ${fixed(r.leaderlessMean)}`
    ],
    ["seconds of the window with one", (r) => r.leaderlessAt.length === 0 ? "-" : r.leaderlessAt.join(", ")],
    ["time until every election has a leader (s)", (r) => fixed(r.allLedAfter, 1)]
  ]
  const width = Math.max(...rows.map(([label]) => label.length))
  console.log(`\n${store}: ${elections} elections x ${participants}, ${args.timing} timing, pool ${poolSize}`)
  console.log(`${"".padEnd(width)}  ${results.map((r) => r.phase.padStart(14)).join("  ")}`)
  for (const [label, value] of rows) {
    console.log(`${label.padEnd(width)}  ${results.map((r) => value(r).padStart(14)).join("  ")}`)
  }
}

const main = async () => {
  if (!args.child) {
    console.log(
      `bench:scale: ${elections} elections x ${participants} participants in one process; ${args.timing} timing ` +
        `(lease ${timing.leaseDuration} ms, renew ${timing.renewInterval} ms, retry ${timing.retryPeriod} ms, ` +
        `operationTimeout ${timing.operationTimeout} ms); warm-up ${warmup} s, window ${seconds} s; ` +
        `pool ${poolSize}; node ${process.version}` +
        (args["max-old-space"] === undefined ? "" : ` --max-old-space-size=${args["max-old-space"]}`) +
        `; each phase in a process of its own; library logs at Error only`
    )
    console.log(
      `machine: ${os.availableParallelism()} cores, load average ${
        os.loadavg().map((l) => l.toFixed(2)).join(" ")
      } at start`
    )
  }
  if (!args.child) compiled = compile("scale")
  if (args.store === "pg" || args.store === "both") await runStore("pg")
  if (args.store === "mysql" || args.store === "both") await runStore("mysql")
}

main().catch((error: unknown) => {
  console.error(error)
  process.exitCode = 1
})
