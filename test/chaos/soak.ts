/**
 * Randomised soak: for `seconds`, faults drawn from the scenario list are
 * injected one at a time for a random while, each followed by a random quiet
 * spell. Seeded, so a failing run can be replayed (CHAOS_SEED). The oracle
 * watches the whole run; the runner checks liveness once it ends.
 */
import { Mode } from "./harness/FaultProxy.js"
import { sleep } from "./harness/process.js"
import type { ScenarioContext } from "./scenario.js"

/** mulberry32: a small seeded PRNG, uniform in [0, 1). */
export const prng = (seed: number): () => number => {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

interface Fault {
  readonly name: string
  readonly pooledOnly?: boolean
  /** Inflicts the fault on `target`; returns its cure. */
  readonly inflict: (ctx: ScenarioContext, target: string) => Promise<() => Promise<void>>
}

const onPath = (mode: Parameters<ScenarioContext["proxy"]["setMode"]>[0]): Fault["inflict"] => async (ctx, target) => {
  ctx.topology.proxy(target).setMode(mode)
  return async () => ctx.topology.proxy(target).setMode(Mode.pass)
}

const faults: ReadonlyArray<Fault> = [
  { name: "partition", inflict: onPath(Mode.partition) },
  { name: "blackhole", inflict: onPath(Mode.blackhole) },
  { name: "sinkhole", inflict: onPath(Mode.sinkhole) },
  { name: "dropReplies", inflict: onPath(Mode.dropReplies) },
  { name: "bandwidth", inflict: onPath(Mode.bandwidth(150)) },
  {
    name: "latency everywhere",
    inflict: async (ctx) => {
      ctx.topology.setAll(Mode.latency(50, 100))
      return async () => ctx.topology.setAll(Mode.pass)
    }
  },
  {
    name: "everyone partitioned",
    inflict: async (ctx) => {
      ctx.topology.setAll(Mode.partition)
      return async () => ctx.topology.setAll(Mode.pass)
    }
  },
  {
    name: "db paused",
    inflict: async (ctx) => {
      ctx.topology.db.pause()
      return async () => ctx.topology.db.resume()
    }
  },
  {
    name: "backends terminated",
    inflict: async (ctx) => {
      await ctx.topology.db.terminateBackends()
      return async () => {}
    }
  },
  {
    name: "row locked",
    inflict: async (ctx) => {
      const lock = await ctx.topology.db.lockRow("chaos_election", `name = '${ctx.fleet.name}'`)
      return () => lock.release()
    }
  },
  {
    name: "participant restarts",
    inflict: async (ctx, target) => {
      await ctx.fleet.stop(target)
      return () => ctx.fleet.start(target)
    }
  },
  {
    name: "pgbouncer restarts",
    pooledOnly: true,
    inflict: async (ctx) => {
      await ctx.topology.bouncer?.restart()
      return async () => {}
    }
  }
]

export const soak = (seconds: number, seed: number) => async (ctx: ScenarioContext): Promise<void> => {
  const random = prng(seed)
  const pick = <A>(xs: ReadonlyArray<A>): A => xs[Math.floor(random() * xs.length)] as A
  const usable = faults.filter((f) => f.pooledOnly !== true || ctx.path === "pooled")
  const until = performance.now() + seconds * 1000
  let injected = 0
  while (performance.now() < until) {
    const fault = pick(usable)
    // Half the time at whoever leads, so leaders are hit as often as followers.
    const target = (random() < 0.5 ? ctx.fleet.leader() : undefined) ?? pick(ctx.topology.participants)
    const cure = await fault.inflict(ctx, target)
    injected += 1
    try {
      await sleep(500 + random() * 3_500)
    } finally {
      await cure()
    }
    await sleep(300 + random() * 2_500)
  }
  ctx.note("faults", injected)
  ctx.note("seed", seed)
}
