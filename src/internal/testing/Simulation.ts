/**
 * Runs one fault schedule against a fleet of real electors sharing one
 * MemoryStore on virtual time, and judges it with the {@link Oracle}.
 *
 * ## The fleet
 * Every slot runs a real `Elector.make` + `run`, made under
 * `Effect.withClock` of the slot's own clock (so the elector captures it):
 * the timeline scaled by the slot's rate, with sleeps of `d / rate`. The
 * database clock follows the timeline at rate 1, three days ahead, and only
 * ever steps backwards. Each slot reaches the shared store through its own
 * FaultyStore (partitions, lost replies, slow calls), which goes through one
 * store-wide FaultyStore (database hangs) to the MemoryStore. A crash makes
 * every call of the dead process hang (nothing it sends arrives) and
 * interrupts its run, so it never releases; a restart is a clean shutdown,
 * if the slot runs, and a new elector with a new identity.
 *
 * ## Which clock rates the safety margin absorbs
 * A leader that sends a request at local instant s believes its lease until
 * s + min(ttl, L) - M on its own clock (L = leaseDuration, M = safetyMargin;
 * a fresh write reports ttl = L). At rate r (local seconds per database
 * second) that is (L - M) / r of database time after sending. The database
 * stamped the lease on arrival, no earlier than sending, so it expires at
 * least L after sending; stepping the database clock back only delays that.
 * Safety needs (L - M) / r <= L, that is r >= 1 - M / L: the default margin,
 * L / 10, absorbs a clock up to 10% slow; the short config's one second on a
 * three-second lease absorbs a third. A fast clock only steps down early, so
 * rates above 1 cost liveness, never safety. Rates are drawn from
 * [1 - M/L + 0.5%, 1 + M/L] (see `Schedule.minRate`), the half percent
 * keeping millisecond rounding off the boundary.
 *
 * ## How soon someone must lead once the faults stop
 * At the quiet instant Q every fault is cleared and every dead slot
 * restarted. Calls still hanging give up within T / rmin (T =
 * operationTimeout, rmin the slowest rate in the fleet); a call sent before
 * Q cannot write after that. So the record expires by Q + T/rmin + L + S,
 * S being the total the database clock stepped back. Every live follower
 * polls at least every retryPeriod R of its clock (jittered below R), that
 * is R / rmin, and nothing fails any more: by Q + T/rmin + L + S + R/rmin
 * someone has inspected the expired record, released it if it was its own,
 * and acquired it. The bound adds one sampling step and 10ms of rounding.
 */
import { Duration, Effect, Exit, Fiber, Logger, LogLevel, Option, Random, Scope } from "effect"
import * as Elector from "../../Elector.js"
import * as Store from "../../Store.js"
import * as MemoryStore from "../../stores/MemoryStore.js"
import * as Faulty from "./FaultyStore.js"
import { type Belief, Oracle, type Violation } from "./Oracle.js"
import type { Faults, OpFault, Ops, Schedule, Target, Timed } from "./Schedule.js"
import { ops } from "./Schedule.js"
import { type Rate, rate, rateToNumber, VirtualTime } from "./VirtualTime.js"

const election = "sim"

interface Incarnation {
  readonly identity: string
  readonly elector: Elector.ElectorShape
  readonly path: Path
  readonly fiber: Fiber.RuntimeFiber<never, unknown>
}

interface Slot {
  readonly index: number
  readonly rate: Rate
  faults: Faults | undefined
  incarnations: number
  current: Incarnation | undefined
}

export interface Result {
  readonly violation: Violation | undefined
  readonly terms: number
  /** The liveness bound after the faults stopped, in milliseconds. */
  readonly bound: number
  readonly virtualMillis: number
}

/** One term of one participant, as the user's work sees it. */
export interface Term {
  /** The participant's slot in the fleet (restarts keep it). */
  readonly slot: number
  /** The participant's identity: `p<slot>.<incarnation>`. */
  readonly identity: string
  readonly fence: bigint
}

/** The user's side of a run: the leader work and the invariants about its effects. */
export interface Workload {
  /** Runs while a participant leads, on its own clock; interrupted when the term ends. */
  readonly work?: ((term: Term) => Effect.Effect<unknown, unknown>) | undefined
  /**
   * Checked at every sampled instant (and once at the end): a message when
   * something the work did is wrong, undefined when all is well.
   */
  readonly invariant?: ((at: number) => string | undefined) | undefined
}

