/**
 * The SQL stores' admission gate on a fake driver, under the TestClock: its
 * own deadline (no `Effect.timeout` fibers) gives control back at the
 * operation timeout, a late answer within the grace returns the connection,
 * silence past the grace destroys it, and an answer that comes at once
 * (synchronously) needs no timer.
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Either, Exit, Fiber, TestClock } from "effect"
import * as Caller from "../src/internal/runtime/caller.js"
import * as Store from "../src/Store.js"
import type { Operation } from "../src/Store.js"
import * as Gate from "../src/stores/internal/call.js"
import * as Admission from "../src/stores/internal/gate.js"
import { OperationTimeout, Saturated } from "../src/stores/SqlStoreError.js"

interface Connection {
  readonly id: number
}

/**
 * A driver whose `run` answers when `answer` is called (the oldest request
 * first), or at once with the request; it records the requests it ran.
 */
const fakeDriver = (immediate: boolean) => {
  const released: Array<Error | undefined> = []
  const requests: Array<string> = []
  const pending: Array<(error: Error | undefined, result: string) => void> = []
  const driver: Gate.Driver<Connection, string, string> = {
    connect: (callback) => callback(undefined, { id: 1 }),
    run: (_connection, request, callback) => {
      requests.push(request)
      return immediate ? callback(undefined, "at once") : pending.push(callback)
    },
    release: (_connection, error) => released.push(error)
  }
  return { driver, released, requests, answer: (result: string) => pending.shift()?.(undefined, result) }
}

const timeout = Duration.seconds(1)
const grace = Duration.seconds(2)

/** A gate over `capacity` connections of `driver`, its errors as they are. */
const connectionsOf = <E>(
  capacity: number,
  driver: Gate.Driver<Connection, string, string>,
  failure: (operation: Operation, error: Error) => E
): Gate.Connections<Connection, string, string, E> => ({
  gate: Admission.make(capacity),
  driver,
  timeout,
  grace,
  failure
})

