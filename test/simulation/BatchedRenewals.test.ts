/**
 * Batched renewals on virtual time: members spreading one group of
 * elections over one MemoryStore, each member's renewals coalesced into
 * requests as a SQL store's are (`stores/internal/batch.ts`, through
 * FaultyStore's `Batched`), while the requests fail, lose their answers,
 * hang, come back late or land late, and the database fails over to a copy
 * that missed the last writes, so that some leases of a request are another
 * term's or ran out (a request partly renewed). Every election is judged
 * by an `Oracle` of its own, as the fleet simulation judges its one: no two
 * leaders, no leader the database does not name, no two terms' work at
 * once, fences only rising; once the faults stop, every election is led
 * again (no member's queue of renewals stays stuck).
 */
import { Duration, Effect, Exit, Logger, LogLevel, Option, Random, Scope } from "effect"
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import * as Elector from "../../src/Elector.js"
import * as Leadership from "../../src/Leadership.js"
import * as Lease from "../../src/Lease.js"
import * as Store from "../../src/Store.js"
import * as MemoryStore from "../../src/stores/MemoryStore.js"
import * as Faulty from "../../src/testing/internal/FaultyStore.js"
import { type Belief, Oracle } from "../../src/testing/internal/Oracle.js"
import { shortConfig, timingOf } from "../../src/testing/internal/Schedule.js"
import { type Rate, rate, VirtualTime } from "../../src/testing/internal/VirtualTime.js"

const seed = Number(process.env["SIM_SEED"] ?? 43)
const runs = Number(process.env["SIM_RUNS"] ?? 4)

interface Schedule {
  readonly names: number
  readonly rates: ReadonlyArray<Rate>
  /**
   * Per member, how long each request of renewals takes to reach the
   * database when no fault is set: the time in flight during which the
   * next renewals queue and form a batch.
   */
  readonly latencies: ReadonlyArray<number>
  /**
   * Each `after` milliseconds after the previous: a member's renewals get
   * `fault` (none: its latency again), and with `failover` the database is one that missed what was
   * written since the previous event.
   */
  readonly faults: ReadonlyArray<
    { readonly after: number; readonly member: number; readonly fault: Faulty.Fault | null; readonly failover: boolean }
  >
}

const { leaseDuration } = shortConfig
const timing = timingOf(shortConfig)

let runsSoFar = 0

