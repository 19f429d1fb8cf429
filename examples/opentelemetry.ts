/**
 * Traces and metrics through OpenTelemetry with @effect/opentelemetry.
 *
 * Every store call the elector makes is a span (`leaderelection.inspect`,
 * `.acquire`, `.renew`, `.release`, with the election, identity and fence
 * as attributes), and its metrics (`leaderelection_is_leader`, ...) are read
 * by the SDK's metric reader. Here both go to the console, so the example
 * runs anywhere; point the SDK at an OTLP exporter
 * (`@opentelemetry/exporter-trace-otlp-http`, `-metrics-otlp-http`) to ship
 * them to a collector instead.
 *
 * One participant leads for three seconds, then shuts down cleanly: the last
 * spans are the release, and the metrics are flushed as the SDK shuts down.
 *
 *   npx tsx examples/opentelemetry.ts
 */
import { NodeSdk } from "@effect/opentelemetry"
import { ConsoleMetricExporter, PeriodicExportingMetricReader } from "@opentelemetry/sdk-metrics"
import { ConsoleSpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base"
import { Effect, Layer, Schedule } from "effect"
import { Elector, Leadership, MemoryStore } from "../src/index.js"

const TelemetryLive = NodeSdk.layer(() => ({
  resource: { serviceName: "invoice-reconciler" },
  spanProcessor: new SimpleSpanProcessor(new ConsoleSpanExporter()),
  metricReader: new PeriodicExportingMetricReader({
    exporter: new ConsoleMetricExporter(),
    exportIntervalMillis: 2_000
  })
}))

const ElectorLive = Elector.layer({
  name: "invoice-reconciler",
  identity: "worker-1",
  leaseDuration: "4 seconds",
  renewInterval: "1 second",
  retryPeriod: "500 millis",
  operationTimeout: "500 millis"
}).pipe(Layer.provide(MemoryStore.layer()))

// The application's own leader-only work, traced under the term's fence.
const reconcile = Effect.flatMap(Leadership.fence, (fence) =>
  Effect.log(`reconciling under fence ${fence}`).pipe(
    Effect.withSpan("reconcile", { attributes: { fence: fence.toString() } })
  )).pipe(Effect.repeat(Schedule.spaced("1 second")))

const program = Effect.raceFirst(Elector.whileLeader(reconcile), Effect.sleep("3 seconds"))

// The elector's layer is torn down (lease released) before the SDK's, which
// exports what is left as it shuts down.
Effect.runPromise(program.pipe(Effect.provide(ElectorLive), Effect.provide(TelemetryLive)))
