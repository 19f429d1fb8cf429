/**
 * The spread simulation: a group of members (`Elector.spread`, each its own
 * process: its clock rate, its path to the one MemoryStore) on virtual time,
 * through the joins, clean stops, crashes and partitions of a
 * `SpreadSchedule`, judged by the `SpreadOracle`: every election at every
 * sample and term start, the moves of every change, and the shares once the
 * changes stop and the group had `settleMillis` to settle.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Option from "effect/Option"
import * as Random from "effect/Random"
import * as Scope from "effect/Scope"
import * as Elector from "../../Elector.js"
import * as Leadership from "../../Leadership.js"
import * as Lease from "../../Lease.js"
import * as Store from "../../Store.js"
import * as MemoryStore from "../../stores/MemoryStore.js"
import * as Faulty from "./FaultyStore.js"
import type { Belief } from "./Oracle.js"
import { shortConfig, timingOf } from "./Schedule.js"
import { type Moves, movesAllowed, SpreadOracle, type SpreadViolation } from "./SpreadOracle.js"
import { settleMillis, type SpreadSchedule } from "./SpreadSchedule.js"
import { rate, VirtualTime } from "./VirtualTime.js"

export interface SpreadResult {
  readonly violations: ReadonlyArray<SpreadViolation>
  /** Per change (the start first): the terms it started, when the last did, the rules' bound. */
  readonly moves: ReadonlyArray<Moves>
  /** How many elections each live member leads at the end. */
  readonly shares: ReadonlyArray<number>
  readonly virtualMillis: number
}

const timing = timingOf(shortConfig)
const sampleEvery = 100

interface Member {
  readonly identity: string
  readonly scope: Scope.CloseableScope
  readonly store: Faulty.FaultyStore
  readonly spread: Elector.Spread
}

/** Runs so far in this process: electors of one name and identity are refused while another lives. */
let runs = 0

const quiet = <A, E>(effect: Effect.Effect<A, E>) => Logger.withMinimumLogLevel(effect, LogLevel.None)

/** Runs one schedule to `settleMillis` after its last change, synchronously, on virtual time. */
export const run = (schedule: SpreadSchedule, seed: number): SpreadResult => {
  const vt = new VirtualTime()
  const runId = runs++
  const dbClock = vt.run(Effect.withClock(MemoryStore.makeClock({ offset: Duration.days(3) }), vt.clock(rate(10_000))))
  const db = vt.run(MemoryStore.make({ clock: dbClock }))
  const names = Array.from({ length: schedule.names }, (_, i) => `e${i}`)
  const oracle = new SpreadOracle(names)
  const slots = new Map<number, Member>()
  const incarnations = new Map<number, number>()
  let partitions: Array<{ until: number; store: Faulty.FaultyStore }> = []
  // The members whose path to the database is cut: no hint reaches them.
  const cut = new Set<Faulty.FaultyStore>()
  const wakeUps = (store: Faulty.FaultyStore): Store.WakeUps => ({
    subscribe: (name, wake) =>
      db.wakeUps!.subscribe(name, () => {
        if (!cut.has(store)) wake()
      })
  })

  const work = (identity: string) => (name: string) =>
    Effect.flatMap(Leadership.fence, (fence) => {
      oracle.onStart(name, identity, fence, vt.millis)
      return Effect.ensuring(Effect.never, Effect.sync(() => oracle.onStop(name, identity, fence, vt.millis)))
    })

  const start = (slot: number) => {
    const k = incarnations.get(slot) ?? 0
    incarnations.set(slot, k + 1)
    // A fresh identity per incarnation: a crashed one may still be winding down in this process.
    const identity = `r${runId}.m${slot}.${k}`
    const faulty = Faulty.make(db)
    const store = schedule.hints ? { ...faulty, wakeUps: wakeUps(faulty) } : faulty
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
    slots.set(slot, { identity, scope, store: faulty, spread })
  }
  const end = (member: Member, slot: number, crash: boolean) => {
    slots.delete(slot)
    // A crashed member's calls never arrive: no release, no withdrawal.
    if (crash) {
      partitions = partitions.filter((p) => p.store !== member.store)
      cut.add(member.store)
      member.store.set(Faulty.hang)
    }
    vt.fork(quiet(Scope.close(member.scope, Exit.void)))
  }
  const lease = (name: string) => Option.getOrUndefined(vt.run(Effect.option(db.inspect(name))))

  const sample = () => {
    const leaders = new Map<string, Array<Belief>>()
    for (const member of slots.values()) {
      for (const name of vt.run(member.spread.leading)) {
        const elector = vt.run(member.spread.elector(name))
        const fence = Option.isSome(elector) ? Option.getOrUndefined(vt.run(elector.value.fence)) : undefined
        const all = leaders.get(name) ?? []
        all.push({ process: member.identity, identity: member.identity, isLeader: true, fence })
        leaders.set(name, all)
      }
    }
    for (const [name, all] of leaders) oracle.sample(vt.millis, name, all, lease(name))
  }
  const advance = (millis: number) => {
    const target = vt.millis + millis
    while (vt.millis < target) {
      vt.advanceTo(Math.min(target, vt.millis + sampleEvery))
      for (const p of partitions) {
        if (p.until <= vt.millis) {
          p.store.set(Faulty.pass)
          cut.delete(p.store)
        }
      }
      partitions = partitions.filter((p) => p.until > vt.millis)
      sample()
    }
  }

  for (const slot of schedule.initial) start(slot)
  for (const { after, change } of schedule.changes) {
    advance(after)
    const member = slots.get(change.slot)
    const bound = movesAllowed(change, names.length, slots.size, member !== undefined)
    oracle.change(change, vt.millis, bound, after >= settleMillis)
    if (change.kind === "join") {
      if (member === undefined) start(change.slot)
    } else if (member !== undefined) {
      if (change.kind === "partition") {
        // A member cut off again stays cut off until the later of the two ends.
        const earlier = partitions.find((p) => p.store === member.store)?.until ?? 0
        partitions = partitions.filter((p) => p.store !== member.store)
        member.store.set(Faulty.fail)
        cut.add(member.store)
        partitions.push({ until: Math.max(earlier, vt.millis + change.millis), store: member.store })
      } else {
        end(member, change.slot, change.kind === "crash")
      }
    }
  }
  advance(settleMillis)

  const live = [...slots.values()].map((m) => m.identity)
  const holders = new Map(names.map((name) => {
    const held = lease(name)
    return [name, held === undefined || Lease.isExpired(held) ? undefined : held.holder] as const
  }))
  const shares = oracle.finish(vt.millis, live, holders)
  const virtualMillis = vt.millis
  for (const member of slots.values()) vt.fork(Scope.close(member.scope, Exit.void))
  vt.advanceTo(vt.millis + 5_000)
  return { violations: oracle.violations, moves: oracle.moves, shares, virtualMillis }
}
