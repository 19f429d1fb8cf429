import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import type * as Scope from "effect/Scope"
import type * as Tracer from "effect/Tracer"
import * as Metrics from "../Metrics.js"
import type { Operation, StoreError } from "../Store.js"
import { labels, renewLatencyHistogram, series } from "./metricSeries.js"

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
  readonly callbackFailed: (callback: Metrics.Callback, outcome: "failure" | "defect" | "interrupt") => Effect.Effect<void>
  readonly callbackDropped: Effect.Effect<void>
  readonly storeFatal: (failing: boolean) => Effect.Effect<void>
  /** Runs a store call in a span named for its operation. */
  readonly span: (operation: Operation, fence: bigint | undefined) => <A, E>(call: Effect.Effect<A, E>) => Effect.Effect<A, E>
}

// Effect's own tracer, which a fiber has unless the application installs
// another: nothing reads its spans, so a store call skips making one.
let nativeTracer: Tracer.Tracer | undefined
const isNative = (tracer: Tracer.Tracer) => tracer === (nativeTracer ??= Effect.runSync(Effect.tracer))

// Metrics.renewLatency without its time unit: renewals update it in
// milliseconds, tagged as the timer would tag them. Its boundaries are the
// timer's own: Effect compares them by reference.
const renewLatencyMillis = Metric.histogram(
  renewLatencyHistogram.name,
  Metrics.renewLatency.keyType.boundaries,
  renewLatencyHistogram.description
)

/** @internal */
export const make = (election: string, identity: string): Effect.Effect<Instrumentation, never, Scope.Scope> => {
  const tag = <Type, In, Out>(metric: Metric.Metric<Type, In, Out>): Metric.Metric<Type, In, Out> =>
    Metric.tagged(metric, "election", election)
  const leading = tag(Metrics.isLeader)
  // Updated on every renewal and every failed call: see metricSeries.ts.
  const latency = series(renewLatencyMillis, labels([["time_unit", "milliseconds"], ["election", election]]))
  const storeErrors = new Map<string, (n: number) => Effect.Effect<void>>()
  const storeError = (operation: Operation, kind: "retryable" | "fatal") => {
    const key = `${operation}/${kind}`
    let update = storeErrors.get(key)
    if (update === undefined) {
      update = series(Metrics.storeErrors, labels([["election", election], ["operation", operation], ["kind", kind]]))
      storeErrors.set(key, update)
    }
    return update(1)
  }
  const info = Metric.tagged(tag(Metrics.info), "identity", identity)
  const announce = Effect.acquireRelease(Metric.set(info, 1), () => Metric.set(info, 0))
  const storeFatal = tag(Metrics.storeFatal)
  // The series are per election, shared by the participants of one process,
  // so a term moves the gauge by one rather than setting it: a participant
  // that joins (or follows) never resets what another one's term reported.
  return Effect.as(Effect.zipRight(announce, Effect.zipRight(Metric.modify(leading, 0), Metric.set(storeFatal, 0))), {
    termStarted: Effect.zipRight(Metric.increment(tag(Metrics.terms)), Metric.modify(leading, 1)),
    termEnded: (reason) =>
      Effect.zipRight(Metric.modify(leading, -1), Metric.increment(Metric.tagged(tag(Metrics.stepDowns), "reason", reason))),
    renewed: (duration) => latency(Duration.toMillis(duration)),
    storeFailed: (error) => storeError(error.operation, error.retryable ? "retryable" : "fatal"),
    callbackFailed: (callback, outcome) =>
      Metric.increment(Metric.tagged(Metric.tagged(tag(Metrics.callbackFailures), "callback", callback), "outcome", outcome)),
    callbackDropped: Metric.increment(tag(Metrics.callbacksDropped)),
    storeFatal: (failing) => Metric.set(storeFatal, failing ? 1 : 0),
    span: (operation, fence) => (call) =>
      Effect.tracerWith((tracer) =>
        isNative(tracer) ? call : Effect.withSpan(call, `leaderelection.${operation}`, {
          attributes: fence === undefined ? { election, identity } : { election, identity, fence: fence.toString() },
          // The stack would be the elector's, the same for every call.
          captureStackTrace: false
        })
      )
  })
}
