import { describe, expect, it } from "@effect/vitest"
import { Clock, Deferred, Duration, Effect, Exit, Fiber, Option, Ref, Scope, Stream, TestClock } from "effect"
import * as Elector from "../src/Elector.js"
import * as internal from "../src/internal/election/make.js"
import * as Leadership from "../src/Leadership.js"
import * as Lease from "../src/Lease.js"
import * as Store from "../src/Store.js"
import * as MemoryStore from "../src/stores/MemoryStore.js"
import * as Faulty from "../src/testing/FaultyStore.js"
import { steady } from "./support/steady.js"

// The database clock is three days ahead of the local one in every test: any
// code that compared the two would produce nonsense.
const world = Effect.gen(function*() {
  const clock = yield* MemoryStore.makeClock({ offset: Duration.days(3) })
  const db = yield* MemoryStore.make({ clock })
  return { clock, db }
})

const participant = (store: Store.StoreShape, config: Elector.ElectorConfig) =>
  Elector.make(config).pipe(Effect.provideService(Store.Store, store))

/** An elector "a" that records the fence of every term it starts. */
const recording = (store: Store.StoreShape) =>
  Effect.gen(function*() {
    const terms: Array<bigint> = []
    const elector = yield* participant(store, {
      name: "jobs",
      identity: "a",
      onStartedLeading: (fence) => Effect.sync(() => terms.push(fence))
    })
    return { elector, terms }
  })

/** Starts an elector's run and lets it take its first steps. */
const start = (elector: Elector.ElectorShape) =>
  Effect.gen(function*() {
    const fiber = yield* Effect.fork(steady(elector.run))
    yield* TestClock.adjust(Duration.millis(1))
    return fiber
  })

const seconds = (n: number) => TestClock.adjust(Duration.millis(n * 1000))

/** Heals the store and lets calls still waiting on it time out. */
const settle = (store: Faulty.FaultyStore) =>
  Effect.sync(() => store.set(Faulty.pass)).pipe(Effect.zipRight(seconds(3)))

