/**
 * The Effect way: an elector as a layer, leader-only work with whileLeader,
 * the term's fence from Leadership. Two participants share one in-memory
 * store; the first leader shuts down cleanly and the other takes over.
 *
 *   npx tsx examples/effect.ts
 */
import { Effect, Schedule } from "effect"
import { Elector, Leadership, MemoryStore, Store } from "../src/index.js"

const timings = {
  leaseDuration: "3 seconds",
  renewInterval: "500 millis",
  retryPeriod: "500 millis",
  operationTimeout: "500 millis"
} as const

// Leader-only work: stamp every write with the term's fence.
const reconcile = (who: string) =>
  Effect.flatMap(Leadership.fence, (fence) => Effect.log(`${who} reconciling under fence ${fence}`)).pipe(
    Effect.repeat(Schedule.spaced("400 millis"))
  )

// A participant runs for `lifetime`, then shuts down cleanly: its layer is
// torn down, which ends its term and releases the lease.
const participant = (identity: string, lifetime: Effect.Effect<void>) =>
  Effect.raceFirst(Elector.whileLeader(reconcile(identity)), lifetime).pipe(
    Effect.provide(Elector.layer({ name: "invoice-reconciler", identity, ...timings }))
  )

const program = Effect.gen(function*() {
  // One store shared by both participants, as a database would be.
  const store = yield* MemoryStore.make()
  yield* Effect.all(
    [participant("eu-west", Effect.sleep("2 seconds")), participant("us-east", Effect.sleep("4 seconds"))],
    { concurrency: "unbounded" }
  ).pipe(Effect.provideService(Store.Store, store))
})

Effect.runPromise(program)
