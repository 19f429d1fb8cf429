import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect } from "effect"
import type * as Store from "../src/Store.js"
import * as MemoryStore from "../src/stores/MemoryStore.js"
import { FaultyStore } from "../src/testing.js"

describe("FaultyStore", () => {
  it.effect("keeps the store's incarnations, and passes each acquire's incarnation through", () =>
    Effect.gen(function*() {
      const faulty = FaultyStore.make(yield* MemoryStore.make())
      expect(faulty.incarnations).toBe(true)
      faulty.set(FaultyStore.lostReply, "acquire")
      yield* Effect.fork(faulty.acquire("e", "a", Duration.seconds(10), null, "x"))
      yield* Effect.yieldNow()
      faulty.set(FaultyStore.pass)
      expect(yield* faulty.inspect("e")).toMatchObject({ holder: "a", incarnation: "x", fence: 1n })
      // Another incarnation of "a" is somebody else.
      expect(yield* faulty.acquire("e", "a", Duration.seconds(10), null, "y")).toMatchObject({ incarnation: "x" })
    }))

  it.effect("a store written to 0.1 stays one", () =>
    Effect.gen(function*() {
      const { acquire, inspect, release, renew } = yield* MemoryStore.make()
      const old: Store.StoreShape = { acquire, inspect, release, renew }
      expect(FaultyStore.make(old).incarnations).toBeUndefined()
    }))
})
