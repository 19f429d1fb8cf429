/**
 * Operating an elector: its metrics in the Prometheus text format at
 * /metrics and its health check at /healthz, on one plain node:http server.
 *
 * The elector's metrics are Effect `Metric`s; @effect/opentelemetry hands
 * them to the OpenTelemetry SDK, whose Prometheus exporter renders them. The
 * exporter's own server is not started: its request handler is mounted on
 * the app's server instead, beside the health check. The participant uses an
 * in-memory store so that the example runs anywhere; swap in
 * `PgStore.layer(...)` or `MysqlStore.layer(...)` for a real deployment.
 *
 *   npx tsx examples/prometheus.ts            # PORT=9464 by default
 *   curl -s localhost:9464/metrics | grep leaderelection_
 *   curl -s localhost:9464/healthz
 *
 * Ctrl-C (or SIGTERM) stops the server and releases the lease.
 */
import { NodeSdk } from "@effect/opentelemetry"
import { NodeRuntime } from "@effect/platform-node"
import { PrometheusExporter } from "@opentelemetry/exporter-prometheus"
import { Effect, Layer, Schedule } from "effect"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { Elector, Health, Leadership, MemoryStore } from "../src/index.js"

const exporter = new PrometheusExporter({ preventServerStart: true })

// Effect metrics -> OpenTelemetry -> Prometheus text, read at each scrape.
const TelemetryLive = NodeSdk.layer(() => ({
  resource: { serviceName: "invoice-reconciler" },
  metricReader: exporter
}))

const ElectorLive = Elector.layer({
  name: "invoice-reconciler",
  leaseDuration: "3 seconds",
  renewInterval: "500 millis",
  retryPeriod: "500 millis",
  operationTimeout: "500 millis"
}).pipe(Layer.provide(MemoryStore.layer()))

// One server: /metrics for Prometheus, /healthz for the orchestrator's probe.
const serve = (health: Health.HealthShape) => {
  const healthz = Health.toNodeListener(health)
  return Effect.acquireRelease(
    Effect.async<ReturnType<typeof createServer>>((resume) => {
      const server = createServer((req, res) => {
        if (req.url === "/metrics") return exporter.getMetricsRequestHandler(req, res)
        if (req.url === "/healthz") return healthz(req, res)
        res.writeHead(404).end()
      })
      server.listen(Number(process.env.PORT ?? 9464), "127.0.0.1", () => resume(Effect.succeed(server)))
    }),
    (server) =>
      Effect.async<void>((resume) => {
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      })
  )
}

const reconcile = Effect.flatMap(Leadership.fence, (fence) => Effect.log(`reconciling under fence ${fence}`)).pipe(
  Effect.repeat(Schedule.spaced("1 second"))
)

const program = Effect.gen(function*() {
  const health = yield* Health.make(yield* Elector.Elector)
  const server = yield* serve(health)
  const { port } = server.address() as AddressInfo
  yield* Effect.log(`metrics at http://127.0.0.1:${port}/metrics, health at http://127.0.0.1:${port}/healthz`)
  return yield* Elector.whileLeader(reconcile)
})

program.pipe(Effect.scoped, Effect.provide(ElectorLive), Effect.provide(TelemetryLive), NodeRuntime.runMain)
