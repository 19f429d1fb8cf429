/**
 * `npm run bench:spread -- [--names 100,1000] [--members 2,4] [--processes] [--runs 1] [--steady 20]
 * [--timing default|fast] [--limit 300] [--pool P] [--no-raw]`: spreading on PostgreSQL (LE_PG_URL,
 * default the local test database). For each N x M, R times: M members
 * start together; then one joins; then one of the first stops cleanly. For
 * each phase it prints the moves (terms started) beside the fewest the
 * rules allow, and the time until every election is led and every member
 * leads floor(N/M)..ceil(N/M); then, over a steady window, the statements
 * per second (sent on the driver's connections, counted in each process:
 * the server's own counts, pg_stat_database's commits, would take in
 * whatever else uses the database)
 * and each member process's CPU (user + system, % of one core). Then the
 * raw driver loop (raw.ts) does the same renewals and polls: M plain
 * participants per election, laid out in processes as the members were,
 * measured over a window as long after a warm-up; its statements per second
 * and CPU go beside the library's.
 *
 * Every member runs in one process, or with `--processes` each in a process
 * of its own (the raw participants likewise). Either way the members run in
 * child processes of this one (a pool of `--pool` connections each: 16,
 * or 6 with `--processes`), on this script and the library compiled by
 * tsc and run by plain node (raw.ts `compile`); this process only drives
 * them and adds up what they report. A phase not balanced within `--limit`
 * seconds is reported so, and the run skips to its steady window. Each
 * run uses tables of its own and drops them.
 */
import { Duration, Effect, Exit, Logger, LogLevel, Scope } from "effect"
import { type ChildProcess, fork } from "node:child_process"
import * as os from "node:os"
import { parseArgs } from "node:util"
import pg from "pg"
import * as Elector from "../src/Elector.js"
import * as Timing from "../src/internal/election/timing.js"
import * as Store from "../src/Store.js"
import { quoteIdentifier } from "../src/stores/pg/config.js"
import { ddl } from "../src/stores/pg/sql.js"
import * as PgStore from "../src/stores/PgStore.js"
import { compile, pgRaw, rawParticipant, type RawTiming, sleep, statementsSent } from "./raw.js"

const { values } = parseArgs({
  options: {
    names: { type: "string", default: "100,1000" },
    members: { type: "string", default: "2,4" },
    processes: { type: "boolean", default: false },
    runs: { type: "string", default: "1" },
    steady: { type: "string", default: "20" },
    timing: { type: "string", default: "default" },
    limit: { type: "string", default: "300" },
    pool: { type: "string" },
    "no-raw": { type: "boolean", default: false },
    // A child process: "member" or "raw", on this table, over this many elections.
    child: { type: "string" },
    table: { type: "string" },
    n: { type: "string" }
  }
})
const url = process.env["LE_PG_URL"] ?? "postgres://postgres@127.0.0.1:5432/test"
if (values.timing !== "fast" && values.timing !== "default") throw new Error("--timing is fast or default")
const timing = Elector.timing[values.timing]
const rawTiming: RawTiming = {
  leaseDuration: Duration.toMillis(timing.leaseDuration),
  renewInterval: Duration.toMillis(timing.renewInterval),
  retryPeriod: Duration.toMillis(timing.retryPeriod),
  operationTimeout: Duration.toMillis(timing.operationTimeout),
  safetyMargin: Duration.toMillis(timing.safetyMargin),
  retryDelay: Duration.toMillis(Timing.retryDelay(timing.renewInterval))
}
// Nine processes of 16 would pass PostgreSQL's default of 100 connections.
const poolSize = Number(values.pool ?? (values.processes ? 6 : 16))
const namesOf = (n: number) => Array.from({ length: n }, (_, i) => `t${i}`)

// ---------------------------------------------------------------------------
// A child process: members (or raw participants) by index, driven by messages

/** What a child process tells of itself. */
interface Status {
  /** Per member index in this process: the elections it leads now. */
  readonly leading: Record<number, number>
  /** Terms started in this process so far, by every member it ran. */
  readonly starts: number
  readonly statements: number
  /** User + system CPU of this process so far, in microseconds. */
  readonly cpu: number
}

type Request =
  | { readonly op: "join"; readonly index: number }
  | { readonly op: "leave"; readonly index: number }
  | { readonly op: "status" }

