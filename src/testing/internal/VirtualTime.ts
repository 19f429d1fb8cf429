/**
 * Virtual time for the fleet simulation: one timeline (the database's), a
 * scheduler that runs every fiber of the simulation to quiescence
 * synchronously, and per-participant clocks that see the timeline at their
 * own rate.
 *
 * Why not `TestClock`: `TestClock.adjust` waits for the fibers it wakes by
 * polling their status across `setTimeout(0)` turns of the event loop, a
 * few real milliseconds for every sleeper it wakes, and it keeps the
 * sleepers of interrupted timers (every store call's timeout is one). A
 * fleet makes thousands of wake-ups per virtual minute, so schedules would
 * cost seconds each. Here a wake-up costs what the woken fibers compute: the
 * scheduler below holds every task and `flush` runs them until none is left,
 * so "everyone has done what they can at this instant" is exact, not polled.
 * It is the same model as `TestClock` (time moves only when the driver moves
 * it; sleepers wake in deadline order), and it is just as deterministic.
 */
import { Clock, Duration, Effect, Exit, type Fiber, type Scheduler } from "effect"

/** A clock rate as the rational `num / den`: local seconds per database second. */
export interface Rate {
  readonly num: bigint
  readonly den: bigint
}

export const rateDenominator = 10_000n

export const rate = (perTenThousand: number): Rate => ({ num: BigInt(perTenThousand), den: rateDenominator })

export const rateToNumber = (r: Rate): number => Number(r.num) / Number(r.den)

/** A timeline a clock can be scaled over: its instant, and sleeps on it. */
export interface Timeline {
  readonly millis: () => number
  readonly sleepMillis: (millis: number) => Effect.Effect<void>
}

/**
 * A clock that reads `offset + rate * timeline` and whose sleeps last
 * `duration / rate` of the timeline, rounded up, so a sleeper never wakes
 * before its own clock has moved by the full duration.
 */
export const scaledClock = (timeline: Timeline, r: Rate, offset: Duration.Duration = Duration.zero): Clock.Clock => {
  const offsetNanos = Duration.unsafeToNanos(offset)
  const nanos = () => offsetNanos + (BigInt(timeline.millis()) * 1_000_000n * r.num) / r.den
  const millis = () => Number(nanos() / 1_000_000n)
  return {
    [Clock.ClockTypeId]: Clock.ClockTypeId,
    unsafeCurrentTimeMillis: millis,
    currentTimeMillis: Effect.sync(millis),
    unsafeCurrentTimeNanos: nanos,
    currentTimeNanos: Effect.sync(nanos),
    sleep: (duration) =>
      Effect.suspend(() => {
        const d = Duration.unsafeToNanos(duration)
        if (d <= 0n) return Effect.void
        const divisor = 1_000_000n * r.num
        const base = (d * r.den + divisor - 1n) / divisor
        return timeline.sleepMillis(Number(base))
      })
  }
}

interface Sleeper {
  readonly at: number
  readonly seq: number
  readonly wake: () => void
  cancelled: boolean
}

/** Runs fibers in FIFO order, only when {@link VirtualTime.flush} is called. */
class SimScheduler implements Scheduler.Scheduler {
  private tasks: Array<Scheduler.Task> = []
  scheduleTask(task: Scheduler.Task): void {
    this.tasks.push(task)
  }
  shouldYield(fiber: Fiber.RuntimeFiber<unknown, unknown>): number | false {
    return fiber.currentOpCount > 2048 ? 0 : false
  }
  flush(): void {
    while (this.tasks.length > 0) {
      const batch = this.tasks
      this.tasks = []
      for (const task of batch) task()
    }
  }
}

/**
 * The scheduler of one process of the fleet: passes its fibers' tasks on to
 * the simulation's scheduler, except while the process is frozen (a GC
 * pause, SIGSTOP, a VM migration), when it holds them. Its clock keeps
 * going, so everything that fell due runs, in order, when it thaws.
 */
