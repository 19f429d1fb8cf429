/**
 * Updates of a metric series without a registry look-up per update.
 *
 * Effect finds the series of a metric update in a cache keyed by the array
 * of its tags. A metric tagged twice (`Metric.tagged` over a tagged metric,
 * or over a timer, which is tagged with its time unit) merges the tags into a
 * new array on every update, so each update builds a metric key, hashes it
 * and looks it up in the registry. {@link series} hands the base metric the
 * same array every time instead.
 *
 * @internal
 */
import * as Arr from "effect/Array"
import * as Effect from "effect/Effect"
import type * as Metric from "effect/Metric"
import * as MetricLabel from "effect/MetricLabel"
import * as Runtime from "../runtime/runtime.js"

/**
 * The histogram under `Metrics.renewLatency`, which is this histogram in
 * milliseconds tagged `time_unit`.
 *
 * @internal
 */
export const renewLatencyHistogram = {
  name: "leaderelection_renew_latency",
  boundaries: [1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000],
  description: "Round trip of successful lease renewals"
} as const

/**
 * Labels, in the order a chain of `Metric.tagged` puts them in: the innermost
 * first.
 *
 * @internal
 */
export const labels = (tags: ReadonlyArray<readonly [string, string]>): ReadonlyArray<MetricLabel.MetricLabel> =>
  tags.map(([key, value]) => MetricLabel.make(key, value))

/**
 * An update of `metric` in the series `tags` (plus the fiber's metric
 * labels, as `Metric.update` would add them).
 *
 * @internal
 */
export const series = <Type, In, Out>(
  metric: Metric.Metric<Type, In, Out>,
  tags: ReadonlyArray<MetricLabel.MetricLabel>
) =>
(input: In): Effect.Effect<void> =>
  Effect.flatMap(withFiberLabels(tags), (all) => Effect.sync(() => metric.unsafeUpdate(input, all)))

/**
 * `tags` plus the fiber's metric labels, as `Metric.update` would add them.
 *
 * @internal
 */
export const withFiberLabels = (
  tags: ReadonlyArray<MetricLabel.MetricLabel>
): Effect.Effect<ReadonlyArray<MetricLabel.MetricLabel>> =>
  Effect.map(Runtime.metricLabels, (extra) => extra.length === 0 ? tags : Arr.union(tags, extra))
