/**
 * The metrics every elector reports, as Effect `Metric`s. Each update is
 * tagged with `election` (and, for some, a tag of its own), never with the
 * identity: a generated identity is new on every restart and would start a
 * new series each time. The identity is on {@link info} alone; join on the
 * scrape target (`instance`, `pod`) to tell participants apart. Export them
 * with any metrics backend Effect supports (e.g. `@effect/opentelemetry`), or
 * read them with `Metric.value`.
 *
 * Series are per process: two participants of one election in one process
 * (a test, a demo) share theirs.
 *
 * Store calls are traced too, once a tracer is installed (e.g. with
 * `@effect/opentelemetry`): each runs in a span named
 * `leaderelection.<operation>` (`acquire`, `renew`, `release`, `inspect`)
 * with the attributes `election`, `identity` and, for a renewal or release,
 * `fence`. Under Effect's own tracer, whose spans nothing reads, no span is
 * made.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import type * as MetricPair from "effect/MetricPair"
import { renewLatencyHistogram } from "./internal/metrics/metricSeries.js"
import * as Prometheus from "./internal/metrics/prometheus.js"

/**
 * 1 while this participant leads, 0 otherwise. Summed over an election's
 * processes it is 0 or 1; at most one participant has it at 1 at any
 * instant, up to the scrape's own skew.
 *
 * @since 0.1.0
 * @category metrics
 * @example
 * ```ts
 * import { Metric } from "effect"
 * import { Metrics } from "effect-leaderelection"
 *
 * const leading = Metric.value(Metrics.isLeader.pipe(Metric.tagged("election", "jobs")))
 * ```
 */
export const isLeader = Metric.gauge("leaderelection_is_leader", {
  description: "1 while this participant leads the election, 0 otherwise"
})

/**
 * Terms started. A fast-climbing count is leadership flapping: usually the
 * timings are too tight for the latency to the database.
 *
 * @since 0.1.0
 * @category metrics
 * @example
 * ```ts
 * import { Metric } from "effect"
 * import { Metrics } from "effect-leaderelection"
 *
 * const started = Metric.value(Metrics.terms.pipe(Metric.tagged("election", "jobs")))
 * ```
 */
export const terms = Metric.counter("leaderelection_terms_total", {
  description: "Leadership terms this participant started",
  incremental: true
})

/**
 * Round trip of each successful renewal, in milliseconds, measured on the
 * local monotonic clock from when the request was sent.
 *
 * @since 0.1.0
 * @category metrics
 * @example
 * ```ts
 * import { Metric } from "effect"
 * import { Metrics } from "effect-leaderelection"
 *
 * const latency = Metric.value(Metrics.renewLatency.pipe(Metric.tagged("election", "jobs")))
 * ```
 */
export const renewLatency = Metric.timerWithBoundaries(
  renewLatencyHistogram.name,
  renewLatencyHistogram.boundaries,
  renewLatencyHistogram.description
)

/**
 * Why a term ended: the value of the `reason` tag of {@link stepDowns}.
 *
 * - `expired`: the local deadline passed before a renewal confirmed the lease;
 * - `lost`: a renewal found the lease held by someone else, or gone;
 * - `shutdown`: the elector was stopped;
 * - `failed`: the term's work failed (`onWorkFailure: "stepDown"`, the default);
 * - `resigned`: `resign` was called;
 * - `preempted`: a preferred candidate took over (`priority`, `version`);
 * - `handedOver`: a member of a spread group above its share handed the election over (`Elector.spread`).
 *
 * @since 0.1.0
 * @category models
 */
export type StepDownReason = "expired" | "lost" | "shutdown" | "failed" | "resigned" | "preempted" | "handedOver"

/**
 * Terms ended, tagged with `reason` ({@link StepDownReason}).
 *
 * @since 0.1.0
 * @category metrics
 * @example
 * ```ts
 * import { Metric } from "effect"
 * import { Metrics } from "effect-leaderelection"
 *
 * const expired = Metric.value(
 *   Metrics.stepDowns.pipe(Metric.tagged("election", "jobs"), Metric.tagged("reason", "expired"))
 * )
 * ```
 */
export const stepDowns = Metric.counter("leaderelection_step_downs_total", {
  description:
    "Leadership terms that ended, by reason (expired, lost, shutdown, failed, resigned, preempted, handedOver)",
  incremental: true
})

