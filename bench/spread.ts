/**
 * `npm run bench:spread -- [--names 100,1000] [--members 2,4] [--steady 10] [--timing fast|default]`:
 * spreading on PostgreSQL (LE_PG_URL, default the local test database), in
 * one process, `Elector.timing.fast` unless told otherwise (every member of
 * every election polls in this one process: thousands of electors on the
 * fast timing saturate it). For each N x M: M members start
 * together; then one joins; then one stops cleanly. For each phase it
 * prints the moves (terms started) and the time until every election is led
 * and every member within floor(N/M)..ceil(N/M); then the store calls per
 * second at steady state. Each run uses tables of its own and drops them.
 */
import { Effect, Exit, Logger, LogLevel, Scope } from "effect"
import { parseArgs } from "node:util"
import pg from "pg"
import * as Elector from "../src/Elector.js"
import * as Store from "../src/Store.js"
import * as PgStore from "../src/stores/PgStore.js"
import * as Faulty from "../src/testing/FaultyStore.js"

const { values } = parseArgs({
  options: {
    names: { type: "string", default: "100,1000" },
    members: { type: "string", default: "2,4" },
    steady: { type: "string", default: "10" },
    timing: { type: "string", default: "fast" }
  }
})
const url = process.env["LE_PG_URL"] ?? "postgres://postgres@127.0.0.1:5432/test"
const table = `bench_spread_${process.pid}`
const timing = values.timing === "default" ? Elector.timing.default : Elector.timing.fast
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const bench = async (n: number, m: number) => {
  const names = Array.from({ length: n }, (_, i) => `t${i}`)
  const root = Effect.runSync(Scope.make())
  const inner = await Effect.runPromise(
    PgStore.makeFromUrl(url, { table, ensureSchema: true, maxConnections: 16 }).pipe(Scope.extend(root))
  )
  const store = Faulty.make(inner)
  const calls = () => Object.values(store.calls).reduce((a, b) => a + b, 0)
  let starts = 0
  const members: Array<{ scope: Scope.CloseableScope; spread: Elector.Spread }> = []
  const join = async (k: number) => {
    const scope = Effect.runSync(Scope.make())
    const spread = await Effect.runPromise(
      Elector.spread({ group: `g${n}x${m}`, names, identity: `member-${k}`, ...timing }, () =>
        Effect.sync(() => {
          starts++
        })).pipe(
          Effect.provideService(Store.Store, store),
          Scope.extend(scope),
          Logger.withMinimumLogLevel(LogLevel.Error)
        )
    )
    members.push({ scope, spread })
  }
  // Every election led, each member within its share: from the members' own (deadline-checked) leadership.
  const balanced = async () => {
    const led = await Promise.all(members.map(({ spread }) => Effect.runPromise(spread.leading)))
    const total = led.reduce((a, l) => a + l.length, 0)
    const floor = Math.floor(n / members.length)
    const ceil = Math.ceil(n / members.length)
    return total === n && led.every((l) => l.length >= floor && l.length <= ceil)
  }
  const phase = async (label: string, change: () => Promise<void>) => {
    const from = starts
    const at = performance.now()
    await change()
    while (!(await balanced())) {
      if (performance.now() - at > 600_000) throw new Error(`${label}: not balanced after 10 minutes`)
      await sleep(100)
    }
    const took = (performance.now() - at) / 1000
    console.log(
      `  ${label.padEnd(28)} moves ${String(starts - from).padStart(5)}   balanced after ${took.toFixed(1)} s`
    )
  }
  console.log(`N=${n} M=${m}`)
  await phase(`start ${m} together`, () => Promise.all(Array.from({ length: m }, (_, k) => join(k))).then(() => {}))
  await phase(`join: ${m} -> ${m + 1}`, () => join(m))
  await phase(`clean stop: ${m + 1} -> ${m}`, async () => {
    const leaving = members.shift()!
    await Effect.runPromise(Scope.close(leaving.scope, Exit.void))
  })
  const steady = Number(values.steady)
  const [c0, s0, t0] = [calls(), starts, performance.now()]
  const cpu0 = process.cpuUsage()
  await sleep(steady * 1000)
  const cpu = process.cpuUsage(cpu0)
  const secs = (performance.now() - t0) / 1000
  console.log(
    `  steady ${steady} s: ${((calls() - c0) / secs).toFixed(0)} store calls/s, ${starts - s0} moves, ` +
      `CPU ${(((cpu.user + cpu.system) / 1e6 / secs) * 100).toFixed(0)}% of a core`
  )
  for (const { scope } of members) await Effect.runPromise(Scope.close(scope, Exit.void))
  await Effect.runPromise(Scope.close(root, Exit.void))
}

const admin = new pg.Client({ connectionString: url })
await admin.connect()
try {
  for (const n of values.names.split(",").map(Number)) {
    for (const m of values.members.split(",").map(Number)) {
      await bench(n, m)
      for (const t of [table, `${table}_candidates`, `${table}_slots`]) await admin.query(`DROP TABLE IF EXISTS ${t}`)
    }
  }
} finally {
  for (const t of [table, `${table}_candidates`, `${table}_slots`]) await admin.query(`DROP TABLE IF EXISTS ${t}`)
  await admin.end()
}
