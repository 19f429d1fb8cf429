/**
 * A loop is released by construction: interrupted, its call queued at the
 * gate is withdrawn (never runs later, holding a lease for a loop that has
 * stopped) and its wait's deadline is taken back (it would keep the timer,
 * and the process, alive). Each case fails if `Loop.run` or `Loop.fork`
 * drops the release it registers.
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Fiber } from "effect"
import * as Deadlines from "../src/internal/runtime/deadlines.js"
import * as Loop from "../src/internal/runtime/loop.js"
import type { Operation } from "../src/Store.js"
import * as Gate from "../src/stores/internal/call.js"
import * as Admission from "../src/stores/internal/gate.js"

/** A gate over one connection whose requests answer when `answer` is called; `requests` records what ran. */
const oneConnection = () => {
  const requests: Array<string> = []
  const pending: Array<(error: Error | undefined, result: string) => void> = []
  const connections: Gate.Connections<object, string, string, Error> = {
    gate: Admission.make(1),
    driver: {
      connect: (callback) => callback(undefined, {}),
      run: (_connection, request, callback) => {
        requests.push(request)
        pending.push(callback)
      },
      release: () => {}
    },
    timeout: Duration.seconds(1),
    grace: Duration.seconds(2),
    failure: (_operation, error) => error
  }
  const call = (operation: Operation, request: string) => Gate.use(connections, operation, request, Effect.succeed)
  return { call, requests, answer: () => pending.shift()?.(undefined, "answer") }
}

/** A loop's participant that has had an answer. */
const joined: Loop.Participant = { observed: () => true }

describe("Loop", () => {
  it.effect("fork: an interrupted loop's queued call never runs", () =>
    Effect.gen(function*() {
      const { answer, call, requests } = oneConnection()
      const clock = yield* Effect.clock
      const busy = yield* Effect.fork(call("renew", "busy"))
      yield* Effect.yieldNow()
      const loop = yield* Loop.fork(clock, joined, () => call("acquire", "queued"))
      yield* Effect.yieldNow()
      yield* Fiber.interrupt(loop)
      answer()
      yield* Fiber.join(busy)
      yield* Effect.yieldNow()
      expect(requests).toEqual(["busy"])
    }))

  it.effect("run: an interrupted loop's queued call never runs, and what follows the release runs", () =>
    Effect.gen(function*() {
      const { answer, call, requests } = oneConnection()
      const clock = yield* Effect.clock
      const busy = yield* Effect.fork(call("renew", "busy"))
      yield* Effect.yieldNow()
      let after = false
      const loop = yield* Effect.fork(
        Loop.run(clock, {}, joined, () => call("acquire", "queued"), () =>
          Effect.sync(() => {
            after = true
          }))
      )
      yield* Effect.yieldNow()
      yield* Fiber.interrupt(loop)
      expect(after).toBe(true)
      answer()
      yield* Fiber.join(busy)
      yield* Effect.yieldNow()
      expect(requests).toEqual(["busy"])
    }))

  it.effect("an interrupted loop's wait leaves no deadline behind", () =>
    Effect.gen(function*() {
      const clock = yield* Effect.clock
      const far = clock.unsafeCurrentTimeNanos() + Duration.unsafeToNanos(Duration.hours(1))
      for (
        const start of [
          Loop.fork(clock, joined, ({ waits }) => waits.until(far)),
          Effect.fork(Loop.run(clock, {}, joined, ({ waits }) => waits.until(far), () => Effect.void))
        ]
      ) {
        const loop = yield* start
        yield* Effect.yieldNow()
        expect(Deadlines.fiberOf(clock)).toBeDefined()
        yield* Fiber.interrupt(loop)
        Deadlines.quiesce(clock)
        expect(Deadlines.fiberOf(clock)).toBeUndefined()
      }
    }))

  it.effect("a fiber the loop forks detached is not the loop: its call keeps a canceller, and is withdrawn when interrupted", () =>
    Effect.gen(function*() {
      const { answer, call, requests } = oneConnection()
      const clock = yield* Effect.clock
      const busy = yield* Effect.fork(call("renew", "busy"))
      yield* Effect.yieldNow()
      const child = yield* Fiber.join(
        yield* Loop.fork(clock, joined, () => Effect.fork(Loop.detached(call("acquire", "child"))))
      )
      yield* Effect.yieldNow()
      yield* Fiber.interrupt(child)
      answer()
      yield* Fiber.join(busy)
      yield* Effect.yieldNow()
      expect(requests).toEqual(["busy"])
    }))
})
