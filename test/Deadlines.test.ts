/**
 * The process's deadline timer, under the TestClock: deadlines fire in the
 * order they fall whatever the order they were set in, a cancelled one never
 * fires, an earlier deadline set while the timer sleeps for a later one still
 * fires on time, and the timer's fiber stops once no deadline is open.
 *
 * And the waits of a loop kept on it: an elector stopped while it waits, as
 * it almost always is, takes its deadline back, so the timer stops with the
 * last elector (left, the deadline would keep it, and the process, alive).
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Exit, Fiber, FiberRef, Scope, TestClock } from "effect"
import * as Elector from "../src/Elector.js"
import * as Deadlines from "../src/internal/runtime/deadlines.js"
import * as Store from "../src/Store.js"
import * as MemoryStore from "../src/stores/MemoryStore.js"

/** `set(ms, expire)` sets a deadline `ms` from now on the test's clock; `fired` collects what expiries push. */
const timer = Effect.gen(function*() {
  const clock = yield* Effect.clock
  const scheduler = yield* FiberRef.get(FiberRef.currentScheduler)
  const fired: Array<string> = []
  const set = (ms: number, expire: () => void) =>
    Deadlines.schedule(
      clock,
      scheduler,
      clock.unsafeCurrentTimeNanos() + Duration.unsafeToNanos(Duration.millis(ms)),
      expire
    )
  return { fired, set }
})

describe("Deadlines.schedule", () => {
  it.effect("fires deadlines in the order they fall, never a cancelled one", () =>
    Effect.gen(function*() {
      const { fired, set } = yield* timer
      set(300, () => fired.push("300"))
      const cancel = set(200, () => fired.push("200"))
      set(400, () => fired.push("400"))
      // Earlier than the one the timer sleeps for: it wakes for this one first.
      set(100, () => fired.push("100"))
      yield* TestClock.adjust(Duration.millis(150))
      expect(fired).toEqual(["100"])
      cancel()
      yield* TestClock.adjust(Duration.millis(200))
      expect(fired).toEqual(["100", "300"])
      // Cancelling after it fired does nothing.
      cancel()
      yield* TestClock.adjust(Duration.millis(100))
      expect(fired).toEqual(["100", "300", "400"])
    }))

  it.effect("stops when every open deadline is cancelled, and starts again for the next", () =>
    Effect.gen(function*() {
      const { fired, set } = yield* timer
      const first = set(100, () => fired.push("first"))
      const second = set(200, () => fired.push("second"))
      first()
      second()
      yield* TestClock.adjust(Duration.millis(500))
      expect(fired).toEqual([])
      set(100, () => fired.push("third"))
      yield* TestClock.adjust(Duration.millis(100))
      expect(fired).toEqual(["third"])
    }))

  it.effect("keeps one fiber for deadlines set one after another, and stops it when told, if none is open", () =>
    Effect.gen(function*() {
      const { fired, set } = yield* timer
      const clock = yield* Effect.clock
      set(100, () => fired.push("first"))()
      const fiber = Deadlines.fiberOf(clock)
      expect(fiber).toBeDefined()
      // Nothing is open, but the timer is not stopped and started for the next call.
      const cancel = set(200, () => fired.push("second"))
      expect(Deadlines.fiberOf(clock)).toBe(fiber)
      Deadlines.quiesce(clock)
      expect(Deadlines.fiberOf(clock)).toBe(fiber)
      cancel()
      Deadlines.quiesce(clock)
      expect(Deadlines.fiberOf(clock)).toBeUndefined()
      set(100, () => fired.push("third"))
      yield* TestClock.adjust(Duration.millis(300))
      expect(fired).toEqual(["third"])
    }))

  it.effect("a deadline set from an expiry is kept by the same timer", () =>
    Effect.gen(function*() {
      const { fired, set } = yield* timer
      set(100, () => {
        fired.push("outer")
        set(100, () => fired.push("inner"))
      })
      // A deadline already due when set fires at once, but not inside `schedule`.
      set(0, () => fired.push("due"))
      expect(fired).toEqual([])
      yield* TestClock.adjust(Duration.millis(100))
      expect(fired).toEqual(["due", "outer"])
      yield* TestClock.adjust(Duration.millis(100))
      expect(fired).toEqual(["due", "outer", "inner"])
    }))

  it.effect("an expiry that throws does not stop the deadlines set after it", () =>
    Effect.gen(function*() {
      const { fired, set } = yield* timer
      set(100, () => {
        throw new Error("boom")
      })
      yield* TestClock.adjust(Duration.millis(100))
      set(100, () => fired.push("after"))
      yield* TestClock.adjust(Duration.millis(100))
      expect(fired).toEqual(["after"])
    }))

  it.effect("an expiry that throws does not stop the deadlines set before it that fall due later", () =>
    Effect.gen(function*() {
      const { fired, set } = yield* timer
      set(100, () => {
        throw new Error("boom")
      })
      set(200, () => fired.push("later"))
      yield* TestClock.adjust(Duration.millis(200))
      expect(fired).toEqual(["later"])
    }))
})

