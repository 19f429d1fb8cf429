/**
 * What bench:scale and bench:spread share: the "raw driver" baseline (a plain
 * `pg` / `mysql2` loop per participant running the store's own SQL, the
 * statements of src/stores/pg/sql.ts and src/stores/mysql/sql.ts, at the
 * elector's rates and jitter, with no timeouts and no watchdog), the count
 * of statements sent on the drivers' connections, and the compiled build
 * the benchmarks' processes run.
 */
import { Duration } from "effect"
import * as Mysql from "mysql2"
import { spawnSync } from "node:child_process"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import pg from "pg"
import * as Timing from "../src/internal/election/timing.js"
import * as MysqlSql from "../src/stores/mysql/sql.js"
import { lockTimeoutFor, statements } from "../src/stores/pg/sql.js"

/** The timing a raw participant keeps, in milliseconds. */
export interface RawTiming {
  readonly leaseDuration: number
  readonly renewInterval: number
  readonly retryPeriod: number
  readonly operationTimeout: number
  /** A term ends this long before the lease the database granted. */
  readonly safetyMargin: number
  /** The wait after a renewal that failed. */
  readonly retryDelay: number
}

export type Op = "acquire" | "renew" | "release" | "inspect"

/** Where a raw participant reports each call: its operation, duration, outcome. */
export interface Recorder {
  record(op: Op, ms: number, ok: boolean, error?: string): void
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))
export const jittered = (period: number) => period / 2 + Math.random() * period / 2

/** The elector's own renewal schedule (up to half early after a claim, a tenth after a renewal), in milliseconds. */
const renewalDelay = (timing: RawTiming, first: boolean) =>
  Duration.toMillis(Timing.renewalDelay(Duration.millis(timing.renewInterval), Math.random(), first))

/** Statements sent on any driver connection of this process, counted by patching the drivers. */
let sent = 0
const countCalls = (proto: { query: (...args: Array<never>) => unknown }) => {
  const original = proto.query
  proto.query = function(this: unknown, ...rest: Array<never>) {
    sent++
    return original.apply(this, rest)
  }
}
countCalls(pg.Client.prototype as never)
countCalls(Mysql.Connection.prototype as never)

/** How many statements this process has sent so far. */
export const statementsSent = (): number => sent

/** The least a raw participant needs from a lease row. */
interface RawLease {
  readonly holder: string
  /** Database milliseconds. */
  readonly expiresAt: number
  readonly now: number
  readonly fence: string
}

export interface RawDriver {
  readonly acquire: (name: string, identity: string) => Promise<RawLease>
  readonly renew: (name: string, identity: string, fence: string) => Promise<RawLease | undefined>
  readonly inspect: (name: string) => Promise<RawLease | undefined>
}

export const pgRaw = (pool: pg.Pool, quoted: string, timing: RawTiming): RawDriver => {
  const sql = statements(quoted, lockTimeoutFor(Duration.millis(timing.operationTimeout)))
  const leaseMicros = String(timing.leaseDuration * 1000)
  const lease = (row: Record<string, string>): RawLease => ({
    holder: row["holder"]!,
    fence: row["fence"]!,
    expiresAt: Number(row["expires_at"]),
    now: Number(row["now"])
  })
  const run = async (text: string, values: Array<string | null>) =>
    (await pool.query<Record<string, string>>({ text, values })).rows[0]
  return {
    // No incarnation: the raw participant is one process's, for life.
    acquire: async (name, identity) => lease((await run(sql.acquire, [name, identity, leaseMicros, null, null]))!),
    renew: async (name, identity, fence) => {
      const row = await run(sql.renew, [name, identity, fence, leaseMicros, null])
      return row === undefined ? undefined : lease(row)
    },
    inspect: async (name) => {
      const row = await run(sql.inspect, [name])
      return row === undefined ? undefined : lease(row)
    }
  }
}

