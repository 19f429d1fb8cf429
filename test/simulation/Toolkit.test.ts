import { Duration, Effect } from "effect"
import * as fc from "effect/FastCheck"
import { describe, expect, it } from "vitest"
import type * as Lease from "../../src/Lease.js"
import { Oracle } from "../../src/testing/internal/Oracle.js"
import { VirtualTime } from "../../src/testing/internal/VirtualTime.js"
import * as Simulation from "../../src/testing/Simulation.js"

const lease = (holder: string, fence: bigint, ttl: number): Lease.Lease => ({
  name: "sim",
  holder,
  fence,
  payload: null,
  acquiredAt: new Date(0),
  renewedAt: new Date(0),
  expiresAt: new Date(ttl),
  now: new Date(0)
})

describe("the simulation's oracle", () => {
  const first = (f: (oracle: Oracle) => void) => {
    const oracle = new Oracle()
    f(oracle)
    return oracle.violation
  }

  it("accepts terms that follow each other under increasing fences", () => {
    expect(first((o) => {
      o.onStart("a", 1n, 0)
      o.onStop("a", 1n)
      o.onStart("b", 2n, 10)
      o.sample(
        10,
        [
          { process: "b", identity: "b", isLeader: true, fence: 2n },
          { process: "a", identity: "a", isLeader: false, fence: undefined }
        ],
        lease("b", 2n, 5),
        true
      )
      o.finish(20, 0, 20)
    })).toBeUndefined()
  })

  it("records who led when", () => {
    const oracle = new Oracle()
    oracle.onStart("a", 1n, 0)
    oracle.onStop("a", 1n, 40)
    oracle.onStart("b", 2n, 50)
    expect(oracle.tenures).toEqual([
      { identity: "a", fence: 1n, from: 0, until: 40 },
      { identity: "b", fence: 2n, from: 50, until: undefined }
    ])
  })

  it("catches overlapping work, reused and backwards fences", () => {
    expect(first((o) => {
      o.onStart("a", 1n, 0)
      o.onStart("b", 2n, 5)
    })).toEqual({
      check: "work-overlap",
      at: 5,
      message: "b started work under fence 2 while a's work under fence 1 still ran"
    })
    expect(first((o) => {
      o.onStart("a", 1n, 0)
      o.onStop("a", 1n)
      o.onStart("a", 1n, 7)
    })).toEqual({ check: "fence-reused", at: 7, message: "fence 1 started a second term (a)" })
    expect(first((o) => {
      o.onStart("a", 2n, 0)
      o.onStop("a", 2n)
      o.onStart("b", 1n, 9)
    })).toEqual({ check: "fence-backwards", at: 9, message: "b started under fence 1 after fence 2" })
  })

  it("catches two leaders, a leader the database does not know, and a fleet nobody leads", () => {
    const both = [
      { process: "a", identity: "a", isLeader: true, fence: 1n },
      { process: "b", identity: "b", isLeader: true, fence: 2n }
    ]
    expect(first((o) => o.sample(3, both, lease("b", 2n, 5), false))?.message).toBe("a@1 and b@2 both lead")
    expect(first((o) => o.sample(4, [both[0]!], undefined, false))).toEqual({
      check: "leader-not-in-db",
      at: 4,
      message: "a@1 believes it leads; the database says no record"
    })
    expect(first((o) => o.sample(4, [both[0]!], lease("b", 2n, 1500), false))?.message).toBe(
      "a@1 believes it leads; the database says b@2, 1500ms left"
    )
    expect(first((o) => o.finish(9000, 5000, 4000))).toEqual({
      check: "no-leader-after-faults",
      at: 9000,
      message: "nobody led in the 4000ms after the faults stopped at 5000"
    })
  })

  it("tells two processes with one identity apart", () => {
    const twins = [
      { process: "p0.0", identity: "shared", isLeader: true, fence: 1n },
      { process: "p1.0", identity: "shared", isLeader: true, fence: 1n }
    ]
    // The database names the identity both run under: each alone is a leader it knows.
    expect(first((o) => o.sample(3, [twins[1]!], lease("shared", 1n, 5), false))).toBeUndefined()
    expect(first((o) => o.sample(3, twins, lease("shared", 1n, 5), false))?.message).toBe(
      "p0.0@1 and p1.0@1 both lead"
    )
    expect(
      first((o) => {
        o.onStart("p0.0", 1n, 0)
        o.onStart("p1.0", 1n, 5)
      })?.message
    ).toBe("p1.0 started work under fence 1 while p0.0's work under fence 1 still ran")
  })

  it("catches leadership flapping back faster than the hysteresis once the faults stopped", () => {
    const flap = (comeback: number) =>
      first((o) => {
        o.calm(0, 1000)
        o.onStart("a", 1n, 0)
        o.onStop("a", 1n, 100)
        o.onStart("b", 2n, 100)
        o.onStop("b", 2n, 200)
        o.onStart("a", 3n, comeback)
      })
    expect(flap(500)).toEqual({
      check: "flapping",
      at: 500,
      message: "a leads again 400ms after it stopped, with b in between (hysteresis 1000ms)"
    })
    expect(flap(1100)).toBeUndefined()
  })

  it("keeps the first violation, and records the user's invariant", () => {
    expect(first((o) => {
      o.invariant(3, undefined)
      o.invariant(4, "my sink is out of order")
      o.invariant(5, "later")
    })).toEqual({ check: "invariant", at: 4, message: "my sink is out of order" })
  })
})