/** A loop's waits on the test's clock; `at(ms)` is the instant `ms` from now. */
const loopWaits = Effect.gen(function*() {
  const clock = yield* Effect.clock
  const scheduler = yield* FiberRef.get(FiberRef.currentScheduler)
  const at = (ms: number) => clock.unsafeCurrentTimeNanos() + Duration.unsafeToNanos(Duration.millis(ms))
  return { at, clock, waits: Deadlines.waits(clock, scheduler) }
})

describe("Deadlines.waits", () => {
  it.effect("a wait ends at its instant, or at once when interrupted; its deadline stays set until cancelled", () =>
    Effect.gen(function*() {
      const { at, clock, waits } = yield* loopWaits
      const woken = yield* Effect.fork(Effect.as(waits.until(at(1_000)), "woken"))
      yield* TestClock.adjust(Duration.millis(999))
      expect(woken.unsafePoll()).toBeNull()
      yield* TestClock.adjust(Duration.millis(1))
      expect(yield* Fiber.join(woken)).toBe("woken")
      // Interrupted: the fiber goes on at once, the deadline is still set.
      const waiting = yield* Effect.fork(waits.until(at(60_000)))
      yield* TestClock.adjust(Duration.millis(10))
      yield* Fiber.interrupt(waiting)
      Deadlines.quiesce(clock)
      expect(Deadlines.fiberOf(clock)).toBeDefined()
      waits.cancel()
      Deadlines.quiesce(clock)
      expect(Deadlines.fiberOf(clock)).toBeUndefined()
    }))

  it.effect("a wait after an interrupted one is ended by its own instant, not the deadline the first left set", () =>
    Effect.gen(function*() {
      const { at, clock, waits } = yield* loopWaits
      const first = yield* Effect.fork(waits.until(at(100)))
      yield* TestClock.adjust(Duration.millis(10))
      yield* Fiber.interrupt(first)
      const second = yield* Effect.fork(Effect.as(waits.until(at(1_000)), "woken"))
      // Past the first wait's instant: the second still waits.
      yield* TestClock.adjust(Duration.millis(500))
      expect(second.unsafePoll()).toBeNull()
      yield* TestClock.adjust(Duration.millis(500))
      expect(yield* Fiber.join(second)).toBe("woken")
      // Nothing of either is left on the timer.
      Deadlines.quiesce(clock)
      expect(Deadlines.fiberOf(clock)).toBeUndefined()
    }))

  it.effect("a routine wait (by) ends on the grain at or before its instant, never after, nor at once: waits due within one grain end together", () =>
    Effect.gen(function*() {
      // Three loops' waits: a loop waits for one thing at a time.
      const { at, waits } = yield* loopWaits
      const other = yield* loopWaits
      const third = yield* loopWaits
      yield* TestClock.adjust(Duration.millis(5))
      // Due at 35ms and 39ms: both end at 20ms, the grain before.
      const a = yield* Effect.fork(Effect.as(waits.by(at(30)), "a"))
      const b = yield* Effect.fork(Effect.as(other.waits.by(other.at(34)), "b"))
      // Due at 40ms, on the grain: it ends at its instant.
      const onGrain = yield* Effect.fork(Effect.as(third.waits.until(third.at(35)), "exact"))
      yield* TestClock.adjust(Duration.millis(14))
      expect([a.unsafePoll(), b.unsafePoll()]).toEqual([null, null])
      yield* TestClock.adjust(Duration.millis(1))
      expect([yield* Fiber.join(a), yield* Fiber.join(b)]).toEqual(["a", "b"])
      yield* TestClock.adjust(Duration.millis(19))
      expect(onGrain.unsafePoll()).toBeNull()
      const c = yield* Effect.fork(Effect.as(other.waits.by(other.at(1)), "c"))
      yield* TestClock.adjust(Duration.millis(1))
      expect([yield* Fiber.join(onGrain), yield* Fiber.join(c)]).toEqual(["exact", "c"])
      // Due at 43ms, shorter than the grain: the grain before is now, so it
      // ends at its own instant rather than at once (a loop would spin).
      const short = yield* Effect.fork(Effect.as(waits.by(at(3)), "short"))
      yield* TestClock.adjust(Duration.millis(2))
      expect(short.unsafePoll()).toBeNull()
      yield* TestClock.adjust(Duration.millis(1))
      expect(yield* Fiber.join(short)).toBe("short")
      expect(Deadlines.grain).toBe(20_000_000n)
    }))

  it.effect("electors stopped while they wait, a leader and a follower, leave no deadline set", () =>
    Effect.gen(function*() {
      const clock = yield* Effect.clock
      const db = yield* MemoryStore.make()
      const scope = yield* Scope.make()
      const electors = yield* Effect.forEach(["a", "b"], (identity) =>
        Elector.make({ name: "waits", identity }).pipe(
          Effect.provideService(Store.Store, db),
          Scope.extend(scope)
        ))
      yield* Effect.forEach(electors, (elector) => Effect.forkIn(elector.run, scope))
      yield* TestClock.adjust(Duration.seconds(30))
      expect(yield* Effect.forEach(electors, (elector) => elector.isLeader)).toEqual([true, false])
      expect(Deadlines.fiberOf(clock)).toBeDefined()
      yield* Scope.close(scope, Exit.void)
      // The last elector to stop stops the timer: nothing of theirs is left on it.
      expect(Deadlines.fiberOf(clock)).toBeUndefined()
    }))
})
