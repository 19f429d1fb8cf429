import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Exit, Metric, MetricBoundaries, Option, Scope, TestClock, Tracer } from "effect"
import * as Elector from "../src/Elector.js"
import * as Metrics from "../src/Metrics.js"
import * as Store from "../src/Store.js"
import * as MemoryStore from "../src/stores/MemoryStore.js"
import * as Faulty from "../src/testing/FaultyStore.js"
import { steady } from "./support/steady.js"

// The database clock is three days ahead of the local one, as in every unit test.
const world = Effect.flatMap(
  MemoryStore.makeClock({ offset: Duration.days(3) }),
  (clock) => MemoryStore.make({ clock })
)

let elections = 0
/** A fresh election per test: metrics are process-wide, their tags keep the tests apart. */
const election = () => `metrics-${++elections}`

// Series carry the election only; the identity is on the info gauge alone.
const tagged = <Type, In, Out>(metric: Metric.Metric<Type, In, Out>, name: string) =>
  Metric.tagged(metric, "election", name)

const read = (name: string) =>
  Effect.all({
    leading: Effect.map(Metric.value(tagged(Metrics.isLeader, name)), (s) => s.value),
    terms: Effect.map(Metric.value(tagged(Metrics.terms, name)), (s) => s.count)
  })

const stepDowns = (name: string, reason: Metrics.StepDownReason) =>
  Effect.map(Metric.value(Metric.tagged(tagged(Metrics.stepDowns, name), "reason", reason)), (s) => s.count)

const storeErrors = (name: string, operation: Store.Operation, kind: "retryable" | "fatal") =>
  Effect.map(
    Metric.value(Metric.tagged(Metric.tagged(tagged(Metrics.storeErrors, name), "operation", operation), "kind", kind)),
    (s) => s.count
  )

const info = (name: string, identity: string) =>
  Effect.map(Metric.value(Metric.tagged(tagged(Metrics.info, name), "identity", identity)), (s) => s.value)

/** The tags of every series this election has in the process-wide registry, by metric name. */
const series = (name: string) =>
  Effect.map(Metric.snapshot, (pairs) =>
    pairs.flatMap((pair) => {
      const tags = Object.fromEntries(pair.metricKey.tags.map((t) => [t.key, t.value]))
      return tags["election"] === name ? [{ metric: pair.metricKey.name, tags }] : []
    }))

const seconds = (n: number) => TestClock.adjust(Duration.millis(n * 1000))

const join = (store: Store.StoreShape, config: Elector.ElectorConfig) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const elector = yield* Elector.make(config).pipe(Effect.provideService(Store.Store, store), Scope.extend(scope))
    yield* Effect.forkIn(steady(elector.run), scope)
    yield* TestClock.adjust(Duration.millis(1))
    return { elector, scope }
  })

