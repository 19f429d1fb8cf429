/**
 * Renewals coalesced into requests (src/stores/internal/batch.ts), on a fake
 * request that answers when the test says, under the TestClock: one renewal
 * alone goes at once; those that meet a request in flight go together in the
 * next, each answered its own; a request that fails fails each of its
 * renewals; a caller that stops waiting, queued or sent, neither blocks nor
 * is blocked by the others; each caller keeps its own deadline.
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Duration, Effect, Either, Exit, Fiber, FiberId, Option, TestClock } from "effect"
import * as Caller from "../src/internal/runtime/caller.js"
import type { Lease } from "../src/Lease.js"
import * as Store from "../src/Store.js"
import { LeaseLost, StoreError } from "../src/Store.js"
import * as Batch from "../src/stores/internal/batch.js"

const timeout = Duration.seconds(1)

const leaseOf = (name: string, fence: bigint): Lease => ({
  name,
  holder: "a",
  fence,
  payload: null,
  acquiredAt: new Date(0),
  renewedAt: new Date(0),
  expiresAt: new Date(15_000),
  now: new Date(0)
})

const broken = new StoreError({ operation: "renew", retryable: true, reason: "connection reset", cause: undefined })

/** Requests the test answers, oldest first: each request's renewals, as names. */
const setup = (limit = 10) =>
  Effect.sync(() => {
    const requests: Array<ReadonlyArray<Batch.Renewal>> = []
    const pending: Array<Deferred.Deferred<ReadonlyArray<Lease | undefined>, StoreError>> = []
    const renew = Batch.renewals<StoreError>(
      (renewals) =>
        Effect.suspend(() => {
          requests.push(renewals)
          const answer = Deferred.unsafeMake<ReadonlyArray<Lease | undefined>, StoreError>(FiberId.none)
          pending.push(answer)
          return Deferred.await(answer)
        }),
      {
        limit,
        timeout,
        timedOut: () => new StoreError({ operation: "renew", retryable: true, reason: "timed out", cause: undefined })
      }
    )
    /** Renews `name` under `fence` on a fiber of its own, and lets it queue. */
    const start = (name: string, fence = 1n) =>
      Effect.tap(
        Effect.fork(Effect.either(renew(name, "a", fence, Duration.seconds(15), null))),
        () => Effect.yieldNow()
      )
    /** Answers the oldest request still pending: each renewal renewed, unless its name is in `lost`. */
    const answer = (lost: ReadonlyArray<string> = []) =>
      Effect.gen(function*() {
        const renewals = requests[requests.length - pending.length]!
        yield* Deferred.succeed(
          pending.shift()!,
          renewals.map((renewal) => lost.includes(renewal.name) ? undefined : leaseOf(renewal.name, renewal.fence))
        )
        yield* Effect.yieldNow()
      })
    const fail = () => Effect.suspend(() => Effect.zipRight(Deferred.fail(pending.shift()!, broken), Effect.yieldNow()))
    const names = () => requests.map((renewals) => renewals.map((renewal) => renewal.name))
    return { renew, start, answer, fail, names }
  })

