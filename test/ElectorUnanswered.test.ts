/**
 * A process started while its database is down: every election polls and
 * fails, and the warnings are logged at most once a minute per store, with
 * a count of those not logged, until the store answers. Followers' failed
 * polls are quieted the same way once answered; a leader's failed renewal
 * is logged each time.
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, FiberRef, HashSet, Logger, LogLevel, TestClock } from "effect"
import * as Elector from "../src/Elector.js"
import * as Quiet from "../src/internal/metrics/quiet.js"
import * as Store from "../src/Store.js"
import * as MemoryStore from "../src/stores/MemoryStore.js"
import * as Faulty from "../src/testing/FaultyStore.js"

// The database clock is three days ahead of the local one, as in every unit test.
const world = Effect.flatMap(
  MemoryStore.makeClock({ offset: Duration.days(3) }),
  (clock) => MemoryStore.make({ clock })
)

/** Every WARN line, as its message. */
const captureWarnings = Effect.gen(function*() {
  const lines: Array<string> = []
  const logger = Logger.make(({ logLevel, message }) => {
    if (logLevel === LogLevel.Warning) lines.push(Array.isArray(message) ? message.join(" ") : String(message))
  })
  yield* Effect.locallyScopedWith(FiberRef.currentLoggers, HashSet.add(logger))
  return lines
})

let elections = 0

/** `count` electors of elections of their own over `store`, running. */
const fleet = (store: Store.StoreShape, count: number) =>
  Effect.forEach(Array.from({ length: count }, () => `unanswered-${++elections}`), (name) =>
    Effect.gen(function*() {
      const elector = yield* Elector.make({ name, identity: "a" }).pipe(Effect.provideService(Store.Store, store))
      yield* Effect.forkScoped(elector.run)
      return elector
    }))

const quietly = "no answer from the store yet; repeats are logged at most once a minute per store"

describe("a store that has not answered yet", () => {
  it.scoped("logs its retryable errors at most once a minute, however many elections use it, with a count", () =>
    Effect.gen(function*() {
      const warnings = yield* captureWarnings
      const store = Faulty.make(yield* world)
      store.set(Faulty.fail)
      const electors = yield* fleet(store, 10)
      yield* TestClock.adjust(Duration.seconds(150))
      // Every election polled, again and again: well over a hundred failures.
      expect(store.calls.inspect).toBeGreaterThan(100)
      expect(warnings).toHaveLength(3)
      expect(warnings[0]).toBe(`inspect failed (retryable): injected (${quietly})`)
      // The two after it count what was not logged: every failure but the three logged.
      const counts = warnings.slice(1).map((line) => Number(/, (\d+) not logged since the last\)$/.exec(line)?.[1]))
      expect(counts.every((n) => n > 0)).toBe(true)
      expect(1 + counts[0]! + 1 + counts[1]!).toBeLessThanOrEqual(store.calls.inspect)

      // The database comes up: every election hears from it; a failure
      // after that is the elector's own to report, each time.
      store.set(Faulty.pass)
      yield* TestClock.adjust(Duration.seconds(15))
      for (const elector of electors) expect(yield* elector.isLeader).toBe(true)
      store.set(Faulty.fail, "renew")
      yield* TestClock.adjust(Duration.seconds(6))
      const later = warnings.slice(3)
      expect(later.length).toBeGreaterThanOrEqual(electors.length)
      expect(later.every((line) => line === "renew failed (retryable): injected")).toBe(true)
    }))

  it.scoped("once answered, followers' failed polls are quieted the same way", () =>
    Effect.gen(function*() {
      const warnings = yield* captureWarnings
      const store = Faulty.make(yield* world)
      // Ten elections led elsewhere: their electors follow.
      const names = Array.from({ length: 10 }, () => `unanswered-${++elections}`)
      yield* Effect.forEach(names, (name) => store.acquire(name, "elsewhere", Duration.hours(1), null))
      yield* Effect.forEach(names, (name) =>
        Effect.flatMap(
          Elector.make({ name, identity: "a" }).pipe(Effect.provideService(Store.Store, store)),
          (elector) => Effect.forkScoped(elector.run)
        ))
      yield* TestClock.adjust(Duration.seconds(10))
      expect(warnings).toEqual([])
      store.set(Faulty.fail, "inspect")
      yield* TestClock.adjust(Duration.seconds(150))
      expect(store.calls.inspect).toBeGreaterThan(100)
      expect(warnings).toHaveLength(3)
      expect(warnings[0]).toBe(
        "inspect failed (retryable): injected (a poll, tried again at the next; repeats are logged at most once a minute per store)"
      )
      expect(warnings.slice(1).every((line) => /, \d+ not logged since the last\)$/.test(line))).toBe(true)
    }))

  it.scoped("keeps the count for each store apart", () =>
    Effect.gen(function*() {
      const warnings = yield* captureWarnings
      const one = Faulty.make(yield* world)
      const two = Faulty.make(yield* world)
      one.set(Faulty.fail)
      two.set(Faulty.fail)
      yield* fleet(one, 5)
      yield* fleet(two, 5)
      yield* TestClock.adjust(Duration.seconds(30))
      expect(warnings).toEqual([
        `inspect failed (retryable): injected (${quietly})`,
        `inspect failed (retryable): injected (${quietly})`
      ])
    }))

  it.scoped("a participant on a clock behind the one that logged (a simulation's) logs rather than stays quiet", () =>
    Effect.gen(function*() {
      const warnings = yield* captureWarnings
      const store = {}
      const why = "no answer from the store yet"
      yield* Quiet.warn(store, why, 10_000_000_000n, "ahead")
      yield* Quiet.warn(store, why, 10_000_000_001n, "quiet")
      yield* Quiet.warn(store, why, 5_000_000_000n, "behind")
      expect(warnings).toEqual([`ahead (${quietly})`, `behind (${quietly}, 1 not logged since the last)`])
    }))
})
