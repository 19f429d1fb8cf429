/**
 * What keeps an elector running for months: abandoned store calls never hold
 * up a step-down, user callbacks cannot kill or stall it, failed work gives
 * leadership up, fatal store errors are reported, and one identity runs once.
 */
import { describe, expect, it } from "@effect/vitest"
import {
  Clock,
  Deferred,
  Duration,
  Effect,
  ExecutionStrategy,
  Exit,
  Fiber,
  FiberRef,
  HashSet,
  Layer,
  Logger,
  LogLevel,
  Metric,
  Option,
  Scope,
  TestClock
} from "effect"
import * as Elector from "../src/Elector.js"
import * as Lease from "../src/Lease.js"
import * as Metrics from "../src/Metrics.js"
import * as Store from "../src/Store.js"
import * as MemoryStore from "../src/stores/MemoryStore.js"
import * as Faulty from "../src/testing/FaultyStore.js"
import { steady } from "./support/steady.js"

// The database clock is three days ahead of the local one, as in every unit test.
const world = Effect.flatMap(
  MemoryStore.makeClock({ offset: Duration.days(3) }),
  (clock) => MemoryStore.make({ clock })
)

/** An elector in a scope of its own (closed with the test's, at the latest), running; closing it shuts it down. */
const join = (store: Store.StoreShape, config: Elector.ElectorConfig) =>
  Effect.gen(function*() {
    const scope = yield* Scope.fork(yield* Effect.scope, ExecutionStrategy.sequential)
    const elector = yield* Elector.make(config).pipe(Effect.provideService(Store.Store, store), Scope.extend(scope))
    const run = yield* Effect.forkIn(steady(elector.run), scope)
    yield* TestClock.adjust(Duration.millis(1))
    return { elector, run, scope }
  })

const seconds = (n: number) => TestClock.adjust(Duration.millis(n * 1000))

/** Closes an elector's scope while the clock moves: a slow advisory callback holds shutdown up to operationTimeout. */
const shutdown = (scope: Scope.CloseableScope) =>
  Effect.gen(function*() {
    const closing = yield* Effect.fork(Scope.close(scope, Exit.void))
    yield* seconds(3)
    yield* Fiber.join(closing)
  })

let elections = 0
/** A fresh election per test: metrics are process-wide, their tags keep the tests apart. */
const election = () => `robust-${++elections}`

const count = <In extends number | bigint>(metric: Metric.Metric.Counter<In>, tags: Record<string, string>) =>
  Effect.map(
    Metric.value(Object.entries(tags).reduce((m, [key, value]) => Metric.tagged(m, key, value), metric)),
    (state) => state.count
  )

/** Every log line at WARN or above, as "LEVEL message". */
const captureLogs = Effect.gen(function*() {
  const lines: Array<string> = []
  const logger = Logger.make(({ logLevel, message }) => {
    if (LogLevel.greaterThanEqual(logLevel, LogLevel.Warning)) {
      lines.push(`${logLevel.label} ${Array.isArray(message) ? message.join(" ") : String(message)}`)
    }
  })
  yield* Effect.locallyScopedWith(FiberRef.currentLoggers, HashSet.add(logger))
  return lines
})

const fatalError = (operation: Store.Operation) =>
  new Store.StoreError({ operation, retryable: false, reason: "permission denied for table leases", cause: undefined })

const callbackFailures = (name: string, callback: Metrics.Callback, outcome: string) =>
  count(Metrics.callbackFailures, { election: name, callback, outcome })

/** Work that records the local instant it is interrupted at. */
const interruptedAt = (at: Deferred.Deferred<number>) => () =>
  Effect.never.pipe(
    Effect.onInterrupt(() => Effect.flatMap(TestClock.currentTimeMillis, (now) => Deferred.succeed(at, now)))
  )

const shedPoll = Effect.fail(
  new Store.StoreError({ operation: "inspect", retryable: true, reason: "shed", cause: undefined })
)

/**
 * `db` with an `inspect` that records when each poll came and, while
 * `shed(true)`, runs `fault` instead: by default it fails as a shed poll does.
 */
const shedding = (db: Store.StoreShape, fault: Effect.Effect<never, Store.StoreError> = shedPoll) => {
  let failing = false
  const polls: Array<number> = []
  const store: Store.StoreShape = {
    ...db,
    inspect: (name) =>
      Effect.zipRight(
        Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.sync(() => polls.push(now))),
        failing ? fault : db.inspect(name)
      )
  }
  return {
    polls,
    store,
    shed: (on: boolean) => {
      failing = on
    }
  }
}

