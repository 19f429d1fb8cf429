// The README's "Testing your own application" snippets, run as they are printed there.
import { expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer, TestClock } from "effect"
import { Elector, Leadership, MemoryStore, Store } from "effect-leaderelection"
import { FaultyStore } from "effect-leaderelection/testing"

// --- memory store and TestClock
it.effect("my job runs while this participant leads, under the term's fence", () =>
  Effect.gen(function*() {
    const fences: Array<bigint> = []
    const job = Effect.flatMap(Leadership.fence, (fence) => Effect.sync(() => fences.push(fence)))
    const running = yield* Effect.fork(Elector.whileLeader(Effect.zipRight(job, Effect.never)))
    yield* TestClock.adjust("1 second")
    expect(fences).toEqual([1n])
    yield* Fiber.interrupt(running)
  }).pipe(Effect.provide(Elector.layer({ name: "jobs" }).pipe(Layer.provide(MemoryStore.layer())))))

// --- fault injection on TestClock
it.effect("my job stops when the database stops answering", () =>
  Effect.gen(function*() {
    const faulty = FaultyStore.make(yield* MemoryStore.make())
    let running = false
    const job = Effect.sync(() => (running = true)).pipe(
      Effect.zipRight(Effect.never),
      Effect.ensuring(Effect.sync(() => (running = false)))
    )
    const elector = Elector.layer({ name: "jobs" }).pipe(Layer.provide(Layer.succeed(Store.Store, faulty)))
    const fiber = yield* Effect.fork(Effect.provide(Elector.whileLeader(job), elector))
    yield* TestClock.adjust("1 second")
    expect(running).toBe(true)
    faulty.set(FaultyStore.hang) // the database stops answering anything
    yield* TestClock.adjust("15 seconds") // past the 15s lease's local deadline
    expect(running).toBe(false)
    expect(faulty.calls.renew).toBeGreaterThan(0)
    // Shutting down waits for the hung call's timeout: move the clock past it.
    yield* Fiber.interruptFork(fiber)
    yield* TestClock.adjust("15 seconds")
    yield* Fiber.await(fiber)
  }))