describe("Metrics", () => {
  it.scoped("counts a term, times its renewals and records a shutdown step-down", () =>
    Effect.gen(function*() {
      const name = election()
      const db = yield* world
      const before = yield* read(name)
      const { elector, scope } = yield* join(db, { name, identity: "a" })
      expect(yield* elector.isLeader).toBe(true)
      const leading = yield* read(name)
      expect(leading.leading).toBe(1)
      expect(leading.terms).toBe(before.terms + 1)
      yield* seconds(60)
      const latency = yield* Metric.value(tagged(Metrics.renewLatency, name))
      expect(latency.count).toBe(12)
      // On TestClock a renewal takes no time at all: every sample is 0ms.
      expect(latency.sum).toBe(0)
      yield* Scope.close(scope, Exit.void)
      const after = yield* read(name)
      expect(after.leading).toBe(0)
      expect(yield* stepDowns(name, "shutdown")).toBe(1)
      expect(yield* stepDowns(name, "expired")).toBe(0)
    }))

  it.scoped("reports a follower as not leading from the start", () =>
    Effect.gen(function*() {
      const name = election()
      const db = yield* world
      // The leader is another process: only the follower reports here.
      yield* db.acquire(name, "elsewhere", Duration.seconds(15), null)
      yield* join(db, { name, identity: "b" })
      const follower = yield* read(name)
      expect(follower.leading).toBe(0)
      expect(follower.terms).toBe(0)
    }))

  it.scoped("a participant that joins while another of its election leads in this process does not reset is_leader", () =>
    Effect.gen(function*() {
      const name = election()
      const db = yield* world
      const leader = yield* join(db, { name, identity: "a" })
      expect(yield* leader.elector.isLeader).toBe(true)
      yield* join(db, { name, identity: "b" })
      expect((yield* read(name)).leading).toBe(1)
      // a releases; b takes over at its next poll (retryPeriod 3s).
      yield* Scope.close(leader.scope, Exit.void)
      yield* seconds(4)
      expect((yield* read(name)).leading).toBe(1)
    }))

  it.scoped("names the identity on the info gauge only: a restart with a new identity starts no new series", () =>
    Effect.gen(function*() {
      const name = election()
      const db = yield* world
      const first = yield* join(db, { name })
      yield* seconds(6)
      expect(yield* info(name, first.elector.config.identity)).toBe(1)
      const before = yield* series(name)
      expect(before.filter((s) => "identity" in s.tags).map((s) => s.metric)).toEqual(["leaderelection_info"])
      yield* Scope.close(first.scope, Exit.void)
      expect(yield* info(name, first.elector.config.identity)).toBe(0)
      // The same participant restarted, under a freshly generated identity.
      const second = yield* join(db, { name })
      yield* seconds(6)
      expect(second.elector.config.identity).not.toBe(first.elector.config.identity)
      expect(yield* info(name, second.elector.config.identity)).toBe(1)
      const after = yield* series(name)
      const withoutIdentity = (list: typeof before) =>
        list.filter((s) => !("identity" in s.tags)).map((s) => `${s.metric} ${JSON.stringify(s.tags)}`).sort()
      // stepDowns{reason=shutdown} appeared with the first shutdown; nothing else is new.
      expect(withoutIdentity(after)).toEqual(
        [...withoutIdentity(before), `leaderelection_step_downs_total {"election":"${name}","reason":"shutdown"}`]
          .sort()
      )
      expect(after.filter((s) => "identity" in s.tags)).toHaveLength(2)
    }))

  it.scoped("records an expired term and the retryable renewal failures behind it", () =>
    Effect.gen(function*() {
      const name = election()
      const store = Faulty.make(yield* world)
      yield* join(store, { name, identity: "a" })
      store.set(Faulty.fail)
      yield* seconds(15)
      const metrics = yield* read(name)
      expect(metrics.leading).toBe(0)
      expect(yield* stepDowns(name, "expired")).toBe(1)
      expect(yield* storeErrors(name, "renew", "retryable")).toBeGreaterThan(1)
      expect(yield* storeErrors(name, "renew", "fatal")).toBe(0)
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
      const metrics = yield* read(name)
      expect(metrics.leading).toBe(0)
      expect(yield* stepDowns(name, "lost")).toBe(1)
      expect(yield* storeErrors(name, "inspect", "fatal")).toBeGreaterThan(0)
    }))

  /** A store that records the span each call runs in. */
  const spied = (db: Store.StoreShape) => {
    const spans: Array<{ readonly name: string; readonly attributes: Record<string, unknown> }> = []
    const record = <A, E>(effect: Effect.Effect<A, E>) =>
      Effect.gen(function*() {
        const span = yield* Effect.option(Effect.currentSpan)
        if (Option.isSome(span)) {
          spans.push({ name: span.value.name, attributes: Object.fromEntries(span.value.attributes) })
        }
        return yield* effect
      })
    const store: Store.StoreShape = {
      acquire: (...args) => record(db.acquire(...args)),
      renew: (...args) => record(db.renew(...args)),
      release: (...args) => record(db.release(...args)),
      inspect: (...args) => record(db.inspect(...args))
    }
    return { spans, store }
  }

  it.scoped("with a tracer installed, runs every store call in a span named for its operation", () =>
    Effect.gen(function*() {
      const name = election()
      const { spans, store } = spied(yield* world)
      // Any tracer but Effect's own, which nothing reads.
      const native = yield* Effect.tracer
      yield* Effect.withTracerScoped(Tracer.make({ span: native.span, context: native.context }))
      const { scope } = yield* join(store, { name, identity: "a" })
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

  it.scoped("without a tracer installed, a store call makes no span", () =>
    Effect.gen(function*() {
      const name = election()
      const { spans, store } = spied(yield* world)
      const { scope } = yield* join(store, { name, identity: "a" })
      yield* seconds(5)
      yield* Scope.close(scope, Exit.void)
      expect(spans).toEqual([])
    }))
})

describe("Metrics.prometheusText", () => {
  it.effect("gives counters, gauges and histograms in the text format, one HELP and TYPE per name", () =>
    Effect.gen(function*() {
      const name = election()
      const jobs = Metric.counter(`${name.replace(/-/g, "_")}_jobs_total`, { description: "Jobs run\nby a \\ worker" })
      const depth = Metric.gauge(`${name.replace(/-/g, "_")}_depth`)
      const latency = Metric.histogram(
        `${name.replace(/-/g, "_")}_latency`,
        MetricBoundaries.fromIterable([1, 10])
      )
      const outcomes = Metric.frequency(`${name.replace(/-/g, "_")}_outcomes`)
      yield* Metric.incrementBy(Metric.tagged(tagged(jobs, name), "queue", "a\"b\\c\nd"), 2)
      yield* Metric.increment(Metric.tagged(tagged(jobs, name), "queue", "plain"))
      yield* Metric.set(tagged(depth, name), 7)
      yield* Metric.update(tagged(latency, name), 5)
      yield* Metric.update(tagged(outcomes, name), "ok")
      const text = yield* Metrics.prometheusText({ election: name })
      const prefix = name.replace(/-/g, "_")
      expect(text).toContain(
        `# HELP ${prefix}_jobs_total Jobs run\\nby a \\\\ worker\n# TYPE ${prefix}_jobs_total counter\n`
      )
      expect(text).toContain(`${prefix}_jobs_total{election="${name}",queue="a\\"b\\\\c\\nd"} 2\n`)
      expect(text).toContain(`${prefix}_jobs_total{election="${name}",queue="plain"} 1\n`)
      expect(text.match(new RegExp(`# TYPE ${prefix}_jobs_total`, "g"))).toHaveLength(1)
      // Without a description, the help is the name.
      expect(text).toContain(`# HELP ${prefix}_depth ${prefix}_depth\n# TYPE ${prefix}_depth gauge\n`)
      expect(text).toContain(`${prefix}_depth{election="${name}"} 7\n`)
      expect(text).toContain(`# TYPE ${prefix}_latency histogram\n`)
      expect(text).toContain(`${prefix}_latency_bucket{election="${name}",le="1"} 0\n`)
      expect(text).toContain(`${prefix}_latency_bucket{election="${name}",le="10"} 1\n`)
      expect(text).toContain(`${prefix}_latency_bucket{election="${name}",le="+Inf"} 1\n`)
      expect(text).toContain(`${prefix}_latency_sum{election="${name}"} 5\n`)
      expect(text).toContain(`${prefix}_latency_count{election="${name}"} 1\n`)
      // A frequency has no Prometheus type.
      expect(text).not.toContain("_outcomes")
    }))

  it.scoped("selects an election's series, and leaves out other identities' info; without options, all", () =>
    Effect.gen(function*() {
      const name = election()
      const other = election()
      const store = yield* world
      const { scope: a } = yield* join(store, { name, identity: "a" })
      const { scope: b } = yield* join(store, { name, identity: "b" })
      const { scope: c } = yield* join(store, { name: other, identity: "c" })
      const ours = yield* Metrics.prometheusText({ election: name, identity: "a" })
      expect(ours).toContain(`leaderelection_info{election="${name}",identity="a"} 1\n`)
      expect(ours).toContain(`leaderelection_is_leader{election="${name}"} 1\n`)
      expect(ours).not.toContain(`identity="b"`)
      expect(ours.match(/election="[^"]*"/g)?.every((label) => label === `election="${name}"`)).toBe(true)
      const theirs = yield* Metrics.prometheusText({ election: name })
      expect(theirs).toContain(`leaderelection_info{election="${name}",identity="b"} 1\n`)
      const all = yield* Metrics.prometheusText()
      expect(all).toContain(`leaderelection_info{election="${other}",identity="c"} 1\n`)
      expect(all).toContain(`leaderelection_info{election="${name}",identity="b"} 1\n`)
      yield* Effect.forEach([c, b, a], (scope) => Scope.close(scope, Exit.void))
    }))
})
