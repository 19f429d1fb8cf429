/**
 * Spreading many elections over Promise processes: `createSpread`, over one
 * in-process MemoryStore, in real time.
 */
import { Effect } from "effect"
import { describe, expect, it } from "vitest"
import { createSpread } from "../src/promise.js"
import * as MemoryStore from "../src/stores/MemoryStore.js"
import { eventually, fast } from "./support/promiseTiming.js"

const names = ["t-0", "t-1", "t-2", "t-3", "t-4", "t-5"]

describe("createSpread (Promise API)", () => {
  it("shares the elections out, runs the work per term, and hands everything over on stop", async () => {
    const store = Effect.runSync(MemoryStore.make())
    const running = new Map<string, AbortSignal>()
    const spreads = ["a", "b"].map((identity) =>
      createSpread({
        ...fast,
        store,
        group: "tenants",
        names,
        identity,
        logLevel: "None",
        work: (name, signal, fence) => {
          expect(fence).toBeGreaterThan(0n)
          running.set(`${identity}/${name}`, signal)
        }
      })
    )
    const [a, b] = spreads as [(typeof spreads)[0], (typeof spreads)[0]]
    await Promise.all(spreads.map((s) => s.start()))
    expect(a.state()).toBe("running")
    await eventually(() => a.leading().length === 3 && b.leading().length === 3, "an even share")
    expect([...a.leading(), ...b.leading()].sort()).toEqual(names)
    const aRuns = a.leading().map((name) => running.get(`a/${name}`)!)
    await a.stop()
    expect(a.leading()).toEqual([])
    expect(aRuns.every((signal) => signal.aborted)).toBe(true)
    await eventually(() => b.leading().length === 6, "b leading everything")
    await b.stop()
    await a.done()
  })

  it("adds and removes elections while running and while stopped, and resigns one", async () => {
    const store = Effect.runSync(MemoryStore.make())
    const spread = createSpread({ ...fast, store, group: "g", names: ["x"], work: () => {}, logLevel: "None" })
    expect(() => spread.add("g")).toThrow(/group's own name/)
    expect(() => createSpread({ store, group: "g", names: ["g"], work: () => {} })).toThrow(/names its membership/)
    await spread.add("y")
    await spread.remove("x")
    const starting = spread.start()
    // Caught up before it runs.
    void spread.add("z")
    await starting
    expect(spread.names()).toEqual(["y", "z"])
    await eventually(() => spread.leading().length === 2, "leading y and z")
    await spread.add("w")
    await spread.remove("y")
    await eventually(() => [...spread.leading()].sort().join() === "w,z", "leading w and z")
    await spread.resign("w")
    await spread.resign("nothing")
    expect(spread.leading()).toEqual(["z"])
    await spread.stop()
    await spread.resign("z")
    expect(spread.leading()).toEqual([])
  })

  it("rejects an election it cannot join, and forgets it", async () => {
    const store = Effect.runSync(MemoryStore.make())
    // One identity in two groups of one process: the same election twice is refused.
    const one = createSpread({ ...fast, store, group: "one", names: ["x"], identity: "same", work: () => {} })
    const two = createSpread({ ...fast, store, group: "two", names: [], identity: "same", work: () => {} })
    await Promise.all([one.start(), two.start()])
    await expect(two.add("x")).rejects.toMatchObject({ _tag: "DuplicateIdentity" })
    expect(two.names()).toEqual([])
    await Promise.all([one.stop(), two.stop()])
  })

  it("fails to start over a store without the candidate operations, and reports it", async () => {
    const { advertise: _a, withdraw: _w, ...bare } = Effect.runSync(MemoryStore.make())
    const errors: Array<unknown> = []
    const spread = createSpread({
      store: bare,
      group: "g",
      names: ["x"],
      work: () => {},
      logLevel: "None",
      onError: (error) => errors.push(error)
    })
    await expect(spread.start()).rejects.toMatchObject({ _tag: "InvalidConfig", field: "group" })
    expect(spread.state()).toBe("failed")
    await eventually(() => errors.length === 1, "onError")
    await spread.stop()
  })
})
