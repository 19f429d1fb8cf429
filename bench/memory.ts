/**
 * Memory benchmark: one leader renews its lease every millisecond on the real
 * clock against a store that always grants it. After a warm-up, the heap
 * retained after a full garbage collection is sampled every 5 seconds; the
 * least-squares slope of retained bytes over renewals is the growth per
 * renewal (flat is ~0; a single before/after difference carries the heap's
 * own noise of several hundred KiB, a lot over a few thousand renewals).
 *
 *   npm run bench:memory                 # 10s warm-up, 30s measured
 *   BENCH_SECONDS=120 npm run bench:memory
 */
import { Effect, Fiber, Logger, LogLevel, Option } from "effect"
import { setFlagsFromString } from "node:v8"
import { runInNewContext } from "node:vm"
import * as Elector from "../src/Elector.js"
import * as Store from "../src/Store.js"
import * as Granting from "../test/support/GrantingStore.js"

setFlagsFromString("--expose-gc")
const gc = runInNewContext("gc") as () => void

const measured = Number(process.env["BENCH_SECONDS"] ?? 30)
const every = 5

/** Least-squares slope of y over x. */
const slope = (points: ReadonlyArray<readonly [number, number]>): number => {
  const n = points.length
  const mx = points.reduce((sum, [x]) => sum + x, 0) / n
  const my = points.reduce((sum, [, y]) => sum + y, 0) / n
  const sxy = points.reduce((sum, [x, y]) => sum + (x - mx) * (y - my), 0)
  const sxx = points.reduce((sum, [x]) => sum + (x - mx) ** 2, 0)
  return sxy / sxx
}

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
  yield* Effect.sleep("10 seconds")
  const samples: Array<readonly [number, number]> = [[store.renewals(), retained()]]
  for (let t = 0; t < measured; t += every) {
    yield* Effect.sleep(`${every} seconds`)
    samples.push([store.renewals(), retained()])
  }
  const [from, before] = samples[0]!
  const [to, after] = samples[samples.length - 1]!
  const leading = Option.isSome(yield* elector.fence)
  yield* Fiber.interrupt(runner)
  console.log(
    `renewals: ${to - from} in ${measured}s (renewInterval 1ms), still leading the first term: ${leading}\n` +
      `heap retained, first to last sample: ${((after - before) / 1024).toFixed(1)} KiB\n` +
      `retained per renewal (slope over ${samples.length} samples): ${slope(samples).toFixed(1)} B`
  )
})

Effect.runPromise(Effect.scoped(program)).catch((error: unknown) => {
  console.error(error)
  process.exitCode = 1
})
