/**
 * Effect metrics in the Prometheus text exposition format (version 0.0.4):
 * counters, gauges and histograms; the other kinds have no Prometheus type
 * and are left out.
 *
 * @internal
 */
import type * as MetricPair from "effect/MetricPair"
import * as MetricState from "effect/MetricState"
import * as Option from "effect/Option"

const escape = (value: string) => value.replace(/\\/g, "\\\\").replace(/\n/g, "\\n")
const escapeLabel = (value: string) => escape(value).replace(/"/g, "\\\"")

/** One metric's type and sample lines, or undefined for kinds not exposed. */
const exposition = (pair: MetricPair.MetricPair.Untyped): readonly [string, ReadonlyArray<string>] | undefined => {
  const name = pair.metricKey.name
  const labels = (extra: ReadonlyArray<readonly [string, string]>) => {
    const all = [...pair.metricKey.tags.map((tag) => [tag.key, tag.value] as const), ...extra]
    return `{${all.map(([key, value]) => `${key}="${escapeLabel(value)}"`).join(",")}}`
  }
  const state = pair.metricState
  return MetricState.isCounterState(state)
    ? ["counter", [`${name}${labels([])} ${state.count}`]]
    : MetricState.isGaugeState(state)
    ? ["gauge", [`${name}${labels([])} ${state.value}`]]
    : MetricState.isHistogramState(state)
    ? ["histogram", [
      ...state.buckets.map(([bound, count]) =>
        `${name}_bucket${labels([["le", bound === Infinity ? "+Inf" : String(bound)]])} ${count}`
      ),
      `${name}_sum${labels([])} ${state.sum}`,
      `${name}_count${labels([])} ${state.count}`
    ]]
    : undefined
}

/**
 * The pairs as one exposition: a `# HELP` and `# TYPE` per metric name, then
 * the samples of every series of that name.
 *
 * @internal
 */
export const text = (pairs: ReadonlyArray<MetricPair.MetricPair.Untyped>): string => {
  const families = new Map<string, { readonly help: string; readonly type: string; readonly lines: Array<string> }>()
  for (const pair of pairs) {
    const sample = exposition(pair)
    if (sample === undefined) continue
    const family = families.get(pair.metricKey.name) ?? {
      help: Option.getOrElse(pair.metricKey.description, () => pair.metricKey.name),
      type: sample[0],
      lines: []
    }
    family.lines.push(...sample[1])
    families.set(pair.metricKey.name, family)
  }
  return [...families].map(([metric, family]) =>
    `# HELP ${metric} ${escape(family.help)}\n# TYPE ${metric} ${family.type}\n${family.lines.join("\n")}\n`
  ).join("")
}
