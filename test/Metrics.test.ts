import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Exit, Metric, Option, Scope, TestClock } from "effect"
import * as Elector from "../src/Elector.js"
import * as Metrics from "../src/Metrics.js"
import * as Store from "../src/Store.js"
import * as MemoryStore from "../src/stores/MemoryStore.js"
import * as Faulty from "./support/FaultyStore.js"

// The database clock is three days ahead of the local one, as in every unit test.
const world = Effect.flatMap(MemoryStore.makeClock({ offset: Duration.days(3) }), (clock) => MemoryStore.make({ clock }))

let elections = 0
/** A fresh election per test: metrics are process-wide, their tags keep the tests apart. */
const election = () => `metrics-${++elections}`

const tagged = <Type, In, Out>(metric: Metric.Metric<Type, In, Out>, name: string, identity: string) =>
  Metric.tagged(Metric.tagged(metric, "election", name), "identity", identity)

const read = (name: string, identity: string) =>
  Effect.all({
    leading: Effect.map(Metric.value(tagged(Metrics.isLeader, name, identity)), (s) => s.value),
    terms: Effect.map(Metric.value(tagged(Metrics.terms, name, identity)), (s) => s.count)
  })

const stepDowns = (name: string, identity: string, reason: Metrics.StepDownReason) =>
  Effect.map(Metric.value(Metric.tagged(tagged(Metrics.stepDowns, name, identity), "reason", reason)), (s) => s.count)

const storeErrors = (name: string, identity: string, operation: Store.Operation, kind: "retryable" | "fatal") =>
  Effect.map(
    Metric.value(
      Metric.tagged(Metric.tagged(tagged(Metrics.storeErrors, name, identity), "operation", operation), "kind", kind)
    ),
    (s) => s.count
  )

const seconds = (n: number) => TestClock.adjust(Duration.millis(n * 1000))

const join = (store: Store.StoreShape, config: Elector.ElectorConfig) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const elector = yield* Elector.make(config).pipe(Effect.provideService(Store.Store, store), Scope.extend(scope))
    yield* Effect.forkIn(elector.run, scope)
    yield* TestClock.adjust(Duration.millis(1))
    return { elector, scope }
  })

describe("Metrics", () => {
  it.scoped("counts a term, times its renewals and records a shutdown step-down", () =>
    Effect.gen(function*() {
      const name = election()
      const db = yield* world
      const before = yield* read(name, "a")
      const { elector, scope } = yield* join(db, { name, identity: "a" })
      expect(yield* elector.isLeader).toBe(true)
      const leading = yield* read(name, "a")
      expect(leading.leading).toBe(1)
      expect(leading.terms).toBe(before.terms + 1)
      yield* seconds(60)
      const latency = yield* Metric.value(tagged(Metrics.renewLatency, name, "a"))
      expect(latency.count).toBe(12)
      // On TestClock a renewal takes no time at all: every sample is 0ms.
      expect(latency.sum).toBe(0)
      yield* Scope.close(scope, Exit.void)
      const after = yield* read(name, "a")
      expect(after.leading).toBe(0)
      expect(yield* stepDowns(name, "a", "shutdown")).toBe(1)
      expect(yield* stepDowns(name, "a", "expired")).toBe(0)
    }))

  it.scoped("reports a follower as not leading from the start", () =>
    Effect.gen(function*() {
      const name = election()
      const db = yield* world
      yield* join(db, { name, identity: "a" })
      yield* join(db, { name, identity: "b" })
      const follower = yield* read(name, "b")
      expect(follower.leading).toBe(0)
      expect(follower.terms).toBe(0)
    }))

  it.scoped("records an expired term and the retryable renewal failures behind it", () =>
    Effect.gen(function*() {
      const name = election()
      const store = Faulty.make(yield* world)
      yield* join(store, { name, identity: "a" })
      store.set(Faulty.fail)
      yield* seconds(15)
      const metrics = yield* read(name, "a")
      expect(metrics.leading).toBe(0)
      expect(yield* stepDowns(name, "a", "expired")).toBe(1)
      expect(yield* storeErrors(name, "a", "renew", "retryable")).toBeGreaterThan(1)
      expect(yield* storeErrors(name, "a", "renew", "fatal")).toBe(0)
    }))

  it.scoped("records a lost lease, and fatal errors by operation", () =>
    Effect.gen(function*() {
      const name = election()
      const db = yield* world
      const store = Faulty.make(db)
      yield* join(store, { name, identity: "a" })
      // Someone else takes the lease behind a's back: a's next renewal is refused.
      yield* db.release(name, "a", 1n)
      yield* db.acquire(name, "b", Duration.seconds(15), null)
      store.set(Faulty.fatal, "inspect")
      yield* seconds(6)
      const metrics = yield* read(name, "a")
      expect(metrics.leading).toBe(0)
      expect(yield* stepDowns(name, "a", "lost")).toBe(1)
      expect(yield* storeErrors(name, "a", "inspect", "fatal")).toBeGreaterThan(0)
    }))

  it.scoped("runs every store call in a span named for its operation", () =>
    Effect.gen(function*() {
      const name = election()
      const db = yield* world
      const spans: Array<{ readonly name: string; readonly attributes: Record<string, unknown> }> = []
      const record = <A, E>(effect: Effect.Effect<A, E>) =>
        Effect.gen(function*() {
          const span = yield* Effect.option(Effect.currentSpan)
          if (Option.isSome(span)) spans.push({ name: span.value.name, attributes: Object.fromEntries(span.value.attributes) })
          return yield* effect
        })
      const traced: Store.StoreShape = {
        acquire: (...args) => record(db.acquire(...args)),
        renew: (...args) => record(db.renew(...args)),
        release: (...args) => record(db.release(...args)),
        inspect: (...args) => record(db.inspect(...args))
      }
      const { scope } = yield* join(traced, { name, identity: "a" })
      yield* seconds(5)
      yield* Scope.close(scope, Exit.void)
      expect(spans.map((s) => s.name)).toEqual([
        "leaderelection.inspect",
        "leaderelection.acquire",
        "leaderelection.renew",
        "leaderelection.release"
      ])
      expect(spans[1]?.attributes).toEqual({ election: name, identity: "a" })
      expect(spans[2]?.attributes).toEqual({ election: name, identity: "a", fence: "1" })
      expect(spans[3]?.attributes).toEqual({ election: name, identity: "a", fence: "1" })
    }))
})