/** What the simulation offers a workload when it is set up for a run. */
export interface Timeline {
  /** The current instant of the run's timeline, in milliseconds (the database clock's rate). */
  readonly now: () => number
}

export interface RunOptions {
  /** Sampling step, in milliseconds of the timeline. */
  readonly step: number
  /** Seeds the electors' Random (their poll jitter). */
  readonly seed: number
  /** Set up afresh for every run. */
  readonly workload?: ((timeline: Timeline) => Workload) | undefined
}

const toFault = (f: OpFault): Faulty.Fault => {
  switch (f._tag) {
    case "Pass":
      return Faulty.pass
    case "Hang":
      return Faulty.hang
    case "Fail":
      return Faulty.fail
    case "Die":
      return Faulty.die
    case "LostReply":
      return Faulty.lostReply
    case "Delay":
      return Faulty.delay(Duration.millis(f.millis))
    case "SlowReply":
      return Faulty.slowReply(Duration.millis(f.millis))
  }
}

/** A FaultyStore whose faults take turns, call by call. */
interface Path {
  readonly store: Store.StoreShape
  readonly set: (faults: Faults | undefined) => void
}

const path = (inner: Store.StoreShape): Path => {
  const faulty = Faulty.make(inner)
  let current: Faults | undefined
  const turn = { acquire: 0, renew: 0, release: 0, inspect: 0 }
  const next = (op: Ops): void => {
    const cycle = current?.[op]
    const fault = cycle === undefined ? undefined : cycle[turn[op]++ % cycle.length]
    faulty.set(fault === undefined ? Faulty.pass : toFault(fault), op)
  }
  // The turn is taken when the call runs, not when it is built.
  const via = <A, E>(op: Ops, call: () => Effect.Effect<A, E>): Effect.Effect<A, E> =>
    Effect.suspend(() => {
      next(op)
      return call()
    })
  return {
    set: (faults) => {
      current = faults
      for (const op of ops) turn[op] = 0
    },
    store: {
      acquire: (...args) => via("acquire", () => faulty.acquire(...args)),
      renew: (...args) => via("renew", () => faulty.renew(...args)),
      release: (...args) => via("release", () => faulty.release(...args)),
      inspect: (...args) => via("inspect", () => faulty.inspect(...args))
    }
  }
}

const hangAll: Faults = { acquire: [{ _tag: "Hang" }], renew: [{ _tag: "Hang" }], release: [{ _tag: "Hang" }], inspect: [{ _tag: "Hang" }] }

export const livenessBound = (schedule: Schedule, step: number): number => {
  const { leaseDuration, operationTimeout, retryPeriod } = schedule.config
  const slowest = Math.min(...schedule.rates.map(rateToNumber))
  const steppedBack = schedule.events.reduce((sum, e) => sum + (e.event._tag === "StepBack" ? e.event.millis : 0), 0)
  return Math.ceil((operationTimeout + retryPeriod) / slowest + leaseDuration + steppedBack) + step + 10
}