const child = async (kind: string, table: string, n: number) => {
  const names = namesOf(n)
  const root = Effect.runSync(Scope.make())
  const quoted = quoteIdentifier(table)
  const pool = new pg.Pool({ connectionString: url, max: poolSize }).on("error", () => {})
  const store = kind === "member"
    ? await Effect.runPromise(
      PgStore.makeFromUrl(url, { table, maxConnections: poolSize }).pipe(Scope.extend(root))
    )
    : undefined
  let starts = 0
  const members = new Map<number, { readonly leading: () => Promise<number>; readonly stop: () => Promise<void> }>()
  const driver = pgRaw(pool, quoted, rawTiming)
  const join = async (index: number) => {
    if (store === undefined) {
      const participants = names.map((name) =>
        rawParticipant(driver, rawTiming, { record: () => {} }, name, `p${index}`)
      )
      members.set(index, {
        leading: async () => participants.filter((p) => p.leads()).length,
        stop: async () => void (await Promise.all(participants.map((p) => p.stop())))
      })
      return
    }
    const scope = Effect.runSync(Scope.make())
    const spread = await Effect.runPromise(
      Elector.spread({ group: "bench", names, identity: `member-${index}`, ...timing }, () =>
        Effect.sync(() => {
          starts++
        })).pipe(
          Effect.provideService(Store.Store, store),
          Scope.extend(scope),
          Logger.withMinimumLogLevel(LogLevel.Error)
        )
    )
    members.set(index, {
      leading: () => Effect.runPromise(Effect.map(spread.leading, (led) => led.length)),
      stop: () => Effect.runPromise(Scope.close(scope, Exit.void))
    })
  }
  const status = async (): Promise<Status> => {
    const leading: Record<number, number> = {}
    for (const [index, member] of members) leading[index] = await member.leading()
    const cpu = process.cpuUsage()
    return { leading, starts, statements: statementsSent(), cpu: cpu.user + cpu.system }
  }
  process.on("message", (message: { readonly id: number; readonly request: Request }) => {
    const { id, request } = message
    const answer = request.op === "join"
      ? join(request.index)
      : request.op === "leave"
      ? members.get(request.index)!.stop().then(() => void members.delete(request.index))
      : Promise.resolve()
    void answer.then(status).then((reply) => process.send!({ id, reply }))
  })
  process.on("disconnect", () => {
    void (async () => {
      for (const member of members.values()) await member.stop()
      await Effect.runPromise(Scope.close(root, Exit.void))
      await pool.end()
      process.exit(0)
    })()
  })
  process.send!({ id: 0 })
}

// ---------------------------------------------------------------------------
// This process: drives the children, adds up what they report

/** A child process, and what it last reported. */
class Proc {
  private next = 1
  private readonly pending = new Map<number, (status: Status) => void>()
  last: Status = { leading: {}, starts: 0, statements: 0, cpu: 0 }
  readonly ready: Promise<void>
  readonly exited: Promise<void>

  constructor(private readonly process: ChildProcess) {
    this.ready = new Promise((resolve) => this.pending.set(0, () => resolve()))
    this.exited = new Promise((resolve) => process.on("exit", () => resolve()))
    process.on("message", ({ id, reply }: { readonly id: number; readonly reply: Status }) => {
      if (reply !== undefined) this.last = reply
      this.pending.get(id)?.(reply)
      this.pending.delete(id)
    })
  }

  ask(request: Request): Promise<Status> {
    const id = this.next++
    return new Promise((resolve) => {
      this.pending.set(id, resolve)
      this.process.send({ id, request })
    })
  }

  /** Ends the child: it stops what runs in it first. */
  end(): Promise<void> {
    if (this.process.connected) this.process.disconnect()
    return this.exited
  }
}

interface Phase {
  readonly moves: number
  /** The fewest moves that balance the group. */
  readonly rules: number
  /** NaN: not balanced within --limit. */
  readonly seconds: number
}

interface Window {
  readonly statementsPerSecond: number
  readonly moves: number
  /** Per process, % of one core. */
  readonly cpu: ReadonlyArray<number>
}

interface Run {
  readonly n: number
  readonly m: number
  readonly load: ReadonlyArray<number>
  readonly phases: ReadonlyArray<readonly [string, Phase]>
  readonly library: Window
  readonly raw: Window | undefined
}

const limit = Number(values.limit) * 1000
const steady = Number(values.steady) * 1000