const run = (schedule: Schedule, seed: number) => {
  const vt = new VirtualTime()
  const runId = runsSoFar++
  const quiet = <A, E>(effect: Effect.Effect<A, E>) => Logger.withMinimumLogLevel(effect, LogLevel.None)
  const dbClock = vt.run(Effect.withClock(MemoryStore.makeClock({ offset: Duration.days(3) }), vt.clock(rate(10_000))))
  const db = vt.run(MemoryStore.makeWithContents({ clock: dbClock }))
  const names = Array.from({ length: schedule.names }, (_, i) => `e${i}`)
  // Each election judged as the fleet simulation judges its one (Oracle.ts):
  // no two leaders, no leader the database does not name (but a term a
  // failover lost, until its lease ends), no two terms' work, fences rising.
  const oracles = new Map(names.map((name) => [name, new Oracle()]))
  const unled: Array<string> = []
  const work = (identity: string) => (name: string) =>
    Effect.flatMap(Leadership.fence, (fence) => {
      oracles.get(name)!.onStart(identity, fence, vt.millis)
      return Effect.ensuring(Effect.never, Effect.sync(() => oracles.get(name)!.onStop(identity, fence, vt.millis)))
    })
  const members = schedule.rates.map((memberRate, slot) => {
    const identity = `b${runId}.m${slot}`
    // A request may land long after its callers gave up: bounded by a lease, not by their timeout.
    const store = Faulty.make(db.store, { renewAll: db.renewAll, timeout: timing.leaseDuration })
    store.set(Faulty.delay(Duration.millis(schedule.latencies[slot]!)), "renew")
    const scope = vt.run(Scope.make())
    const spread = vt.run(
      quiet(
        Elector.spread({ group: "g", names, identity, ...timing }, work(identity)).pipe(
          Effect.provideService(Store.Store, store),
          Scope.extend(scope),
          Effect.withClock(vt.clock(memberRate, Duration.hours(slot * 7))),
          Effect.withRandom(Random.make(seed * 131 + slot * 17)),
          Effect.orDie
        )
      )
    )
    return { identity, store, scope, spread }
  })
  const lease = (name: string) => Option.getOrUndefined(vt.run(Effect.option(db.store.inspect(name))))
  const sample = () => {
    for (const name of names) {
      const beliefs: Array<Belief> = []
      for (const { identity, spread } of members) {
        if (!vt.run(spread.leading).includes(name)) continue
        const elector = vt.run(spread.elector(name))
        const fence = Option.isSome(elector) ? Option.getOrUndefined(vt.run(elector.value.fence)) : undefined
        beliefs.push({ process: identity, identity, isLeader: true, fence })
      }
      oracles.get(name)!.sample(vt.millis, beliefs, lease(name), false)
    }
  }
  const advance = (millis: number) => {
    const target = vt.millis + millis
    while (vt.millis < target) {
      vt.advanceTo(Math.min(target, vt.millis + 100))
      sample()
    }
  }
  advance(10_000)
  // A standby misses what was written since its copy, but not the writes
  // that followed the previous failover by two leases (its hold-backs among
  // them): a fixed fence jump cannot tell two failovers apart that lost
  // the same writes, in any store, batched or not.
  let copy = { contents: vt.run(db.copy), at: vt.millis }
  let failedOverAt = Number.NEGATIVE_INFINITY
  for (const { after, failover, fault, member } of schedule.faults) {
    advance(after)
    if (failover) {
      const stale = copy.at - failedOverAt >= 2 * leaseDuration
      vt.run(db.restore(stale ? copy.contents : vt.run(db.copy)))
      failedOverAt = vt.millis
      for (const oracle of oracles.values()) oracle.failedOver(vt.millis, leaseDuration)
    }
    copy = { contents: vt.run(db.copy), at: vt.millis }
    members[member]!.store.set(fault ?? Faulty.delay(Duration.millis(schedule.latencies[member]!)), "renew")
  }
  advance(2_000)
  for (const [slot, member] of members.entries()) {
    member.store.set(Faulty.delay(Duration.millis(schedule.latencies[slot]!)), "renew")
  }
  advance(30_000)
  for (const name of names) {
    const held = lease(name)
    if (held === undefined || Lease.isExpired(held)) unled.push(name)
  }
  for (const member of members) vt.fork(Scope.close(member.scope, Exit.void))
  vt.advanceTo(vt.millis + 5_000)
  const batches = members.reduce((sum, { store }) => ({
    several: sum.several + store.batches.several,
    partly: sum.partly + store.batches.partly
  }), { several: 0, partly: 0 })
  const violations = [...oracles].flatMap(([name, { violation }]) =>
    violation === undefined ? [] : [`${name}: ${violation.check} at ${violation.at}ms: ${violation.message}`]
  )
  return { violations, unled, batches }
}

/** What a member's requests of renewals do for a while (none: they take its latency again). */
const faultOf: fc.Arbitrary<Faulty.Fault | null> = fc.oneof(
  fc.constant(null),
  fc.constant(Faulty.fail),
  fc.constant(Faulty.lostReply),
  fc.constant(Faulty.hang),
  fc.integer({ min: 100, max: 2 * leaseDuration }).map((millis) => Faulty.delay(Duration.millis(millis))),
  fc.integer({ min: 100, max: leaseDuration }).map((millis) => Faulty.slowReply(Duration.millis(millis)))
)

const schedules: fc.Arbitrary<Schedule> = fc.integer({ min: 2, max: 3 }).chain((m) =>
  fc.record({
    names: fc.integer({ min: 8, max: 24 }),
    rates: fc.array(fc.integer({ min: 9_000, max: 11_000 }).map(rate), { minLength: m, maxLength: m }),
    latencies: fc.array(fc.integer({ min: 0, max: 300 }), { minLength: m, maxLength: m }),
    faults: fc.array(
      fc.record({
        after: fc.integer({ min: 0, max: 4_000 }),
        member: fc.integer({ min: 0, max: m - 1 }),
        fault: faultOf,
        failover: fc.boolean()
      }),
      { minLength: 4, maxLength: 12 }
    )
  })
)

describe("batched renewals simulation", () => {
  it(
    "requests of renewals fail, hang, lose answers, land late, or partly renew after a failover: every election safe, led again after",
    () => {
      let partly = 0
      fc.assert(
        fc.property(schedules, fc.nat(), (schedule, s) => {
          const verdict = run(schedule, s)
          expect(verdict.violations).toEqual([])
          expect(verdict.unled).toEqual([])
          partly += verdict.batches.partly
        }),
        { seed, numRuns: runs }
      )
      // The runs did exercise what they are for: requests of several renewals, some partly renewed.
      expect(partly).toBeGreaterThan(0)
    },
    600_000
  )
})
