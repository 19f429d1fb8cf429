import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Layer, TestClock } from "effect"
import * as Lease from "../src/Lease.js"
import * as Store from "../src/Store.js"
import * as MemoryStore from "../src/stores/MemoryStore.js"
import { StoreSuite } from "../src/testing.js"

const threeDays = Duration.days(3)

// The store the running case was given (the suite builds one a case, and runs
// them one at a time), so that the suite can move it to another server.
let current: Effect.Effect.Success<ReturnType<typeof MemoryStore.makeWithContents>> | undefined

// The reference store with its database clock three days ahead of the local one.
StoreSuite.run(
  "MemoryStore",
  Layer.effect(
    Store.Store,
    Effect.gen(function*() {
      current = yield* MemoryStore.makeWithContents({ clock: yield* MemoryStore.makeClock({ offset: threeDays }) })
      return current.store
    })
  ),
  // A standby that had every write: every record now reads as another server's.
  { writtenElsewhere: () => Effect.suspend(() => Effect.flatMap(current!.copy, current!.restore)) }
)

describe("MemoryStore database clock", () => {
  it.effect("is offset from the local clock, runs at its rate and steps backwards", () =>
    Effect.gen(function*() {
      const clock = yield* MemoryStore.makeClock({ offset: threeDays, rate: 2 })
      const t0 = (yield* clock.now).getTime()
      expect(t0).toBe(Duration.toMillis(threeDays))
      yield* TestClock.adjust("1 second")
      expect((yield* clock.now).getTime()).toBe(t0 + 2000)
      yield* clock.stepBack("500 millis")
      expect((yield* clock.now).getTime()).toBe(t0 + 1500)
    }))

  it.effect("a backwards step makes every lease look longer, to everyone at once", () =>
    Effect.gen(function*() {
      const clock = yield* MemoryStore.makeClock()
      const store = yield* MemoryStore.make({ clock })
      yield* store.acquire("e", "a", Duration.seconds(10), null)
      yield* clock.stepBack("2 seconds")
      const lease = yield* store.inspect("e")
      expect(Duration.toMillis(Duration.millis(lease.expiresAt.getTime() - lease.now.getTime()))).toBe(12_000)
    }))

  it.effect("the default layer follows the ambient Clock", () =>
    Effect.gen(function*() {
      const store = yield* Store.Store
      const lease = yield* store.acquire("e", "a", Duration.seconds(1), null)
      expect(lease.now.getTime()).toBe(0)
    }).pipe(Effect.provide(MemoryStore.layer())))
})

describe("MemoryStore incarnations", () => {
  const ttl = Duration.seconds(10)

  it.effect("a lease is its incarnation's: the same identity under another neither continues nor takes it over", () =>
    Effect.gen(function*() {
      const store = yield* MemoryStore.make()
      expect(store.incarnations).toBe(true)
      const first = yield* store.acquire("e", "a", ttl, null, "x")
      expect(first).toMatchObject({ holder: "a", incarnation: "x", fence: 1n })
      yield* TestClock.adjust("1 second")
      // Another process given the same identity, and a call without an incarnation: the lease is left alone.
      expect(yield* store.acquire("e", "a", ttl, null, "y")).toEqual(yield* store.inspect("e"))
      expect(yield* store.acquire("e", "a", ttl, null)).toMatchObject({ incarnation: "x", renewedAt: new Date(0) })
      // The same incarnation continues its term.
      expect(yield* store.acquire("e", "a", ttl, null, "x")).toMatchObject({ fence: 1n, renewedAt: new Date(1000) })
      yield* TestClock.adjust(ttl)
      expect(yield* store.acquire("e", "a", ttl, null, "y")).toMatchObject({ holder: "a", incarnation: "y", fence: 2n })
    }))
})

describe("MemoryStore after its server changed (restore)", () => {
  const ttl = Duration.seconds(10)

  it.effect("a claim on an expired row, or on the claimant's own, holds the lease back; then a term begins", () =>
    Effect.gen(function*() {
      const { copy, restore, store } = yield* MemoryStore.makeWithContents()
      yield* store.acquire("own", "a", ttl, new Uint8Array([1]), "x")
      yield* store.acquire("expired", "a", Duration.seconds(1), null, "x")
      yield* TestClock.adjust("2 seconds")
      yield* restore(yield* copy)
      const heldBack = { holder: "", payload: null, acquiredAt: new Date(2000) }
      const own = yield* store.acquire("own", "a", ttl, new Uint8Array([2]), "x")
      expect(own).toMatchObject({ ...heldBack, fence: 1n + Lease.fenceJump, expiresAt: new Date(12_000) })
      expect(Lease.isHeldBack(own)).toBe(true)
      expect(own.incarnation).toBeUndefined()
      // Its old term's renewal finds another fence.
      expect(yield* Effect.flip(store.renew("own", "a", 1n, ttl, null))).toMatchObject({ _tag: "LeaseLost" })
      const expired = yield* store.acquire("expired", "b", Duration.seconds(3), null, "y")
      expect(expired).toMatchObject({ ...heldBack, fence: 1n + Lease.fenceJump, expiresAt: new Date(5000) })
      // Held back: nobody's, until it expires; then the next claim begins a term.
      expect(yield* store.acquire("expired", "b", ttl, null, "y")).toEqual(yield* store.inspect("expired"))
      yield* TestClock.adjust("3 seconds")
      expect(yield* store.acquire("expired", "b", ttl, null, "y")).toMatchObject({
        holder: "b",
        fence: 2n + Lease.fenceJump
      })
    }))

  it.effect("another's unexpired row is left to it, and its renewal makes it this server's", () =>
    Effect.gen(function*() {
      const { copy, restore, store } = yield* MemoryStore.makeWithContents()
      yield* store.acquire("e", "a", ttl, null, "x")
      yield* restore(yield* copy)
      const untouched = yield* store.inspect("e")
      expect(yield* store.acquire("e", "b", ttl, null, "y")).toEqual(untouched)
      yield* TestClock.adjust("1 second")
      expect(yield* store.renew("e", "a", 1n, ttl, null)).toMatchObject({ holder: "a", fence: 1n })
      // Renewed on this server: its own holder continues it, and after expiry the fence moves on by one.
      expect(yield* store.acquire("e", "a", ttl, null, "x")).toMatchObject({ holder: "a", fence: 1n })
      yield* TestClock.adjust(ttl)
      expect(yield* store.acquire("e", "b", ttl, null, "y")).toMatchObject({ holder: "b", fence: 2n })
    }))
})
