/**
 * The chaos scenarios: a fleet of three real electors, each with its own pool
 * and its own fault proxy, against a throwaway PostgreSQL, directly or
 * through a throwaway PgBouncer. Every scenario ends with the safety oracle
 * and a liveness check (see scenario.ts); the table in README.md lists them.
 */
import { Duration } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ensureSchema, table } from "./fleet.js"
import { Mode } from "./harness/FaultProxy.js"
import { sleep } from "./harness/process.js"
import { startTopology, type Topology } from "./harness/Topology.js"
import {
  isolateLeader,
  leaderLeaves,
  outage,
  type Path,
  results,
  runScenario,
  type Scenario,
  type ScenarioContext
} from "./scenario.js"
import { soak } from "./soak.js"

const bouncer = (ctx: ScenarioContext) => {
  if (ctx.topology.bouncer === undefined) throw new Error("a pooled-only scenario ran without a pooler")
  return ctx.topology.bouncer
}

const everyPath = (ctx: ScenarioContext, f: (id: string) => void): void => {
  for (const id of ctx.topology.participants) f(id)
}

/** Each participant's version in the rolling upgrade; "1.0" until upgraded. */
const versions = new Map<string, string>()

/**
 * A rolling upgrade from 1.0 to 2.0, one participant at a time, the leader
 * last, under versionPolicy "newer": once the first upgraded participant has
 * been alive for preemptAfter, leadership moves to it, and stays there as the
 * others come back with the same version.
 */
const rollingUpgrade = async (ctx: ScenarioContext): Promise<void> => {
  const order = [...ctx.topology.participants.filter((id) => id !== ctx.leader), ctx.leader]
  const first = order[0]!
  try {
    for (const id of order) {
      await ctx.fleet.stop(id)
      versions.set(id, "2.0")
      const at = performance.now()
      await ctx.fleet.start(id)
      if (id === first) {
        const next = await ctx.fleet.nextTerm(at, 15_000, ctx.leader)
        expect(next.id).toBe(first)
        ctx.note("handoverAfterRestartMs", next.start - at)
      }
      await sleep(1_000)
    }
    expect(ctx.fleet.leader()).toBe(first)
    // The leaderless gaps between consecutive terms: the handover's.
    const intervals = ctx.fleet.oracle.intervals()
    const gaps = intervals.slice(1).map((next, i) => next.start - (intervals[i]!.end ?? next.start))
    const worst = Math.max(0, ...gaps)
    ctx.note("maxLeaderlessMs", worst)
    expect(worst).toBeLessThan(2_000)
  } finally {
    versions.clear()
  }
}