describe("batched renewals (stores/internal/batch.ts)", () => {
  it.effect("a renewal alone goes at once, alone; those that meet it in flight go together next, sorted", () =>
    Effect.gen(function*() {
      const { answer, names, start } = yield* setup()
      const first = yield* start("e1")
      expect(names()).toEqual([["e1"]])
      const later = [yield* start("e4"), yield* start("e2"), yield* start("e3")]
      // Nothing more is sent while the first request is in flight.
      expect(names()).toEqual([["e1"]])
      yield* answer()
      expect(yield* Fiber.join(first)).toEqual(Either.right(leaseOf("e1", 1n)))
      expect(names()).toEqual([["e1"], ["e2", "e3", "e4"]])
      yield* answer()
      for (const [i, name] of ["e4", "e2", "e3"].entries()) {
        expect(yield* Fiber.join(later[i]!)).toEqual(Either.right(leaseOf(name, 1n)))
      }
    }))

  it.effect("with `alone`, a renewal that finds nothing in flight is the caller's own call, on its fiber", () =>
    Effect.gen(function*() {
      const requests: Array<ReadonlyArray<string>> = []
      const fibers: Array<number> = []
      const release = yield* Deferred.make<void>()
      const renew = Batch.renewals<StoreError>(
        (renewals) =>
          Effect.sync(() => {
            requests.push(renewals.map((renewal) => renewal.name))
            return renewals.map((renewal) => leaseOf(renewal.name, renewal.fence))
          }),
        {
          limit: 10,
          timeout,
          timedOut: () => broken,
          alone: (renewal) =>
            Effect.withFiberRuntime((fiber) => {
              fibers.push(fiber.id().id)
              return Effect.as(Deferred.await(release), leaseOf(renewal.name, renewal.fence))
            })
        }
      )
      const first = yield* Effect.fork(renew("e1", "a", 1n, Duration.seconds(15), null))
      yield* Effect.yieldNow()
      expect(fibers).toEqual([first.id().id])
      // Those that meet it queue, and go together once it ends, however it ends.
      const later: Array<Fiber.RuntimeFiber<Lease, LeaseLost | StoreError>> = []
      for (const name of ["e3", "e2"]) {
        later.push(yield* Effect.fork(renew(name, "a", 1n, Duration.seconds(15), null)))
        yield* Effect.yieldNow()
      }
      expect(requests).toEqual([])
      yield* Fiber.interrupt(first)
      expect(yield* Fiber.join(Fiber.all(later))).toEqual([leaseOf("e3", 1n), leaseOf("e2", 1n)])
      expect(requests).toEqual([["e2", "e3"]])
      // Nothing in flight again: the next one alone.
      yield* Deferred.succeed(release, undefined)
      expect(yield* renew("e4", "a", 1n, Duration.seconds(15), null)).toEqual(leaseOf("e4", 1n))
      expect(fibers).toHaveLength(2)
      expect(requests).toEqual([["e2", "e3"]])
    }))

  it.effect("a request of one is a call alone; a request carrying a joiner's call is a joiner's", () =>
    Effect.gen(function*() {
      const calls: Array<
        { readonly names: ReadonlyArray<string>; readonly alone: boolean; readonly joining?: boolean }
      > = []
      let hold = yield* Deferred.make<void>()
      const recorded = (names: ReadonlyArray<string>, alone: boolean) =>
        Effect.map(Effect.serviceOption(Store.CallContext), (context) => {
          calls.push({
            names,
            alone,
            ...Option.match(context, { onNone: () => ({}), onSome: ({ joining }) => ({ joining }) })
          })
        })
      const renew = Batch.renewals<StoreError>(
        (renewals) =>
          Effect.as(
            recorded(renewals.map((renewal) => renewal.name), false),
            renewals.map((renewal) => leaseOf(renewal.name, renewal.fence))
          ),
        {
          limit: 10,
          timeout,
          timedOut: () => broken,
          alone: (renewal) =>
            recorded([renewal.name], true).pipe(
              Effect.zipRight(Deferred.await(hold)),
              Effect.as(leaseOf(renewal.name, renewal.fence))
            )
        }
      )
      const call = (name: string, joining?: boolean) =>
        Effect.tap(
          Effect.fork(
            joining === undefined
              ? renew(name, "a", 1n, Duration.seconds(15), null)
              : Effect.provideService(renew(name, "a", 1n, Duration.seconds(15), null), Store.CallContext, {
                joining,
                caller: undefined
              })
          ),
          () => Effect.yieldNow()
        )
      const first = yield* call("e1")
      const met = [yield* call("e3"), yield* call("e2", true)]
      yield* Deferred.succeed(hold, undefined)
      yield* Fiber.join(Fiber.all([first, ...met]))
      hold = yield* Deferred.make<void>()
      const fourth = yield* call("e4")
      const fifth = yield* call("e5", true)
      yield* Deferred.succeed(hold, undefined)
      expect(yield* Fiber.join(Fiber.all([fourth, fifth]))).toEqual([leaseOf("e4", 1n), leaseOf("e5", 1n)])
      expect(calls).toEqual([
        { names: ["e1"], alone: true },
        { names: ["e2", "e3"], alone: false, joining: true },
        { names: ["e4"], alone: true },
        // Alone, but on the request's fiber: a joiner's still.
        { names: ["e5"], alone: true, joining: true }
      ])
    }))

  it.effect("a request partly renewed: each caller gets its own answer, LeaseLost only where its guard matched nothing", () =>
    Effect.gen(function*() {
      const { answer, start } = yield* setup()
      const first = yield* start("e0")
      const others = [yield* start("e1", 7n), yield* start("e2", 8n), yield* start("e3", 9n)]
      yield* answer()
      yield* Fiber.join(first)
      yield* answer(["e2"])
      expect(yield* Fiber.join(others[0]!)).toEqual(Either.right(leaseOf("e1", 7n)))
      expect(yield* Fiber.join(others[1]!)).toEqual(
        Either.left(new LeaseLost({ name: "e2", identity: "a", fence: 8n }))
      )
      expect(yield* Fiber.join(others[2]!)).toEqual(Either.right(leaseOf("e3", 9n)))
    }))

  it.effect("a request that fails fails every renewal in it, and the next request goes", () =>
    Effect.gen(function*() {
      const { answer, fail, names, start } = yield* setup()
      const first = yield* start("e1")
      const second = yield* start("e2")
      yield* fail()
      expect(yield* Fiber.join(first)).toEqual(Either.left(broken))
      expect(names()).toEqual([["e1"], ["e2"]])
      const third = yield* start("e3")
      yield* fail()
      expect(yield* Fiber.join(second)).toEqual(Either.left(broken))
      yield* answer()
      expect(yield* Fiber.join(third)).toEqual(Either.right(leaseOf("e3", 1n)))
    }))

  it.effect("a request that dies gives each of its callers the defect", () =>
    Effect.gen(function*() {
      const renew = Batch.renewals<StoreError>(() => Effect.die("boom"), {
        limit: 10,
        timeout,
        timedOut: () => broken
      })
      const exit = yield* Effect.exit(renew("e1", "a", 1n, Duration.seconds(15), null))
      expect(exit).toEqual(Exit.die("boom"))
    }))

  it.effect("a caller interrupted while queued is never sent; one interrupted once sent blocks nobody", () =>
    Effect.gen(function*() {
      const { answer, names, start } = yield* setup()
      const first = yield* start("e1")
      const queued = yield* start("e2")
      const kept = yield* start("e3")
      yield* Fiber.interrupt(queued)
      yield* Fiber.interrupt(first)
      yield* answer()
      expect(names()).toEqual([["e1"], ["e3"]])
      const next = yield* start("e4")
      yield* answer()
      expect(yield* Fiber.join(kept)).toEqual(Either.right(leaseOf("e3", 1n)))
      yield* answer()
      expect(yield* Fiber.join(next)).toEqual(Either.right(leaseOf("e4", 1n)))
    }))

  it.effect("each caller keeps its own deadline, queued or sent; the others go on once the slow request answers", () =>
    Effect.gen(function*() {
      const { answer, names, start } = yield* setup()
      const first = yield* start("e1")
      yield* TestClock.adjust(Duration.millis(500))
      const second = yield* start("e2")
      yield* TestClock.adjust(Duration.millis(500))
      expect(Either.getLeft(yield* Fiber.join(first)).pipe((e) => e._tag === "Some" && e.value.message)).toMatch(
        /timed out/
      )
      yield* TestClock.adjust(Duration.millis(500))
      expect(yield* Fiber.join(second)).toEqual(
        Either.left(new StoreError({ operation: "renew", retryable: true, reason: "timed out", cause: undefined }))
      )
      // The slow request answers nobody; the one queued behind it was never
      // sent, its caller gone.
      yield* answer()
      expect(names()).toEqual([["e1"]])
      const third = yield* start("e3")
      yield* answer()
      expect(yield* Fiber.join(third)).toEqual(Either.right(leaseOf("e3", 1n)))
    }))

  it.effect("no request carries more than the limit: the rest go in the next", () =>
    Effect.gen(function*() {
      const { answer, names, start } = yield* setup(2)
      const fibers = [yield* start("e1"), yield* start("e2"), yield* start("e3"), yield* start("e4")]
      yield* answer()
      yield* answer()
      yield* answer()
      expect(names()).toEqual([["e1"], ["e2", "e3"], ["e4"]])
      for (const fiber of fibers) expect(Either.isRight(yield* Fiber.join(fiber))).toBe(true)
    }))

  it.effect("a caller whose loop ends its calls is handed the renewal in flight, and its stop abandons it", () =>
    Effect.gen(function*() {
      const { answer, names, renew } = yield* setup()
      const busy = new Caller.Caller()
      const loop = new Caller.Caller()
      const call = (caller: Caller.Caller, name: string) =>
        Effect.fork(
          Effect.provideService(renew(name, "a", 1n, Duration.seconds(15), null), Store.CallContext, {
            joining: false,
            caller
          })
        )
      const first = yield* call(busy, "e1")
      yield* Effect.yieldNow()
      const queued = yield* call(loop, "e2")
      yield* Effect.yieldNow()
      // Its loop stopped: the renewal is abandoned, and never sent.
      loop.stop()
      yield* Fiber.interrupt(queued)
      yield* answer()
      expect(yield* Fiber.join(first)).toEqual(leaseOf("e1", 1n))
      expect(names()).toEqual([["e1"]])
    }))
})
