/**
 * What an elector tells the store of each call (`Store.CallContext`):
 * whether the participant is joining, decided by the elector from its one
 * "has had an answer" state, and the loop that ends the call itself, named
 * only on the path that runs the call on the loop's fiber; and that the
 * fibers it forks (a term's work) carry none.
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Option, TestClock } from "effect"
import * as Elector from "../src/Elector.js"
import * as Store from "../src/Store.js"
import { StoreError } from "../src/Store.js"
import * as MemoryStore from "../src/stores/MemoryStore.js"

interface Seen {
  readonly operation: string
  readonly joining: boolean | undefined
  readonly caller: boolean
}

/**
 * `db` with the context of every lease call recorded. Its first poll hears a
 * wake-up hint while in flight, then fails: the participant claims next,
 * before any poll of it has been answered.
 */
const recording = (db: Store.StoreShape, answersWithin: Duration.Duration | undefined) => {
  const seen: Array<Seen> = []
  let wake: (() => void) | undefined
  let polls = 0
  const record = <A, E>(operation: string, effect: Effect.Effect<A, E>) =>
    Effect.zipRight(
      Effect.map(Effect.serviceOption(Store.CallContext), (context) => {
        seen.push({
          operation,
          joining: Option.getOrUndefined(context)?.joining,
          caller: Option.exists(context, (c) => c.caller !== undefined)
        })
      }),
      effect
    )
  const store: Store.StoreShape = {
    ...db,
    answersWithin,
    wakeUps: {
      subscribe: (_name, subscriber) =>
        Effect.sync(() => {
          wake = subscriber
        })
    },
    inspect: (name) =>
      record(
        "inspect",
        polls++ > 0 ? db.inspect(name) : Effect.suspend(() => {
          wake?.()
          return Effect.fail(
            new StoreError({ operation: "inspect", retryable: true, reason: "timed out", cause: null })
          )
        })
      ),
    acquire: (...args) => record("acquire", db.acquire(...args))
  }
  return { seen, store }
}

const hintedBeforeFirstAnswer = (answersWithin: Duration.Duration | undefined) =>
  Effect.gen(function*() {
    const db = yield* MemoryStore.make()
    yield* db.acquire("job", "other", Duration.minutes(10), null)
    const { seen, store } = recording(db, answersWithin)
    const elector = yield* Elector.make({ name: "job", identity: "me", retryPeriod: "1 second" }).pipe(
      Effect.provideService(Store.Store, store)
    )
    yield* Effect.forkScoped(elector.run)
    yield* TestClock.adjust(Duration.seconds(3))
    return seen.slice(0, 3)
  })

describe("Store.CallContext", () => {
  it.scoped("a participant woken by a hint claims as a joiner, and its next poll is a joined one's", () =>
    Effect.gen(function*() {
      // The claim's answer is its first: from then on it has joined, for the
      // store as for its own backoff.
      expect(yield* hintedBeforeFirstAnswer(Duration.seconds(1))).toEqual([
        { operation: "inspect", joining: true, caller: true },
        { operation: "acquire", joining: true, caller: true },
        { operation: "inspect", joining: false, caller: true }
      ])
    }))

  it.scoped("a call run in a fiber of its own has the same context, without a caller: it keeps its canceller", () =>
    Effect.gen(function*() {
      expect(yield* hintedBeforeFirstAnswer(undefined)).toEqual([
        { operation: "inspect", joining: true, caller: false },
        { operation: "acquire", joining: true, caller: false },
        { operation: "inspect", joining: false, caller: false }
      ])
    }))

  it.effect("a call made outside an elector has none", () =>
    Effect.gen(function*() {
      const db = yield* MemoryStore.make()
      const { seen, store } = recording(db, undefined)
      yield* store.acquire("job", "me", Duration.seconds(10), null)
      expect(seen).toEqual([{ operation: "acquire", joining: undefined, caller: false }])
    }))

  it.scoped("a leader's work is not its loop: its store calls carry no context", () =>
    Effect.gen(function*() {
      const db = yield* MemoryStore.make()
      const { seen, store } = recording(db, Duration.seconds(1))
      const elector = yield* Elector.make({
        name: "job",
        identity: "me",
        onStartedLeading: () => store.acquire("other", "me", Duration.seconds(10), null)
      }).pipe(Effect.provideService(Store.Store, store))
      yield* Effect.forkScoped(elector.run)
      yield* TestClock.adjust(Duration.seconds(1))
      expect(yield* elector.isLeader).toBe(true)
      expect(seen.filter((s) => s.operation === "acquire")).toEqual([
        { operation: "acquire", joining: true, caller: true },
        { operation: "acquire", joining: undefined, caller: false }
      ])
    }))
})
