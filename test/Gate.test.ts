/**
 * The SQL stores' admission gate on a fake driver, under the TestClock: its
 * own deadline (no `Effect.timeout` fibers) gives control back at the
 * operation timeout, a late answer within the grace returns the connection,
 * silence past the grace destroys it, and an answer that comes at once
 * (synchronously) needs no timer.
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Fiber, TestClock } from "effect"
import { identity } from "effect/Function"
import * as Gate from "../src/stores/internal/gate.js"
import { OperationTimeout } from "../src/stores/internal/sqlStore.js"

interface Connection {
  readonly id: number
}

/** A driver whose `run` answers when `answer` is called (the oldest request first), or at once. */
const fakeDriver = (immediate: boolean) => {
  const released: Array<Error | undefined> = []
  const pending: Array<(error: Error | undefined, result: string) => void> = []
  const driver: Gate.Driver<Connection, string> = {
    connect: (callback) => callback(undefined, { id: 1 }),
    run: (_connection, callback) => immediate ? callback(undefined, "at once") : pending.push(callback),
    release: (_connection, error) => released.push(error)
  }
  return { driver, released, answer: (result: string) => pending.shift()?.(undefined, result) }
}

const timeout = Duration.seconds(1)
const grace = Duration.seconds(2)

/** The driver's result, or the gate's or driver's error, as they are. */
const asIs: Gate.Ending<string, string, Error> = { answer: Effect.succeed, failure: identity }

/** A gate over `capacity` connections of a fake driver, and a call through it. */
const setup = (capacity: number, immediate: boolean) => {
  const gate = Gate.make(capacity)
  const fake = fakeDriver(immediate)
  const call = (operation: "renew" | "inspect" = "renew") =>
    Gate.use(gate, timeout, grace, operation, fake.driver, asIs)
  return { fake, call }
}

describe("Gate.use", () => {
  it.effect("an answer that comes at once is returned, and the slot freed", () =>
    Effect.gen(function*() {
      const { call, fake } = setup(1, true)
      expect(yield* call()).toBe("at once")
      expect(fake.released).toEqual([undefined])
      // The slot is free: the next call is admitted at once.
      expect(yield* call()).toBe("at once")
    }))

  it.effect("times out at the operation timeout; a late answer within the grace keeps the connection", () =>
    Effect.gen(function*() {
      const { call, fake } = setup(1, false)
      const pending = yield* Effect.fork(call())
      yield* TestClock.adjust(Duration.millis(999))
      expect(pending.unsafePoll()).toBeNull()
      yield* TestClock.adjust(Duration.millis(1))
      expect(yield* Effect.flip(Fiber.join(pending))).toBeInstanceOf(OperationTimeout)
      // Still out of the pool until it answers; the answer returns it.
      expect(fake.released).toEqual([])
      fake.answer("late")
      expect(fake.released).toEqual([undefined])
      yield* TestClock.adjust(grace)
      expect(fake.released).toEqual([undefined])
    }))

  it.effect("a connection silent past the grace is destroyed", () =>
    Effect.gen(function*() {
      const { call, fake } = setup(1, false)
      const pending = yield* Effect.fork(call())
      yield* TestClock.adjust(timeout)
      expect(yield* Effect.flip(Fiber.join(pending))).toBeInstanceOf(OperationTimeout)
      yield* TestClock.adjust(grace)
      expect(fake.released).toHaveLength(1)
      expect(fake.released[0]?.message).toMatch(/connection destroyed/)
    }))

  it.effect("an answer in time cancels the deadline", () =>
    Effect.gen(function*() {
      const { call, fake } = setup(1, false)
      const pending = yield* Effect.fork(call())
      yield* TestClock.adjust(Duration.millis(500))
      fake.answer("in time")
      expect(yield* Fiber.join(pending)).toBe("in time")
      yield* TestClock.adjust(Duration.seconds(10))
      expect(fake.released).toEqual([undefined])
    }))

  it.effect("one timer keeps the deadlines of calls in flight together, passing over the ones answered", () =>
    Effect.gen(function*() {
      const { call, fake } = setup(2, false)
      const first = yield* Effect.fork(call())
      yield* TestClock.adjust(Duration.millis(500))
      const second = yield* Effect.fork(call("inspect"))
      yield* TestClock.adjust(Duration.millis(200))
      fake.answer("first")
      expect(yield* Fiber.join(first)).toBe("first")
      // The first call's deadline passes: nothing happens to the second.
      yield* TestClock.adjust(Duration.millis(300))
      expect(second.unsafePoll()).toBeNull()
      yield* TestClock.adjust(Duration.millis(500))
      expect(yield* Effect.flip(Fiber.join(second))).toBeInstanceOf(OperationTimeout)
      // A call after the timer went idle gets a deadline of its own again.
      const third = yield* Effect.fork(call())
      yield* TestClock.adjust(timeout)
      expect(yield* Effect.flip(Fiber.join(third))).toBeInstanceOf(OperationTimeout)
    }))
})

describe("Gate.use's ending", () => {
  it.effect("decodes the answer, and maps the gate's and the driver's errors, where the call ends", () =>
    Effect.gen(function*() {
      const ending: Gate.Ending<string, number, string> = {
        answer: (result) => result === "at once" ? Effect.succeed(1) : Effect.fail(`odd answer: ${result}`),
        failure: (error) => `failed: ${error.message}`
      }
      expect(yield* Gate.use(Gate.make(1), timeout, grace, "renew", fakeDriver(true).driver, ending)).toBe(1)
      const slow = fakeDriver(false)
      const gate = Gate.make(1)
      const late = yield* Effect.fork(Gate.use(gate, timeout, grace, "renew", slow.driver, ending))
      yield* TestClock.adjust(timeout)
      expect(yield* Effect.flip(Fiber.join(late))).toBe("failed: no answer from the database within 1s")
      const odd = yield* Effect.fork(Gate.use(Gate.make(1), timeout, grace, "renew", slow.driver, ending))
      yield* Effect.yieldNow()
      slow.answer("late")
      slow.answer("odd")
      expect(yield* Effect.flip(Fiber.join(odd))).toBe("odd answer: odd")
    }))
})

describe("Gate.enter", () => {
  it("sheds a poll beyond twice capacity waiters with a Saturated error that captured no stack", () => {
    const gate = Gate.make(1)
    expect(gate.enter("renew", () => {})).not.toBeInstanceOf(Gate.Saturated)
    expect(gate.enter("inspect", () => {})).not.toBeInstanceOf(Gate.Saturated)
    expect(gate.enter("inspect", () => {})).not.toBeInstanceOf(Gate.Saturated)
    const shed = gate.enter("inspect", () => {})
    expect(shed).toBeInstanceOf(Gate.Saturated)
    expect((shed as Gate.Saturated).message).toBe("inspect shed: all 1 connections are busy and 2 calls already wait")
    expect(String((shed as Gate.Saturated).stack)).not.toMatch(/\n\s+at /)
    // Error.stackTraceLimit is back as it was.
    expect(String(new Error("x").stack)).toMatch(/\n\s+at /)
  })
})