export const mysqlRaw = (pool: Mysql.Pool, quoted: string, timing: RawTiming): RawDriver => {
  const leaseMicros = String(timing.leaseDuration * 1000)
  const lease = (row: Record<string, unknown>): RawLease => ({
    holder: String(row["holder"]),
    fence: String(row["fence"]),
    expiresAt: Number(BigInt(String(row["expires_us"])) / 1000n),
    now: Number(BigInt(String(row["now_us"])) / 1000n)
  })
  const promised = pool.promise()
  const rows = (result: unknown) => result as Array<Record<string, unknown>>
  // Like the store on its own pool: the transaction as one multi-statement
  // request, its statements' results after START TRANSACTION's.
  const transaction = async (steps: ReadonlyArray<readonly [string, ReadonlyArray<unknown>]>) => {
    const [results] = await promised.query(
      ["START TRANSACTION", ...steps.map(([sql]) => sql), "COMMIT"].join(";\n"),
      steps.flatMap(([, values]) => values)
    )
    return (results as unknown as Array<unknown>).slice(1)
  }
  return {
    // No incarnation: the raw participant is one process's, for life.
    acquire: async (name, identity) => {
      const results = await transaction([
        [MysqlSql.upsert(quoted), MysqlSql.upsertValues(name, identity, null, leaseMicros, null)],
        [MysqlSql.holdBack(quoted), [leaseMicros, name, identity, null]],
        [MysqlSql.selectAfterUpsert(quoted), [identity, null, name]]
      ])
      return lease(rows(results[2])[0]!)
    },
    renew: async (name, identity, fence) => {
      const results = await transaction([
        [MysqlSql.renew(quoted), [null, leaseMicros, name, identity, fence]],
        [MysqlSql.selectAfterRenew(quoted), [name]]
      ])
      return (results[0] as { affectedRows: number }).affectedRows === 0 ? undefined : lease(rows(results[1])[0]!)
    },
    inspect: async (name) => {
      const [result] = await promised.query(MysqlSql.inspect(quoted), [name])
      const row = rows(result)[0]
      return row === undefined ? undefined : lease(row)
    }
  }
}

/** One participant of the raw baseline: poll, claim, renew; no timeout, no watchdog. */
export const rawParticipant = (
  driver: RawDriver,
  timing: RawTiming,
  rec: Recorder,
  name: string,
  identity: string
) => {
  let stopped = false
  let fence: string | undefined
  let deadline = 0
  const timed = async <A>(op: Op, f: () => Promise<A>): Promise<A> => {
    const t0 = performance.now()
    try {
      const result = await f()
      rec.record(op, performance.now() - t0, true)
      return result
    } catch (error) {
      rec.record(op, performance.now() - t0, false)
      throw error
    }
  }
  const step = async (): Promise<number> => {
    const sentAt = performance.now()
    if (fence !== undefined) {
      const renewed = await timed("renew", () => driver.renew(name, identity, fence!))
      if (renewed === undefined) {
        fence = undefined
        return jittered(timing.retryPeriod)
      }
      deadline = sentAt + (renewed.expiresAt - renewed.now) - timing.safetyMargin
      return sentAt + renewalDelay(timing, false) - performance.now()
    }
    const seen = await timed("inspect", () => driver.inspect(name))
    if (seen !== undefined && seen.expiresAt > seen.now && seen.holder !== identity) return jittered(timing.retryPeriod)
    const claimed = await timed("acquire", () => driver.acquire(name, identity))
    if (claimed.holder !== identity || claimed.expiresAt <= claimed.now) return jittered(timing.retryPeriod)
    fence = claimed.fence
    deadline = sentAt + (claimed.expiresAt - claimed.now) - timing.safetyMargin
    return sentAt + renewalDelay(timing, true) - performance.now()
  }
  const done = (async () => {
    // Like the electors, every participant starts at once.
    while (!stopped) {
      const wait = await step().catch(() => (fence === undefined ? jittered(timing.retryPeriod) : timing.retryDelay))
      if (!stopped) await sleep(Math.max(0, wait))
    }
  })()
  return {
    leads: () => fence !== undefined && performance.now() < deadline,
    stop: () => {
      stopped = true
      return done
    }
  }
}

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")

/**
 * Compiles the benchmark `bench/<script>.ts`, with the library it imports,
 * by tsc into node_modules/.cache/bench, and gives the compiled script's
 * path: the benchmarks' processes run it on plain node, as an application
 * runs the published package, not through tsx, whose transform gives every
 * function a `name` property of its own (at 1,000 x 3, ~25 MB more heap and
 * the CPU to match).
 */
export const compile = (script: string): string => {
  const outDir = path.join(root, "node_modules", ".cache", "bench")
  const tsc = spawnSync(process.execPath, [
    path.join(root, "node_modules", "typescript", "bin", "tsc"),
    path.join(root, "bench", `${script}.ts`),
    ...["--outDir", outDir, "--rootDir", root, "--target", "ES2022", "--module", "NodeNext"],
    ...["--moduleResolution", "NodeNext", "--types", "node", "--skipLibCheck", "--strict"]
  ], { stdio: "inherit" })
  if (tsc.status !== 0) throw new Error(`tsc exited with ${tsc.status}`)
  return path.join(outDir, "bench", `${script}.js`)
}
