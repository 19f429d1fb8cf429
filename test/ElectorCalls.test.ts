/**
 * How the elector runs its store calls: those of a store that promises to
 * answer within the elector's operationTimeout (the SQL stores) on the
 * elector's own fiber; any other store's in a fiber per call, beside a
 * deadline (see `call` in src/internal/calls.ts).
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Fiber, TestClock } from "effect"
import * as Elector from "../src/Elector.js"
import * as Store from "../src/Store.js"
import { StoreError } from "../src/Store.js"
import * as Gate from "../src/stores/internal/call.js"
import * as Admission from "../src/stores/internal/gate.js"
import * as MemoryStore from "../src/stores/MemoryStore.js"
import * as FaultyStore from "../src/testing/FaultyStore.js"
import { Started } from "./support/Started.js"

/** Fibers started while a follower polls a lease someone else holds, for 20 s of 1 s polls. */
const fibersWhilePolling = (within: Duration.DurationInput | undefined) =>
  Effect.gen(function*() {
    const db = yield* MemoryStore.make()
    yield* db.acquire("job", "other", Duration.minutes(10), null)
    const store = within === undefined ? { ...db } : { ...db, answersWithin: Duration.decode(within) }
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

  it.effect("keep the store's promise through a spread; FaultyStore, whose faults may break it, opts out", () =>
    Effect.gen(function*() {
      const db = yield* MemoryStore.make()
      const promising: Store.StoreShape = { ...db, answersWithin: Duration.seconds(1) }
      expect({ ...promising }.answersWithin).toEqual(Duration.seconds(1))
      expect(FaultyStore.make(promising).answersWithin).toBeUndefined()
    }))
})

/**
 * A store whose `inspect` and `renew` go through a SQL store's gate over one
 * connection of a fake driver (the rest goes straight to memory), and that
 * promises to answer within the elector's operationTimeout, as the SQL
 * stores do, so the elector runs its calls on its own fibers. The driver
 * records each request it runs; `hang` is one that never answers, holding the
 * gate's one slot, until `answerHang`.
 */
const gatedStore = (db: Store.StoreShape) => {
  const requests: Array<string> = []
  const hanging: Array<(error: Error | undefined, result: string) => void> = []
  const connections: Gate.Connections<number, string, string, StoreError> = {
    gate: Admission.make(1),
    driver: {
      connect: (callback) => callback(undefined, 1),
      run: (_connection, request, callback) => {
        requests.push(request)
        return request === "hang" ? hanging.push(callback) : callback(undefined, request)
      },
      release: () => {}
    },
    timeout: Duration.seconds(3),
    grace: Duration.seconds(6),
    failure: (operation, cause) => new StoreError({ operation, reason: cause.message, retryable: true, cause })
  }
  const store: Store.StoreShape = {
    ...db,
    answersWithin: Duration.seconds(3),
    inspect: (name) => Gate.use(connections, "inspect", "inspect", () => db.inspect(name)),
    renew: (name, identity, fence, ttl, payload) =>
      Gate.use(connections, "renew", "renew", () => db.renew(name, identity, fence, ttl, payload))
  }
  return {
    store,
    requests,
    hang: Effect.forkDaemon(Gate.use(connections, "acquire", "hang", Effect.succeed)),
    answerHang: () => hanging.shift()?.(undefined, "hang")
  }
}

/**
 * Runs an elector on `db` through {@link gatedStore}, holds the gate's one
 * slot once `settle` has passed (the elector's first poll, or claim, done),
 * lets `next` pass (its next call now waits for the slot), then stops the
 * elector and frees the slot: the requests the driver ran by then.
 */
const stoppedWhileWaiting = (db: Store.StoreShape, settle: Duration.Duration, next: Duration.Duration) =>
  Effect.gen(function*() {
    const gated = gatedStore(db)
    const elector = yield* Elector.make({ name: "job", identity: "me" }).pipe(
      Effect.provideService(Store.Store, gated.store)
    )
    const running = yield* Effect.fork(elector.run)
    yield* TestClock.adjust(settle)
    const leading = yield* elector.isLeader
    yield* gated.hang
    yield* TestClock.adjust(next)
    const waiting = [...gated.requests]
    yield* Fiber.interrupt(running)
    gated.answerHang()
    yield* Effect.yieldNow()
    return { leading, waiting, ran: gated.requests }
  })

describe("Elector store calls in flight when the elector stops", () => {
  it.scoped("a follower's poll still waiting for a connection is withdrawn: it never runs", () =>
    Effect.gen(function*() {
      const db = yield* MemoryStore.make()
      yield* db.acquire("job", "other", Duration.minutes(10), null)
      // The next poll comes within retryPeriod (3 s).
      const { leading, ran, waiting } = yield* stoppedWhileWaiting(db, Duration.seconds(1), Duration.seconds(3))
      expect(leading).toBe(false)
      expect(waiting).toEqual(["inspect", "hang"])
      expect(ran).toEqual(["inspect", "hang"])
    }))

  it.scoped("a leader's renewal still waiting for a connection is withdrawn when its term ends: it never runs", () =>
    Effect.gen(function*() {
      // The term's first renewal comes within renewInterval (5 s).
      const { leading, ran, waiting } = yield* stoppedWhileWaiting(
        yield* MemoryStore.make(),
        Duration.millis(100),
        Duration.seconds(5)
      )
      expect(leading).toBe(true)
      expect(waiting).toEqual(["inspect", "hang"])
      expect(ran).toEqual(["inspect", "hang"])
    }))
})