export class Gate implements Scheduler.Scheduler {
  private held: Array<Scheduler.Task> | undefined
  constructor(private readonly next: Scheduler.Scheduler) {}
  scheduleTask(task: Scheduler.Task, priority: number): void {
    if (this.held === undefined) this.next.scheduleTask(task, priority)
    else this.held.push(task)
  }
  shouldYield(fiber: Fiber.RuntimeFiber<unknown, unknown>): number | false {
    return this.next.shouldYield(fiber)
  }
  freeze(): void {
    this.held ??= []
  }
  thaw(): void {
    const held = this.held ?? []
    this.held = undefined
    for (const task of held) this.next.scheduleTask(task, 0)
  }
}

export class VirtualTime {
  /** The timeline, in milliseconds; the database clock follows it at rate 1. */
  private now = 0
  private seq = 0
  /** Sorted by (at, seq). */
  private sleepers: Array<Sleeper> = []
  /** Every fiber of the simulation runs on it, directly or through a {@link Gate}. */
  readonly scheduler = new SimScheduler()

  get millis(): number {
    return this.now
  }

  /** The next instant a sleeper wakes at, if any. */
  nextWake(): number | undefined {
    while (this.sleepers[0]?.cancelled === true) this.sleepers.shift()
    return this.sleepers[0]?.at
  }

  private insert(sleeper: Sleeper): void {
    let lo = 0
    let hi = this.sleepers.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      const other = this.sleepers[mid]!
      if (other.at < sleeper.at || (other.at === sleeper.at && other.seq < sleeper.seq)) lo = mid + 1
      else hi = mid
    }
    this.sleepers.splice(lo, 0, sleeper)
  }

  /** Sleeps for `millis` of the timeline (at least one when positive). */
  sleepMillis(millis: number): Effect.Effect<void> {
    if (millis <= 0) return Effect.void
    return Effect.async<void>((resume) => {
      const sleeper: Sleeper = {
        at: this.now + Math.max(1, Math.ceil(millis)),
        seq: this.seq++,
        wake: () => resume(Effect.void),
        cancelled: false
      }
      this.insert(sleeper)
      return Effect.sync(() => {
        sleeper.cancelled = true
      })
    })
  }

  /** A clock over this timeline: see {@link scaledClock}. */
  clock(r: Rate, offset: Duration.Duration = Duration.zero): Clock.Clock {
    return scaledClock({ millis: () => this.now, sleepMillis: (millis) => this.sleepMillis(millis) }, r, offset)
  }

  /** Runs every runnable fiber until all of them wait on time or on each other. */
  flush(): void {
    this.scheduler.flush()
  }

  /** Starts `effect` as a fiber of the simulation (it runs at the next flush). */
  fork<A, E>(effect: Effect.Effect<A, E>): Fiber.RuntimeFiber<A, E> {
    return Effect.runFork(effect, { scheduler: this.scheduler })
  }

  /** Runs `effect` to completion at the current instant; it must not wait on time. */
  run<A, E>(effect: Effect.Effect<A, E>): A {
    const fiber = this.fork(effect)
    this.flush()
    const exit = fiber.unsafePoll()
    if (exit === null) throw new Error("VirtualTime.run: the effect waits on virtual time")
    if (Exit.isSuccess(exit)) return exit.value
    throw new Error(`VirtualTime.run failed: ${String(exit.cause)}`)
  }

  /**
   * Moves the timeline to `target`, waking sleepers in order and letting
   * every fiber run to quiescence after each wake-up.
   */
  advanceTo(target: number, afterEachWake?: () => void): void {
    this.flush()
    for (;;) {
      const next = this.nextWake()
      if (next === undefined || next > target) break
      const sleeper = this.sleepers.shift()!
      this.now = sleeper.at
      sleeper.wake()
      this.flush()
      afterEachWake?.()
    }
    this.now = Math.max(this.now, target)
  }
}
