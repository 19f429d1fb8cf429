/**
 * What keeps an elector running for months: abandoned store calls never hold
 * up a step-down, user callbacks cannot kill or stall it, failed work gives
 * leadership up, fatal store errors are reported, and one identity runs once.
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Duration, Effect, Exit, Option, Scope, TestClock } from "effect"
import * as Elector from "../src/Elector.js"
import * as Store from "../src/Store.js"
import * as MemoryStore from "../src/stores/MemoryStore.js"
import * as Faulty from "./support/FaultyStore.js"

// The database clock is three days ahead of the local one, as in every unit test.
const world = Effect.flatMap(MemoryStore.makeClock({ offset: Duration.days(3) }), (clock) => MemoryStore.make({ clock }))

/** An elector in a scope of its own, running; closing the scope shuts it down. */
const join = (store: Store.StoreShape, config: Elector.ElectorConfig) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const elector = yield* Elector.make(config).pipe(Effect.provideService(Store.Store, store), Scope.extend(scope))
    const run = yield* Effect.forkIn(elector.run, scope)
    yield* TestClock.adjust(Duration.millis(1))
    return { elector, run, scope }
  })

const seconds = (n: number) => TestClock.adjust(Duration.millis(n * 1000))

/** Work that records the local instant it is interrupted at. */
const interruptedAt = (at: Deferred.Deferred<number>) => () =>
  Effect.never.pipe(Effect.onInterrupt(() => Effect.flatMap(TestClock.currentTimeMillis, (now) => Deferred.succeed(at, now))))

describe("Elector robustness", () => {
  it.scoped("a store whose cancellation outlasts the lease delays neither the step-down nor the shutdown", () =>
    Effect.gen(function*() {
      const db = yield* world
      const store = Faulty.make(db)
      const first = yield* Deferred.make<number>()
      const { elector, scope } = yield* join(store, { name: "jobs", identity: "a", onStartedLeading: interruptedAt(first) })
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

  it.scoped("a store call that ends by interruption is a fatal store error, not the end of run", () =>
    Effect.gen(function*() {
      const db = yield* world
      const store: Store.StoreShape = { ...db, inspect: () => Effect.interrupt }
      const { elector, run } = yield* join(store, { name: "jobs", identity: "a" })
      yield* seconds(10)
      expect(run.unsafePoll()).toBeNull()
      const error = Option.getOrThrow((yield* elector.status).lastError)
      expect(error.message).toBe("inspect failed (fatal): the store call was interrupted")
      expect(yield* Effect.flip(db.inspect("jobs"))).toBeInstanceOf(Store.NoLease)
    }))
})