/** The child processes of one side (library or raw) of a run, and which holds which member. */
const layout = (script: string, kind: "member" | "raw", table: string, n: number) => {
  const procs = new Map<number, Proc>()
  /** Every process of the side, ended ones too: their terms count. */
  const all: Array<Proc> = []
  const live = () => all.filter((proc) => [...procs.values()].includes(proc))
  const spawn = async () => {
    const proc = new Proc(
      fork(script, ["--child", kind, "--table", table, "--n", String(n), ...process.argv.slice(2)], { execArgv: [] })
    )
    await proc.ready
    all.push(proc)
    return proc
  }
  const shared = values.processes ? undefined : spawn()
  const statusAll = () => Promise.all(live().map((proc) => proc.ask({ op: "status" })))
  return {
    join: async (index: number) => {
      const proc = shared === undefined ? await spawn() : await shared
      procs.set(index, proc)
      await proc.ask({ op: "join", index })
    },
    leave: async (index: number) => {
      const proc = procs.get(index)!
      procs.delete(index)
      await proc.ask({ op: "leave", index })
      if (values.processes) await proc.end()
    },
    /** How many elections each live member leads, fresh. */
    leading: async (): Promise<Record<number, number>> =>
      Object.assign({}, ...(await statusAll()).map((status) => status.leading)),
    /** Terms started so far, by every process ever (ended ones as they last reported). */
    starts: () => all.reduce((sum, proc) => sum + proc.last.starts, 0),
    /** Measures the live processes over `ms`. */
    window: async (ms: number): Promise<Window> => {
      const measured = live()
      await statusAll()
      const before = measured.map((proc) => proc.last)
      const starts0 = all.reduce((sum, proc) => sum + proc.last.starts, 0)
      const t0 = performance.now()
      await sleep(ms)
      await statusAll()
      const seconds = (performance.now() - t0) / 1000
      return {
        statementsPerSecond: measured.reduce((sum, proc, i) => sum + proc.last.statements - before[i]!.statements, 0) /
          seconds,
        moves: all.reduce((sum, proc) => sum + proc.last.starts, 0) - starts0,
        cpu: measured.map((proc, i) => (proc.last.cpu - before[i]!.cpu) / 1e4 / seconds)
      }
    },
    end: () => Promise.all(all.map((proc) => proc.end()))
  }
}

const bench = async (script: string, admin: pg.Client, n: number, m: number, run: number): Promise<Run> => {
  const table = `bench_spread_${process.pid}_${n}x${m}_${run}`
  const tables = [table, `${table}_candidates`, `${table}_slots`, `${table}_raw`]
  const load = os.loadavg()
  // The schema once, before the members: M processes creating it at once would race.
  await Effect.runPromise(Effect.scoped(PgStore.makeFromUrl(url, { table, ensureSchema: true, maxConnections: 1 })))
  await admin.query(ddl(quoteIdentifier(`${table}_raw`)))
  try {
    const library = layout(script, "member", table, n)
    let members = 0
    const balanced = async () => {
      const led = Object.values(await library.leading())
      const floor = Math.floor(n / members)
      const ceil = Math.ceil(n / members)
      return led.length === members && led.reduce((a, b) => a + b, 0) === n &&
        led.every((count) => count >= floor && count <= ceil)
    }
    const phases: Array<readonly [string, Phase]> = []
    let failed = false
    const phase = async (label: string, rules: number, change: () => Promise<void>) => {
      if (failed) return
      const from = library.starts()
      const at = performance.now()
      await change()
      let seconds = Number.NaN
      while (performance.now() - at < limit) {
        if (await balanced()) {
          seconds = (performance.now() - at) / 1000
          break
        }
        await sleep(250)
      }
      failed = Number.isNaN(seconds)
      phases.push([label, { moves: library.starts() - from, rules, seconds }])
    }
    await phase("start", n, async () => {
      members = m
      await Promise.all(Array.from({ length: m }, (_, k) => library.join(k)))
    })
    await phase("join", Math.floor(n / (m + 1)), async () => {
      members = m + 1
      await library.join(m)
    })
    const leaving = (await library.leading())[0] ?? 0
    await phase("leave", leaving, async () => {
      members = m
      await library.leave(0)
    })
    const measured = await library.window(steady)
    await library.end()
    let raw: Window | undefined
    if (!values["no-raw"]) {
      const baseline = layout(script, "raw", `${table}_raw`, n)
      await Promise.all(Array.from({ length: m }, (_, k) => baseline.join(k)))
      await sleep(2 * rawTiming.retryPeriod + 2_000)
      raw = await baseline.window(steady)
      await baseline.end()
    }
    return { n, m, load, phases, library: measured, raw }
  } finally {
    for (const t of tables) await admin.query(`DROP TABLE IF EXISTS ${quoteIdentifier(t)}`)
  }
}

