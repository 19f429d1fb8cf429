import { Duration, Effect, Layer } from "effect"
import { describe, expect, it } from "vitest"
import * as Lease from "../src/Lease.js"
import { createElector, type PromiseElectorOptions } from "../src/promise.js"
import * as Store from "../src/Store.js"
import * as MemoryStore from "../src/stores/MemoryStore.js"

// Real time, short lease: these tests wait for conditions, never for fixed delays.
const fast = {
  name: "jobs",
  leaseDuration: "1 second",
  renewInterval: "200 millis",
  retryPeriod: "100 millis",
  operationTimeout: "100 millis",
  safetyMargin: "200 millis"
} as const

const eventually = async (condition: () => boolean, what: string) => {
  const deadline = performance.now() + 10_000
  while (!condition()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

const memory = () => Effect.runPromise(MemoryStore.make())

describe("createElector (Promise wrapper)", () => {
  it("refuses an invalid config at construction with the field and reason", async () => {
    const store = await memory()
    expect(() => createElector({ store, name: "jobs", leaseDuration: "10 seconds", renewInterval: "5 seconds", operationTimeout: "3 seconds", safetyMargin: "1 second" }))
      .toThrow("invalid config: renewInterval: a lost renewal needs renewInterval+2*operationTimeout+retryDelay (12.25s) but only leaseDuration-safetyMargin (9s) is available")
    expect(() => createElector({ store, name: "" })).toThrow(expect.objectContaining({ _tag: "InvalidConfig", field: "name" }))
  })

  it("leads with a signal per term, and stop aborts it, waits for it and releases", async () => {
    const store = await memory()
    const events: Array<string> = []
    let signal: AbortSignal | undefined
    const elector = createElector({
      ...fast,
      store,
      identity: "a",
      payload: new Uint8Array([1, 2]),
      onStartedLeading: async (s, fence) => {
        signal = s
        events.push(`started ${fence}`)
        await new Promise((resolve) => s.addEventListener("abort", resolve))
        // Still running after the abort: stop must wait for this to finish.
        await new Promise((resolve) => setTimeout(resolve, 50))
        events.push("work done")
      },
      onStoppedLeading: () => {
        events.push("stopped")
      },
      onNewLeader: (identity, fence) => {
        events.push(`leader ${identity} ${fence}`)
      }
    })
    expect(elector.isLeader()).toBe(false)
    expect(elector.fence()).toBeUndefined()
    expect(elector.status()).toMatchObject({ isLeader: false, identity: "a", leader: undefined })
    await elector.start()
    await elector.start()
    await eventually(() => elector.isLeader(), "leadership")
    expect(elector.fence()).toBe(1n)
    const status = elector.status()
    expect(status).toMatchObject({ isLeader: true, fence: 1n, identity: "a", leader: "a", leaderFence: 1n, lastError: undefined })
    expect(status.leaderPayload).toEqual(new Uint8Array([1, 2]))
    expect(status.observedAt).toBeInstanceOf(Date)
    expect(status.validUntil).toBeInstanceOf(Date)
    await eventually(() => events.includes("started 1"), "the term's callback")
    expect(signal?.aborted).toBe(false)
    await elector.stop()
    await elector.stop()
    expect(signal?.aborted).toBe(true)
    expect(events).toEqual(["leader a 1", "started 1", "work done", "stopped"])
    expect(elector.isLeader()).toBe(false)
    expect(Lease.isExpired(await Effect.runPromise(store.inspect("jobs")))).toBe(true)
  })

  it("hands over between two electors sharing a store, with a fresh fence", async () => {
    const store = await memory()
    const a = createElector({ ...fast, store, identity: "a" })
    const b = createElector({ ...fast, store, identity: "b" })
    await a.start()
    await eventually(() => a.isLeader(), "a leading")
    await b.start()
    await eventually(() => b.status().leader === "a", "b seeing a")
    expect(b.isLeader()).toBe(false)
    await a.stop()
    await eventually(() => b.isLeader(), "b leading")
    expect(b.fence()).toBe(2n)
    await b.stop()
  })

  it("builds a store layer on start and tears it down on stop; callback failures do not stop it", async () => {
    let built = 0
    let released = 0
    const layer: PromiseElectorOptions["store"] = Layer.scoped(
      Store.Store,
      Effect.acquireRelease(
        Effect.zipLeft(MemoryStore.make(), Effect.sync(() => built++)),
        () => Effect.sync(() => released++)
      )
    )
    const elector = createElector({
      ...fast,
      store: layer,
      onStartedLeading: () => Promise.reject(new Error("work failed")),
      onStoppedLeading: () => {
        throw new Error("callback failed")
      },
      onNewLeader: () => {
        throw new Error("observer failed")
      }
    })
    expect(elector.identity).toMatch(/-[0-9a-f]{12}$/)
    await elector.start()
    expect(built).toBe(1)
    await eventually(() => elector.isLeader(), "leadership")
    await new Promise((resolve) => setTimeout(resolve, Duration.toMillis("300 millis")))
    expect(elector.isLeader()).toBe(true)
    await elector.stop()
    expect(released).toBe(1)
  })
})
