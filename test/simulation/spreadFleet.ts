/**
 * The spread simulation: a group of members (`Elector.spread`, each its own
 * process: its clock rate, its path to the one MemoryStore) on virtual time,
 * through joins, clean stops, crashes and partitions. Every election is
 * checked as the fleet simulation checks one (no two leaders at an instant,
 * no two terms' work at once, fences only rising); once the changes stop,
 * every election is led and each live member leads between floor(N/M) and
 * ceil(N/M); each term started after a change is a move, counted per change.
 */
import { Duration, Effect, Exit, Logger, LogLevel, Random, Scope } from "effect"
import * as fc from "fast-check"
import * as Elector from "../../src/Elector.js"
import * as Leadership from "../../src/Leadership.js"
import * as Lease from "../../src/Lease.js"
import * as Store from "../../src/Store.js"
import * as MemoryStore from "../../src/stores/MemoryStore.js"
import * as Faulty from "../../src/testing/FaultyStore.js"
import { maxRate, minRate, shortConfig } from "../../src/testing/internal/Schedule.js"
import { type Rate, rate, VirtualTime } from "../../src/testing/internal/VirtualTime.js"

export type Change =
  | { readonly kind: "join"; readonly slot: number }
  | { readonly kind: "stop"; readonly slot: number }
  | { readonly kind: "crash"; readonly slot: number }
  | { readonly kind: "partition"; readonly slot: number; readonly millis: number }

export interface SpreadSchedule {
  readonly names: number
  /** One clock rate per member slot. */
  readonly rates: ReadonlyArray<Rate>
  /** The slots running from the start. */
  readonly initial: ReadonlyArray<number>
  /** Changes, each `at` milliseconds after the previous one. */
  readonly changes: ReadonlyArray<{ readonly after: number; readonly change: Change }>
}

/**
 * The terms started after a change (until the next one), the last one's
 * delay after the change, and the most the rules call for after it from a
 * balanced fleet: a joiner's share, a leaver's, or a cut-off member's share
 * twice (away, then back).
 */
export interface Moves {
  readonly change: Change | "start"
  readonly moves: number
  readonly settledIn: number
  readonly bound: number
}

export interface Verdict {
  readonly violations: ReadonlyArray<string>
  /** Terms started after each change, until the next (or the end). */
  readonly moves: ReadonlyArray<Moves>
  /** How many elections each live member leads at the end. */
  readonly shares: ReadonlyArray<number>
}

const { leaseDuration, operationTimeout, renewInterval, retryPeriod, safetyMargin } = shortConfig
const timing = {
  leaseDuration: Duration.millis(leaseDuration),
  renewInterval: Duration.millis(renewInterval),
  retryPeriod: Duration.millis(retryPeriod),
  operationTimeout: Duration.millis(operationTimeout),
  safetyMargin: Duration.millis(safetyMargin)
}
/** Long enough, after the last change, for any fleet to settle: a crash's lease, then one move per retry period. */
export const settleMillis = 40_000
const sampleEvery = 100

interface Member {
  readonly identity: string
  readonly scope: Scope.CloseableScope
  readonly store: Faulty.FaultyStore
  readonly spread: Elector.Spread
}

/** Runs so far in this process: electors of one name and identity are refused while another lives. */
let runs = 0

