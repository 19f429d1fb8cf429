/**
 * How the elector runs its store calls: those of a store that promises to
 * answer within the elector's operationTimeout (the SQL stores) on the
 * elector's own fiber; any other store's in a fiber per call, beside a
 * deadline (see `call` in src/internal/elector.ts).
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, TestClock } from "effect"
import * as Elector from "../src/Elector.js"
import * as AnswersWithin from "../src/internal/answersWithin.js"
import * as Store from "../src/Store.js"
import * as MemoryStore from "../src/stores/MemoryStore.js"
import { Started } from "./support/Started.js"


/** Fibers started while a follower polls a lease someone else holds, for 20 s of 1 s polls. */
const fibersWhilePolling = (within: Duration.DurationInput | undefined) =>
  Effect.gen(function*() {
    const db = yield* MemoryStore.make()
    yield* db.acquire("job", "other", Duration.minutes(10), null)
    const store = within === undefined ? { ...db } : AnswersWithin.promise({ ...db }, Duration.decode(within))
    const started = new Started()
    const elector = yield* Elector.make({ name: "job", identity: "me", retryPeriod: "1 second" }).pipe(
      Effect.provideService(Store.Store, store)
    )
    yield* Effect.forkScoped(Effect.supervised(elector.run, started))
    yield* TestClock.adjust(Duration.seconds(20))
    expect((yield* elector.status).leader._tag).toBe("Some")
    return started.count
  })

describe("Elector store calls", () => {
  it.scoped("run on the elector's fiber when the store promises to answer within operationTimeout", () =>
    Effect.gen(function*() {
      // At least one poll a second: a fiber per call would be at least 20.
      expect(yield* fibersWhilePolling("3 seconds")).toBeLessThan(5)
    }))

  it.scoped("run in a fiber each when the store promises nothing, or more than operationTimeout", () =>
    Effect.gen(function*() {
      expect(yield* Effect.scoped(fibersWhilePolling(undefined))).toBeGreaterThanOrEqual(20)
      expect(yield* Effect.scoped(fibersWhilePolling("4 seconds"))).toBeGreaterThanOrEqual(20)
    }))
})