/** A gate over `capacity` connections of a fake driver, and a call through it. */
const setup = (capacity: number, immediate: boolean) => {
  const fake = fakeDriver(immediate)
  const connections = connectionsOf(capacity, fake.driver, (_operation, error) => error)
  const call = (operation: Operation = "renew", request = "a request") =>
    Gate.use(connections, operation, request, Effect.succeed)
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

describe("Gate.use, a call given up while connecting (Leaving)", () => {
  /** A driver whose connections come when `connect` is called: the oldest checkout first. */
  const slowPool = () => {
    const fake = fakeDriver(true)
    const checkouts: Array<(error: Error | undefined, connection: Connection | undefined) => void> = []
    const driver: Gate.Driver<Connection, string, string> = {
      ...fake.driver,
      connect: (callback) => void checkouts.push(callback)
    }
    const connections = connectionsOf(1, driver, (_operation, error) => error)
    const call = (operation: Operation) => Gate.use(connections, operation, "a request", Effect.succeed)
    return { fake, call, connect: () => checkouts.shift()?.(undefined, { id: 1 }) }
  }

  it.effect("holds its slot until the connection comes, then releases it unused", () =>
    Effect.gen(function*() {
      const { call, connect, fake } = slowPool()
      const first = yield* Effect.fork(call("renew"))
      yield* Effect.yieldNow()
      yield* TestClock.adjust(timeout)
      expect(yield* Effect.flip(Fiber.join(first))).toBeInstanceOf(OperationTimeout)
      // Its slot is still held: the next call waits for it.
      const second = yield* Effect.fork(call("renew"))
      yield* Effect.yieldNow()
      connect()
      expect(fake.requests).toEqual([])
      expect(fake.released).toEqual([undefined])
      // The freed slot admits the second call, which runs on its own connection.
      connect()
      expect(yield* Fiber.join(second)).toBe("at once")
      expect(fake.requests).toEqual(["a request"])
    }))

  it.effect("frees its slot when the grace ends first; the connection, when it comes, is released", () =>
    Effect.gen(function*() {
      const { call, connect, fake } = slowPool()
      const first = yield* Effect.fork(call("renew"))
      yield* Effect.yieldNow()
      yield* TestClock.adjust(timeout)
      yield* Effect.flip(Fiber.join(first))
      yield* TestClock.adjust(grace)
      // The grace ended: the slot went to nobody, so the next call is admitted at once.
      const second = yield* Effect.fork(call("renew"))
      yield* Effect.yieldNow()
      connect()
      expect(fake.released).toEqual([undefined])
      connect()
      expect(yield* Fiber.join(second)).toBe("at once")
      expect(fake.released).toEqual([undefined, undefined])
    }))
})

describe("Gate.use's ending", () => {
  it.effect("runs the request, decodes the answer, and maps the gate's and the driver's errors, where the call ends", () =>
    Effect.gen(function*() {
      const answer = (result: string) => result === "at once" ? Effect.succeed(1) : Effect.fail(`odd answer: ${result}`)
      const failure = (operation: Operation, error: Error) => `${operation} failed: ${error.message}`
      const quick = fakeDriver(true)
      expect(yield* Gate.use(connectionsOf(1, quick.driver, failure), "renew", "select 1", answer)).toBe(1)
      expect(quick.requests).toEqual(["select 1"])
      const slow = fakeDriver(false)
      const late = yield* Effect.fork(Gate.use(connectionsOf(1, slow.driver, failure), "inspect", "late", answer))
      yield* TestClock.adjust(timeout)
      expect(yield* Effect.flip(Fiber.join(late))).toBe("inspect failed: no answer from the database within 1s")
      const odd = yield* Effect.fork(Gate.use(connectionsOf(1, slow.driver, failure), "renew", "odd", answer))
      yield* Effect.yieldNow()
      slow.answer("late")
      slow.answer("odd")
      expect(yield* Effect.flip(Fiber.join(odd))).toBe("odd answer: odd")
      expect(slow.requests).toEqual(["late", "odd"])
    }))
})

describe("Admission.enter", () => {
  it("sheds a poll beyond twice capacity waiters with a Saturated error that captured no stack", () => {
    const gate = Admission.make(1)
    const waiter = (): Admission.Waiter => ({ admitted: () => {} })
    expect(gate.enter("renew", waiter(), false)).toBeUndefined()
    expect(gate.enter("inspect", waiter(), false)).toBeUndefined()
    expect(gate.enter("inspect", waiter(), false)).toBeUndefined()
    const shed = gate.enter("inspect", waiter(), false)
    expect(shed).toBeInstanceOf(Saturated)
    expect((shed as Saturated).message).toBe("inspect shed: all 1 connections are busy and 2 calls already wait")
    expect(String((shed as Saturated).stack)).not.toMatch(/\n\s+at /)
    // Error.stackTraceLimit is back as it was.
    expect(String(new Error("x").stack)).toMatch(/\n\s+at /)
  })

  it("queues a joining caller's poll however deep the queue, behind every other call, newest joiner first", () => {
    const gate = Admission.make(1)
    const admitted: Array<string> = []
    const waiter = (label: string): Admission.Waiter => ({ admitted: () => admitted.push(label) })
    expect(gate.enter("renew", waiter("renew"), false)).toBeUndefined()
    expect(gate.enter("inspect", waiter("joining 1"), true)).toBeUndefined()
    expect(gate.enter("inspect", waiter("routine 1"), false)).toBeUndefined()
    expect(gate.enter("inspect", waiter("joining 2"), true)).toBeUndefined()
    expect(gate.enter("inspect", waiter("routine 2"), false)).toBeUndefined()
    expect(gate.enter("inspect", waiter("routine 3"), false)).toBeInstanceOf(Saturated)
    // Joiners do not count against the routine polls' limit, nor take a claim's turn.
    expect(gate.enter("acquire", waiter("claim"), false)).toBeUndefined()
    const withdrawn = waiter("joining 3")
    expect(gate.enter("inspect", withdrawn, true)).toBeUndefined()
    expect(gate.withdraw(withdrawn)).toBe(true)
    for (let i = 0; i < 5; i++) gate.leave()
    expect(admitted).toEqual(["renew", "routine 1", "routine 2", "claim", "joining 2", "joining 1"])
  })
})

/** `effect` as a call of `caller`, in its context (`Store.CallContext`), a joiner's if `joining`. */
const as = <A, E>(caller: Caller.Caller | undefined, effect: Effect.Effect<A, E>, joining = false) =>
  Effect.provideService(effect, Store.CallContext, { joining, caller })

describe("Gate.use with a caller in the call's context (internal/runtime/caller.ts)", () => {
  it.effect("hands Effect no canceller: the caller's stop withdraws a queued call and gives a running one its grace", () =>
    Effect.gen(function*() {
      const { call, fake } = setup(1, false)
      const running = new Caller.Caller()
      const queued = new Caller.Caller()
      const first = yield* Effect.fork(as(running, call("renew", "first")))
      yield* Effect.yieldNow()
      const second = yield* Effect.fork(as(queued, call("inspect", "second")))
      yield* Effect.yieldNow()
      // Interrupted, each returns at once; the calls are the callers' to end.
      yield* Fiber.interrupt(second)
      yield* Fiber.interrupt(first)
      queued.stop()
      running.stop()
      // The running call's statement has its grace, then its connection goes;
      // the queued call never runs.
      yield* TestClock.adjust(Duration.millis(1999))
      expect(fake.released).toEqual([])
      yield* TestClock.adjust(Duration.millis(1))
      expect(fake.released).toHaveLength(1)
      expect(fake.released[0]?.message).toMatch(/connection destroyed/)
      expect(fake.requests).toEqual(["first"])
    }))

  it.effect("a joiner's poll, as its context says, is not shed; a joined caller's is, and the gate writes no context", () =>
    Effect.gen(function*() {
      const { call, fake } = setup(1, false)
      const caller = new Caller.Caller()
      const context = { joining: true, caller }
      // The slot is busy and two polls wait: the queue is full.
      const busy = yield* Effect.fork(call("renew", "busy"))
      const waiting = yield* Effect.forEach(["w1", "w2"], (r) => Effect.fork(call("inspect", r)))
      yield* Effect.yieldNow()
      expect(yield* Effect.flip(call("inspect", "routine"))).toBeInstanceOf(Saturated)
      const first = yield* Effect.fork(Effect.provideService(call("inspect", "joining"), Store.CallContext, context))
      yield* Effect.yieldNow()
      for (const r of ["busy", "w1", "w2", "joining"]) fake.answer(`${r}'s`)
      expect(yield* Fiber.join(first)).toBe("joining's")
      yield* Fiber.join(busy)
      yield* Effect.forEach(waiting, Fiber.join)
      // Answered, the call left its context as it was: joining is the caller's to decide.
      expect(context.joining).toBe(true)
      // Joined, the same caller's polls are shed as any other's.
      const again = yield* Effect.forEach(["busy", "w1", "w2"], (r) => Effect.fork(call("inspect", r)))
      yield* Effect.yieldNow()
      expect(yield* Effect.flip(as(caller, call("inspect", "joined"), false))).toBeInstanceOf(Saturated)
      for (const r of ["busy", "w1", "w2"]) fake.answer(`${r}'s`)
      yield* Effect.forEach(again, Fiber.join)
      expect(fake.requests).toEqual(["busy", "w1", "w2", "joining", "busy", "w1", "w2"])
      caller.stop()
    }))

  it.effect("a burst of joiners the pool cannot answer in time: the newest is answered, the stale ones time out unsent", () =>
    Effect.gen(function*() {
      const { call, fake } = setup(1, false)
      const busy = yield* Effect.fork(call("renew", "busy"))
      const join = (request: string) =>
        Effect.fork(Effect.either(as(new Caller.Caller(), call("inspect", request), true)))
      const stale = yield* Effect.forEach(["j1", "j2", "j3"], join)
      yield* TestClock.adjust(Duration.millis(900))
      const fresh = yield* join("j4")
      yield* Effect.yieldNow()
      // The slot frees 50 ms before the stale ones' deadline: first come,
      // first served would send j1, answered after its caller gave up.
      yield* TestClock.adjust(Duration.millis(50))
      fake.answer("busy's")
      yield* Fiber.join(busy)
      yield* TestClock.adjust(Duration.millis(50))
      fake.answer("j4's")
      // Past every deadline: whatever has not been answered has failed.
      yield* TestClock.adjust(Duration.seconds(1))
      expect(yield* Fiber.join(fresh)).toEqual(Either.right("j4's"))
      for (const fiber of stale) expect(Either.isLeft(yield* Fiber.join(fiber))).toBe(true)
      expect(fake.requests).toEqual(["busy", "j4"])
    }))

  it.effect("left alone, a caller's interrupted call runs on, bounded by its deadline", () =>
    Effect.gen(function*() {
      const { call, fake } = setup(1, false)
      const first = yield* Effect.fork(as(new Caller.Caller(), call("renew", "first")))
      yield* Effect.yieldNow()
      const second = yield* Effect.fork(as(new Caller.Caller(), call("inspect", "second")))
      yield* Effect.yieldNow()
      yield* Fiber.interrupt(second)
      fake.answer("first's")
      expect(yield* Fiber.join(first)).toBe("first's")
      // Not stopped: the queued call was admitted and ran.
      expect(fake.requests).toEqual(["first", "second"])
    }))

  it.effect("a call begun on the caller abandons the one its interruption left (a finalizer's call)", () =>
    Effect.gen(function*() {
      const { call, fake } = setup(2, false)
      const caller = new Caller.Caller()
      const loop = yield* Effect.fork(
        Effect.ensuring(as(caller, call("renew", "one")), Effect.ignore(as(caller, call("release", "two"))))
      )
      yield* Effect.yieldNow()
      yield* Fiber.interruptFork(loop)
      yield* TestClock.adjust(Duration.millis(500))
      expect(fake.requests).toEqual(["one", "two"])
      // "one" was abandoned when "two" began: its grace runs from then, not
      // from its deadline (which would destroy its connection at 3 s).
      yield* TestClock.adjust(Duration.millis(1499))
      expect(fake.released).toEqual([])
      yield* TestClock.adjust(Duration.millis(1))
      expect(fake.released).toHaveLength(1)
      expect(fake.released[0]?.message).toMatch(/connection destroyed/)
      // The oldest request first: "one" answers too late to matter.
      fake.answer("one's")
      fake.answer("two's")
      expect(yield* Fiber.await(loop)).toSatisfy(Exit.isInterrupted)
      expect(fake.released).toHaveLength(2)
      expect(fake.released[1]).toBeUndefined()
      caller.stop()
    }))

  it.effect("a call whose context names no caller, or that has none, keeps a canceller: withdrawn when interrupted", () =>
    Effect.gen(function*() {
      const { call, fake } = setup(1, false)
      const first = yield* Effect.fork(call("renew", "first"))
      yield* Effect.yieldNow()
      const named = yield* Effect.fork(as(undefined, call("inspect", "no caller")))
      const bare = yield* Effect.fork(call("inspect", "no context"))
      yield* Effect.yieldNow()
      yield* Fiber.interrupt(named)
      yield* Fiber.interrupt(bare)
      fake.answer("first's")
      expect(yield* Fiber.join(first)).toBe("first's")
      expect(fake.requests).toEqual(["first"])
    }))
})
