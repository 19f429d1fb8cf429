import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Layer, TestClock } from "effect"
import * as Store from "../src/Store.js"
import * as MemoryStore from "../src/stores/MemoryStore.js"
import { StoreSuite } from "../src/testing.js"

const threeDays = Duration.days(3)

// The reference store with its database clock three days ahead of the local one.
StoreSuite.run(
  "MemoryStore",
  Layer.unwrapEffect(Effect.map(MemoryStore.makeClock({ offset: threeDays }), (clock) => MemoryStore.layer({ clock })))
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