export const run = (schedule: SpreadSchedule, seed: number): Verdict => {
  const vt = new VirtualTime()
  const runId = runs++
  const quiet = <A, E>(effect: Effect.Effect<A, E>) => Logger.withMinimumLogLevel(effect, LogLevel.None)
  const dbClock = vt.run(Effect.withClock(MemoryStore.makeClock({ offset: Duration.days(3) }), vt.clock(rate(10_000))))
  const db = vt.run(MemoryStore.make({ clock: dbClock }))
  const names = Array.from({ length: schedule.names }, (_, i) => `e${i}`)
  const violations: Array<string> = []
  const violate = (what: string) => {
    if (violations.length < 20) violations.push(`${vt.millis}ms: ${what}`)
  }
  // Per election: the terms whose work runs, and the highest fence started.
  const working = new Map<string, Set<string>>()
  const highest = new Map<string, bigint>()
  let started = 0
  let lastStartAt = 0
  const slots = new Map<number, Member>()
  const incarnations = new Map<number, number>()

  const work = (identity: string) => (name: string) =>
    Effect.flatMap(Leadership.fence, (fence) => {
      const term = `${identity}@${fence}`
      const running = working.get(name) ?? new Set<string>()
      working.set(name, running)
      if (running.size > 0) violate(`work-overlap on ${name}: ${term} while ${[...running].join(", ")}`)
      if (fence <= (highest.get(name) ?? -1n)) violate(`fence-reused on ${name}: ${fence} after ${highest.get(name)}`)
      highest.set(name, fence)
      running.add(term)
      started++
      lastStartAt = vt.millis
      return Effect.ensuring(Effect.never, Effect.sync(() => running.delete(term)))
    })

  const start = (slot: number) => {
    if (slots.has(slot)) return
    const k = incarnations.get(slot) ?? 0
    incarnations.set(slot, k + 1)
    // A fresh identity per incarnation: a crashed one may still be winding down in this process.
    const identity = `r${runId}.m${slot}.${k}`
    const store = Faulty.make(db)
    const scope = vt.run(Scope.make())
    const clock = vt.clock(schedule.rates[slot]!, Duration.hours(slot * 7))
    const spread = vt.run(
      quiet(
        Elector.spread({ group: "g", names, identity, ...timing }, work(identity)).pipe(
          Effect.provideService(Store.Store, store),
          Scope.extend(scope),
          Effect.withClock(clock),
          Effect.withRandom(Random.make(seed * 131 + slot * 17 + k)),
          Effect.orDie
        )
      )
    )
    slots.set(slot, { identity, scope, store, spread })
  }
  const end = (slot: number, crash: boolean) => {
    const member = slots.get(slot)
    if (member === undefined) return
    slots.delete(slot)
    // A crashed member's calls never arrive: no release, no withdrawal.
    if (crash) {
      partitions = partitions.filter((p) => p.store !== member.store)
      member.store.set(Faulty.hang)
    }
    vt.fork(quiet(Scope.close(member.scope, Exit.void)))
  }
  let partitions: Array<{ until: number; store: Faulty.FaultyStore }> = []

  const sample = () => {
    const leaders = new Map<string, Array<string>>()
    for (const member of slots.values()) {
      for (const name of vt.run(member.spread.leading)) {
        const all = leaders.get(name) ?? []
        all.push(member.identity)
        leaders.set(name, all)
      }
    }
    for (const [name, all] of leaders) if (all.length > 1) violate(`two-leaders on ${name}: ${all.join(", ")}`)
  }
  const advance = (millis: number) => {
    const target = vt.millis + millis
    while (vt.millis < target) {
      vt.advanceTo(Math.min(target, vt.millis + sampleEvery))
      for (const p of partitions) {
        if (p.until <= vt.millis) p.store.set(Faulty.pass)
      }
      partitions = partitions.filter((p) => p.until > vt.millis)
      sample()
    }
  }

  const moves: Array<Moves> = []
  let counted = { change: "start" as Change | "start", at: 0, from: 0, bound: names.length }
  const close = () => {
    moves.push({
      change: counted.change,
      moves: started - counted.from,
      settledIn: Math.max(0, lastStartAt - counted.at),
      bound: counted.bound
    })
  }
  const share = (members: number) => members === 0 ? 0 : Math.ceil(names.length / members)

  for (const slot of schedule.initial) start(slot)
  for (const { after, change } of schedule.changes) {
    advance(after)
    close()
    const before = slots.size
    const present = slots.has(change.slot)
    lastStartAt = vt.millis
    switch (change.kind) {
      case "join":
        start(change.slot)
        break
      case "stop":
        end(change.slot, false)
        break
      case "crash":
        end(change.slot, true)
        break
      case "partition": {
        const member = slots.get(change.slot)
        if (member !== undefined) {
          member.store.set(Faulty.fail)
          partitions.push({ until: vt.millis + change.millis, store: member.store })
        }
      }
    }
    const bound = change.kind === "join"
      ? (present ? 0 : share(slots.size))
      : !present
      ? 0
      : change.kind === "partition"
      ? 2 * share(before)
      : share(before)
    counted = { change, at: vt.millis, from: started, bound }
  }
  advance(settleMillis)
  close()

  // Once things settle: every election led, by live members, each within its share.
  const live = [...slots.values()].map((m) => m.identity)
  const held = new Map<string, number>(live.map((id) => [id, 0]))
  for (const name of names) {
    const lease = vt.run(Effect.option(db.inspect(name)))
    if (lease._tag === "None" || Lease.isExpired(lease.value)) {
      if (live.length > 0) violate(`unled after settling: ${name}`)
      continue
    }
    const holder = lease.value.holder
    if (!held.has(holder)) violate(`held by a member no longer live: ${name} by ${holder}`)
    else held.set(holder, held.get(holder)! + 1)
  }
  if (live.length > 0) {
    const floor = Math.floor(names.length / live.length)
    const ceil = Math.ceil(names.length / live.length)
    for (const [id, n] of held) {
      if (n < floor || n > ceil) violate(`unbalanced: ${id} leads ${n}, not ${floor}..${ceil}`)
    }
  }
  for (const member of slots.values()) vt.fork(Scope.close(member.scope, Exit.void))
  vt.advanceTo(vt.millis + 5_000)
  return { violations, moves, shares: [...held.values()] }
}

const rateOf = fc.oneof(
  fc.constantFrom(minRate(shortConfig), maxRate(shortConfig), 10_000),
  fc.integer({ min: minRate(shortConfig), max: maxRate(shortConfig) })
).map(rate)

/**
 * Schedules: 2 to 5 member slots, 4 to 30 elections, changes at any pace
 * (`spaced`: each one given time to settle before the next).
 */
export const schedules = (spaced: boolean): fc.Arbitrary<SpreadSchedule> =>
  fc.integer({ min: 2, max: 5 }).chain((m) =>
    fc.record({
      names: fc.integer({ min: 4, max: 30 }),
      rates: fc.array(rateOf, { minLength: m, maxLength: m }),
      initial: fc.uniqueArray(fc.integer({ min: 0, max: m - 1 }), { minLength: 1, maxLength: m }),
      changes: fc.array(
        fc.record({
          after: spaced ? fc.constant(settleMillis) : fc.integer({ min: 0, max: 8_000 }),
          change: fc.oneof(
            fc.record({ kind: fc.constantFrom("join", "stop", "crash"), slot: fc.integer({ min: 0, max: m - 1 }) }),
            fc.record({
              kind: fc.constant("partition"),
              slot: fc.integer({ min: 0, max: m - 1 }),
              millis: fc.integer({ min: 100, max: 6_000 })
            })
          ) as fc.Arbitrary<Change>
        }),
        { maxLength: spaced ? 4 : 8 }
      )
    })
  )
