/**
 * Per-call overhead benchmark: what the elector itself costs around each store
 * call, with the store taken out of the picture.
 *
 * N elections x 3 participants run in this one process on the real clock,
 * with the fast timing (lease 3 s, renewals every 750 ms, polls every 500 ms,
 * operationTimeout 500 ms),
 * against a store that answers at once from a Map (no lock, no I/O): nearly
 * all the CPU measured is the elector's. After a warm-up it prints, over the
 * measured window:
 *
 * - CPU (user + system) per store call, in microseconds, less what the
 *   process spends idle (measured for 2 s before the electors start);
 * - bytes allocated per store call (from the heap before and after each GC,
 *   via v8.GCProfiler) and the share of wall time spent in GC;
 * - how many times `changes` emits per renewal, for a participant alone in its election;
 * - what a Promise `isLeader()` costs, in nanoseconds, on a leader.
 *
 *   npm run bench:overhead                        # 100 elections, 5 s warm-up, 10 s measured
 *   BENCH_ELECTIONS=300 BENCH_SECONDS=20 npm run bench:overhead
 */
import { Duration, Effect, Logger, LogLevel, Stream } from "effect"
import { performance, PerformanceObserver } from "node:perf_hooks"
import { GCProfiler, getHeapStatistics } from "node:v8"
import * as Elector from "../src/Elector.js"
import type * as Lease from "../src/Lease.js"
import { createElector } from "../src/promise.js"
import * as Store from "../src/Store.js"

const elections = Number(process.env["BENCH_ELECTIONS"] ?? 100)
const measured = Number(process.env["BENCH_SECONDS"] ?? 10)
const warmUp = Number(process.env["BENCH_WARMUP"] ?? 5)
/** An election with one participant, which leads throughout: its `changes` are counted per renewal. */
const solo = "bench-overhead-solo"
const timing = {
  leaseDuration: "3 seconds",
  renewInterval: "750 millis",
  retryPeriod: "500 millis",
  operationTimeout: "500 millis"
} as const

interface Row {
  holder: string
  fence: bigint
  expiresAt: number
  acquiredAt: number
  renewedAt: number
}

/** A store as cheap as a store can be: a Map, answered synchronously. Counts its calls. */
const makeStore = () => {
  const rows = new Map<string, Row>()
  let fences = 0n
  const counts = { calls: 0, soloRenewals: 0 }
  const lease = (name: string, row: Row, now: number, payload: Uint8Array | null): Lease.Lease => ({
    name,
    holder: row.holder,
    fence: row.fence,
    payload,
    acquiredAt: new Date(row.acquiredAt),
    renewedAt: new Date(row.renewedAt),
    expiresAt: new Date(row.expiresAt),
    now: new Date(now)
  })
  const store: Store.StoreShape = {
    acquire: (name, identity, ttl, payload) =>
      Effect.sync(() => {
        counts.calls++
        const now = Date.now()
        let row = rows.get(name)
        if (row === undefined || row.expiresAt <= now) {
          row = { holder: identity, fence: ++fences, acquiredAt: now, renewedAt: now, expiresAt: 0 }
          rows.set(name, row)
        }
        if (row.holder === identity) {
          row.renewedAt = now
          row.expiresAt = now + Duration.toMillis(ttl)
        }
        return lease(name, row, now, payload)
      }),
    renew: (name, identity, fence, ttl, payload) =>
      Effect.suspend(() => {
        counts.calls++
        if (name === solo) counts.soloRenewals++
        const now = Date.now()
        const row = rows.get(name)
        if (row === undefined || row.holder !== identity || row.fence !== fence || row.expiresAt <= now) {
          return Effect.fail(new Store.LeaseLost({ name, identity, fence }))
        }
        row.renewedAt = now
        row.expiresAt = now + Duration.toMillis(ttl)
        return Effect.succeed(lease(name, row, now, payload))
      }),
    release: (name, identity, fence) =>
      Effect.sync(() => {
        counts.calls++
        const row = rows.get(name)
        if (row !== undefined && row.holder === identity && row.fence === fence) row.expiresAt = 0
      }),
    inspect: (name) =>
      Effect.suspend(() => {
        counts.calls++
        const now = Date.now()
        const row = rows.get(name)
        return row === undefined
          ? Effect.fail(new Store.NoLease({ name }))
          : Effect.succeed(lease(name, row, now, null))
      })
  }
  return { store, counts }
}

/** Bytes allocated over a window: the heap's growth plus what each GC in it freed. */
const allocated = (usedBefore: number, profile: ReturnType<GCProfiler["stop"]>, usedAfter: number): number =>
  (profile?.statistics ?? []).reduce(
    (sum, gc) => sum + gc.beforeGC.heapStatistics.usedHeapSize - gc.afterGC.heapStatistics.usedHeapSize,
    usedAfter - usedBefore
  )