export const scenarios: ReadonlyArray<Scenario> = [
  { name: "steady state", maxTerms: 1, fault: () => sleep(5_000) },
  { name: "leader partitioned", fault: isolateLeader(Mode.partition) },
  { name: "leader blackholed (connections stay up)", fault: isolateLeader(Mode.blackhole) },
  {
    name: "database paused (SIGSTOP)",
    fault: outage(async (ctx) => {
      ctx.topology.db.pause()
      return async () => ctx.topology.db.resume()
    })
  },
  { name: "database restarts", fault: (ctx) => ctx.topology.db.restart() },
  { name: "PgBouncer restarts", paths: ["pooled"], fault: (ctx) => bouncer(ctx).restart() },
  {
    name: "PgBouncer PAUSE/RESUME",
    paths: ["pooled"],
    fault: outage(async (ctx) => {
      await bouncer(ctx).pause()
      return () => bouncer(ctx).resume()
    })
  },
  { name: "leader crashes (no release)", fleet: { disableRelease: true }, fault: leaderLeaves },
  { name: "graceful handover", fault: leaderLeaves },
  {
    name: "high latency and jitter on every path (100ms ± 50ms)",
    maxTerms: 1,
    fault: async (ctx) => {
      ctx.topology.setAll(Mode.latency(50, 100))
      await sleep(8_000)
    }
  },
  { name: "replies lost (requests land)", fault: isolateLeader(Mode.dropReplies) },
  {
    name: "connections reset on first use, every path",
    fault: async (ctx) => {
      everyPath(ctx, (id) => {
        const proxy = ctx.topology.proxy(id)
        proxy.setMode(Mode.resetOnFirstUse(6))
        proxy.resetConnections()
      })
      await sleep(4_000)
    }
  },
  { name: "bandwidth collapse on the leader's path", fault: isolateLeader(Mode.bandwidth(100)) },
  {
    name: "flapping leader path",
    fault: async (ctx) => {
      const flapping = ctx.proxy.flap(700, 900)
      await sleep(8_000)
      flapping.stop()
      ctx.note("transitions", flapping.transitions)
    }
  },
  {
    name: "everyone partitioned",
    fault: outage(async (ctx) => {
      ctx.topology.setAll(Mode.partition)
      return async () => ctx.topology.setAll(Mode.pass)
    })
  },
  {
    name: "participants' clocks days apart",
    fleet: {
      clockOffsets: { a: Duration.days(3), b: Duration.days(-2), c: Duration.hours(29) }
    },
    fault: async (ctx) => {
      await isolateLeader(Mode.partition)(ctx)
      const leader = ctx.fleet.leader()
      if (leader !== undefined) {
        await leaderLeaves({ ...ctx, leader, note: (key, value) => ctx.note(`handover.${key}`, value) })
      }
    }
  },
  {
    name: "table locked ACCESS EXCLUSIVE",
    fault: outage(async (ctx) => {
      const lock = await ctx.topology.db.lockTable(table, "ACCESS EXCLUSIVE")
      return () => lock.release()
    })
  },
  {
    name: "election row locked FOR UPDATE",
    fault: outage(async (ctx) => {
      const lock = await ctx.topology.db.lockRow(table, `name = '${ctx.fleet.name}'`)
      expect(lock.rows).toBe(1)
      return () => lock.release()
    })
  },
  {
    name: "backends terminated repeatedly",
    fault: async (ctx) => {
      let terminated = 0
      for (let i = 0; i < 5; i++) {
        terminated += await ctx.topology.db.terminateBackends()
        await sleep(800)
      }
      ctx.note("terminated", terminated)
      expect(terminated).toBeGreaterThan(0)
    }
  },
  {
    name: "database goes read-only (25006)",
    fault: outage(async (ctx) => {
      await ctx.topology.db.setReadOnly(true)
      return () => ctx.topology.db.setReadOnly(false)
    })
  },
  {
    name: "PostgreSQL SIGKILL and crash recovery",
    fault: async (ctx) => {
      await ctx.topology.db.kill()
      await sleep(1_000)
      await ctx.topology.db.start()
    }
  },
  {
    name: "rolling upgrade with preferred leaders (leadership moves to the new version)",
    fleet: { configure: (id) => ({ version: versions.get(id) ?? "1.0", preemptAfter: Duration.seconds(2) }) },
    maxTerms: 2,
    fault: rollingUpgrade
  },
  {
    name: "randomised soak",
    fault: soak(Number(process.env["CHAOS_SOAK_SECONDS"] ?? 30), Number(process.env["CHAOS_SEED"] ?? 7))
  }
]

const only = process.env["CHAOS_ONLY"]
const selected = only === undefined
  ? scenarios
  : scenarios.filter((s) => only.split(",").some((n) => s.name.includes(n)))

describe.each(["direct", "pooled"] as const)("chaos: %s", (path: Path) => {
  let topology: Topology
  beforeAll(async () => {
    topology = await startTopology({ participants: ["a", "b", "c"], pooled: path === "pooled" })
    await ensureSchema(topology.db.url())
  })
  afterAll(async () => {
    await topology?.destroy()
  })

  for (const scenario of selected.filter((s) => s.paths === undefined || s.paths.includes(path))) {
    it(scenario.name, async () => {
      const result = await runScenario(path, topology, scenario)
      console.log(`[chaos] ${path} | ${scenario.name} | ${JSON.stringify(result)}`)
    }, 180_000)
  }
})

afterAll(() => {
  console.log(
    results.map((r) =>
      `${r.path}\t${r.scenario}\tterms=${r.terms}\trecovery=${r.recoveryMs}ms\t${
        JSON.stringify(r.notes)
      }\t${r.seconds}s`
    ).join("\n")
  )
})
