/**
 * Memory benchmark: one leader renews its lease every millisecond on the real
 * clock against a store that always grants it, and the heap retained after a
 * full garbage collection is compared between the end of a warm-up and the
 * end of the run. Prints bytes retained per renewal; flat is ~0.
 *
 *   npm run bench:memory                 # 3s warm-up, 20s measured
 *   BENCH_SECONDS=120 npm run bench:memory
 */
import { setFlagsFromString } from "node:v8"
import { runInNewContext } from "node:vm"
import { Effect, Fiber, Logger, LogLevel, Option } from "effect"
import * as Elector from "../src/Elector.js"
import * as Store from "../src/Store.js"
import * as Granting from "../test/support/GrantingStore.js"

setFlagsFromString("--expose-gc")
const gc = runInNewContext("gc") as () => void

const measured = Number(process.env["BENCH_SECONDS"] ?? 20)

const retained = (): number => {
  for (let i = 0; i < 3; i++) gc()
  return process.memoryUsage().heapUsed
}

const program = Effect.gen(function*() {
  const store = Granting.make()
  const elector = yield* Elector.make({
    name: "bench-memory",
    identity: "bench",
    leaseDuration: "2 seconds",
    renewInterval: "1 millis",
    operationTimeout: "200 millis"
  }).pipe(Effect.provideService(Store.Store, store))
  const runner = yield* Effect.fork(Logger.withMinimumLogLevel(elector.run, LogLevel.None))
  yield* Effect.sleep("3 seconds")
  const before = retained()
  const from = store.renewals()
  yield* Effect.sleep(`${measured} seconds`)
  const after = retained()
  const renewals = store.renewals() - from
  const leading = Option.isSome(yield* elector.fence)
  yield* Fiber.interrupt(runner)
  console.log(
    `renewals: ${renewals} in ${measured}s (renewInterval 1ms), still leading the first term: ${leading}\n` +
      `heap retained: ${((after - before) / 1024).toFixed(1)} KiB, ${((after - before) / renewals).toFixed(1)} B per renewal`
  )
})

Effect.runPromise(Effect.scoped(program)).catch((error: unknown) => {
  console.error(error)
  process.exitCode = 1
})
