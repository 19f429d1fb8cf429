/**
 * Chaos: a leader-only cron job on real PostgreSQL, direct and through
 * PgBouncer (transaction pooling). Three participants run the same job
 * every 5 seconds; the leader crashes (no release) a second before a slot
 * comes due, so the slot falls due while nobody leads. Every slot must run
 * exactly once: the one in the gap by the successor, late, and none twice.
 */
import { Effect, Exit, Fiber, Layer, Logger, LogLevel, Scope } from "effect"
import pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as Elector from "../../src/Elector.js"
import * as PgStore from "../../src/stores/PgStore.js"
import { ensureSchema, table, timing } from "./fleet.js"
import { sleep } from "./harness/process.js"
import { startTopology, type Topology } from "./harness/Topology.js"

interface Run {
  readonly id: string
  readonly at: number
  readonly fence: bigint
  /** Local wall-clock lateness of the run, for the report. */
  readonly lateMs: number
}

const every = 5_000

const participant = async (topology: Topology, name: string, id: string, runs: Array<Run>) => {
  const scope = Effect.runSync(Scope.make())
  const program = Effect.gen(function*() {
    const context = yield* Layer.buildWithScope(
      PgStore.layerFromUrl(topology.url(id), { table, operationTimeout: timing.operationTimeout, maxConnections: 2 }),
      scope
    )
    return yield* Elector.make({ name, identity: id, ...timing, disableRelease: true }).pipe(
      Scope.extend(scope),
      Effect.provide(context)
    )
  })
  const elector = await Effect.runPromise(program)
  const quiet = <A, E>(effect: Effect.Effect<A, E>) => Logger.withMinimumLogLevel(effect, LogLevel.Error)
  const run = Effect.runFork(quiet(elector.run))
  const job = Effect.runFork(quiet(
    Elector.schedule(
      "chaos-cron",
      "*/5 * * * * *",
      (slot) =>
        Effect.sync(() =>
          runs.push({ id, at: slot.at.getTime(), fence: slot.fence, lateMs: Date.now() - slot.at.getTime() })
        )
    ).pipe(
      Effect.provideService(Elector.Elector, elector)
    )
  ))
  return {
    elector,
    /** A crash: everything stops, nothing is released. */
    crash: async () => {
      await Effect.runPromise(Fiber.interrupt(job))
      await Effect.runPromise(Fiber.interrupt(run))
      await Effect.runPromise(Scope.close(scope, Exit.void))
    }
  }
}

const until = async (what: string, timeoutMs: number, check: () => boolean) => {
  const deadline = performance.now() + timeoutMs
  while (!check()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await sleep(20)
  }
}

let elections = 0
const results: Array<string> = []

describe.each(["direct", "pooled"] as const)("chaos: cron job through a leader crash (%s)", (path) => {
  let topology: Topology | undefined
  beforeAll(async () => {
    topology = await startTopology({ participants: ["a", "b", "c"], pooled: path === "pooled" })
    await ensureSchema(topology.db.url())
  }, 60_000)
  afterAll(async () => {
    await topology?.destroy()
  })

  it("runs every slot exactly once; the slot due during the failover runs on the successor", async () => {
    const name = `chaos-job-${process.pid}-${++elections}`
    const runs: Array<Run> = []
    const members = new Map<string, Awaited<ReturnType<typeof participant>>>()
    for (const id of ["a", "b", "c"]) members.set(id, await participant(topology!, name, id, runs))
    try {
      await until("two slots", 4 * every, () => runs.length >= 2)
      // A second before the next slot, the leader crashes.
      const next = Math.ceil((Date.now() + 1_500) / every) * every
      await sleep(next - 1_000 - Date.now())
      const leaders = []
      for (const [id, member] of members) if (await Effect.runPromise(member.elector.isLeader)) leaders.push(id)
      expect(leaders).toHaveLength(1)
      const crashed = leaders[0]!
      await members.get(crashed)!.crash()
      members.delete(crashed)
      await until("three slots after the crash", 5 * every, () => runs.filter((run) => run.at >= next).length >= 3)

      const instants = runs.map((run) => run.at)
      // Exactly once: no slot twice, and none skipped from the first to the last.
      expect(new Set(instants).size).toBe(instants.length)
      const first = Math.min(...instants)
      expect([...instants].sort((x, y) => x - y)).toEqual(instants.map((_, i) => first + i * every))
      const gap = runs.find((run) => run.at === next)!
      expect(gap.id).not.toBe(crashed)
      expect(runs.filter((run) => run.at < next).every((run) => run.id === crashed)).toBe(true)
      // The database holds one completed slot per run, under the fence that ran it.
      const client = new pg.Client({ connectionString: topology!.db.url() })
      await client.connect()
      const rows = await client.query(
        `SELECT slot_ms::text AS at, fence::text AS fence, completed_at IS NOT NULL AS done FROM ${table}_slots WHERE name = $1 AND slot_ms >= $2 ORDER BY slot_ms`,
        [name, first]
      ).finally(() => client.end())
      expect(rows.rows.map((row) => [Number(row.at), BigInt(row.fence), row.done])).toEqual(
        runs.map((run) => [run.at, run.fence, true])
      )
      results.push(
        `${path}\tslots=${runs.length}\tcrashed=${crashed}\tgap slot run ${gap.lateMs} ms late by ${gap.id}\tlate ms: ${
          runs.map((run) => run.lateMs).join(",")
        }`
      )
    } finally {
      for (const member of members.values()) await member.crash()
    }
  }, 120_000)
})

afterAll(() => {
  console.log(results.join("\n"))
})
