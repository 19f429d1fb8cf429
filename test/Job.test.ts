import { describe, expect, it } from "@effect/vitest"
import { Cron, Duration, Effect, Either, Fiber, Metric, Option, Schedule, TestClock } from "effect"
import * as Elector from "../src/Elector.js"
import type * as Job from "../src/Job.js"
import * as Leadership from "../src/Leadership.js"
import * as Metrics from "../src/Metrics.js"
import * as Store from "../src/Store.js"
import * as MemoryStore from "../src/stores/MemoryStore.js"
import * as Faulty from "../src/testing/FaultyStore.js"

// The database clock is three days ahead of the local one: a slot computed
// from the local clock would land three days early.
const offset = Duration.toMillis(Duration.days(3))
const minute = (k: number) => offset + k * 60_000

const world = Effect.gen(function*() {
  const clock = yield* MemoryStore.makeClock({ offset: Duration.days(3) })
  return yield* MemoryStore.make({ clock })
})

let elections = 0
const election = () => `job-test-${elections++}`

interface Run {
  readonly who: string
  readonly at: number
  readonly fence: bigint
  readonly rerun: boolean
}

/** A participant that takes part in `name` and schedules `job` on it, recording its runs. */
const participant = (
  store: Store.StoreShape,
  name: string,
  who: string,
  runs: Array<Run>,
  when: Job.When = "* * * * *",
  options: Job.Options = {},
  work: (slot: Job.Slot) => Effect.Effect<unknown, unknown> = () => Effect.void,
  config: Partial<Elector.ElectorConfig> = {}
) =>
  Effect.gen(function*() {
    const elector = yield* Elector.make({ ...config, name, identity: who }).pipe(
      Effect.provideService(Store.Store, store)
    )
    const running = yield* Effect.fork(elector.run)
    const job = yield* Effect.fork(
      Elector.schedule("tick", when, (slot) =>
        Effect.zipRight(
          Effect.sync(() => runs.push({ who, at: slot.at.getTime(), fence: slot.fence, rerun: slot.rerun })),
          work(slot)
        ), options).pipe(Effect.provideService(Elector.Elector, elector))
    )
    return { elector, running, job }
  })

const seconds = (n: number) => TestClock.adjust(Duration.millis(n * 1000))

const slots = (name: string, outcome: Job.Outcome) =>
  Metric.value(
    Metrics.jobSlots.pipe(
      Metric.tagged("election", name),
      Metric.tagged("job", "tick"),
      Metric.tagged("outcome", outcome)
    )
  ).pipe(Effect.map((state) => state.count))

/** a leads; from `crashAt` its store hangs, so b, which joins then, takes over once the lease runs out. */
const failover = (
  options: Job.Options,
  work: (slot: Job.Slot) => Effect.Effect<unknown, unknown>,
  crashAt = 55
) =>
  Effect.gen(function*() {
    const db = yield* world
    const name = election()
    const runs: Array<Run> = []
    const a = Faulty.make(db)
    yield* participant(a, name, "a", runs, "* * * * *", options, work)
    yield* seconds(crashAt)
    a.set(Faulty.hang)
    yield* participant(db, name, "b", runs, "* * * * *", options, work)
    yield* seconds(300 - crashAt)
    return { db, name, runs }
  })

