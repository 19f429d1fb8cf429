/**
 * Many elections in one process over one store: `Elector.joinAll`.
 */
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Duration, Effect, Exit, Fiber, Option, Scope, Stream, TestClock } from "effect"
import * as Elector from "../src/Elector.js"
import * as Store from "../src/Store.js"
import * as MemoryStore from "../src/stores/MemoryStore.js"
import * as Faulty from "../src/testing/FaultyStore.js"

const names = ["billing-acme", "billing-globex", "billing-initech"]

describe("Elector.joinAll", () => {
  it.scoped("runs every elector over the one store, one leader per election, each status in one stream", () =>
    Effect.gen(function*() {
      const db = yield* MemoryStore.make({ clock: yield* MemoryStore.makeClock({ offset: Duration.days(3) }) })
      const store = Faulty.make(db)
      // Two processes' worth of participants: each joins every election.
      const join = (identity: string) =>
        Elector.joinAll(names.map((name) => ({ name, identity }))).pipe(Effect.provideService(Store.Store, store))
      const a = yield* join("a")
      const b = yield* join("b")
      const seen = yield* a.changes.pipe(Stream.take(names.length), Stream.runCollect, Effect.fork)
      yield* TestClock.adjust(Duration.seconds(30))
      expect(a.electors.map((e) => e.config.name)).toEqual(names)
      for (const [i, name] of names.entries()) {
        const statuses = yield* Effect.forEach([a, b], (joined) => joined.electors[i]!.status)
        const leaders = statuses.filter((s) => s.isLeader).map((s) => s.identity)
        expect(leaders).toHaveLength(1)
        expect((yield* db.inspect(name)).holder).toBe(leaders[0])
      }
      // Six electors, one store: each election renewed by its leader alone,
      // every 5 s (5 or 6 times in 30 s: the electors start up to a
      // retryPeriod apart).
      expect(store.calls.renew).toBeGreaterThanOrEqual(names.length * 5)
      expect(store.calls.renew).toBeLessThanOrEqual(names.length * 6)
      const first = Chunk.toReadonlyArray(yield* Fiber.join(seen))
      expect(first.map((s) => s.name).sort()).toEqual([...names].sort())
      expect(first.every((s) => s.status.identity === "a")).toBe(true)
    }))

  it.scoped("starts every elector at once: their first polls go out together", () =>
    Effect.gen(function*() {
      const store = Faulty.make(yield* MemoryStore.make())
      const configs = ["a", "b", "c", "d"].map((name) => ({ name, retryPeriod: "4 seconds" as const }))
      yield* Elector.joinAll([...configs, { name: "e", retryPeriod: "4 seconds", failFast: true }]).pipe(
        Effect.provideService(Store.Store, store)
      )
      // A stagger would hold some of them back for up to a retry period,
      // and leave their elections leaderless that long.
      yield* TestClock.adjust(Duration.millis(1))
      expect(store.calls.inspect).toBe(5)
    }))

  it.scoped("keeps a generated identity per elector", () =>
    Effect.gen(function*() {
      const { electors } = yield* Elector.joinAll([{ name: "x" }, { name: "y" }]).pipe(
        Effect.provide(MemoryStore.layer())
      )
      const identities = electors.map((e) => e.config.identity)
      expect(new Set(identities).size).toBe(2)
      yield* TestClock.adjust(Duration.millis(1))
      expect((yield* Effect.forEach(electors, (e) => e.status)).map((s) => s.identity)).toEqual(identities)
    }))

  it.effect("refuses a bad configuration before starting any elector", () =>
    Effect.gen(function*() {
      const db = yield* MemoryStore.make()
      const store = Faulty.make(db)
      const scope = yield* Scope.make()
      const exit = yield* Elector.joinAll([{ name: "fine" }, { name: "bad", renewInterval: "20 seconds" }]).pipe(
        Effect.provideService(Store.Store, store),
        Scope.extend(scope),
        Effect.exit
      )
      yield* TestClock.adjust(Duration.seconds(10))
      expect(Exit.isFailure(exit) && Option.getOrThrow(Exit.causeOption(exit))).toMatchObject({
        error: { _tag: "InvalidConfig", field: "renewInterval" }
      })
      expect(store.calls.inspect + store.calls.acquire).toBe(0)
      yield* Scope.close(scope, Exit.void)
    }))

  it.effect("under failFast, fails on the first fatal store answer, like Elector.layer", () =>
    Effect.gen(function*() {
      const store = Faulty.make(yield* MemoryStore.make())
      store.set(Faulty.fatal)
      const fiber = yield* Elector.joinAll([{ name: "x" }, { name: "y", failFast: true }]).pipe(
        Effect.provideService(Store.Store, store),
        Effect.scoped,
        Effect.fork
      )
      yield* TestClock.adjust(Duration.millis(10))
      const exit = yield* Fiber.await(fiber)
      expect(Exit.isFailure(exit) && Option.getOrThrow(Exit.causeOption(exit))).toMatchObject({
        error: { _tag: "StoreError", retryable: false }
      })
    }))
})
