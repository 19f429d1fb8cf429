import { describe, expect, it } from "@effect/vitest"
import { Deferred, Duration, Effect, Exit, Fiber, Option, Scope, TestClock } from "effect"
import * as Elector from "../src/Elector.js"
import * as WakeUps from "../src/internal/runtime/wakeUps.js"
import * as Store from "../src/Store.js"
import * as MemoryStore from "../src/stores/MemoryStore.js"
import { steady } from "./support/steady.js"

// A wake-up hint is never a fact: whatever hints come (forged, repeated, at
// the wrong moment), a follower's only answer is one claim through the store.

/** A MemoryStore whose hints the test sends (any user can NOTIFY a channel), counting each identity's acquires. */
const forgeable = Effect.gen(function*() {
  const clock = yield* MemoryStore.makeClock({ offset: Duration.days(3) })
  const db = yield* MemoryStore.make({ clock })
  const hints = WakeUps.make()
  const acquires = new Map<string, number>()
  const store: Store.StoreShape = {
    ...db,
    wakeUps: { subscribe: hints.subscribe },
    acquire: (name, identity, ...rest) =>
      Effect.suspend(() => {
        acquires.set(identity, (acquires.get(identity) ?? 0) + 1)
        return db.acquire(name, identity, ...rest)
      })
  }
  return { db, store, hints, acquiresOf: (identity: string) => acquires.get(identity) ?? 0 }
})

const participant = (store: Store.StoreShape, config: Elector.ElectorConfig) =>
  Elector.make(config).pipe(Effect.provideService(Store.Store, store))

const start = (elector: Elector.ElectorShape) =>
  Effect.gen(function*() {
    const fiber = yield* Effect.fork(steady(elector.run))
    yield* TestClock.adjust(Duration.millis(1))
    return fiber
  })

describe("wake-up hints", () => {
  it.scoped("a forged hint, sent twice, costs a follower one acquire and changes no leader", () =>
    Effect.gen(function*() {
      const { acquiresOf, hints, store } = yield* forgeable
      const a = yield* participant(store, { name: "jobs", identity: "a" })
      const b = yield* participant(store, { name: "jobs", identity: "b" })
      yield* start(a)
      yield* start(b)
      expect(yield* a.fence).toEqual(Option.some(1n))
      const before = acquiresOf("b")
      hints.wake("jobs")
      hints.wake("jobs")
      yield* TestClock.adjust(0)
      expect(acquiresOf("b")).toBe(before + 1)
      expect(yield* a.fence).toEqual(Option.some(1n))
      expect(yield* b.isLeader).toBe(false)
      // A hint for another election wakes nobody here.
      hints.wake("other")
      yield* TestClock.adjust(0)
      expect(acquiresOf("b")).toBe(before + 1)
    }))

  it.scoped("a hint during a resignation's hold-off does not end it", () =>
    Effect.gen(function*() {
      const { acquiresOf, hints, store } = yield* forgeable
      const a = yield* participant(store, { name: "jobs", identity: "a", leaseDuration: "15 seconds" })
      yield* start(a)
      yield* a.resign
      const before = acquiresOf("a")
      hints.wake("jobs")
      yield* TestClock.adjust(Duration.seconds(14))
      expect(acquiresOf("a")).toBe(before)
      expect(yield* a.isLeader).toBe(false)
      yield* TestClock.adjust(Duration.seconds(2))
      expect(yield* a.fence).toEqual(Option.some(2n))
    }))

  it.scoped("a leader whose work failed is not woken by hints to claim again before its backoff", () =>
    Effect.gen(function*() {
      const { acquiresOf, hints, store } = yield* forgeable
      const a = yield* participant(store, {
        name: "jobs",
        identity: "a",
        workFailureBackoff: "10 seconds",
        onStartedLeading: () => Effect.fail("broken")
      })
      yield* start(a)
      expect(yield* a.isLeader).toBe(false)
      const before = acquiresOf("a")
      hints.wake("jobs")
      yield* TestClock.adjust(Duration.seconds(9))
      expect(acquiresOf("a")).toBe(before)
    }))

  it.scoped("a hint that comes while a poll is in flight makes the next step a claim, at once", () =>
    Effect.gen(function*() {
      const { db } = yield* forgeable
      // b's polls wait at a gate the test opens: the poll is answered before
      // the release, and its answer arrives after the hint.
      let gate: Deferred.Deferred<void> | undefined
      const held = yield* Deferred.make<void>()
      const slow: Store.StoreShape = {
        ...db,
        inspect: (name) =>
          Effect.flatMap(db.inspect(name), (lease) =>
            gate === undefined
              ? Effect.succeed(lease)
              : Effect.zipRight(Deferred.succeed(held, undefined), Effect.as(Deferred.await(gate), lease)))
      }
      const a = yield* participant(db, { name: "jobs", identity: "a" })
      const b = yield* participant(slow, { name: "jobs", identity: "b", retryPeriod: "2 seconds" })
      const runA = yield* start(a)
      yield* start(b)
      gate = yield* Deferred.make<void>()
      yield* TestClock.adjust(Duration.seconds(3))
      yield* Deferred.await(held)
      yield* Fiber.interrupt(runA)
      yield* Deferred.succeed(gate, undefined)
      yield* TestClock.adjust(0)
      expect(yield* b.fence).toEqual(Option.some(2n))
    }))

  it.effect("a subscription ends with its scope", () =>
    Effect.gen(function*() {
      const hints = WakeUps.make()
      let woken = 0
      const wake = () => woken++
      const scope = yield* Scope.make()
      yield* Scope.extend(hints.subscribe("jobs", wake), scope)
      hints.wake("jobs")
      yield* Scope.close(scope, Exit.void)
      hints.wake("jobs")
      expect(woken).toBe(1)
    }))
})