describe("Elector robustness", () => {
  it.scoped("a store whose cancellation outlasts the lease delays neither the step-down nor the shutdown", () =>
    Effect.gen(function*() {
      const db = yield* world
      const store = Faulty.make(db)
      const first = yield* Deferred.make<number>()
      const { elector, scope } = yield* join(store, {
        name: "jobs",
        identity: "a",
        onStartedLeading: interruptedAt(first)
      })
      store.set(Faulty.slowCancel("60 seconds"), "renew")
      yield* seconds(13.5)
      // Interrupted at the deadline, not once the abandoned renewals finished
      // cancelling; released, and leading again under a fresh fence.
      expect(yield* Deferred.isDone(first)).toBe(true)
      expect(yield* Deferred.await(first)).toBe(13_500)
      expect(yield* elector.fence).toEqual(Option.some(2n))
      // Now every call hangs, and cancels slowly.
      store.set(Faulty.slowCancel("60 seconds"))
      yield* seconds(6)
      const closing = yield* Effect.fork(Scope.close(scope, Exit.void))
      yield* seconds(2.99)
      expect(closing.unsafePoll()).toBeNull()
      yield* seconds(0.01) // the hanging release gives up at operationTimeout
      expect(closing.unsafePoll()).toEqual(Exit.void)
      expect(yield* elector.isLeader).toBe(false)
    }))

  // In a fiber per call, or on the elector's fiber (a store that promises to
  // answer within operationTimeout): the same outcome either way.
  for (const onCaller of [false, true]) {
    const where = onCaller ? " (on the elector's fiber)" : ""
    it.scoped(`a store call that ends by interruption or a defect is a fatal store error, not the end of run${where}`, () =>
      Effect.gen(function*() {
        const db = yield* world
        const shape: Store.StoreShape = { ...db, inspect: () => Effect.interrupt }
        const store = onCaller ? { ...shape, answersWithin: Duration.seconds(1) } : shape
        const { elector, run } = yield* join(store, { name: "jobs", identity: "a" })
        yield* seconds(10)
        expect(run.unsafePoll()).toBeNull()
        const error = Option.getOrThrow((yield* elector.status).lastError)
        expect(error.message).toBe("inspect failed (fatal): the store call was interrupted")
        expect(yield* Effect.flip(db.inspect("jobs"))).toBeInstanceOf(Store.NoLease)
        const dying = { ...db, inspect: () => Effect.die(new Error("injected")) }
        const other = yield* join(onCaller ? { ...dying, answersWithin: Duration.seconds(1) } : dying, {
          name: "jobs",
          identity: "b"
        })
        yield* seconds(10)
        expect(other.run.unsafePoll()).toBeNull()
        expect(Option.getOrThrow((yield* other.elector.status).lastError).message).toBe(
          "inspect failed (fatal): store defect: Error: injected"
        )
      }))
  }

  it.scoped("defects in onNewLeader, onStoppedLeading and a term finalizer are contained: run goes on, the release happens", () =>
    Effect.gen(function*() {
      const name = election()
      const db = yield* world
      const store = Faulty.make(db)
      const { elector, run } = yield* join(store, {
        name,
        identity: "a",
        onNewLeader: () => Effect.die("onNewLeader broke"),
        onStoppedLeading: Effect.die("onStoppedLeading broke")
      })
      expect(yield* elector.fence).toEqual(Option.some(1n))
      const term = yield* elector.leadership
      yield* Scope.addFinalizer(term.scope, Effect.die("finalizer broke"))
      store.set(Faulty.hang, "renew")
      yield* seconds(13.5)
      // Stepped down, finalized, released, and leading again under a fresh fence.
      expect(store.calls.release).toBe(1)
      expect(yield* elector.fence).toEqual(Option.some(2n))
      expect(run.unsafePoll()).toBeNull()
      expect(yield* callbackFailures(name, "onNewLeader", "defect")).toBe(2)
      expect(yield* callbackFailures(name, "finalizer", "defect")).toBe(1)
      expect(yield* callbackFailures(name, "onStoppedLeading", "defect")).toBe(1)
    }))

  it.scoped("an onNewLeader that interrupts itself is reported as such, and nothing else happens", () =>
    Effect.gen(function*() {
      const name = election()
      const { elector, run } = yield* join(yield* world, { name, identity: "a", onNewLeader: () => Effect.interrupt })
      yield* seconds(30)
      expect(yield* elector.fence).toEqual(Option.some(1n))
      expect(run.unsafePoll()).toBeNull()
      expect(yield* callbackFailures(name, "onNewLeader", "interrupt")).toBe(1)
    }))

  it.scoped("onStartedLeading throwing while it builds its effect is failed work: the term ends and is released", () =>
    Effect.gen(function*() {
      const name = election()
      const db = yield* world
      const { elector, run } = yield* join(db, {
        name,
        identity: "a",
        onStartedLeading: () => {
          throw new Error("no effect for you")
        }
      })
      expect(yield* elector.isLeader).toBe(false)
      expect(Lease.isExpired(yield* db.inspect(name))).toBe(true)
      expect(run.unsafePoll()).toBeNull()
      expect(yield* callbackFailures(name, "onStartedLeading", "defect")).toBe(1)
    }))

  it.scoped("a 14s onNewLeader does not delay the term it reports", () =>
    Effect.gen(function*() {
      const started = yield* Deferred.make<bigint>()
      const { elector, scope } = yield* join(yield* world, {
        name: election(),
        identity: "a",
        onNewLeader: () => Effect.sleep("14 seconds"),
        onStartedLeading: (fence) => Deferred.succeed(started, fence)
      })
      expect(yield* elector.fence).toEqual(Option.some(1n))
      expect(yield* Deferred.isDone(started)).toBe(true)
      yield* shutdown(scope)
    }))

  it.scoped("a slow onStoppedLeading delays neither the release nor, beyond operationTimeout, the shutdown", () =>
    Effect.gen(function*() {
      const name = election()
      const db = yield* world
      const done = yield* Deferred.make<void>()
      const { elector, run, scope } = yield* join(db, {
        name,
        identity: "a",
        onStoppedLeading: Effect.zipRight(Effect.sleep("10 seconds"), Deferred.succeed(done, undefined))
      })
      expect(yield* elector.isLeader).toBe(true)
      yield* Fiber.interrupt(run)
      expect(Lease.isExpired(yield* db.inspect(name))).toBe(true)
      const closing = yield* Effect.fork(Scope.close(scope, Exit.void))
      yield* seconds(2.99)
      expect(closing.unsafePoll()).toBeNull()
      yield* seconds(0.01)
      expect(closing.unsafePoll()).toEqual(Exit.void)
      expect(yield* Deferred.isDone(done)).toBe(false)
    }))

  it.scoped("advisory callbacks beyond 64 waiting are dropped and counted", () =>
    Effect.gen(function*() {
      const name = election()
      const db = yield* world
      const seen: Array<bigint> = []
      // Intruders hold the lease; each poll of "a" sees a new one.
      let lease = yield* db.acquire(name, "x", Duration.minutes(10), null)
      const { scope } = yield* join(db, {
        name,
        identity: "a",
        // The first never returns: every later one waits behind it.
        onNewLeader: (_, fence) => Effect.zipRight(Effect.sync(() => seen.push(fence)), Effect.never)
      })
      for (let i = 0; i < 70; i++) {
        yield* db.release(name, lease.holder, lease.fence)
        lease = yield* db.acquire(name, "x", Duration.minutes(10), null)
        yield* seconds(3)
      }
      expect(seen).toEqual([1n])
      expect(yield* count(Metrics.callbacksDropped, { election: name })).toBeGreaterThan(0)
      yield* shutdown(scope)
    }))

  it.scoped("failed work ends the term: released, a healthy participant takes over, and it waits before claiming again", () =>
    Effect.gen(function*() {
      const name = election()
      const db = yield* world
      const { elector: a } = yield* join(db, {
        name,
        identity: "a",
        onStartedLeading: (fence) => fence === 1n ? Effect.fail("work failed") : Effect.never
      })
      expect(yield* a.isLeader).toBe(false)
      expect(Lease.isExpired(yield* db.inspect(name))).toBe(true)
      expect(yield* count(Metrics.stepDowns, { election: name, reason: "failed" })).toBe(1)
      expect(yield* callbackFailures(name, "onStartedLeading", "failure")).toBe(1)
      const b = yield* join(db, { name, identity: "b" })
      expect(yield* b.elector.fence).toEqual(Option.some(2n))
      // b leaves: a backs off for workFailureBackoff (leaseDuration) after its failure.
      yield* Scope.close(b.scope, Exit.void)
      yield* seconds(11.9)
      expect(Lease.isExpired(yield* db.inspect(name))).toBe(true)
      yield* seconds(3.1)
      expect(yield* a.fence).toEqual(Option.some(3n))
    }))

  it.scoped("with onWorkFailure keepLeading, failed work is reported and the term goes on; whileLeader fails", () =>
    Effect.gen(function*() {
      const name = election()
      const { elector } = yield* join(yield* world, { name, identity: "a", onWorkFailure: "keepLeading" })
      const defect = yield* Elector.whileLeader(Effect.die("work broke")).pipe(
        Effect.provideService(Elector.Elector, elector),
        Effect.exit
      )
      expect(Exit.isFailure(defect)).toBe(true)
      yield* seconds(30)
      expect(yield* elector.fence).toEqual(Option.some(1n))
      expect(yield* callbackFailures(name, "work", "defect")).toBe(1)
    }))

  it("onWorkFailure is validated", () => {
    const refused = Effect.runSync(
      Effect.flip(Elector.validate({ name: "jobs", onWorkFailure: "retry" as "stepDown" }))
    )
    expect(refused.message).toBe(`invalid config: onWorkFailure: must be "stepDown" or "keepLeading", got "retry"`)
  })

  it.scoped("lastError stays set for as long as an operation fails, even while the others succeed", () =>
    Effect.gen(function*() {
      const db = yield* world
      // The read works, the claim is refused after a round trip.
      const store: Store.StoreShape = {
        ...db,
        acquire: () => Effect.zipRight(Effect.sleep("1 second"), Effect.fail(fatalError("acquire")))
      }
      const { elector } = yield* join(store, { name: election(), identity: "a" })
      yield* seconds(1)
      for (let i = 0; i < 120; i++) {
        yield* seconds(0.25)
        const error = (yield* elector.status).lastError
        expect(Option.map(error, (e) => e.message)).toEqual(
          Option.some("acquire failed (fatal): permission denied for table leases")
        )
      }
    }))

  it.scoped("a follower whose polls fail backs off (doubling, up to 4 x retryPeriod or the lease), and polls at its period again after an answer", () =>
    Effect.gen(function*() {
      const db = yield* world
      const name = election()
      // A rival holds the lease, so the follower only polls.
      yield* db.acquire(name, "rival", Duration.hours(1), null)
      const { polls, store, shed } = shedding(db)
      yield* join(store, {
        name,
        identity: "follower",
        retryPeriod: "1 second",
        leaseDuration: "15 seconds",
        renewInterval: "5 seconds"
      })
      // One answer first: a participant that has had none does not back off.
      yield* seconds(1)
      expect(polls.length).toBeGreaterThan(0)
      shed(true)
      polls.length = 0
      yield* seconds(60)
      const gaps = polls.slice(1).map((at, i) => at - polls[i]!)
      // Jittered over [period/2, period): a 2 s period, then 4 s from there on.
      expect(gaps[0]).toBeGreaterThanOrEqual(1000)
      expect(gaps[0]).toBeLessThan(2000)
      expect(gaps.length).toBeGreaterThan(10)
      for (const gap of gaps.slice(1)) {
        expect(gap).toBeGreaterThanOrEqual(2000)
        expect(gap).toBeLessThan(4000)
      }
      shed(false)
      yield* seconds(8)
      const answered = polls.length
      yield* seconds(10)
      // Back at the plain period, [0.5, 1) s.
      expect(polls.length - answered).toBeGreaterThanOrEqual(10)
    }))

  it.scoped("a participant whose polls fail before its first answer (shed in a start-up burst) keeps its period", () =>
    Effect.gen(function*() {
      const db = yield* world
      const name = election()
      const { polls, shed, store } = shedding(db)
      shed(true)
      // Not a multiple of the grain, so that a wait on it shows.
      const { elector } = yield* join(store, { name, identity: "joiner", retryPeriod: "1010 millis" })
      yield* seconds(20)
      // At [0.5, 1) s a poll, never backed off: a grown period would give at most 10.
      expect(polls.length).toBeGreaterThanOrEqual(20)
      // Each at its own instant, not on the grain routine steps share (Deadlines.grain).
      expect(polls.slice(1).filter((at) => at % 20 !== 0).length).toBeGreaterThan(10)
      shed(false)
      yield* seconds(2)
      expect(yield* elector.isLeader).toBe(true)
    }))

  it.scoped("a participant whose polls time out before its first answer (queued behind a start-up burst) polls again a retry period after sending, not after the timeout", () =>
    Effect.gen(function*() {
      const db = yield* world
      const name = election()
      // Polls that hang, until their timeout.
      const { polls, shed, store } = shedding(db, Effect.never)
      shed(true)
      const { elector } = yield* join(store, {
        name,
        identity: "joiner",
        retryPeriod: "2 seconds",
        operationTimeout: "1500 millis"
      })
      yield* seconds(20)
      // Each poll a jittered [1, 2) s after the one before was sent; counted
      // from its timeout, they would be [2.5, 3.5) s apart.
      const gaps = polls.slice(1).map((at, i) => at - polls[i]!)
      expect(gaps.length).toBeGreaterThanOrEqual(9)
      for (const gap of gaps) {
        expect(gap).toBeGreaterThanOrEqual(1500)
        expect(gap).toBeLessThan(2000)
      }
      shed(false)
      yield* seconds(2)
      expect(yield* elector.isLeader).toBe(true)
    }))

  it.scoped("a fatal error is logged at ERROR once, then at most once a minute, and its end once; a gauge follows it", () =>
    Effect.gen(function*() {
      const name = election()
      const logs = yield* captureLogs
      const store = Faulty.make(yield* world)
      store.set(Faulty.fatal)
      const gauge = Effect.map(Metric.value(Metric.tagged(Metrics.storeFatal, "election", name)), (g) => g.value)
      yield* join(store, { name, identity: "a" })
      yield* seconds(150)
      expect(store.calls.inspect).toBeGreaterThan(50)
      expect(yield* gauge).toBe(1)
      expect(logs.filter((line) => line.includes("(fatal)")).map((line) => line.split(":")[0])).toEqual([
        "ERROR inspect failed (fatal)",
        "ERROR inspect failed (fatal)",
        "ERROR inspect failed (fatal)"
      ])
      store.set(Faulty.pass)
      yield* seconds(3)
      expect(yield* gauge).toBe(0)
      expect(logs.filter((line) => line.includes("succeed again"))).toEqual([
        "ERROR store calls succeed again (inspect): no longer failing fatally"
      ])
    }))

  it.scoped("failFast fails the layer's build on a fatal first answer; without it, the layer builds and keeps trying", () =>
    Effect.gen(function*() {
      const store = Faulty.make(yield* world)
      store.set(Faulty.fatal)
      const build = (failFast: boolean) =>
        Layer.build(Elector.layer({ name: election(), identity: "a", failFast })).pipe(
          Effect.provideService(Store.Store, store)
        )
      const refused = yield* Effect.flip(build(true))
      expect(refused.message).toBe("inspect failed (fatal): injected")
      const context = yield* build(false)
      yield* seconds(1)
      yield* Effect.flatMap(Elector.Elector, (elector) => elector.ready).pipe(Effect.provide(context))
    }))

  it.scoped("should run ever stop on a defect of its own, it says so at FATAL", () =>
    Effect.gen(function*() {
      const logs = yield* captureLogs
      const db = yield* world
      yield* db.acquire("jobs", "x", Duration.minutes(1), null)
      // A clock that breaks: the follower's first look at it dies.
      const broken: Clock.Clock = {
        [Clock.ClockTypeId]: Clock.ClockTypeId,
        unsafeCurrentTimeMillis: () => 0,
        unsafeCurrentTimeNanos: () => {
          throw new Error("the clock broke")
        },
        currentTimeMillis: Effect.succeed(0),
        currentTimeNanos: Effect.succeed(0n),
        sleep: () => Effect.die("the clock broke")
      }
      const elector = yield* Elector.make({ name: "jobs", identity: "a" }).pipe(
        Effect.provideService(Store.Store, db),
        Effect.withClock(broken)
      )
      const exit = yield* Effect.exit(elector.run)
      expect(Exit.isFailure(exit) && !Exit.isInterrupted(exit)).toBe(true)
      expect(logs).toContain("FATAL the elector stopped")
    }))

  it.scoped("a second elector with the same name and identity in one process is refused until the first stops", () =>
    Effect.gen(function*() {
      const db = yield* world
      const name = election()
      const first = yield* join(db, { name, identity: "a" })
      const refused = yield* Effect.flip(join(db, { name, identity: "a" }))
      expect(refused._tag).toBe("DuplicateIdentity")
      expect(refused.message).toBe(
        `an elector for "${name}" with identity a is already running in this process: every participant needs an identity of its own`
      )
      // Another election, or another identity, is fine.
      yield* join(db, { name: election(), identity: "a" })
      const b = yield* join(db, { name, identity: "b" })
      expect(yield* first.elector.fence).toEqual(Option.some(1n))
      yield* Scope.close(first.scope, Exit.void)
      const again = yield* join(db, { name, identity: "a" })
      // b, woken by the first one's release (MemoryStore's hint), took over; a runs again, following.
      expect(yield* b.elector.fence).toEqual(Option.some(2n))
      expect((yield* again.elector.status).leader).toEqual(Option.some("b"))
    }))
})
