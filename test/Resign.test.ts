import { describe, expect, it } from "@effect/vitest"
import { Deferred, Duration, Effect, Exit, Option, Scope } from "effect"
import { afterEach } from "vitest"
import * as Elector from "../src/Elector.js"
import * as Lease from "../src/Lease.js"
import { createElector, type PromiseElector } from "../src/promise.js"
import * as MemoryStore from "../src/stores/MemoryStore.js"
import * as Faulty from "../src/testing/FaultyStore.js"
import { join, seconds, stepDowns, world } from "./support/fleet.js"

let elections = 0
/** A fresh election per test: metrics are process-wide, their tags keep the tests apart. */
const election = () => `resign-${++elections}`

describe("resign", () => {
  it.scoped("ends the term at once: work interrupted, finalizers run, lease released, before resign returns", () =>
    Effect.gen(function*() {
      const name = election()
      const db = yield* world
      const events: Array<string> = []
      const { elector: a } = yield* join(db, {
        name,
        identity: "a",
        onStartedLeading: () =>
          Effect.never.pipe(Effect.onInterrupt(() => Effect.sync(() => events.push("work interrupted"))))
      })
      const leadership = yield* a.leadership
      yield* Scope.addFinalizer(leadership.scope, Effect.sync(() => events.push("finalizer")))
      expect(yield* a.fence).toEqual(Option.some(1n))
      yield* a.resign
      // Everything happened before resign returned, with no time passing.
      expect(events).toEqual(["work interrupted", "finalizer"])
      expect(yield* a.isLeader).toBe(false)
      const lease = yield* db.inspect(name)
      expect(Lease.isExpired(lease)).toBe(true)
      expect(lease.expiresAt.getTime()).toBe(lease.renewedAt.getTime())
      expect(yield* stepDowns(name, "resigned")).toBe(1)
      // Resigning again, not leading, does nothing but extend the hold-off.
      yield* a.resign
      expect(yield* stepDowns(name, "resigned")).toBe(1)
    }))

  it.scoped("a follower takes over within one retry period, and the resigner stays out for resignHoldOff", () =>
    Effect.gen(function*() {
      const name = election()
      const db = yield* world
      const a = yield* join(db, { name, identity: "a", resignHoldOff: "40 seconds" })
      const b = yield* join(db, { name, identity: "b" })
      expect(yield* a.elector.fence).toEqual(Option.some(1n))
      yield* a.elector.resign
      yield* seconds(3)
      expect(yield* b.elector.fence).toEqual(Option.some(2n))
      // b leaves cleanly: the lease is free, but a is still held off.
      yield* Scope.close(b.scope, Exit.void)
      yield* seconds(35)
      expect(yield* a.elector.isLeader).toBe(false)
      expect(Lease.isExpired(yield* db.inspect(name))).toBe(true)
      yield* seconds(5 + 3)
      expect(yield* a.elector.fence).toEqual(Option.some(3n))
    }))

  it.scoped("a claim in flight when resign is called is given up, never led under", () =>
    Effect.gen(function*() {
      const name = election()
      const db = yield* world
      const store = Faulty.make(db)
      store.set(Faulty.delay("1 second"), "acquire")
      const started = yield* Deferred.make<bigint>()
      const { elector } = yield* join(store, {
        name,
        identity: "a",
        onStartedLeading: (fence) => Deferred.succeed(started, fence)
      })
      expect(store.calls.acquire).toBe(1)
      yield* elector.resign
      yield* seconds(1)
      // The acquire went through on the database and was released at once.
      const lease = yield* db.inspect(name)
      expect(lease.holder).toBe("a")
      expect(Lease.isExpired(lease)).toBe(true)
      expect(yield* Deferred.isDone(started)).toBe(false)
      expect(yield* stepDowns(name, "resigned")).toBe(0)
      // After the hold-off (leaseDuration by default) it leads again, under a fresh fence.
      yield* seconds(14 + 3 + 1)
      expect(yield* elector.fence).toEqual(Option.some(2n))
      expect(yield* Deferred.await(started)).toBe(2n)
    }))

  it("resignHoldOff defaults to leaseDuration and is validated like the other durations", () => {
    const resolved = Effect.runSync(Elector.validate({ name: "jobs", leaseDuration: "20 seconds" }))
    expect(Duration.toMillis(resolved.resignHoldOff)).toBe(20_000)
    const refused = Effect.runSync(Effect.flip(Elector.validate({ name: "jobs", resignHoldOff: "0 millis" })))
    expect(refused.message).toBe("invalid config: resignHoldOff: must be positive, got \"0 millis\"")
  })
})

describe("resign (Promise)", () => {
  const running: Array<PromiseElector> = []
  afterEach(async () => {
    await Promise.all(running.splice(0).map((elector) => elector.stop()))
  })

  const eventually = async (condition: () => boolean, what: string) => {
    const deadline = performance.now() + 10_000
    while (!condition()) {
      if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`)
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
  }

  it("aborts the term's signal, releases, and lets the other participant lead", async () => {
    const store = await Effect.runPromise(MemoryStore.make())
    const fast = {
      store,
      name: "promise-resign",
      leaseDuration: "5 seconds",
      renewInterval: "200 millis",
      retryPeriod: "100 millis",
      operationTimeout: "1 second",
      safetyMargin: "1 second",
      resignHoldOff: "1 minute"
    } as const
    let aborted = false
    const a = createElector({
      ...fast,
      identity: "a",
      onStartedLeading: (signal) =>
        new Promise<void>((resolve) => {
          signal.addEventListener("abort", () => {
            aborted = true
            resolve()
          })
        })
    })
    running.push(a)
    // Not running yet: nothing to resign.
    await a.resign()
    await a.start()
    await eventually(() => a.isLeader(), "a to lead")
    const b = createElector({ ...fast, identity: "b" })
    running.push(b)
    await b.start()
    await a.resign()
    expect(aborted).toBe(true)
    expect(a.isLeader()).toBe(false)
    await eventually(() => b.isLeader(), "b to take over")
    expect(b.fence()).toBe(2n)
    expect(a.status().state).toBe("running")
  })
})