export const run = (schedule: Schedule, options: RunOptions): Result => {
  const vt = new VirtualTime()
  const oracle = new Oracle()
  const quiet = <A, E>(effect: Effect.Effect<A, E>) => Logger.withMinimumLogLevel(effect, LogLevel.None)
  const dbClock = vt.run(Effect.withClock(MemoryStore.makeClock({ offset: Duration.days(3) }), vt.clock(rate(10_000))))
  const db = vt.run(MemoryStore.make({ clock: dbClock }))
  const storeWide = path(db)
  const { config } = schedule
  const scope = vt.run(Scope.make())

  const slots: Array<Slot> = schedule.rates.map((r, index) => ({
    index,
    rate: r,
    faults: undefined,
    incarnations: 0,
    current: undefined
  }))

  const workload = options.workload?.({ now: () => vt.millis }) ?? {}
  const invariant = workload.invariant
  const userWork = workload.work
  const work = (slot: number, identity: string) => (fence: bigint) =>
    Effect.suspend(() => {
      oracle.onStart(identity, fence, vt.millis)
      return userWork === undefined ? Effect.never : Effect.zipRight(userWork({ slot, identity, fence }), Effect.never)
    }).pipe(Effect.ensuring(Effect.sync(() => oracle.onStop(identity, fence))))

  const start = (slot: Slot): void => {
    const identity = `p${slot.index}.${slot.incarnations++}`
    const via = path(storeWide.store)
    via.set(slot.faults)
    const clock = vt.clock(slot.rate, Duration.hours(slot.index * 7))
    const elector = vt.run(
      Elector.make({
        name: election,
        identity,
        leaseDuration: Duration.millis(config.leaseDuration),
        renewInterval: Duration.millis(config.renewInterval),
        retryPeriod: Duration.millis(config.retryPeriod),
        operationTimeout: Duration.millis(config.operationTimeout),
        onStartedLeading: work(slot.index, identity)
      }).pipe(Effect.provideService(Store.Store, via.store), Effect.withClock(clock), Scope.extend(scope), Effect.orDie)
    )
    const seed = options.seed * 131 + slot.index * 17 + slot.incarnations
    const fiber = vt.fork(quiet(Effect.withRandom(elector.run, Random.make(seed))))
    slot.current = { identity, elector, path: via, fiber }
  }

  const stop = (slot: Slot, crash: boolean): void => {
    const current = slot.current
    if (current === undefined) return
    if (crash) current.path.set(hangAll)
    vt.run(Fiber.interruptFork(current.fiber))
    slot.current = undefined
  }

  const handle = ({ event }: Timed): void => {
    switch (event._tag) {
      case "Partition":
      case "Heal": {
        const slot = target(event.slot)
        if (slot === undefined) return
        slot.faults = event._tag === "Partition" ? event.faults : undefined
        slot.current?.path.set(slot.faults)
        return
      }
      case "StoreFault":
        return storeWide.set(event.faults)
      case "StoreHeal":
        return storeWide.set(undefined)
      case "Crash": {
        const slot = target(event.slot)
        return slot === undefined ? undefined : stop(slot, true)
      }
      case "Restart": {
        const slot = target(event.slot)
        if (slot === undefined) return
        stop(slot, false)
        return start(slot)
      }
      case "StepBack":
        return vt.run(dbClock.stepBack(Duration.millis(event.millis)))
    }
  }

  const target = (t: Target): Slot | undefined =>
    t === "leader"
      ? slots.find((slot) => slot.current !== undefined && vt.run(slot.current.elector.isLeader))
      : slots[t]

  const calm = (): void => {
    storeWide.set(undefined)
    for (const slot of slots) {
      slot.faults = undefined
      if (slot.current === undefined) start(slot)
      else slot.current.path.set(undefined)
    }
  }

  const observe = Effect.gen(function*() {
    const beliefs: Array<Belief> = []
    for (const slot of slots) {
      const current = slot.current
      if (current === undefined) continue
      const isLeader = yield* current.elector.isLeader
      const fence = yield* current.elector.fence
      beliefs.push({ identity: current.identity, isLeader, fence: Option.getOrUndefined(fence) })
    }
    const lease = yield* Effect.option(db.inspect(election))
    return { beliefs, lease: Option.getOrUndefined(lease) }
  })

  const bound = livenessBound(schedule, options.step)
  const calmAt = schedule.window
  const end = calmAt + bound
  for (const slot of slots) start(slot)
  let next = 0
  let calmed = false
  for (let t = 0; t <= end && oracle.violation === undefined; t += options.step) {
    for (let e = schedule.events[next]; e !== undefined && e.at <= t; e = schedule.events[++next]) {
      vt.advanceTo(e.at)
      handle(e)
    }
    if (!calmed && t >= calmAt) {
      vt.advanceTo(calmAt)
      calm()
      calmed = true
    }
    vt.advanceTo(t)
    const { beliefs, lease } = vt.run(observe)
    oracle.sample(t, beliefs, lease, calmed)
    if (invariant !== undefined) oracle.invariant(t, invariant(t))
  }
  if (oracle.violation === undefined && oracle.ledAt === undefined) oracle.noLeader(end, calmAt, bound)
  // Shut everyone down and let hanging calls time out, so that no fiber (nor
  // the timer Effect.never holds) outlives the run.
  for (const slot of slots) stop(slot, false)
  storeWide.set(undefined)
  const virtualMillis = vt.millis
  vt.advanceTo(vt.millis + 4 * config.operationTimeout)
  vt.run(Scope.close(scope, Exit.void))
  return { violation: oracle.violation, terms: oracle.terms, bound, virtualMillis }
}