describe("Elector", () => {
  it.scoped("promotes a lone participant with the first fence and reports it", () =>
    Effect.gen(function*() {
      const { db } = yield* world
      const elector = yield* participant(db, { name: "jobs", identity: "a", payload: new Uint8Array([7]) })
      expect(yield* elector.isLeader).toBe(false)
      yield* start(elector)
      expect(yield* elector.isLeader).toBe(true)
      expect(yield* elector.fence).toEqual(Option.some(1n))
      const status = yield* elector.status
      expect(status).toMatchObject({ isLeader: true, identity: "a" })
      expect(status.leader).toEqual(Option.some("a"))
      expect(status.leaderFence).toEqual(Option.some(1n))
      expect(status.leaderPayload).toEqual(Option.some(new Uint8Array([7])))
      expect(Option.isSome(status.observedAt)).toBe(true)
      expect(Option.isNone(status.lastError)).toBe(true)
      // Local deadline: sent + lease (15s) - margin (1.5s), on the local clock.
      expect(Option.map(status.validUntil, (d) => d.getTime())).toEqual(Option.some(13_500))
      const lease = yield* db.inspect("jobs")
      expect(lease.now.getTime()).toBeGreaterThan(Duration.toMillis(Duration.days(3)) - 1)
    }))

  it.scoped("renews every renewInterval and keeps its fence", () =>
    Effect.gen(function*() {
      const { db } = yield* world
      const store = Faulty.make(db)
      const elector = yield* participant(store, { name: "jobs", identity: "a" })
      yield* start(elector)
      yield* seconds(60)
      expect(yield* elector.fence).toEqual(Option.some(1n))
      expect(store.calls.renew).toBe(12)
      const lease = yield* db.inspect("jobs")
      expect(Lease.isHeldBy(lease, "a")).toBe(true)
      expect(lease.fence).toBe(1n)
    }))

  it.scoped("survives one lost renewal within the slack, and reports it until the next success", () =>
    Effect.gen(function*() {
      const { db } = yield* world
      const store = Faulty.make(db)
      const elector = yield* participant(store, { name: "jobs", identity: "a" })
      yield* start(elector)
      store.set(Faulty.hang, "renew")
      yield* seconds(8) // the renewal sent at 5s times out at 8s
      expect(yield* elector.isLeader).toBe(true)
      const struggling = yield* elector.status
      expect(Option.map(struggling.lastError, (e) => e._tag)).toEqual(Option.some("StoreError"))
      expect(Option.map(struggling.lastError, (e) => e.message)).toEqual(
        Option.some("renew failed (retryable): no answer within 3s")
      )
      store.set(Faulty.pass, "renew")
      yield* seconds(1.5) // the retry at 9.25s succeeds
      expect(yield* elector.isLeader).toBe(true)
      expect(yield* elector.fence).toEqual(Option.some(1n))
      expect(Option.isNone((yield* elector.status).lastError)).toBe(true)
      yield* seconds(30)
      expect(yield* elector.fence).toEqual(Option.some(1n))
    }))

  it.scoped("steps down at its local deadline when the store hangs, before the lease expires on the database", () =>
    Effect.gen(function*() {
      const { db } = yield* world
      const store = Faulty.make(db)
      const interrupted = yield* Deferred.make<number>()
      const elector = yield* participant(store, {
        name: "jobs",
        identity: "a",
        onStartedLeading: () =>
          Effect.never.pipe(
            Effect.onInterrupt(() =>
              Effect.flatMap(TestClock.currentTimeMillis, (now) => Deferred.succeed(interrupted, now))
            )
          )
      })
      yield* start(elector)
      store.set(Faulty.hang)
      yield* seconds(13.49)
      expect(yield* elector.isLeader).toBe(true)
      yield* seconds(0.01)
      expect(yield* elector.isLeader).toBe(false)
      expect(yield* Deferred.await(interrupted)).toBe(13_500)
      const status = yield* elector.status
      expect(Option.map(status.lastError, (e) => e._tag)).toEqual(Option.some("LeaseExpiredLocally"))
      expect(Option.isNone(status.validUntil)).toBe(true)
      // The database still holds the lease for the margin: stepping down came first.
      const lease = yield* db.inspect("jobs")
      expect(Lease.isHeldBy(lease, "a")).toBe(true)
      expect(Duration.toMillis(Lease.ttl(lease))).toBe(15_000 - 13_501)
      yield* settle(store)
    }))

  it.scoped("isLeader re-checks the deadline even when the watchdog never wakes, and so do the synchronous reads", () =>
    Effect.gen(function*() {
      const { db } = yield* world
      // A clock whose sleeps never end: no watchdog, no renewal ever runs.
      let now = 0
      const stuck: Clock.Clock = {
        [Clock.ClockTypeId]: Clock.ClockTypeId,
        unsafeCurrentTimeMillis: () => now,
        unsafeCurrentTimeNanos: () => BigInt(now) * 1_000_000n,
        currentTimeMillis: Effect.sync(() => now),
        currentTimeNanos: Effect.sync(() => BigInt(now) * 1_000_000n),
        sleep: () => Effect.never
      }
      const elector = yield* internal.make({ name: "jobs", identity: "a" }).pipe(
        Effect.provideService(Store.Store, db),
        Effect.withClock(stuck)
      )
      yield* start(elector)
      expect(yield* elector.isLeader).toBe(true)
      now = 13_499
      expect(yield* elector.isLeader).toBe(true)
      // What the Promise API reads: no effect runs.
      expect([elector.unsafeIsLeader(), elector.unsafeFence()]).toEqual([true, 1n])
      now = 13_500
      expect([elector.unsafeIsLeader(), elector.unsafeFence()]).toEqual([false, undefined])
      expect(yield* elector.isLeader).toBe(false)
      expect(yield* elector.fence).toEqual(Option.none())
      expect((yield* elector.status).isLeader).toBe(false)
    }))

  it.scoped("after a local step-down it gives its still-valid lease up and leads again under a fresh fence", () =>
    Effect.gen(function*() {
      const { db } = yield* world
      const store = Faulty.make(db)
      const { elector, terms } = yield* recording(store)
      yield* start(elector)
      store.set(Faulty.hang, "renew")
      store.set(Faulty.fail, "release")
      yield* seconds(13.5)
      expect(yield* elector.isLeader).toBe(false)
      // Its own lease is still valid on the database: taking it back as it is
      // would reuse fence 1, so the elector must wait until it can give it up.
      expect(Lease.isHeldBy(yield* db.inspect("jobs"), "a")).toBe(true)
      yield* seconds(1.4)
      expect(yield* elector.isLeader).toBe(false)
      store.set(Faulty.pass)
      yield* seconds(3)
      expect(terms).toEqual([1n, 2n])
      expect(yield* elector.fence).toEqual(Option.some(2n))
    }))

  it.scoped("never leads twice under one fence, even when a database clock step back revives its lease", () =>
    Effect.gen(function*() {
      const { clock, db } = yield* world
      const faulty = Faulty.make(db)
      let blindInspect = false
      // A read that misses the record, so the elector claims without looking first.
      const store: Store.StoreShape = {
        ...faulty,
        inspect: (name) => blindInspect ? Effect.fail(new Store.NoLease({ name })) : faulty.inspect(name)
      }
      const { elector, terms } = yield* recording(store)
      yield* start(elector)
      faulty.set(Faulty.hang, "renew")
      faulty.set(Faulty.hang, "acquire")
      yield* seconds(13.5) // stepped down locally and released; its next claim hangs
      expect(Lease.isExpired(yield* db.inspect("jobs"))).toBe(true)
      expect(faulty.calls.release).toBe(1)
      // The database clock steps back: the released lease is valid again, still fence 1.
      yield* clock.stepBack("30 seconds")
      expect(Lease.isHeldBy(yield* db.inspect("jobs"), "a")).toBe(true)
      blindInspect = true
      faulty.set(Faulty.pass, "acquire")
      yield* seconds(10)
      // The acquire landed on the revived lease under fence 1: given up, not led under.
      expect(faulty.calls.release).toBeGreaterThanOrEqual(2)
      expect(terms).toEqual([1n, 2n])
    }))

  it.scoped("an acquire whose reply was lost is given up, never adopted", () =>
    Effect.gen(function*() {
      const { db } = yield* world
      const store = Faulty.make(db)
      store.set(Faulty.lostReply, "acquire")
      const elector = yield* participant(store, { name: "jobs", identity: "a" })
      yield* start(elector)
      expect(yield* elector.isLeader).toBe(false)
      expect((yield* db.inspect("jobs")).fence).toBe(1n)
      yield* seconds(3)
      store.set(Faulty.pass, "acquire")
      yield* seconds(3)
      expect(yield* elector.fence).toEqual(Option.some(2n))
    }))

  it.scoped("steps down at once when the lease is taken by someone else", () =>
    Effect.gen(function*() {
      const { db } = yield* world
      const stopped = yield* Ref.make(0)
      const elector = yield* participant(db, {
        name: "jobs",
        identity: "a",
        onStoppedLeading: Ref.update(stopped, (n) => n + 1)
      })
      yield* start(elector)
      // An operator (or a bug elsewhere) hands the lease to an intruder.
      yield* db.release("jobs", "a", 1n)
      const intruder = yield* db.acquire("jobs", "intruder", Duration.seconds(60), null)
      expect(intruder.fence).toBe(2n)
      expect(yield* elector.isLeader).toBe(true)
      yield* seconds(4.99)
      expect(yield* Ref.get(stopped)).toBe(0)
      yield* seconds(0.01) // the renewal at 5s fails its guard: no waiting for the deadline
      expect(yield* elector.isLeader).toBe(false)
      expect(yield* Ref.get(stopped)).toBe(1)
      expect((yield* elector.status).leader).toEqual(Option.some("intruder"))
    }))

  it.scoped("a clean shutdown releases, and the follower woken by the release takes over at once", () =>
    Effect.gen(function*() {
      const { db } = yield* world
      const a = yield* participant(db, { name: "jobs", identity: "a" })
      const b = yield* participant(db, { name: "jobs", identity: "b" })
      const runA = yield* start(a)
      yield* start(b)
      expect(yield* a.isLeader).toBe(true)
      expect(yield* b.isLeader).toBe(false)
      expect((yield* b.status).leader).toEqual(Option.some("a"))
      yield* seconds(10)
      yield* Fiber.interrupt(runA)
      expect(yield* a.isLeader).toBe(false)
      // No time passes: the MemoryStore's wake-up hint, not a poll, brings b's claim.
      yield* TestClock.adjust(0)
      expect(yield* b.fence).toEqual(Option.some(2n))
    }))

  it.scoped("a crash without release makes the successor wait out the lease, and the fence advances", () =>
    Effect.gen(function*() {
      const { db } = yield* world
      const a = yield* participant(db, { name: "jobs", identity: "a", disableRelease: true })
      const b = yield* participant(db, { name: "jobs", identity: "b" })
      const runA = yield* start(a)
      yield* start(b)
      yield* seconds(4)
      yield* Fiber.interrupt(runA)
      // The lease was renewed at no point after 0s: it is valid until 15s.
      yield* seconds(10.9)
      expect(yield* b.isLeader).toBe(false)
      yield* seconds(3.2)
      expect(yield* b.fence).toEqual(Option.some(2n))
      // b's clean shutdown lets a third participant in at once, under fence 3.
      const c = yield* participant(db, { name: "jobs", identity: "c" })
      yield* start(c)
      expect(yield* c.isLeader).toBe(false)
    }))

  it.scoped("fences advance exactly on reclaim: renewals keep the fence, every new term takes the next", () =>
    Effect.gen(function*() {
      const { db } = yield* world
      const fences: Array<bigint> = []
      for (const identity of ["a", "b", "a", "c"]) {
        const scope = yield* Scope.make()
        const elector = yield* participant(db, { name: "jobs", identity }).pipe(Scope.extend(scope))
        yield* start(elector).pipe(Scope.extend(scope))
        yield* seconds(20)
        fences.push(Option.getOrThrow(yield* elector.fence))
        yield* Scope.close(scope, Exit.void)
      }
      expect(fences).toEqual([1n, 2n, 3n, 4n])
    }))

  it.scoped("whileLeader runs the work in each term with its fence, interrupts it at step-down and restarts it", () =>
    Effect.gen(function*() {
      const { db } = yield* world
      const store = Faulty.make(db)
      const events: Array<string> = []
      const elector = yield* participant(store, { name: "jobs", identity: "a" })
      const work = Effect.gen(function*() {
        const term = yield* Leadership.Leadership
        const fence = yield* Leadership.fence
        events.push(`start ${fence} ${yield* term.isLeader}`)
        yield* Scope.addFinalizer(term.scope, Effect.sync(() => events.push(`finalize ${fence}`)))
        return yield* Effect.never
      }).pipe(Effect.onInterrupt(() => Effect.sync(() => events.push("interrupted"))))
      const worker = yield* Elector.whileLeader(work).pipe(
        Effect.provideService(Elector.Elector, elector),
        Effect.fork
      )
      yield* start(elector)
      expect(events).toEqual(["start 1 true"])
      store.set(Faulty.hang)
      yield* seconds(13.5)
      expect(events).toEqual(["start 1 true", "interrupted", "finalize 1"])
      store.set(Faulty.pass)
      yield* seconds(3)
      expect(events).toEqual(["start 1 true", "interrupted", "finalize 1", "start 2 true"])
      yield* Fiber.interrupt(worker)
      expect(events.at(-1)).toBe("interrupted")
    }))

  it.scoped("whileLeader waits for the next term when the work completes, and fails with the work's error", () =>
    Effect.gen(function*() {
      const { db } = yield* world
      const elector = yield* participant(db, { name: "jobs", identity: "a" })
      yield* start(elector)
      const runs = yield* Ref.make(0)
      const finite = yield* Elector.whileLeader(Ref.update(runs, (n) => n + 1)).pipe(
        Effect.provideService(Elector.Elector, elector),
        Effect.fork
      )
      yield* seconds(30)
      expect(yield* Ref.get(runs)).toBe(1)
      yield* Fiber.interrupt(finite)
      const failing = yield* Elector.whileLeader(Effect.fail("boom" as const)).pipe(
        Effect.provideService(Elector.Elector, elector),
        Effect.flip
      )
      expect(failing).toBe("boom")
      // Failed work ends the term (onWorkFailure: "stepDown", the default).
      yield* TestClock.adjust(Duration.millis(1))
      expect(yield* elector.isLeader).toBe(false)
    }))

  it.scoped("onStartedLeading, onStoppedLeading and onNewLeader are called once per term, stopped last", () =>
    Effect.gen(function*() {
      const { db } = yield* world
      const store = Faulty.make(db)
      const events: Array<string> = []
      const stopped = yield* Deferred.make<void>()
      const elector = yield* participant(store, {
        name: "jobs",
        identity: "a",
        onStartedLeading: (fence) => Effect.sync(() => events.push(`started ${fence}`)),
        onStoppedLeading: Effect.sync(() => events.push("stopped")).pipe(
          Effect.zipRight(Deferred.succeed(stopped, undefined))
        ),
        onNewLeader: (identity, fence) => Effect.sync(() => events.push(`leader ${identity} ${fence}`))
      })
      const run = yield* start(elector)
      // onNewLeader runs on the advisory fiber: no order with onStartedLeading.
      expect([...events].sort()).toEqual(["leader a 1", "started 1"])
      yield* seconds(30)
      expect(events).toHaveLength(2)
      yield* Fiber.interrupt(run)
      yield* Deferred.await(stopped)
      expect(events.at(-1)).toBe("stopped")
    }))

  it.scoped("store errors never fail run: a fatal error keeps it following and is reported", () =>
    Effect.gen(function*() {
      const { db } = yield* world
      const store = Faulty.make(db)
      store.set(Faulty.fatal)
      const elector = yield* participant(store, { name: "jobs", identity: "a" })
      const run = yield* start(elector)
      yield* seconds(30)
      expect(yield* elector.isLeader).toBe(false)
      const error = Option.getOrThrow((yield* elector.status).lastError)
      expect(Store.isFatal(error)).toBe(true)
      store.set(Faulty.die)
      yield* seconds(5)
      const defect = Option.getOrThrow((yield* elector.status).lastError)
      expect(defect.message).toBe("inspect failed (fatal): store defect: Error: injected defect")
      store.set(Faulty.pass)
      yield* seconds(3)
      expect(yield* elector.isLeader).toBe(true)
      expect(run.unsafePoll()).toBeNull()
    }))

  it.scoped("an acquire that returns less time than the margin is not trusted", () =>
    Effect.gen(function*() {
      const { db } = yield* world
      // A store that grants far less than was asked for.
      const stingy: Store.StoreShape = {
        ...db,
        acquire: (name, id, _ttl, payload, incarnation) =>
          db.acquire(name, id, Duration.seconds(1), payload, incarnation)
      }
      const elector = yield* participant(stingy, { name: "jobs", identity: "a" })
      yield* start(elector)
      expect(yield* elector.isLeader).toBe(false)
      expect(Lease.isHeldBy(yield* db.inspect("jobs"), "a")).toBe(true)
    }))

  it.scoped("a DB clock stepping backwards never makes a lease believed longer than asked for", () =>
    Effect.gen(function*() {
      const { clock, db } = yield* world
      const elector = yield* participant(db, { name: "jobs", identity: "a" })
      yield* start(elector)
      yield* clock.stepBack("1 hour")
      yield* seconds(5)
      const status = yield* elector.status
      expect(Option.map(status.validUntil, (d) => d.getTime())).toEqual(Option.some(18_500))
    }))

  it.scoped("run refuses to run twice, and closing the elector's scope stops it", () =>
    Effect.gen(function*() {
      const { db } = yield* world
      const scope = yield* Scope.make()
      const elector = yield* participant(db, { name: "jobs", identity: "a" }).pipe(Scope.extend(scope))
      const first = yield* start(elector)
      const second = yield* Effect.flip(elector.run)
      expect(second.message).toBe(`elector "jobs" for a is already running`)
      yield* Scope.close(scope, Exit.void)
      expect(yield* elector.isLeader).toBe(false)
      expect(Exit.isInterrupted(yield* Fiber.await(first))).toBe(true)
      expect(Lease.isExpired(yield* db.inspect("jobs"))).toBe(true)
    }))

  it.scoped("changes streams every status change", () =>
    Effect.gen(function*() {
      const { db } = yield* world
      const elector = yield* participant(db, { name: "jobs", identity: "a" })
      const seen = yield* elector.changes.pipe(
        Stream.map((s) => s.isLeader),
        Stream.changes,
        Stream.take(3),
        Stream.runCollect,
        Effect.fork
      )
      const run = yield* start(elector)
      yield* Fiber.interrupt(run)
      expect(Array.from(yield* Fiber.join(seen))).toEqual([false, true, false])
    }))

  it.scoped("changes emits once per renewal: the new deadline and what the renewal saw are one change", () =>
    Effect.gen(function*() {
      const { db } = yield* world
      const store = Faulty.make(db)
      const elector = yield* participant(store, { name: "jobs", identity: "a" })
      yield* start(elector)
      const seen: Array<Elector.Status> = []
      yield* Effect.forkScoped(Stream.runForEach(elector.changes, (s) => Effect.sync(() => seen.push(s))))
      yield* TestClock.adjust(Duration.millis(1))
      // The status as of subscribing: leading under fence 1 since 0.
      expect(seen.map((s) => s.validUntil)).toEqual([Option.some(new Date(13_500))])
      const renewals = store.calls.renew
      yield* seconds(20)
      expect(store.calls.renew - renewals).toBe(4)
      expect(seen.slice(1).map((s) => [s.isLeader, s.validUntil])).toEqual(
        [5_000, 10_000, 15_000, 20_000].map((sentAt) => [true, Option.some(new Date(sentAt + 13_500))])
      )
    }))

  it.scoped("a renewal that shortens the deadline brings the step-down forward to it", () =>
    Effect.gen(function*() {
      const { db } = yield* world
      // Renewals are granted for 2s only, although 15s are asked for.
      const store: Store.StoreShape = {
        ...db,
        renew: (name, identity, fence, _ttl, payload) => db.renew(name, identity, fence, Duration.seconds(2), payload)
      }
      const interrupted = yield* Deferred.make<number>()
      const elector = yield* participant(store, {
        name: "jobs",
        identity: "a",
        onStartedLeading: () =>
          Effect.never.pipe(
            Effect.onInterrupt(() =>
              Effect.flatMap(Clock.currentTimeMillis, (now) => Deferred.succeed(interrupted, now))
            )
          )
      })
      yield* start(elector)
      yield* seconds(6)
      // Acquired at 0 until 13.5s; renewed at 5s for 2s, less the 1.5s margin: until 5.5s.
      expect(yield* Deferred.isDone(interrupted)).toBe(true)
      expect(yield* Deferred.await(interrupted)).toBe(5_500)
    }))

  it.scoped("the layer runs the elector for as long as it lives", () =>
    Effect.gen(function*() {
      const { db } = yield* world
      const fence = yield* Elector.whileLeader(Effect.flatMap(Leadership.fence, Effect.fail)).pipe(
        Effect.flip,
        Effect.provide(Elector.layer({ name: "jobs", identity: "a" })),
        Effect.provideService(Store.Store, db)
      )
      expect(fence).toBe(1n)
      expect(Lease.isExpired(yield* db.inspect("jobs"))).toBe(true)
    }))
})
