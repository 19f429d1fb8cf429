/** Participants on TestClock over one MemoryStore, for the resign and preferred-leader tests. */
import { Duration, Effect, Metric, Scope, TestClock } from "effect"
import * as Elector from "../../src/Elector.js"
import * as Metrics from "../../src/Metrics.js"
import * as Store from "../../src/Store.js"
import * as MemoryStore from "../../src/stores/MemoryStore.js"

/** The database clock is three days ahead of the local one, as in every unit test. */
export const world = Effect.flatMap(
  MemoryStore.makeClock({ offset: Duration.days(3) }),
  (clock) => MemoryStore.make({ clock })
)

export const seconds = (n: number) => TestClock.adjust(Duration.millis(n * 1000))

/** A participant running in a scope of its own, so that the test can stop it. */
export const join = (store: Store.StoreShape, config: Elector.ElectorConfig) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const elector = yield* Elector.make(config).pipe(
      Effect.provideService(Store.Store, store),
      Scope.extend(scope)
    )
    yield* Effect.forkIn(elector.run, scope)
    yield* TestClock.adjust(Duration.millis(1))
    return { elector, scope }
  })

/** Terms of the election that ended for `reason` (metrics are process-wide: use a fresh election per test). */
export const stepDowns = (name: string, reason: Metrics.StepDownReason) =>
  Effect.map(
    Metric.value(Metric.tagged(Metric.tagged(Metrics.stepDowns, "election", name), "reason", reason)),
    (s) => s.count
  )