describe("Elector.schedule", () => {
  it.scoped("runs each slot once, on the leader only, at its instant on the database clock", () =>
    Effect.gen(function*() {
      const db = yield* world
      const name = election()
      const runs: Array<Run> = []
      yield* participant(db, name, "a", runs)
      yield* participant(db, name, "b", runs)
      yield* seconds(59)
      expect(runs).toEqual([])
      yield* seconds(1)
      expect(runs).toEqual([{ who: "a", at: minute(1), fence: 1n, rerun: false }])
      yield* seconds(240)
      expect(runs.map((run) => run.at)).toEqual([1, 2, 3, 4, 5].map(minute))
      expect(new Set(runs.map((run) => run.who))).toEqual(new Set(["a"]))
      expect(yield* slots(name, "completed")).toBe(5)
      const last = yield* db.slots!.last(name, "tick")
      expect(last.slot).toMatchObject({ at: new Date(minute(5)), fence: 1n })
      expect(last.slot?.completedAt).not.toBeNull()
    }))

  it.scoped("a successor runs the slot its crashed predecessor never started", () =>
    Effect.gen(function*() {
      const { name, runs } = yield* failover({}, () => Effect.void)
      // a stepped down at 55 + 13.5s; b took over once the lease ran out, after slot 1 came due.
      expect(runs.map((run) => [run.who, run.at])).toEqual([
        ["b", minute(1)],
        ["b", minute(2)],
        ["b", minute(3)],
        ["b", minute(4)],
        ["b", minute(5)]
      ])
      expect(runs[0]!.fence).toBe(2n)
      expect(yield* slots(name, "completed")).toBe(5)
    }))

  it.scoped("at most once: a slot interrupted mid-run is not run again, and its late completion is refused", () =>
    Effect.gen(function*() {
      // a's run of slot 1 outlasts its term, and cannot be interrupted: it tries to complete it late.
      const { db, name, runs } = yield* failover(
        {},
        (slot) => slot.fence === 1n ? Effect.uninterruptible(Effect.sleep(Duration.seconds(40))) : Effect.void,
        62
      )
      expect(runs.map((run) => [run.who, run.at])).toEqual([
        ["a", minute(1)],
        ["b", minute(2)],
        ["b", minute(3)],
        ["b", minute(4)],
        ["b", minute(5)]
      ])
      expect(yield* slots(name, "skipped")).toBe(1)
      // a's late completion, under fence 1, did not count.
      const first = yield* db.slots!.claim(name, "b", 2n, "tick", new Date(minute(1)), false)
      expect(first).toMatchObject({ claimed: false, slot: { fence: 1n, completedAt: null } })
    }))

  it.scoped("at least once: the successor re-runs the interrupted slot under its own fence", () =>
    Effect.gen(function*() {
      const { db, name, runs } = yield* failover(
        { delivery: "atLeastOnce" },
        (slot) => slot.fence === 1n ? Effect.never : Effect.void,
        62
      )
      expect(runs.map((run) => [run.who, run.at, run.rerun])).toEqual([
        ["a", minute(1), false],
        ["b", minute(1), true],
        ["b", minute(2), false],
        ["b", minute(3), false],
        ["b", minute(4), false],
        ["b", minute(5), false]
      ])
      expect(yield* slots(name, "interrupted")).toBe(1)
      const rerun = yield* db.slots!.claim(name, "b", 2n, "tick", new Date(minute(1)), true)
      expect(rerun).toMatchObject({ claimed: false, slot: { fence: 2n } })
      expect(rerun.slot?.completedAt).not.toBeNull()
    }))

  it.scoped("a Schedule carries on across failovers from the last slot recorded", () =>
    Effect.gen(function*() {
      const db = yield* world
      const name = election()
      const runs: Array<Run> = []
      const a = Faulty.make(db)
      yield* participant(a, name, "a", runs, Schedule.fixed("7 seconds"))
      yield* seconds(30)
      a.set(Faulty.hang)
      yield* participant(db, name, "b", runs, Schedule.fixed("7 seconds"))
      yield* seconds(60)
      const start = runs[0]!.at
      // Every slot is start + 7k; the ones due while nobody led were missed, and the latest of them ran.
      for (const run of runs) expect((run.at - start) % 7000).toBe(0)
      expect(new Set(runs.map((run) => run.at)).size).toBe(runs.length)
      expect(runs.filter((run) => run.who === "a").length).toBe(4)
      expect(runs.some((run) => run.who === "b")).toBe(true)
      // Every slot from the first to the last ran once or was missed (due while nobody led).
      const last = runs[runs.length - 1]!.at
      expect(runs.length + (yield* slots(name, "missed"))).toBe((last - start) / 7000 + 1)
    }))

  it.scoped("a failed run is logged, counted and recorded; the term goes on", () =>
    Effect.gen(function*() {
      const db = yield* world
      const name = election()
      const runs: Array<Run> = []
      const { elector } = yield* participant(db, name, "a", runs, "* * * * *", {}, (slot) =>
        slot.at.getTime() === minute(1) ? Effect.fail("boom") : Effect.die("bang"))
      yield* seconds(180)
      expect(runs.map((run) =>
        run.at
      )).toEqual([1, 2, 3].map(minute))
      expect(yield* slots(name, "failed")).toBe(3)
      expect(yield* elector.fence).toEqual(Option.some(1n))
      expect((yield* db.slots!.last(name, "tick")).slot?.completedAt).not.toBeNull()
    }))

  it.scoped("a run that outlasts later slots runs the latest due one next; the others are missed", () =>
    Effect.gen(function*() {
      const db = yield* world
      const name = election()
      const runs: Array<Run> = []
      yield* participant(
        db,
        name,
        "a",
        runs,
        "* * * * *",
        {},
        (slot) => slot.at.getTime() === minute(1) ? Effect.sleep(Duration.seconds(150)) : Effect.void
      )
      yield* seconds(240)
      expect(runs.map((run) => run.at)).toEqual([1, 3, 4].map(minute))
      expect(yield* slots(name, "missed")).toBe(1)
    }))

  it.scoped("store failures, defects and hangs are retried until the slot is claimed and recorded once", () =>
    Effect.gen(function*() {
      const db = yield* world
      const name = election()
      const runs: Array<Run> = []
      const store = Faulty.make(db)
      yield* participant(store, name, "a", runs)
      yield* seconds(50)
      store.set(Faulty.fail, "claimSlot")
      store.set(Faulty.die, "completeSlot")
      yield* seconds(15)
      expect(runs).toEqual([])
      store.set(Faulty.hang, "claimSlot")
      yield* seconds(5)
      store.set(Faulty.lostReply, "claimSlot")
      yield* seconds(5)
      // The lost reply's claim was applied: the retry, under the same fence, claims it again.
      store.set(Faulty.pass, "claimSlot")
      yield* seconds(5)
      expect(runs.map((run) => run.at)).toEqual([minute(1)])
      expect((yield* db.slots!.last(name, "tick")).slot?.completedAt).toBeNull()
      store.set(Faulty.pass, "completeSlot")
      yield* seconds(5)
      expect((yield* db.slots!.last(name, "tick")).slot?.completedAt).not.toBeNull()
      expect(runs.map((run) => run.at)).toEqual([minute(1)])
    }))

  it.scoped("a schedule that ends, or does not move forward, stops the job for the term", () =>
    Effect.gen(function*() {
      const db = yield* world
      const ends: Array<Run> = []
      yield* participant(db, election(), "a", ends, Schedule.recurs(2).pipe(Schedule.addDelay(() => "1 second")))
      const stuck: Array<Run> = []
      yield* participant(db, election(), "a", stuck, Schedule.forever)
      yield* seconds(10)
      expect(ends).toHaveLength(2)
      expect(stuck).toEqual([])
    }))

  it.scoped("a parsed Cron keeps its own time zone; a cron expression is read in UTC", () =>
    Effect.gen(function*() {
      const db = yield* world
      const runs: Array<Run> = []
      // Long leases: an hour of renewals every 5 seconds would be slow to simulate.
      const slow = { leaseDuration: "10 minutes", renewInterval: "2 minutes" } as const
      const none = () => Effect.void
      yield* participant(db, election(), "a", runs, Cron.unsafeParse("0 * * * *", "Asia/Kolkata"), {}, none, slow)
      const utc: Array<Run> = []
      yield* participant(db, election(), "a", utc, "0 * * * *", {}, none, slow)
      yield* seconds(3600)
      // Kolkata is UTC+5:30: its hours start at half past the UTC hour.
      expect(runs.map((run) => new Date(run.at).getUTCMinutes())).toEqual([30])
      expect(utc.map((run) => new Date(run.at).getUTCMinutes())).toEqual([0])
    }))

  it.effect("refuses a bad job name, cron expression, delivery or a store without slots", () =>
    Effect.gen(function*() {
      const db = yield* world
      const refused = (store: Store.StoreShape, job: string, when: Job.When, options?: Job.Options) =>
        Effect.gen(function*() {
          const elector = yield* Elector.make({ name: election() }).pipe(Effect.provideService(Store.Store, store))
          return yield* Effect.flip(
            Elector.schedule(job, when, () => Effect.void, options).pipe(
              Effect.provideService(Elector.Elector, elector)
            )
          )
        }).pipe(Effect.scoped)
      expect(yield* refused(db, "", "* * * * *")).toMatchObject({ _tag: "InvalidConfig", field: "job" })
      expect(yield* refused(db, "j", "61 * * * *")).toMatchObject({ _tag: "InvalidConfig", field: "schedule" })
      expect(yield* refused(db, "j", "* * * * *", { delivery: "twice" as Job.Delivery })).toMatchObject({
        field: "delivery",
        reason: "must be \"atMostOnce\" or \"atLeastOnce\", got a string"
      })
      const { slots: _, ...bare } = db
      const error = yield* refused(bare, "j", "* * * * *")
      expect(error.message).toBe(
        "invalid config: store: does not record job slots (Store.SlotStore): scheduled jobs need one"
      )
      expect(Either.isLeft(Either.left(error))).toBe(true)
    }))

  it.scoped("a term whose guard turns out lost stops its job until the next term", () =>
    Effect.gen(function*() {
      const db = yield* world
      const slotStore = db.slots!
      const lost = (name: string, identity: string, fence: bigint) =>
        Effect.fail(new Store.LeaseLost({ name, identity, fence }))
      // The origin's claim, then the origin's completion, find the lease lost.
      for (const refusing of ["claim", "complete"] as const) {
        const runs: Array<Run> = []
        const store: Store.StoreShape = { ...db, slots: { ...slotStore, [refusing]: lost } }
        const name = election()
        yield* participant(store, name, "a", runs)
        yield* seconds(120)
        expect(runs).toEqual([])
        expect((yield* db.slots!.last(name, "tick")).slot?.completedAt ?? null).toBeNull()
      }
    }))

  it.scoped("a slot the store reports as another term's is skipped", () =>
    Effect.gen(function*() {
      const db = yield* world
      const slotStore = db.slots!
      const runs: Array<Run> = []
      const name = election()
      const store: Store.StoreShape = {
        ...db,
        slots: {
          ...slotStore,
          claim: (...args) =>
            Effect.map(slotStore.claim(...args), (claim) =>
              args[4].getTime() === minute(1) ? { ...claim, claimed: false } : claim)
        }
      }
      yield* participant(store, name, "a", runs)
      yield* seconds(120)
      expect(runs.map((run) =>
        run.at
      )).toEqual([minute(2)])
      expect(yield* slots(name, "skipped")).toBe(1)
    }))

  it.scoped("runs with the term's Leadership in context", () =>
    Effect.gen(function*() {
      const db = yield* world
      const fences: Array<bigint> = []
      const elector = yield* Elector.make({ name: election(), identity: "a" }).pipe(
        Effect.provideService(Store.Store, db)
      )
      yield* Effect.fork(elector.run)
      yield* Effect.fork(
        Elector.schedule("tick", "* * * * *", () => Effect.map(Leadership.fence, (fence) => fences.push(fence))).pipe(
          Effect.provideService(Elector.Elector, elector)
        )
      )
      yield* seconds(61)
      expect(fences).toEqual([1n])
      yield* Fiber.interrupt(yield* Effect.fork(Effect.never))
    }))
})
