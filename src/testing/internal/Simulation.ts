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
 * if the slot runs, and a new elector with a new identity (the same one, in
 * the slots of a schedule's `sharedIdentity`). A freeze holds
 * every fiber of the process (its {@link Gate}) while its clock goes on; the
 * oracle then lets its work outlive its term until it thaws, since no
 * elector can stop a process that does not run (fencing covers that).
 * `Snapshot` and `Failover` events fail the database over to a standby that
 * lost the writes since the snapshot (see {@link Standby}).
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
 * A schedule with a failover allows one lease held back more, L + R / rmin:
 * the first claim on a record the promoted standby served holds the lease
 * back for L (of the database clock), and a poll later someone claims it.
 * Records written after the failover are the new server's, so it happens
 * once; a hold-back before Q ends within the record's own expiry above.
 */
import {
  type Clock,
  Duration,
  Effect,
  Exit,
  Fiber,
  Logger,
  LogLevel,
  Option,
  Random,
  Runtime,
  type Scheduler,
  Scope,
  TestClock
} from "effect"
import * as Elector from "../../Elector.js"
import { Incarnations } from "../../internal/election/incarnation.js"
import { scheduler as runningScheduler } from "../../internal/runtime/runtime.js"
import type * as Job from "../../Job.js"
import * as Leadership from "../../Leadership.js"
import type * as Lease from "../../Lease.js"
import * as Store from "../../Store.js"
import * as MemoryStore from "../../stores/MemoryStore.js"
import * as Faulty from "./FaultyStore.js"
import { onCaller } from "./onCaller.js"
import { type Belief, Oracle, type Tenure, type Violation } from "./Oracle.js"
import type { Event, Faults, HintFault, Ops, Schedule, Target, Timed } from "./Schedule.js"
import { ops, sharedIdentity } from "./Schedule.js"
import { Gate, type Rate, rate, rateToNumber, scaledClock, VirtualTime } from "./VirtualTime.js"

/**
 * Runs so far in this process. Each run's election has a name of its own:
 * an elector refuses a second one of the same name and identity in one
 * process, and runs may overlap (tests run concurrently, `runOnTestClock`
 * yields to the event loop).
 */
let runs = 0

export interface Result {
  readonly violation: Violation | undefined
  readonly terms: number
  /**
   * Who led when, in the order the terms started: what the events alone do
   * not show, such as a handover to a preferred participant.
   */
  readonly tenures: ReadonlyArray<Tenure>
  /** The liveness bound after the faults stopped, in milliseconds. */
  readonly bound: number
  readonly virtualMillis: number
}

/** The slot of a process, `p<slot>.<incarnation>`. */
export const slotOf = (process: string): number => Number(process.slice(1, process.indexOf(".")))

/** One term of one participant, as the user's work sees it. */
export interface Term {
  /** The participant's slot in the fleet (restarts keep it). */
  readonly slot: number
  /**
   * The participant's identity: `p<slot>.<incarnation>`, or the one the
   * slots of the schedule's `sharedIdentity` share.
   */
  readonly identity: string
  readonly fence: bigint
}

/** What the work of a term may use: the term's `Leadership` and the participant's `Elector`, as under `whileLeader`. */
export type WorkContext = Leadership.Leadership | Elector.Elector

/** The user's side of a run: the leader work and the invariants about its effects. */
export interface Workload {
  /**
   * Runs in every term of every participant, as `Elector.whileLeader` runs
   * it (the term's `Leadership` and the participant's `Elector` in its
   * context), on the participant's clock; interrupted when the term ends.
   * The job you deploy, as it is, or a function of the term. Its failure or
   * defect is a violation (`work-crashed`).
   */
  readonly work?:
    | Effect.Effect<unknown, unknown, WorkContext>
    | ((term: Term) => Effect.Effect<unknown, unknown, WorkContext>)
    | undefined
  /**
   * Checked at every sampled instant (and once at the end): a message when
   * something the work did is wrong, undefined when all is well.
   */
  readonly invariant?: ((at: number) => string | undefined) | undefined
  /**
   * A scheduled job every participant runs (`Elector.schedule`), on its own
   * clock: `run` is called for each slot its term claims.
   */
  readonly job?: {
    readonly when: Job.When
    readonly delivery?: Job.Delivery | undefined
    readonly run: (term: Term, slot: Job.Slot) => Effect.Effect<unknown, unknown, WorkContext>
  } | undefined
}

/** What the simulation offers a workload when it is set up for a run. */
export interface Timeline {
  /** The current instant of the run's timeline, in milliseconds (the database clock's rate). */
  readonly now: () => number
}

/**
 * How a participant's store calls are made: each in a fiber of its own
 * beside a deadline (`apart`: the path of a store that promises nothing),
 * or on the participant's own fibers through the SQL engine's call path
 * (`onCaller`, see onCaller.ts: the path of the SQL stores).
 */
export type CallPath = "apart" | "onCaller"

export interface RunOptions {
  /** Sampling step, in milliseconds of the timeline. */
  readonly step: number
  /** Seeds the electors' Random (their poll and renewal jitter). */
  readonly seed: number
  /** Set up afresh for every run. */
  readonly workload?: ((timeline: Timeline) => Workload) | undefined
  /** How the participants' store calls are made (default `apart`). */
  readonly callPath?: CallPath | undefined
}

export const livenessBound = (schedule: Schedule, step: number): number => {
  const { leaseDuration, operationTimeout, retryPeriod } = schedule.config
  const slowest = Math.min(...schedule.rates.map(rateToNumber))
  const steppedBack = schedule.events.reduce((sum, e) => sum + (e.event._tag === "StepBack" ? e.event.millis : 0), 0)
  const failedOver = schedule.events.some((e) => e.event._tag === "Failover")
  const holdOff = failedOver ? leaseDuration + retryPeriod / slowest : 0
  const base = Math.ceil((operationTimeout + retryPeriod) / slowest + leaseDuration + steppedBack + holdOff) + step + 10
  return schedule.priorities === undefined ? base : base + preferenceBound(schedule)
}

/**
 * With preferred leaders, how much longer the most preferred participant may
 * take to lead once someone does: its resignation's hold-off (leaseDuration
 * on its clock), its first advertisement after it (one poll), preemptAfter
 * (2 leaseDurations, on the database clock) of being alive, the leader's
 * next look at the candidates and the successor's claim (a poll each).
 */
const preferenceBound = (schedule: Schedule): number => {
  const { leaseDuration, operationTimeout, retryPeriod } = schedule.config
  const slowest = Math.min(...schedule.rates.map(rateToNumber))
  return Math.ceil((leaseDuration + 3 * (operationTimeout + retryPeriod)) / slowest + 2 * leaseDuration)
}

/**
 * What moves time in a run: the fast scheduler of {@link VirtualTime}, or
 * Effect's TestClock (see `TestDriver.ts`).
 */
export interface Driver {
  /** The timeline, in milliseconds since the run started. */
  readonly millis: () => number
  /** A clock reading the timeline at `rate`, `offset` ahead. */
  readonly clock: (r: Rate, offset?: Duration.Duration) => Clock.Clock
  /** Runs `effect` at the current instant; it must not wait on time. */
  readonly exec: <A, E>(effect: Effect.Effect<A, E>) => Effect.Effect<A, E>
  /** The scheduler the fleet's fibers run on (each process through its own {@link Gate}). */
  readonly scheduler: Scheduler.Scheduler
  /** Starts a fiber of the fleet. */
  readonly fork: <A, E>(effect: Effect.Effect<A, E>) => Fiber.RuntimeFiber<A, E>
  /** Moves the timeline to `target`, letting every woken fiber run. */
  readonly advanceTo: (target: number) => Effect.Effect<void>
}

/** The fast scheduler: every wake-up runs to quiescence synchronously. */
export const virtualDriver = (): Driver => {
  const vt = new VirtualTime()
  return {
    millis: () => vt.millis,
    clock: (r, offset) => vt.clock(r, offset),
    scheduler: vt.scheduler,
    exec: (effect) => Effect.sync(() => vt.run(effect)),
    fork: (effect) => vt.fork(effect),
    advanceTo: (target) => Effect.sync(() => vt.advanceTo(target))
  }
}

/**
 * Effect's TestClock: the run is an Effect of the calling test, and time
 * moves by `TestClock.adjust`, which lets woken fibers run by yielding to
 * the event loop (slower than the fast scheduler, see bench/simulation-drivers.ts).
 */
export const testClockDriver: Effect.Effect<Driver> = Effect.gen(function*() {
  const testClock = yield* TestClock.testClock()
  const runtime = yield* Effect.runtime<never>()
  const scheduler = yield* runningScheduler
  const origin = testClock.unsafeCurrentTimeMillis()
  const millis = () => testClock.unsafeCurrentTimeMillis() - origin
  const timeline = { millis, sleepMillis: (ms: number) => testClock.sleep(Duration.millis(Math.max(1, Math.ceil(ms)))) }
  return {
    millis,
    clock: (r, offset) => scaledClock(timeline, r, offset),
    scheduler,
    exec: (effect) => effect,
    fork: (effect) => Runtime.runFork(runtime)(effect),
    advanceTo: (target) => Effect.suspend(() => testClock.adjust(Duration.millis(target - millis())))
  }
})

/** A FaultyStore whose faults take turns, call by call; and the wake-up hints that reach its participant. */
interface Path {
  readonly store: Store.StoreShape
  readonly set: (faults: Faults | undefined) => void
  readonly setHints: (fault: HintFault | undefined) => void
  /** A hint nobody's release sent, delivered as the others are. */
  readonly forge: () => void
}

const path = (inner: Store.StoreShape): Path => {
  const faulty = Faulty.make(inner)
  let current: Faults | undefined
  let hintFault: HintFault | undefined
  // The participant's hint callbacks, each delivering through hintFault;
  // a delayed hint waits on its subscriber's clock and scheduler.
  const hinted = new Set<() => void>()
  const deliver = (runtime: Runtime.Runtime<never>, wake: () => void): void => {
    switch (hintFault?._tag) {
      case undefined:
        return wake()
      case "Lost":
        return
      case "Duplicated":
        wake()
        return wake()
      case "Delayed":
        Runtime.runFork(runtime)(Effect.delay(Effect.sync(wake), Duration.millis(hintFault.millis)))
    }
  }
  const innerWakeUps = inner.wakeUps
  const turn = { acquire: 0, renew: 0, release: 0, inspect: 0 }
  const { advertise, withdraw } = faulty
  const next = (op: Ops): void => {
    const cycle = current?.[op]
    const fault = cycle === undefined ? undefined : cycle[turn[op]++ % cycle.length]
    faulty.set(fault ?? Faulty.pass, op)
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
    setHints: (fault) => {
      hintFault = fault
    },
    forge: () => {
      for (const wake of [...hinted]) wake()
    },
    store: {
      incarnations: faulty.incarnations,
      wakeUps: innerWakeUps === undefined ? undefined : {
        subscribe: (name, wake) =>
          Effect.flatMap(Effect.runtime<never>(), (runtime) => {
            const through = () => deliver(runtime, wake)
            return Effect.zipRight(
              Effect.acquireRelease(Effect.sync(() => hinted.add(through)), () =>
                Effect.sync(() => hinted.delete(through))),
              innerWakeUps.subscribe(name, through)
            )
          })
      },
      acquire: (...args) => via("acquire", () => faulty.acquire(...args)),
      renew: (...args) => via("renew", () => faulty.renew(...args)),
      release: (...args) => via("release", () => faulty.release(...args)),
      inspect: (...args) => via("inspect", () => faulty.inspect(...args)),
      // Job slots are writes guarded by the lease, like renewals: they share renew's faults.
      slots: {
        claim: (...args) => via("renew", () => faulty.slots!.claim(...args)),
        complete: (...args) => via("renew", () => faulty.slots!.complete(...args)),
        last: (...args) => via("renew", () => faulty.slots!.last(...args))
      },
      // The candidates' row shares the path of reads: a partition that hides the lease hides it too.
      ...(advertise === undefined || withdraw === undefined ? {} : {
        advertise: (...args) => via("inspect", () => advertise(...args)),
        withdraw: (...args) => via("inspect", () => withdraw(...args))
      })
    }
  }
}

/**
 * Where a process's elector draws its incarnation: 128 bits from a Random of
 * the process's own seed, so that a seed replays them. Not the Random of its
 * jitter: drawing from that would have changed every run a recorded seed
 * replays.
 */
const incarnations = (processSeed: number): Incarnations["Type"] => {
  const random = Random.make(`${processSeed}/incarnation`)
  const word = Effect.map(random.nextIntBetween(0, 2 ** 32), (n) => n.toString(16).padStart(8, "0"))
  return { draw: Effect.map(Effect.all([word, word, word, word]), (words) => words.join("")) }
}

const hangAll: Faults = {
  acquire: [{ _tag: "Hang" }],
  renew: [{ _tag: "Hang" }],
  release: [{ _tag: "Hang" }],
  inspect: [{ _tag: "Hang" }]
}

/**
 * The database the fleet shares: a MemoryStore on a clock that follows the
 * timeline three days ahead and only ever steps back, behind one store-wide
 * {@link Path} (the database's own faults).
 */
interface Database {
  /** The database clock, which `StepBack` events move back and a failover may move ahead. */
  readonly clock: MemoryStore.DatabaseClock
  /** What the database holds, past every fault: what the oracle checks beliefs against. */
  readonly inspect: Store.StoreShape["inspect"]
  /** The faults of the database itself, which every participant meets. */
  readonly storeWide: Path
  /**
   * A new process's own way to the database: its path's faults, then the
   * store-wide ones, its calls made as the run's call path says.
   */
  readonly connect: () => Path
  /** The database's asynchronous standby, which `Snapshot` and `Failover` events cut off and promote. */
  readonly standby: Standby
}

/**
 * A standby that follows the database asynchronously, as most PostgreSQL
 * HA setups run one: promoted, it serves what it had received, which may
 * lack the last committed writes.
 */
interface Standby {
  /** Its replication is cut: it keeps a copy of the database as it is now. */
  readonly cut: Effect.Effect<void>
  /**
   * It is promoted: the database holds the copy it kept, if it was cut (and
   * then follows the new primary in full), on another server: every record
   * reads as written elsewhere, as a promoted standby's do to a SQL store,
   * even when it missed nothing. The database clock goes on, `jump` ms
   * ahead, as another server's may be.
   */
  readonly promote: (jump: number) => Effect.Effect<void>
}

/** A database clock that a failover can move ahead (`MemoryStore`'s only steps back). */
const movable = (clock: MemoryStore.DatabaseClock) => {
  let ahead = 0
  return {
    now: Effect.map(clock.now, (now) => new Date(now.getTime() + ahead)),
    stepBack: clock.stepBack,
    jump: (millis: number) =>
      Effect.sync(() => {
        ahead += millis
      })
  }
}

const standby = (
  db: Effect.Effect.Success<ReturnType<typeof MemoryStore.makeWithContents>>,
  clock: ReturnType<typeof movable>
): Standby => {
  let kept: MemoryStore.Contents | undefined
  return {
    cut: Effect.map(db.copy, (contents) => {
      kept = contents
    }),
    promote: (jump) =>
      Effect.suspend(() => {
        const contents = kept === undefined ? db.copy : Effect.succeed(kept)
        kept = undefined
        return Effect.zipRight(Effect.flatMap(contents, db.restore), clock.jump(jump))
      })
  }
}

// Enough connections for a participant's loops and the calls left in their
// grace by a hang: the simulation checks the election, not a pool's size.
const connectionsPerProcess = 16

/** Opens the fleet's database: the one place that says what the store is and how a participant's calls reach it. */
const openDatabase = (
  driver: Driver,
  callPath: CallPath | undefined,
  operationTimeout: number
): Effect.Effect<Database> =>
  Effect.gen(function*() {
    const clock = movable(
      yield* driver.exec(
        Effect.withClock(MemoryStore.makeClock({ offset: Duration.days(3) }), driver.clock(rate(10_000)))
      )
    )
    const db = yield* driver.exec(MemoryStore.makeWithContents({ clock }))
    const storeWide = path(db.store)
    const connect = (): Path => {
      const via = path(storeWide.store)
      return callPath === "onCaller"
        ? { ...via, store: onCaller(via.store, Duration.millis(operationTimeout), connectionsPerProcess) }
        : via
    }
    return { clock, inspect: db.store.inspect, storeWide, connect, standby: standby(db, clock) }
  })

/** The fleet's processes log nothing: the oracle, not the log, says what went wrong. */
const quiet = <A, E>(effect: Effect.Effect<A, E>) => Logger.withMinimumLogLevel(effect, LogLevel.None)

/**
 * `store` with every call made for election `name`, whatever name its caller
 * gives. Each process of the fleet stands for an OS process of its own, but
 * they all run in this one, whose electors refuse a second elector of one
 * name and identity: a process whose identity another shares names its
 * election after itself, and reaches the shared election through this.
 */
const renamed = (store: Store.StoreShape, name: string): Store.StoreShape => {
  const { advertise, slots, wakeUps, withdraw } = store
  return {
    ...store,
    wakeUps: wakeUps === undefined ? undefined : { subscribe: (_, wake) => wakeUps.subscribe(name, wake) },
    acquire: (_, ...rest) => store.acquire(name, ...rest),
    renew: (_, ...rest) => store.renew(name, ...rest),
    release: (_, ...rest) => store.release(name, ...rest),
    inspect: () => store.inspect(name),
    slots: slots === undefined ? undefined : {
      claim: (_, ...rest) => slots.claim(name, ...rest),
      complete: (_, ...rest) => slots.complete(name, ...rest),
      last: (_, ...rest) => slots.last(name, ...rest)
    },
    ...(advertise === undefined || withdraw === undefined ? {} : {
      advertise: (_, ...rest) => advertise(name, ...rest),
      withdraw: (_, ...rest) => withdraw(name, ...rest)
    })
  }
}

interface Incarnation {
  /** The process, `p<slot>.<incarnation>`: what the oracle tells it apart by. */
  readonly process: string
  /** The identity its elector runs under. */
  readonly identity: string
  readonly gate: Gate
  readonly elector: Elector.ElectorShape
  readonly path: Path
  readonly fiber: Fiber.RuntimeFiber<never, unknown>
}

/** Who a process is: its slot, its own name and the identity its elector runs under. */
interface Participant {
  readonly slot: number
  readonly process: string
  readonly identity: string
}

interface Slot {
  readonly index: number
  readonly rate: Rate
  faults: Faults | undefined
  hints: HintFault | undefined
  incarnations: number
  current: Incarnation | undefined
}

/** What a fleet is made of: the run's schedule, database and oracle, and the user's workload. */
interface FleetOptions {
  readonly driver: Driver
  readonly schedule: Schedule
  readonly election: string
  readonly database: Database
  /** Holds every elector the fleet makes, until the run ends. */
  readonly scope: Scope.Scope
  readonly oracle: Oracle
  readonly workload: Workload
  /** The run's seed, from which each process's Random is drawn. */
  readonly seed: number
}

/** What every live participant believes, and what the database holds. */
interface Observation {
  readonly beliefs: ReadonlyArray<Belief>
  readonly lease: Lease.Lease | undefined
}

/**
 * The participants of one run, slot by slot: starts and stops their
 * processes, applies the schedule's events to them and observes them. A
 * slot keeps its faults across restarts; its processes are its
 * incarnations.
 */
class Fleet {
  private readonly slots: ReadonlyArray<Slot>
  /** Frozen processes, by the instant they thaw. */
  private readonly thaws: Array<{ readonly at: number; readonly gate: Gate }> = []

  constructor(private readonly options: FleetOptions) {
    this.slots = options.schedule.rates.map((r, index) => ({
      index,
      rate: r,
      faults: undefined,
      hints: undefined,
      incarnations: 0,
      current: undefined
    }))
  }

  /** Starts every slot's first process. */
  start(): Effect.Effect<void> {
    return Effect.gen(this, function*() {
      for (const slot of this.slots) yield* this.launch(slot)
    })
  }

  /**
   * Shuts every process down cleanly and heals the database, so that calls
   * still hanging can time out.
   */
  stop(): Effect.Effect<void> {
    return Effect.gen(this, function*() {
      for (const slot of this.slots) yield* this.halt(slot, false)
      this.options.database.storeWide.set(undefined)
    })
  }

  /** Applies one event of the schedule, at the current instant. */
  apply(event: Event): Effect.Effect<void> {
    const { driver, database, oracle } = this.options
    switch (event._tag) {
      case "Partition":
      case "Heal":
        return Effect.map(this.target(event.slot), (slot) => {
          if (slot === undefined) return
          slot.faults = event._tag === "Partition" ? event.faults : undefined
          slot.current?.path.set(slot.faults)
          if (event._tag === "Heal") slot.hints = undefined
          slot.current?.path.setHints(slot.hints)
        })
      case "Hints":
        return Effect.map(this.target(event.slot), (slot) => {
          if (slot === undefined) return
          slot.hints = event.hints
          slot.current?.path.setHints(slot.hints)
        })
      case "Forge":
        return driver.exec(Effect.sync(() => {
          for (const slot of this.slots) slot.current?.path.forge()
        }))
      case "StoreFault":
        return Effect.sync(() => database.storeWide.set(event.faults))
      case "StoreHeal":
        return Effect.sync(() => database.storeWide.set(undefined))
      case "Crash":
        return Effect.flatMap(
          this.target(event.slot),
          (slot) => slot === undefined ? Effect.void : this.halt(slot, true)
        )
      case "Restart":
        return Effect.flatMap(
          this.target(event.slot),
          (slot) => slot === undefined ? Effect.void : Effect.zipRight(this.halt(slot, false), this.launch(slot))
        )
      case "StepBack":
        return driver.exec(database.clock.stepBack(Duration.millis(event.millis)))
      case "Snapshot":
        return driver.exec(database.standby.cut)
      case "Failover":
        return Effect.zipRight(
          Effect.sync(() => oracle.failedOver(driver.millis(), this.options.schedule.config.leaseDuration)),
          driver.exec(database.standby.promote(event.jump))
        )
      case "Freeze":
        return Effect.map(this.target(event.slot), (slot) => {
          const current = slot?.current
          if (current === undefined) return
          current.gate.freeze()
          oracle.onFreeze(current.process)
          this.thaws.push({ at: driver.millis() + event.millis, gate: current.gate })
          this.thaws.sort((a, b) => a.at - b.at)
        })
      case "Resign":
        // On the process's own fibers: resigning waits for the term to end.
        return Effect.map(this.target(event.slot), (slot) => {
          const current = slot?.current
          if (current !== undefined) driver.fork(Effect.withScheduler(quiet(current.elector.resign), current.gate))
        })
    }
  }

  /** When the next frozen process thaws, if one is frozen. */
  nextThaw(): number | undefined {
    return this.thaws[0]?.at
  }

  /** Thaws the process whose freeze ends first. */
  thawNext(): void {
    this.thaws.shift()?.gate.thaw()
  }

  /** The faults stop: the database and every path heal, frozen processes thaw, dead slots restart. */
  calm(): Effect.Effect<void> {
    return Effect.suspend(() => {
      this.options.database.storeWide.set(undefined)
      for (const { gate } of this.thaws.splice(0)) gate.thaw()
      return Effect.forEach(this.slots, (slot) => {
        slot.faults = undefined
        slot.hints = undefined
        if (slot.current === undefined) return this.launch(slot)
        slot.current.path.set(undefined)
        slot.current.path.setHints(undefined)
        return Effect.void
      }, { discard: true })
    })
  }

  /** What every live participant believes, and what the database holds, at the current instant. */
  observe(): Effect.Effect<Observation> {
    const { driver, database, election } = this.options
    return driver.exec(Effect.gen(this, function*() {
      const beliefs: Array<Belief> = []
      for (const slot of this.slots) {
        const current = slot.current
        if (current === undefined) continue
        const isLeader = yield* current.elector.isLeader
        const fence = yield* current.elector.fence
        beliefs.push({
          process: current.process,
          identity: current.identity,
          isLeader,
          fence: Option.getOrUndefined(fence)
        })
      }
      const lease = yield* Effect.option(database.inspect(election))
      return { beliefs, lease: Option.getOrUndefined(lease) }
    }))
  }

  /** The slot an event hits: the one named, or the leader's (none if nobody leads). */
  private target(t: Target): Effect.Effect<Slot | undefined> {
    const { driver } = this.options
    return t === "leader"
      ? Effect.map(
        Effect.findFirst(
          this.slots,
          (slot) => slot.current === undefined ? Effect.succeed(false) : driver.exec(slot.current.elector.isLeader)
        ),
        Option.getOrUndefined
      )
      : Effect.succeed(this.slots[t])
  }

  /** A new process in `slot`: a new identity (unless its slot shares one), on the slot's clock, behind the slot's faults. */
  private launch(slot: Slot): Effect.Effect<void> {
    const { config, priorities } = this.options.schedule
    const { database, driver, election, scope, seed } = this.options
    const shared = this.options.schedule.sharedIdentity?.includes(slot.index) === true
    return Effect.gen(this, function*() {
      const process = `p${slot.index}.${slot.incarnations++}`
      const identity = shared ? sharedIdentity : process
      const via = database.connect()
      via.set(slot.faults)
      via.setHints(slot.hints)
      const clock = driver.clock(slot.rate, Duration.hours(slot.index * 7))
      const gate = new Gate(driver.scheduler)
      const processSeed = seed * 131 + slot.index * 17 + slot.incarnations
      const elector = yield* driver.exec(
        Elector.make({
          name: shared ? `${election}.${process}` : election,
          identity,
          leaseDuration: Duration.millis(config.leaseDuration),
          renewInterval: Duration.millis(config.renewInterval),
          retryPeriod: Duration.millis(config.retryPeriod),
          operationTimeout: Duration.millis(config.operationTimeout),
          priority: priorities?.[slot.index]
        }).pipe(
          Effect.provideService(Store.Store, shared ? renamed(via.store, election) : via.store),
          Effect.provideService(Incarnations, incarnations(processSeed)),
          Effect.withClock(clock),
          Scope.extend(scope),
          Effect.orDie,
          Effect.withScheduler(gate)
        )
      )
      const random = Random.make(processSeed)
      const term = { slot: slot.index, process, identity }
      const participate = Effect.fork(this.job(term, elector, clock)).pipe(
        Effect.zipRight(Effect.fork(this.terms(term, elector, clock))),
        Effect.zipRight(elector.run)
      )
      const fiber = driver.fork(Effect.withScheduler(quiet(Effect.withRandom(participate, random)), gate))
      slot.current = { process, identity, gate, elector, path: via, fiber }
    })
  }

  /**
   * Ends the process in `slot`, if one runs. A crashed one's calls all hang
   * from now on (nothing it sends arrives) and it never releases.
   */
  private halt(slot: Slot, crash: boolean): Effect.Effect<void> {
    return Effect.suspend(() => {
      const current = slot.current
      if (current === undefined) return Effect.void
      if (crash) current.path.set(hangAll)
      slot.current = undefined
      return this.options.driver.exec(Fiber.interruptFork(current.fiber))
    })
  }

  /** The participant's terms, as `whileLeader` runs them: the oracle sees each start and stop, and any crash. */
  private terms({ identity, process, slot }: Participant, elector: Elector.ElectorShape, clock: Clock.Clock) {
    const { driver, oracle, workload: { work: userWork } } = this.options
    return Elector.whileLeader(Effect.flatMap(Leadership.Leadership, ({ fence }) =>
      Effect.suspend(() => {
        oracle.onStart(process, fence, driver.millis())
        const term = { slot, identity, fence }
        const work = userWork === undefined
          ? Effect.never
          : Effect.zipRight(Effect.isEffect(userWork) ? userWork : userWork(term), Effect.never)
        return Effect.tapErrorCause(work, (cause) =>
          Effect.sync(() => oracle.crash(process, fence, driver.millis(), cause)))
      }).pipe(Effect.ensuring(Effect.sync(() =>
        oracle.onStop(process, fence, driver.millis())
      ))))).pipe(
        Effect.provideService(Elector.Elector, elector),
        Effect.withClock(clock),
        Effect.ignore
      )
  }

  /** The workload's scheduled job, as the participant runs it. */
  private job({ identity, slot }: Participant, elector: Elector.ElectorShape, clock: Clock.Clock) {
    const { job } = this.options.workload
    return job === undefined
      ? Effect.never
      : Elector.schedule("sim-job", job.when, (at) => job.run({ slot, identity, fence: at.fence }, at), {
        delivery: job.delivery
      }).pipe(Effect.provideService(Elector.Elector, elector), Effect.withClock(clock), Effect.orDie)
  }
}

/**
 * Plays what falls due by `t`, each at its instant and in time order: the
 * schedule's pending events (taken off the queue as they play) and the
 * fleet's thaws (a thaw first on a tie).
 */
const playUntil = (driver: Driver, fleet: Fleet, pending: Array<Timed>, t: number): Effect.Effect<void> =>
  Effect.gen(function*() {
    for (;;) {
      const event = pending[0]
      const thaw = fleet.nextThaw()
      const eventAt = event !== undefined && event.at <= t ? event.at : Infinity
      const thawAt = thaw !== undefined && thaw <= t ? thaw : Infinity
      if (eventAt === Infinity && thawAt === Infinity) return
      if (thawAt <= eventAt) {
        yield* driver.advanceTo(thawAt)
        fleet.thawNext()
      } else {
        pending.shift()
        yield* driver.advanceTo(eventAt)
        yield* fleet.apply(event!.event)
      }
    }
  })

/**
 * Runs `schedule` on `driver`: the events play through the fault window,
 * then every fault stops and someone must lead within the liveness bound;
 * the oracle samples the fleet at every step.
 */
export const runWith = (driver: Driver, schedule: Schedule, options: RunOptions): Effect.Effect<Result> =>
  Effect.gen(function*() {
    const oracle = new Oracle()
    const election = `sim-${(runs++).toString(36)}`
    const database = yield* openDatabase(driver, options.callPath, schedule.config.operationTimeout)
    const scope = yield* Scope.make()
    const workload = options.workload?.({ now: driver.millis }) ?? {}
    const fleet = new Fleet({ driver, schedule, election, database, scope, oracle, workload, seed: options.seed })
    const { config, priorities } = schedule
    const { invariant } = workload
    const bound = livenessBound(schedule, options.step)
    const calmAt = schedule.window
    const end = calmAt + bound

    yield* fleet.start()
    const pending = [...schedule.events]
    let calmed = false
    for (let t = 0; t <= end && oracle.violation === undefined; t += options.step) {
      yield* playUntil(driver, fleet, pending, t)
      if (!calmed && t >= calmAt) {
        yield* driver.advanceTo(calmAt)
        yield* fleet.calm()
        calmed = true
        if (priorities !== undefined) oracle.calm(calmAt, 2 * config.leaseDuration)
      }
      yield* driver.advanceTo(t)
      const { beliefs, lease } = yield* fleet.observe()
      oracle.sample(t, beliefs, lease, calmed)
      if (invariant !== undefined) oracle.invariant(t, invariant(t))
    }
    oracle.finish(end, calmAt, bound)
    if (priorities !== undefined) {
      const { beliefs } = yield* fleet.observe()
      const leader = beliefs.find((b) => b.isLeader)?.process
      const best = Math.max(...priorities)
      oracle.preferred(end, leader, leader !== undefined && priorities[slotOf(leader)] === best, bound)
    }
    // Shut everyone down and let hanging calls time out, so that no fiber (nor
    // the timer Effect.never holds) outlives the run.
    yield* fleet.stop()
    const virtualMillis = driver.millis()
    yield* driver.advanceTo(virtualMillis + 4 * config.operationTimeout)
    yield* driver.exec(Scope.close(scope, Exit.void))
    return { violation: oracle.violation, terms: oracle.terms, tenures: oracle.tenures, bound, virtualMillis }
  })

export const run = (schedule: Schedule, options: RunOptions): Result =>
  Effect.runSync(runWith(virtualDriver(), schedule, options))