describe("virtual time", () => {
  it("refuses to run synchronously an effect that waits on time, and reports failures", () => {
    const vt = new VirtualTime()
    expect(() => vt.run(vt.sleepMillis(5))).toThrow("VirtualTime.run: the effect waits on virtual time")
    expect(() => vt.run(Effect.fail("boom"))).toThrow(/VirtualTime\.run failed: .*boom/)
    expect(vt.run(Effect.as(vt.clock(Simulation.rate(20_000)).sleep(Duration.zero), 1))).toBe(1)
  })
})

describe("Simulation.check", () => {
  const schedules: Simulation.ScheduleOptions = {
    ...Simulation.defaultScheduleOptions,
    configs: [Simulation.shortConfig],
    maxSlots: 3,
    maxLeases: 4
  }

  it("counts what it ran", async () => {
    const counters: Simulation.Counters = { schedules: 0, terms: 0, virtualMillis: 0 }
    await Simulation.check({ schedules, runs: 3, seed: 5, counters })
    expect(counters.schedules).toBe(3)
    expect(counters.terms).toBeGreaterThanOrEqual(3)
    expect(counters.virtualMillis).toBeGreaterThan(3 * 9000)
  })

  it("replays one schedule from a reported seed and path", async () => {
    const seen: Array<number> = []
    const workload = () => ({ invariant: (at: number) => (seen.push(at), at >= 1000 ? `at ${at}` : undefined) })
    const failure = await Simulation.check({ schedules, runs: 5, seed: 5, workload }).then(
      () => undefined,
      (e: Error) => e
    )
    const replay = /seed: (\d+), path: "([\d:]*)"/.exec(failure!.message)!
    expect(failure!.message).toContain("invariant at 1000ms: at 1000")
    seen.length = 0
    await expect(Simulation.check({ schedules, seed: Number(replay[1]), path: replay[2]!, workload })).rejects.toThrow(
      "invariant at 1000ms: at 1000"
    )
    // One run, not a search: the replayed schedule's samples up to the failure.
    expect(seen).toEqual(Array.from({ length: 21 }, (_, i) => i * 50))
  })

  it("generates schedules: a fleet of 3 to 7, events sorted within the fault window", () => {
    for (const s of fc.sample(Simulation.schedules(), { numRuns: 20, seed: 1 })) {
      expect(s.rates.length).toBeGreaterThanOrEqual(3)
      expect(s.rates.length).toBeLessThanOrEqual(7)
      expect(s.events.map((e) => e.at)).toEqual(s.events.map((e) => e.at).sort((a, b) => a - b))
      expect(s.events.every((e) => e.at <= s.window && e.event._tag !== "Freeze")).toBe(true)
    }
  })

  it("generates no priorities and no resignations unless asked for candidates", () => {
    const options = { ...Simulation.defaultScheduleOptions, candidates: false }
    for (const s of fc.sample(Simulation.schedules(options), { numRuns: 20, seed: 1 })) {
      expect(s.priorities).toBeUndefined()
      expect(s.events.some((e) => e.event._tag === "Resign")).toBe(false)
    }
  })

  it("describes a schedule one event a line", () => {
    expect(Simulation.describe({
      config: Simulation.shortConfig,
      rates: [Simulation.rate(10_000), Simulation.rate(9_500)],
      window: 4000,
      events: [{ at: 250, event: { _tag: "Crash", slot: "leader" } }]
    })).toBe(
      "config short, 2 participants at rates 1.0000, 0.9500, faults for 4000ms\n" +
        "      250ms {\"_tag\":\"Crash\",\"slot\":\"leader\"}\n" +
        "     4000ms the faults stop: every path heals, frozen processes thaw, dead slots restart"
    )
  })
})

describe("a shrunk counterexample", () => {
  it("names the preferred leaders a handover needed, and who led when, though no event caused it", async () => {
    // A mutant check: any handover at all is a failure. Without events only
    // the preferred leaders move leadership, so the shrunk schedule keeps
    // its priorities and drops every event.
    const workload = (): Simulation.Workload => {
      const leaders = new Set<number>()
      return {
        work: (term) => Effect.sync(() => leaders.add(term.slot)),
        invariant: () => leaders.size > 1 ? `slots ${[...leaders].join(" and ")} both led` : undefined
      }
    }
    const schedules: Simulation.ScheduleOptions = {
      ...Simulation.defaultScheduleOptions,
      configs: [Simulation.shortConfig],
      maxSlots: 3,
      maxLeases: 4,
      maxEvents: 4
    }
    const failure = await Simulation.check({ schedules, runs: 50, seed: 3, workload }).then(
      () => undefined,
      (e: Error) => e
    )
    const message = failure!.message
    // No event, so the report names what shaped the run: the priorities and the end of the faults.
    expect(message).not.toMatch(/ms \{"_tag"/)
    expect(message).toMatch(/\n {2}preferred leaders \(.*\): p0 priority \d, p1 priority \d/)
    expect(message).toMatch(/\n +\d+ms the faults stop: every path heals, frozen processes thaw, dead slots restart\n/)
    // Who led when: the handover went to a more preferred participant.
    const tenures = [...message.matchAll(/\n +(\d+)ms p(\d)\.\d \(priority (\d)\) under fence (\d+)/g)]
    expect(tenures.map((t) => t[4])).toEqual(["1", "2"])
    expect(Number(tenures[1]![3])).toBeGreaterThan(Number(tenures[0]![3]))
    // The priorities are what the failure needs: the same schedule without them passes.
    const json = /decode\('(.*)'\), \{ \.\.\.options, seed: (\d+) \}/.exec(message)!
    const schedule = Simulation.decode(json[1]!)
    const seed = Number(json[2])
    expect(schedule.events).toEqual([])
    expect(Simulation.run(schedule, { seed, workload }).violation?.check).toBe("invariant")
    const { priorities: _, ...unpreferred } = schedule
    expect(Simulation.run(unpreferred, { seed, workload }).violation).toBeUndefined()
  })
})