/**
 * Failed store calls, tagged with `operation` and `kind`: `retryable` (the
 * condition can fix itself: connection reset, timeout, failover) or `fatal`
 * (it needs an operator: missing table, no privilege, bad credentials).
 * Alert on any `fatal`.
 *
 * @since 0.1.0
 * @category metrics
 * @example
 * ```ts
 * import { Metric } from "effect"
 * import { Metrics } from "effect-leaderelection"
 *
 * const fatal = Metric.value(
 *   Metrics.storeErrors.pipe(
 *     Metric.tagged("election", "jobs"),
 *     Metric.tagged("operation", "renew"),
 *     Metric.tagged("kind", "fatal")
 *   )
 * )
 * ```
 */
export const storeErrors = Metric.counter("leaderelection_store_errors_total", {
  description: "Failed store calls, by operation and kind (retryable, fatal)",
  incremental: true
})

/**
 * 1 for each running participant, tagged with `election` and `identity`
 * (0 once it has stopped): the one metric that names the identity, so that
 * a dashboard can say who leads by joining it with {@link isLeader} on the
 * scrape target, e.g.
 * `leaderelection_is_leader * on(instance, election) group_left(identity) leaderelection_info`.
 *
 * @since 0.1.0
 * @category metrics
 * @example
 * ```ts
 * import { Metric } from "effect"
 * import { Metrics } from "effect-leaderelection"
 *
 * const running = Metric.value(Metrics.info.pipe(Metric.tagged("election", "jobs"), Metric.tagged("identity", "a")))
 * ```
 */
export const info = Metric.gauge("leaderelection_info", {
  description: "1 for each running participant, tagged with its election and identity"
})

/**
 * Which user code failed: the value of the `callback` tag of
 * {@link callbackFailures}. `work` is an effect forked with
 * `Leadership.fork` (e.g. by `Elector.whileLeader`); `finalizer` a finalizer
 * added to `Leadership.scope`.
 *
 * @since 0.1.0
 * @category models
 */
export type Callback = "onStartedLeading" | "onStoppedLeading" | "onNewLeader" | "work" | "finalizer"

/**
 * User callbacks that failed, tagged with `callback` ({@link Callback}) and
 * `outcome`: `failure` (an error), `defect` (a throw or `Effect.die`) or
 * `interrupt` (it interrupted itself). Each is also logged with its cause;
 * none stops the elector.
 *
 * @since 0.1.0
 * @category metrics
 * @example
 * ```ts
 * import { Metric } from "effect"
 * import { Metrics } from "effect-leaderelection"
 *
 * const failed = Metric.value(
 *   Metrics.callbackFailures.pipe(
 *     Metric.tagged("election", "jobs"),
 *     Metric.tagged("callback", "onNewLeader"),
 *     Metric.tagged("outcome", "defect")
 *   )
 * )
 * ```
 */
export const callbackFailures = Metric.counter("leaderelection_callback_failures_total", {
  description: "User callbacks that failed, by callback and outcome (failure, defect, interrupt)",
  incremental: true
})

/**
 * Advisory callbacks (`onNewLeader`, `onStoppedLeading`) dropped because 64
 * were already waiting for a slow callback ahead of them.
 *
 * @since 0.1.0
 * @category metrics
 * @example
 * ```ts
 * import { Metric } from "effect"
 * import { Metrics } from "effect-leaderelection"
 *
 * const dropped = Metric.value(Metrics.callbacksDropped.pipe(Metric.tagged("election", "jobs")))
 * ```
 */
export const callbacksDropped = Metric.counter("leaderelection_callbacks_dropped_total", {
  description: "Advisory callbacks dropped because their queue was full",
  incremental: true
})

/**
 * 1 while a store operation of this participant fails with fatal errors (it
 * needs an operator: bad credentials, missing table, no privilege), until a
 * call of that operation succeeds; 0 otherwise. Alert on it.
 *
 * @since 0.1.0
 * @category metrics
 * @example
 * ```ts
 * import { Metric } from "effect"
 * import { Metrics } from "effect-leaderelection"
 *
 * const failing = Metric.value(Metrics.storeFatal.pipe(Metric.tagged("election", "jobs")))
 * ```
 */
export const storeFatal = Metric.gauge("leaderelection_store_fatal", {
  description: "1 while store calls of this participant fail with fatal errors, 0 otherwise"
})

