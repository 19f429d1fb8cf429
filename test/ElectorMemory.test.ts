/**
 * One term of one leader, renewed 105,000 times on virtual time: the heap
 * retained after a full garbage collection must not grow with the number of
 * renewals. A loop written as `return yield* self()` inside `Effect.gen`
 * retained ~2.7 KB per renewal here.
 *
 * And what a running elector retains at all, with many in one process: the
 * metrics, fibers and finalizers of each one once added up to ~60 KB, and
 * its steps, kept as closures and effects of its own, to 29 KB here (25 KB
 * since they are methods of one object); 21.5 KB, where the code before
 * measured 27.2 KB minutes apart, since its public effects are built when
 * read, its finalizers are one, and its loop's and its term's finalizers are
 * built when they run.
 */
import { Duration, Effect, Exit, Logger, LogLevel, Scope } from "effect"
import { setFlagsFromString } from "node:v8"
import { runInNewContext } from "node:vm"
import { describe, expect, it } from "vitest"
import * as Elector from "../src/Elector.js"
import * as Store from "../src/Store.js"
import * as MemoryStore from "../src/stores/MemoryStore.js"
import { rate, VirtualTime } from "../src/testing/internal/VirtualTime.js"
import * as Granting from "./support/GrantingStore.js"

setFlagsFromString("--expose-gc")
const gc = runInNewContext("gc") as () => void

const retained = (): number => {
  for (let i = 0; i < 3; i++) gc()
  return process.memoryUsage().heapUsed
}

describe("Elector memory", () => {
  it("retains less than 100 bytes per renewal over a 105,000-renewal term", async () => {
    const vt = new VirtualTime()
    const store = Granting.make()
    const scope = vt.run(Scope.make())
    const elector = vt.run(
      Elector.make({
        name: "memory",
        identity: "a",
        leaseDuration: "3 seconds",
        renewInterval: "750 millis",
        operationTimeout: "500 millis"
      }).pipe(
        Effect.provideService(Store.Store, store),
        Effect.withClock(vt.clock(rate(10_000))),
        Scope.extend(scope),
        Effect.orDie
      )
    )
    vt.fork(Logger.withMinimumLogLevel(elector.run, LogLevel.None))
    // Gives the event loop a turn between virtual minutes, so that vitest's
    // worker keeps answering its runner however long the whole run takes.
    const renewTo = async (count: number) => {
      while (store.renewals() < count) {
        vt.advanceTo(vt.millis + 60_000)
        await new Promise((resolve) => setImmediate(resolve))
      }
    }
    await renewTo(5_000)
    expect(vt.run(elector.fence)._tag).toBe("Some")
    const before = retained()
    const from = store.renewals()
    await renewTo(105_000)
    const after = retained()
    const renewals = store.renewals() - from
    // Still the same term: no step-down, no new fence.
    expect(vt.run(elector.fence)).toEqual(vt.run(Effect.succeedSome(1n)))
    const perRenewal = (after - before) / renewals
    console.log(`retained ${perRenewal.toFixed(1)} B per renewal over ${renewals} renewals`)
    expect(perRenewal).toBeLessThan(100)
  }, 300_000)

  it("retains less than 24 KB per running elector: 100 elections of 3 in one process", () => {
    const vt = new VirtualTime()
    const clock = vt.clock(rate(10_000))
    const scope = vt.run(Scope.make())
    const store = vt.run(Effect.withClock(MemoryStore.make(), clock))
    const configs = Array.from({ length: 100 }, (_, e) =>
      Array.from({ length: 3 }, (_, p): Elector.ElectorConfig => ({
        name: `many-${e}`,
        identity: `p${p}`,
        leaseDuration: Duration.seconds(3),
        renewInterval: Duration.millis(750),
        retryPeriod: Duration.millis(500),
        operationTimeout: Duration.millis(500)
      }))).flat()
    const before = retained()
    const { electors } = vt.run(
      Elector.joinAll(configs).pipe(
        Effect.provideService(Store.Store, store),
        Effect.withClock(clock),
        Scope.extend(scope),
        Logger.withMinimumLogLevel(LogLevel.None),
        Effect.orDie
      )
    )
    vt.advanceTo(vt.millis + 10_000)
    const after = retained()
    // Every election led, the others following: each kind of elector counted.
    expect(electors.filter((elector) => vt.run(elector.isLeader)).length).toBe(100)
    const perElector = (after - before) / electors.length
    console.log(`retained ${(perElector / 1024).toFixed(1)} KB per running elector`)
    expect(perElector).toBeLessThan(24 * 1024)
    vt.run(Scope.close(scope, Exit.void))
  })
})