const fixed = (x: number, digits = 0) => Number.isFinite(x) ? x.toFixed(digits) : "-"
const sum = (xs: ReadonlyArray<number>) => xs.reduce((a, b) => a + b, 0)

/** One figure over the runs: the median, and [the range] when the runs differ. */
const spreadOf = (xs: ReadonlyArray<number>, digits = 0) => {
  const sorted = xs.filter(Number.isFinite).sort((a, b) => a - b)
  if (sorted.length === 0) return "-"
  const mid = sorted.length >> 1
  const median = sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
  const missed = xs.length - sorted.length
  const [low, high] = [fixed(sorted[0]!, digits), fixed(sorted.at(-1)!, digits)]
  const range = low === high ? "" : ` [${low}-${high}]`
  return `${fixed(median, digits)}${range}${missed > 0 ? `, ${missed} of ${xs.length} never` : ""}`
}

const printRun = ({ library, load, m, n, phases, raw }: Run, run: number) => {
  const text = phases.map(([label, p]) =>
    `${label} ${p.moves} moves (rules ${p.rules}) ${
      Number.isNaN(p.seconds) ? "not balanced" : `${fixed(p.seconds, 1)} s`
    }`
  ).join("; ")
  const window = (w: Window) =>
    `${fixed(w.statementsPerSecond)} statements/s, CPU ${w.cpu.map((c) => fixed(c)).join("+")}% of a core`
  console.log(`N=${n} M=${m} run ${run} (load ${load.map((l) => l.toFixed(1)).join(" ")}): ${text}`)
  console.log(
    `  steady: library ${window(library)}, ${library.moves} moves${raw === undefined ? "" : `; raw ${window(raw)}`}`
  )
}

/** The runs of one N x M as a row of the table (markdown, as docs/performance.md has it). */
const row = (runs: ReadonlyArray<Run>) => {
  const { m, n } = runs[0]!
  const phaseOf = (label: string, f: (p: Phase) => number) =>
    runs.map((r) => r.phases.find(([l]) => l === label)?.[1]).map((p) => (p === undefined ? Number.NaN : f(p)))
  const moves = (label: string) =>
    `${spreadOf(phaseOf(label, (p) => p.moves))} / ${spreadOf(phaseOf(label, (p) => p.rules))} | ${
      spreadOf(phaseOf(label, (p) => p.seconds), 1)
    }`
  const cpu = (w: (r: Run) => Window | undefined) =>
    spreadOf(runs.map((r) => {
      const window = w(r)
      return window === undefined ? Number.NaN : sum(window.cpu)
    }))
  return `| ${n.toLocaleString("en")} | ${m} | ${moves("join")} | ${moves("leave")} | ${
    spreadOf(runs.map((r) => r.library.statementsPerSecond))
  } | ${cpu((r) => r.library)} | ${spreadOf(runs.map((r) => r.raw?.statementsPerSecond ?? Number.NaN))} | ${
    cpu((r) => r.raw)
  } | ${runs.map((r) => r.load[0]!.toFixed(1)).join(", ")} |`
}

const main = async () => {
  const script = compile("spread")
  const runs = Number(values.runs)
  console.log(
    `bench:spread: ${values.timing} timing, members in ${values.processes ? "a process each" : "one process"}, ` +
      `pool ${poolSize} per process, steady window ${values.steady} s, ${runs} run(s) each; node ${process.version}; ` +
      `${os.availableParallelism()} cores, load average ${os.loadavg().map((l) => l.toFixed(2)).join(" ")}`
  )
  const admin = new pg.Client({ connectionString: url })
  await admin.connect()
  const rows: Array<string> = []
  try {
    for (const n of values.names.split(",").map(Number)) {
      for (const m of values.members.split(",").map(Number)) {
        const done: Array<Run> = []
        for (let run = 1; run <= runs; run++) {
          const result = await bench(script, admin, n, m, run)
          printRun(result, run)
          done.push(result)
        }
        rows.push(row(done))
      }
    }
  } finally {
    await admin.end()
  }
  console.log(
    `\n| N | M | join: moves / rules | balanced after (s) | clean stop: moves / rules | balanced after (s) | ` +
      `statements/s | CPU, % of a core (all members) | raw: statements/s | raw: CPU | load average (1 min) |`
  )
  console.log(`| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |`)
  for (const line of rows) console.log(line)
}

const role = values.child
if (role === undefined) await main()
else await child(role, values.table!, Number(values.n))
