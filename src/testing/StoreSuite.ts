/**
 * The acceptance suite every built-in store runs, for your own store: atomic
 * takeover, fences that never repeat, guarded renewals that fail rather than
 * silently succeed, release semantics, the database-clock rules, the
 * documented limits, and an operation-level model of the whole contract
 * checked by fast-check.
 *
 * Needs `vitest`, `@effect/vitest` and `fast-check` (dev dependencies of
 * your project).
 *
 * @since 0.1.0
 */
import type * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import * as internal from "../internal/testing/suite.js"
import type * as Store from "../Store.js"

/**
 * How the suite treats a store.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /**
   * `true` when the store's clock is a real server's, so the suite waits
   * out expiries by sleeping (short leases of 400ms). `false` (the default)
   * when the store reads Effect's `Clock`, like `MemoryStore`: the suite
   * moves time with `TestClock`.
   */
  readonly live?: boolean | undefined
  /** How many command sequences the model checks (default 200). */
  readonly modelRuns?: number | undefined
}

/**
 * A case of the suite that failed, and what it found.
 *
 * @since 0.1.0
 * @category models
 */
export interface Failure {
  readonly name: string
  readonly message: string
}

const harness = (name: string, layer: Layer.Layer<Store.Store, unknown>, options: Options): internal.StoreHarness => ({
  name,
  layer,
  live: options.live ?? false,
  ...(options.modelRuns === undefined ? {} : { modelRuns: options.modelRuns })
})

/**
 * Registers the suite in the calling vitest file: a `describe` block named
 * `store contract: <name>` with one test per rule and one for the model. The
 * layer is built afresh for every test.
 *
 * @example
 * ```ts
 * import { StoreSuite } from "effect-leaderelection/testing"
 * import * as MemoryStore from "effect-leaderelection/stores/MemoryStore"
 *
 * StoreSuite.run("MemoryStore", MemoryStore.layer())
 * ```
 *
 * @since 0.1.0
 * @category tests
 */
export const run = (name: string, layer: Layer.Layer<Store.Store, unknown>, options: Options = {}): void =>
  internal.storeSuite(harness(name, layer, options))

/**
 * Runs the whole suite as one Effect, outside any test registration, and
 * returns every case that failed (empty when the store passes). Each case
 * gets its own `TestClock` unless the store is live.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { StoreSuite } from "effect-leaderelection/testing"
 *
 * const failures = await Effect.runPromise(StoreSuite.check("MyStore", MyStore.layer))
 * ```
 *
 * @since 0.1.0
 * @category tests
 */
export const check = (
  name: string,
  layer: Layer.Layer<Store.Store, unknown>,
  options: Options = {}
): Effect.Effect<ReadonlyArray<Failure>> => internal.checkStore(harness(name, layer, options))

/**
 * An election name unique to this process, so that tests can share a table
 * (and run concurrently) without seeing each other's records.
 *
 * @since 0.1.0
 * @category tests
 */
export const uniqueName: (label: string) => string = internal.uniqueName
