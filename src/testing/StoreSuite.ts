/**
 * The acceptance suite every built-in store runs, for your own store: atomic
 * takeover, fences that never repeat, guarded renewals that fail rather than
 * silently succeed, release semantics, the database-clock rules, the
 * documented limits, incarnations and the leases held back after the
 * database changed (Store contract 0.2), the optional scheduled-job slots
 * and candidate operations, and an operation-level model of the whole
 * contract checked by fast-check (the copy `effect/FastCheck` ships).
 *
 * A failing case names the store call that broke a rule of the contract
 * (the write before the `inspect` that noticed, when one did), what the
 * store answered, the rule, and the case's store calls in order; the model's
 * failure lists the shortest failing sequence of calls it found. Cases of an
 * optional operation the store does not offer are skipped, not passed. So
 * are the incarnation cases of a store without `StoreShape.incarnations`
 * (written to the contract of 0.1: the skip says so), and the cases after a
 * change of server when the options give no `writtenElsewhere`.
 *
 * `run` needs `vitest` (a dev dependency of your project); `check` runs
 * anywhere, a plain node script included.
 *
 * @since 0.1.0
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import type * as Store from "../Store.js"
import * as registration from "./internal/register.js"
import * as internal from "./internal/suite.js"
import * as kit from "./internal/suite/kit.js"

/**
 * How the suite treats a store.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /**
   * `true` when the store's clock is a real server's: the suite waits out
   * expiries by sleeping (leases of 400ms, waited out for 700ms): the whole
   * suite took 20s against a local PostgreSQL (25 model runs, the default
   * when live). `false` (the default) when the store reads Effect's `Clock`,
   * like `MemoryStore`: the suite moves time with `TestClock` and takes a
   * few seconds.
   */
  readonly live?: boolean | undefined
  /** How many command sequences the model checks (default 200, or 25 when `live`). */
  readonly modelRuns?: number | undefined
  /**
   * How long one case may take before it fails (default 10s, or 30s when
   * `live`; the model 30s plus 0.2s a run, or 3s a run when `live`).
   * `run` gives vitest's own timeout 10s more, so vitest's `testTimeout`
   * need not change.
   */
  readonly timeout?: Duration.DurationInput | undefined
  /**
   * For a store that records the server each lease was written on (as every
   * SQL store does, see `StoreShape.acquire`): makes the record of election
   * `name` look written by another server, as a failover to a standby or a
   * restart of the database would (for a SQL store, an UPDATE of the row's
   * server column to a value no server has). With it, the suite checks that
   * a claim on such a record holds the lease back (held by nobody, its fence
   * moved on by `Lease.fenceJump`) rather than begin a term, that another's
   * valid lease is left to its renewals, and that a term begins once the
   * hold-back expires. Without it, those cases are skipped.
   */
  readonly writtenElsewhere?: ((name: string) => Effect.Effect<void, unknown>) | undefined
}

/**
 * A case of the suite that failed: its name, and the store call, its answer
 * and the rule it broke.
 *
 * @since 0.1.0
 * @category models
 */
export interface Failure {
  readonly name: string
  readonly message: string
}

/**
 * How one case ended.
 *
 * @since 0.1.0
 * @category models
 */
export type Result = internal.CaseResult

/**
 * What `check` found.
 *
 * @since 0.1.0
 * @category models
 */
export interface Report {
  /** Every case, in the suite's order, the model last. */
  readonly results: ReadonlyArray<Result>
  /** The failed cases; empty when the store passes. */
  readonly failures: ReadonlyArray<Failure>
  /** The cases of optional operations the store does not offer. */
  readonly skipped: ReadonlyArray<string>
  /** The results as vitest lists them: `✓` passed, `×` failed with why, `↓` skipped. */
  readonly summary: string
}

const harness = (name: string, layer: Layer.Layer<Store.Store, unknown>, options: Options): kit.StoreHarness => ({
  name,
  layer,
  live: options.live ?? false,
  modelRuns: options.modelRuns,
  timeout: options.timeout === undefined ? undefined : Duration.decode(options.timeout),
  writtenElsewhere: options.writtenElsewhere
})

/**
 * Registers the suite in the calling vitest file: a `describe` block named
 * `store contract: <name>` with one test per case and one for the model,
 * each with its own timeout. The layer is built afresh for every test.
 * Throws when called outside a vitest run.
 *
 * @example
 * ```ts
 * import { StoreSuite } from "effect-leaderelection/testing"
 * import * as MemoryStore from "effect-leaderelection/stores/MemoryStore"
 *
 * // At the top level of a vitest test file:
 * export const registerSuite = () => StoreSuite.run("MemoryStore", MemoryStore.layer())
 * ```
 *
 * @since 0.1.0
 * @category tests
 */
export const run = (name: string, layer: Layer.Layer<Store.Store, unknown>, options: Options = {}): void =>
  registration.storeSuite(harness(name, layer, options))

/**
 * Runs the whole suite as one Effect, anywhere (a plain node script, a
 * test of any runner), and reports how each case ended. Each case gets its
 * own `TestClock` unless the store is live.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import * as MemoryStore from "effect-leaderelection/stores/MemoryStore"
 * import { StoreSuite } from "effect-leaderelection/testing"
 *
 * const report = await Effect.runPromise(StoreSuite.check("MemoryStore", MemoryStore.layer(), { modelRuns: 20 }))
 * console.log(report.failures.length === 0 ? "MemoryStore passes" : report.summary)
 * ```
 *
 * @since 0.1.0
 * @category tests
 */
export const check = (
  name: string,
  layer: Layer.Layer<Store.Store, unknown>,
  options: Options = {}
): Effect.Effect<Report> =>
  Effect.map(internal.checkStore(harness(name, layer, options)), (results) => ({
    results,
    failures: results.flatMap((r) => r.status === "failed" ? [{ name: r.name, message: r.message }] : []),
    skipped: results.flatMap((r) => r.status === "skipped" ? [r.name] : []),
    summary: internal.summary(name, results)
  }))

/**
 * An election name unique to this process, so that tests can share a table
 * (and run concurrently) without seeing each other's records.
 *
 * @since 0.1.0
 * @category tests
 */
export const uniqueName: (label: string) => string = kit.uniqueName