/** CPU microseconds per second this process spends with nothing to do (tsx, timers), taken off the figures. */
const idleCpu = async (): Promise<number> => {
  const from = process.cpuUsage()
  const wall = performance.now()
  await new Promise((resolve) => setTimeout(resolve, 2000))
  const used = process.cpuUsage(from)
  return (used.user + used.system) / ((performance.now() - wall) / 1000)
}

const isLeaderNanos = async (): Promise<number> => {
  const { store } = makeStore()
  const elector = createElector({ store, name: "bench-overhead-promise", identity: "p", logLevel: "None", ...timing })
  await elector.start()
  while (!elector.isLeader()) await new Promise((resolve) => setTimeout(resolve, 10))
  // In slices, letting the event loop turn in between: the elector keeps renewing.
  const slices = 200
  const slice = 5_000
  let spent = 0
  for (let s = 0; s < slices; s++) {
    const from = performance.now()
    for (let i = 0; i < slice; i++) elector.isLeader()
    spent += performance.now() - from
    await new Promise((resolve) => setImmediate(resolve))
  }
  const nanos = (spent * 1e6) / (slices * slice)
  await elector.stop()
  return nanos
}

const program = Effect.gen(function*() {
  const { counts, store } = makeStore()
  const electors: Array<Elector.ElectorShape> = []
  for (let e = 0; e < elections; e++) {
    for (let p = 0; p < 3; p++) {
      const elector = yield* Elector.make({ name: `bench-overhead-${e}`, identity: `p${p}`, ...timing }).pipe(
        Effect.provideService(Store.Store, store)
      )
      electors.push(elector)
      yield* Effect.forkScoped(elector.run)
    }
  }
  const alone = yield* Elector.make({ name: solo, identity: "solo", ...timing }).pipe(
    Effect.provideService(Store.Store, store)
  )
  yield* Effect.forkScoped(alone.run)
  let emissions = 0
  yield* Effect.forkScoped(Stream.runForEach(alone.changes, () => Effect.sync(() => emissions++)))
  yield* Effect.sleep(Duration.seconds(warmUp))

  let gcMillis = 0
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) gcMillis += entry.duration
  })
  observer.observe({ entryTypes: ["gc"] })
  const profiler = new GCProfiler()
  const usedBefore = getHeapStatistics().used_heap_size
  profiler.start()
  const calls = counts.calls
  const emitted = emissions
  const renewed = counts.soloRenewals
  const cpu = process.cpuUsage()
  const wall = performance.now()
  yield* Effect.sleep(Duration.seconds(measured))
  const used = process.cpuUsage(cpu)
  const elapsed = performance.now() - wall
  const bytes = allocated(usedBefore, profiler.stop(), getHeapStatistics().used_heap_size)
  observer.disconnect()
  const n = counts.calls - calls
  const leaders = yield* Effect.forEach(electors, (e) => e.isLeader)
  const busy = used.user + used.system - idle * (elapsed / 1000)
  return {
    calls: n,
    cpuMicros: busy / n,
    cpuShare: (used.user + used.system) / 1000 / elapsed,
    bytesPerCall: bytes / n,
    gcShare: gcMillis / elapsed,
    emissionsPerRenewal: (emissions - emitted) / (counts.soloRenewals - renewed),
    leaders: leaders.filter((l) => l).length
  }
})

const idle = await idleCpu()
const result = await Effect.runPromise(Effect.scoped(program).pipe(Logger.withMinimumLogLevel(LogLevel.None)))
const nanos = await isLeaderNanos()
console.log(
  [
    `elections x participants       ${elections} x 3, fast timing, ${measured} s measured after ${warmUp} s`,
    `store calls                    ${result.calls} (${(result.calls / measured).toFixed(0)}/s)`,
    `leaders at the end             ${result.leaders} of ${elections}`,
    `CPU per store call             ${result.cpuMicros.toFixed(1)} us (process CPU ${
      (result.cpuShare * 100).toFixed(1)
    } %, idle ${(idle / 1e4).toFixed(1)} % taken off)`,
    `allocated per store call       ${(result.bytesPerCall / 1024).toFixed(1)} KiB`,
    `GC share of wall time          ${(result.gcShare * 100).toFixed(2)} %`,
    `changes emitted per renewal    ${result.emissionsPerRenewal.toFixed(2)}`,
    `Promise isLeader()             ${nanos.toFixed(0)} ns`
  ].join("\n")
)
