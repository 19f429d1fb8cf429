import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import type * as MetricLabel from "effect/MetricLabel"
import type * as Tracer from "effect/Tracer"
import * as Metrics from "../../Metrics.js"
import type { Operation, StoreError } from "../../Store.js"
import * as Runtime from "../runtime/runtime.js"
import { labels, renewLatencyHistogram, series, withFiberLabels } from "./metricSeries.js"

/**
 * The metrics and spans of one participant. Metrics are tagged with the
 * election only: a generated identity is new on every restart, and as a tag it
 * would start new series each time. It goes on the info gauge alone, and on
 * spans.
 */
export interface Instrumentation {
  readonly termStarted: Effect.Effect<void>
  readonly termEnded: (reason: Metrics.StepDownReason) => Effect.Effect<void>
  readonly renewed: (latency: Duration.Duration) => Effect.Effect<void>
  readonly storeFailed: (error: StoreError) => Effect.Effect<void>
  readonly callbackFailed: (
    callback: Metrics.Callback,
    outcome: "failure" | "defect" | "interrupt"
  ) => Effect.Effect<void>
  readonly callbackDropped: Effect.Effect<void>
  readonly storeFatal: (failing: boolean) => Effect.Effect<void>
  /** An answer showed the participant's identity held by another live process. */
  readonly identityCollision: Effect.Effect<void>
  /** Runs a store call in a span named for its operation (see {@link isNative}: a caller skips it without a tracer). */
  readonly span: (
    operation: Operation,
    fence: bigint | undefined
  ) => <A, E>(call: Effect.Effect<A, E>) => Effect.Effect<A, E>
}

let nativeTracer: Tracer.Tracer | undefined
/**
 * Whether `tracer` is Effect's own, which a fiber has unless the application
 * installs another: nothing reads its spans, so a store call makes none.
 *
 * @internal
 */
export const isNative = (tracer: Tracer.Tracer): boolean => tracer === (nativeTracer ??= Effect.runSync(Effect.tracer))

// Metrics.renewLatency without its time unit: renewals update it in
// milliseconds, tagged as the timer would tag them. Its boundaries are the
// timer's own: Effect compares them by reference.
const renewLatencyMillis = Metric.histogram(
  renewLatencyHistogram.name,
  Metrics.renewLatency.keyType.boundaries,
  renewLatencyHistogram.description
)

/** The metric updates of one election, the same for each of its participants. */
interface Election extends Omit<Instrumentation, "span"> {
  /** Participants of this process that use it. */
  users: number
  readonly leading: Metric.Metric.Gauge<number>
  readonly fatal: Metric.Metric.Gauge<number>
}

const election = (name: string): Election => {
  const tag = <Type, In, Out>(metric: Metric.Metric<Type, In, Out>): Metric.Metric<Type, In, Out> =>
    Metric.tagged(metric, "election", name)
  const leading = tag(Metrics.isLeader)
  const fatal = tag(Metrics.storeFatal)
  // Updated on every renewal and every failed call: see metricSeries.ts.
  const latency = series(renewLatencyMillis, labels([["time_unit", "milliseconds"], ["election", name]]))
  const storeErrors = new Map<string, (n: number) => Effect.Effect<void>>()
  const storeError = (operation: Operation, kind: "retryable" | "fatal") => {
    const key = `${operation}/${kind}`
    let update = storeErrors.get(key)
    if (update === undefined) {
      update = series(Metrics.storeErrors, labels([["election", name], ["operation", operation], ["kind", kind]]))
      storeErrors.set(key, update)
    }
    return update(1)
  }
  const failing = Metric.set(fatal, 1)
  const recovered = Metric.set(fatal, 0)
  return {
    users: 0,
    leading,
    fatal,
    termStarted: Effect.zipRight(Metric.increment(tag(Metrics.terms)), Metric.modify(leading, 1)),
    termEnded: (reason) =>
      Effect.zipRight(
        Metric.modify(leading, -1),
        Metric.increment(Metric.tagged(tag(Metrics.stepDowns), "reason", reason))
      ),
    renewed: (duration) => latency(Duration.toMillis(duration)),
    storeFailed: (error) => storeError(error.operation, error.retryable ? "retryable" : "fatal"),
    callbackFailed: (callback, outcome) =>
      Metric.increment(
        Metric.tagged(Metric.tagged(tag(Metrics.callbackFailures), "callback", callback), "outcome", outcome)
      ),
    callbackDropped: Metric.increment(tag(Metrics.callbacksDropped)),
    storeFatal: (on) => on ? failing : recovered,
    // Built when it happens, which is rare, rather than kept for every election.
    identityCollision: Effect.suspend(() => Metric.increment(tag(Metrics.identityCollisions)))
  }
}

// The metric updates of each election that has a participant in this
// process, shared by its participants: built once per election rather than
// once per participant (a process may run thousands), and let go with its
// last participant.
const elections = Runtime.shared("instrumentation", () => new Map<string, Election>())

const enter = (name: string): Election => {
  let shared = elections.get(name)
  if (shared === undefined) {
    shared = election(name)
    elections.set(name, shared)
  }
  shared.users += 1
  return shared
}

const leave = (name: string, shared: Election): void => {
  shared.users -= 1
  if (shared.users === 0) elections.delete(name)
}

/**
 * The labels of a participant's info series: its election and identity, and
 * the fiber's metric labels of this moment, as `Metric.update` would add them.
 *
 * @internal
 */
export const infoTags = (name: string, identity: string): Effect.Effect<ReadonlyArray<MetricLabel.MetricLabel>> =>
  withFiberLabels(labels([["election", name], ["identity", identity]]))

/** @internal */
export interface Joined {
  readonly instrumentation: Instrumentation
  /** Reports the election's gauges at zero (no term yet, no fatal error): they exist before any term. */
  readonly initial: Effect.Effect<void>
  /** Resets the info series, and lets the election's series go with its last participant. */
  readonly leave: () => void
}

/**
 * Joins the series of election `name`, and sets the participant's info series
 * (labelled `tags`, see {@link infoTags}) until `leave`: the caller calls it
 * from its one release, and joins in the same uninterruptible step as it adds
 * that release (a participant keeps no finalizer of its own for it).
 *
 * @internal
 */
export const join = (name: string, identity: string, tags: ReadonlyArray<MetricLabel.MetricLabel>): Joined => {
  const shared = enter(name)
  Metrics.info.unsafeUpdate(1, tags)
  return {
    // The series are per election, shared by the participants of one process,
    // so a term moves the gauge by one rather than setting it: a participant
    // that joins (or follows) never resets what another one's term reported.
    initial: Effect.zipRight(Metric.modify(shared.leading, 0), Metric.set(shared.fatal, 0)),
    leave: () => {
      Metrics.info.unsafeUpdate(0, tags)
      leave(name, shared)
    },
    instrumentation: {
      termStarted: shared.termStarted,
      termEnded: shared.termEnded,
      renewed: shared.renewed,
      storeFailed: shared.storeFailed,
      callbackFailed: shared.callbackFailed,
      callbackDropped: shared.callbackDropped,
      storeFatal: shared.storeFatal,
      identityCollision: shared.identityCollision,
      span: (operation, fence) => (call) =>
        Effect.withSpan(call, `leaderelection.${operation}`, {
          attributes: fence === undefined
            ? { election: name, identity }
            : { election: name, identity, fence: fence.toString() },
          // The stack would be the elector's, the same for every call.
          captureStackTrace: false
        })
    }
  }
}