/**
 * Store answers that showed this participant's identity held by another live
 * process: two processes given one identity (a reused pod name, a hostname
 * under host networking). The store tells them apart by their incarnations
 * (`Store.StoreShape.incarnations`), so they never lead together: this
 * participant follows the other and never takes its lease. It grows for as
 * long as the collision lasts (one per poll or claim that sees it); each is
 * logged at ERROR at most once a minute. Alert on any increase, and give
 * every process an identity of its own.
 *
 * @since 0.2.0
 * @category metrics
 * @example
 * ```ts
 * import { Metric } from "effect"
 * import { Metrics } from "effect-leaderelection"
 *
 * const collisions = Metric.value(Metrics.identityCollisions.pipe(Metric.tagged("election", "jobs")))
 * ```
 */
export const identityCollisions = Metric.counter("leaderelection_identity_collisions_total", {
  description: "Store answers that showed this participant's identity held by another live process",
  incremental: true
})

/**
 * Slots of scheduled jobs (`Elector.schedule`), tagged with `job` and
 * `outcome` (`Job.Outcome`: `completed`, `failed`, `interrupted`, `skipped`,
 * `missed`). Summed over an election's processes, `completed` + `failed` +
 * `interrupted` is the number of runs.
 *
 * @since 0.1.0
 * @category metrics
 * @example
 * ```ts
 * import { Metric } from "effect"
 * import { Metrics } from "effect-leaderelection"
 *
 * const runs = Metric.value(
 *   Metrics.jobSlots.pipe(
 *     Metric.tagged("election", "jobs"),
 *     Metric.tagged("job", "nightly"),
 *     Metric.tagged("outcome", "completed")
 *   )
 * )
 * ```
 */
export const jobSlots = Metric.counter("leaderelection_job_slots_total", {
  description: "Scheduled job slots, by job and outcome (completed, failed, interrupted, skipped, missed)",
  incremental: true
})

/**
 * Losses of a PostgreSQL store's listening connection for wake-up hints
 * (`listen`): each failure to connect or to keep listening. Followers poll
 * meanwhile, so a handover takes a poll's wait instead of one round trip;
 * the elections themselves go on.
 *
 * @since 0.1.0
 * @category metrics
 * @example
 * ```ts
 * import { Metric } from "effect"
 * import { Metrics } from "effect-leaderelection"
 *
 * const losses = Metric.value(Metrics.hintListenerLosses)
 * ```
 */
export const hintListenerLosses = Metric.counter("leaderelection_hint_listener_losses_total", {
  description: "Losses of a PostgreSQL store's listening connection for wake-up hints",
  incremental: true
})

/**
 * Which series {@link prometheusText} gives.
 *
 * @since 0.1.0
 * @category models
 */
export interface PrometheusTextOptions {
  /** Only the series tagged with this election (default: every series, the app's own included). */
  readonly election?: string | undefined
  /**
   * Leaves out the series tagged with another identity (the {@link info} of
   * other participants in this process), keeping those without the tag.
   */
  readonly identity?: string | undefined
}

/**
 * The process's metrics in the Prometheus text exposition format (version
 * 0.0.4), ready to serve on a `/metrics` endpoint: counters, gauges and
 * histograms, this library's and any other Effect metric (other kinds have
 * no Prometheus type and are left out). The Promise API's `metrics()` gives
 * the same text for its election and identity.
 *
 * @since 0.1.0
 * @category metrics
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Metrics } from "effect-leaderelection"
 *
 * // The body of GET /metrics: this participant's series of the election "jobs".
 * const scrape = Metrics.prometheusText({ election: "jobs", identity: "node-a" })
 *
 * Effect.runPromise(scrape).then((body) => console.log(body))
 * ```
 */
export const prometheusText = (options: PrometheusTextOptions = {}): Effect.Effect<string> =>
  Effect.map(Metric.snapshot, (pairs) => Prometheus.text(pairs.filter(selected(options))))

const selected = ({ election, identity }: PrometheusTextOptions) => (pair: MetricPair.MetricPair.Untyped): boolean =>
  (election === undefined || pair.metricKey.tags.some((tag) => tag.key === "election" && tag.value === election)) &&
  (identity === undefined || pair.metricKey.tags.every((tag) => tag.key !== "identity" || tag.value === identity))
