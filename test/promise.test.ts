import { Deferred, Effect, Layer, Metric } from "effect"
import { afterEach, describe, expect, it, vi } from "vitest"
import * as Lease from "../src/Lease.js"
import { createElector, type PromiseElectorOptions } from "../src/promise.js"
import * as Store from "../src/Store.js"
import * as MemoryStore from "../src/stores/MemoryStore.js"
import { captureLogs } from "./support/consoleLogs.js"
import { eventually, fast as fastTiming } from "./support/promiseTiming.js"
import { fatal, refusing } from "./support/RefusingStore.js"

// Real time (see support/promiseTiming.ts), election `jobs` unless a test names its own.
const fast = { name: "jobs", ...fastTiming } as const

// The shortest lease there is, for the tests that wait a whole lease.
const short = {
  ...fast,
  leaseDuration: "1 second",
  operationTimeout: "100 millis",
  safetyMargin: "200 millis"
} as const

const memory = () => Effect.runPromise(MemoryStore.make())

let elections = 0
/** An election name no other test (nor the global metric registry) has seen. */
const unique = (prefix: string) => `${prefix}-${process.pid}-${++elections}`

/** Whether the election's lease is free: never taken, or released/expired. */
const vacant = (store: Store.StoreShape, name = "jobs") =>
  Effect.runPromise(
    store.inspect(name).pipe(
      Effect.map(Lease.isExpired),
      Effect.catchTag("NoLease", () => Effect.succeed(true))
    )
  )

/** A promise with its resolver, for gating callbacks. */
const gate = () => {
  let open!: () => void
  const opened = new Promise<void>((resolve) => {
    open = resolve
  })
  return { open, opened }
}

/**
 * A store layer over `store` that counts its builds and teardowns, tracks how
 * many are live at once, and (while `hold` is set) waits for `release` before
 * it finishes building.
 */
const counted = (store: Store.StoreShape) => {
  const counts = { built: 0, released: 0, live: 0, maxLive: 0, hold: false }
  const opened = Effect.runSync(Deferred.make<void>())
  const layer: PromiseElectorOptions["store"] = Layer.scoped(
    Store.Store,
    Effect.acquireRelease(
      Effect.gen(function*() {
        if (counts.hold) yield* Deferred.await(opened)
        counts.built++
        counts.live++
        counts.maxLive = Math.max(counts.maxLive, counts.live)
        return store
      }),
      () =>
        Effect.sync(() => {
          counts.released++
          counts.live--
        })
    )
  )
  return { counts, layer, release: () => Effect.runSync(Deferred.succeed(opened, undefined)) }
}

afterEach(() => {
  vi.restoreAllMocks()
})

describe("createElector (Promise wrapper)", () => {
  it("refuses an invalid config at construction with the field and reason", async () => {
    const store = await memory()
    expect(() =>
      createElector({
        store,
        name: "jobs",
        leaseDuration: "10 seconds",
        renewInterval: "5 seconds",
        operationTimeout: "3 seconds",
        safetyMargin: "1 second"
      })
    )
      .toThrow(
        `invalid config: renewInterval: renewInterval 5s + 2 × operationTimeout 3s + retryDelay 1.25s = 12.25s must fit in leaseDuration 10s - safetyMargin 1s = 9s, so that a leader can lose one renewal and retry it before it steps down; any one of these fits: { renewInterval: "2400 millis" }, { operationTimeout: "1300 millis" }, { leaseDuration: "14 seconds" }`
      )
    expect(() => createElector({ store, name: "" })).toThrow(
      expect.objectContaining({ _tag: "InvalidConfig", field: "name" })
    )
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
    expect(elector.status()).toMatchObject({ state: "stopped", isLeader: false, identity: "a", leader: undefined })
    await elector.start()
    await elector.start()
    await eventually(() => elector.isLeader(), "leadership")
    expect(elector.fence()).toBe(1n)
    const status = elector.status()
    expect(status).toMatchObject({
      state: "running",
      isLeader: true,
      fence: 1n,
      identity: "a",
      leader: "a",
      leaderFence: 1n,
      lastError: undefined,
      error: undefined
    })
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
    expect(elector.status().state).toBe("stopped")
    expect(await vacant(store)).toBe(true)
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

  describe("state machine", () => {
    it("goes stopped → starting → running → stopping → stopped, visible in status().state", async () => {
      const store = await memory()
      const { counts, layer, release } = counted(store)
      counts.hold = true
      const elector = createElector({ ...fast, store: layer, identity: "a" })
      expect(elector.status().state).toBe("stopped")
      const starting = elector.start()
      expect(elector.status().state).toBe("starting")
      release()
      await starting
      expect(elector.status().state).toBe("running")
      await eventually(() => elector.isLeader(), "leadership")
      const stopping = elector.stop()
      expect(elector.status().state).toBe("stopping")
      await stopping
      expect(elector.status().state).toBe("stopped")
      expect(counts).toMatchObject({ built: 1, released: 1 })
    })

    it("two concurrent start() calls build one elector", async () => {
      const store = await memory()
      const { counts, layer, release } = counted(store)
      counts.hold = true
      const elector = createElector({ ...fast, store: layer, identity: "a" })
      const both = Promise.all([elector.start(), elector.start()])
      release()
      await both
      await eventually(() => elector.isLeader(), "leadership")
      expect(elector.fence()).toBe(1n)
      expect(counts).toMatchObject({ built: 1, maxLive: 1 })
      await elector.stop()
      // Nothing left running: the one store was torn down and the lease is free.
      expect(counts).toMatchObject({ built: 1, released: 1, live: 0 })
      expect(await vacant(store)).toBe(true)
    })

    it("start() then stop() before start settles ends stopped, never leading", async () => {
      const store = await memory()
      const { counts, layer, release } = counted(store)
      counts.hold = true
      const elector = createElector({ ...fast, store: layer, identity: "a" })
      const started = elector.start()
      const stopped = elector.stop()
      release()
      await Promise.all([started, stopped])
      expect(elector.isLeader()).toBe(false)
      expect(counts.live).toBe(0)
      // The start was cancelled before the store was even built: nobody ever claimed the lease.
      expect(await Effect.runPromise(Effect.flip(store.inspect("jobs")))).toMatchObject({ _tag: "NoLease" })
      expect(elector.status().state).toBe("stopped")
    })

    it("stop() during starting cancels the start, however long starting would take", async () => {
      let building = false
      let interrupted = false
      const never: PromiseElectorOptions["store"] = Layer.effect(
        Store.Store,
        Effect.sync(() => {
          building = true
        }).pipe(
          Effect.zipRight(Effect.never),
          Effect.onInterrupt(() =>
            Effect.sync(() => {
              interrupted = true
            })
          )
        )
      )
      const elector = createElector({ ...fast, store: never })
      const started = elector.start()
      await eventually(() => building, "the store being built")
      expect(elector.status().state).toBe("starting")
      await elector.stop()
      await started
      expect(interrupted).toBe(true)
      expect(elector.status().state).toBe("stopped")
    })

    it("stop() before any start() resolves at once and leaves it stopped; start() then runs", async () => {
      const store = await memory()
      const { counts, layer } = counted(store)
      const elector = createElector({ ...fast, store: layer, identity: "a" })
      await Promise.all([elector.stop(), elector.stop()])
      expect(elector.status()).toMatchObject({ state: "stopped", error: undefined })
      await expect(elector.done()).resolves.toBeUndefined()
      expect(counts.built).toBe(0)
      await elector.start()
      await eventually(() => elector.isLeader(), "leadership")
      await elector.stop()
      expect(counts).toMatchObject({ built: 1, released: 1, live: 0 })
    })

    it("a start() queued behind a stop() that then fails rejects every start; the stop still resolves", async () => {
      const store = await memory()
      let builds = 0
      const stopping = gate()
      // Builds once, then refuses: the restart queued behind the stop fails.
      const layer: PromiseElectorOptions["store"] = Layer.effect(
        Store.Store,
        Effect.suspend(() => ++builds === 1 ? Effect.succeed(store) : Effect.fail("refused on restart"))
      )
      captureLogs()
      const elector = createElector({ ...fast, store: layer, identity: "a", onStoppedLeading: () => stopping.opened })
      await elector.start()
      await eventually(() => elector.isLeader(), "leadership")
      const stopped = elector.stop()
      const restarts = [elector.start(), elector.start()].map((p) => p.catch((e: unknown) => e))
      expect(elector.status().state).toBe("stopping")
      stopping.open()
      await expect(stopped).resolves.toBeUndefined()
      expect(await Promise.all(restarts)).toEqual(["refused on restart", "refused on restart"])
      expect(elector.status()).toMatchObject({ state: "failed", error: "refused on restart" })
      expect(builds).toBe(2)
      await elector.stop()
      expect(elector.status().state).toBe("stopped")
    })

    it("start() during stopping waits for the stop to finish: never two electors at once", async () => {
      const store = await memory()
      const { counts, layer } = counted(store)
      const stopping = gate()
      let terms = 0
      const elector = createElector({
        ...fast,
        store: layer,
        identity: "a",
        onStartedLeading: () => {
          terms++
        },
        // Holds the first stop in `stopping`.
        onStoppedLeading: () => terms === 1 ? stopping.opened : undefined
      })
      await elector.start()
      await eventually(() => elector.isLeader(), "leadership")
      const stopped = elector.stop()
      const restarted = elector.start()
      const final = elector.stop()
      const again = elector.start()
      const during = elector.status().state
      stopping.open()
      await Promise.all([stopped, restarted, final, again])
      await eventually(() => elector.isLeader(), "leadership again")
      expect(counts).toMatchObject({ built: 2, released: 1, maxLive: 1 })
      // Released on stop, so the new term has a fresh fence.
      expect(elector.fence()).toBe(2n)
      expect(during).toBe("stopping")
      expect(elector.status().state).toBe("running")
      await elector.stop()
      expect(counts).toMatchObject({ built: 2, released: 2, live: 0 })
    })
  })

  describe("the signal of every term", () => {
    it("is aborted when the term ends, though the callback returned long before", async () => {
      const memoryStore = await memory()
      let lose = false
      // A store whose next renewal, once `lose` is set, finds the lease gone.
      const store: Store.StoreShape = {
        ...memoryStore,
        renew: (name, identity, fence, ttl, payload) =>
          Effect.suspend(() => {
            if (!lose) return memoryStore.renew(name, identity, fence, ttl, payload)
            lose = false
            return Effect.fail(new Store.LeaseLost({ name, identity, fence }))
          })
      }
      const signals: Array<AbortSignal> = []
      const ticking: Array<boolean> = []
      const elector = createElector({
        ...fast,
        store,
        identity: "a",
        onStartedLeading: (signal) => {
          const term = signals.push(signal) - 1
          // Work that outlives the call: only the signal can stop it.
          const timer = setInterval(() => {}, 1_000)
          ticking[term] = true
          signal.addEventListener("abort", () => {
            clearInterval(timer)
            ticking[term] = false
          })
        }
      })
      await elector.start()
      await eventually(() => signals.length === 1, "the first term")
      expect(signals[0]?.aborted).toBe(false)
      // The term ends on a lost lease while the elector keeps running.
      lose = true
      await eventually(() => signals[0]?.aborted === true, "the first term's signal aborted")
      expect(ticking[0]).toBe(false)
      expect(elector.status().state).toBe("running")
      await eventually(() => signals.length === 2, "the second term")
      expect(signals[1]?.aborted).toBe(false)
      // And when it ends on stop().
      await elector.stop()
      expect(signals[1]?.aborted).toBe(true)
      expect(ticking).toEqual([false, false])
    })
  })

  describe("errors", () => {
    it("start() rejects with the store's own tagged error, not also logged; the elector is failed until started again", async () => {
      const store = await memory()
      let fail = true
      const layer: PromiseElectorOptions["store"] = Layer.effect(
        Store.Store,
        Effect.suspend(() =>
          fail
            ? Effect.fail(
              new Store.StoreError({
                operation: "ensureSchema",
                retryable: false,
                reason: "permission denied",
                cause: undefined
              })
            )
            : Effect.succeed(store)
        )
      )
      const errors: Array<unknown> = []
      const logs = captureLogs()
      const elector = createElector({
        ...fast,
        store: layer,
        onError: (error) => {
          errors.push(error)
          throw new Error("the error handler failed too")
        }
      })
      const error = await elector.start().catch((e: unknown) => e)
      expect(error).toBeInstanceOf(Store.StoreError)
      expect(error).toMatchObject({ _tag: "StoreError", retryable: false, reason: "permission denied" })
      expect(elector.status()).toMatchObject({ state: "failed", error })
      expect(elector.status().toJSON().error).toEqual({
        _tag: "StoreError",
        message: "ensureSchema failed (fatal): permission denied"
      })
      await expect(elector.done()).rejects.toBe(error)
      await eventually(() => errors.length === 1, "onError")
      expect(errors[0]).toBe(error)
      await eventually(() => logs.some((line) => line.includes("onError failed")), "the handler's failure logged")
      // Reported once, by the rejection (and onError): not logged as well.
      expect(logs.filter((line) => line.includes("permission denied"))).toEqual([])
      // Starting again starts afresh.
      fail = false
      await elector.start()
      expect(elector.status()).toMatchObject({ state: "running", error: undefined })
      await elector.stop()
      expect(elector.status().state).toBe("stopped")
    })

    it("failFast: start() rejects with the first store answer when it is fatal; without it the elector runs on", async () => {
      const strict = createElector({ ...fast, store: refusing, identity: "strict", failFast: true })
      const error = await strict.start().catch((e: unknown) => e)
      expect(error).toBeInstanceOf(Store.StoreError)
      expect(error).toMatchObject({ _tag: "StoreError", retryable: false, reason: "no privilege" })
      expect(strict.status().state).toBe("failed")
      const lenient = createElector({ ...fast, store: refusing, identity: "lenient" })
      await lenient.start()
      expect(lenient.status().state).toBe("running")
      await eventually(() => lenient.status().lastError?.message === fatal.message, "lastError set")
      await lenient.stop()
      await strict.stop()
      expect(strict.status().state).toBe("stopped")
    })

    it("stop() acknowledges a failure: failed → stopped", async () => {
      // Not even an Error: whatever the layer fails with is what start() rejects with.
      const failing: PromiseElectorOptions["store"] = Layer.fail("no database")
      captureLogs()
      const elector = createElector({ ...fast, store: failing })
      await expect(elector.start()).rejects.toBe("no database")
      expect(elector.status().toJSON().error).toEqual({ _tag: "Unknown", message: "no database" })
      await elector.stop()
      expect(elector.status()).toMatchObject({ state: "stopped", error: undefined })
      await expect(elector.done()).resolves.toBeUndefined()
    })

    it("a failed election loop is reported: status failed, onError, done() rejects, an ERROR log", async () => {
      const memoryStore = await memory()
      const defect = new Error("driver bug")
      let broken = false
      // A store that throws instead of returning an effect: the loop itself dies.
      const store: Store.StoreShape = {
        ...memoryStore,
        inspect: (name) => {
          if (broken) throw defect
          return memoryStore.inspect(name)
        }
      }
      const errors: Array<unknown> = []
      const logs = captureLogs()
      const elector = createElector({ ...fast, store, identity: "a", onError: (error) => errors.push(error) })
      await elector.start()
      await eventually(() => elector.status().leader === "a", "the first lease")
      const done = elector.done().catch((e: unknown) => e)
      broken = true
      // The leader stops to poll once its lease is lost.
      await Effect.runPromise(memoryStore.release("jobs", "a", 1n))
      await eventually(() => elector.status().state === "failed", "the failure")
      expect(elector.status().error).toBe(defect)
      expect(await done).toBe(defect)
      await eventually(() => errors.length === 1, "onError")
      expect(errors[0]).toBe(defect)
      expect(logs.some((line) => line.includes("level=ERROR") && line.includes("stopped on a failure"))).toBe(true)
      expect(elector.isLeader()).toBe(false)
    })

    it("stop() never rejects, even when tearing the store down fails; the failure is logged", async () => {
      const store = await memory()
      const layer: PromiseElectorOptions["store"] = Layer.scoped(
        Store.Store,
        Effect.acquireRelease(Effect.succeed(store), () => Effect.die(new Error("pool end failed")))
      )
      const logs = captureLogs()
      const elector = createElector({ ...fast, store: layer })
      await elector.start()
      const done = elector.done()
      await elector.stop()
      await expect(done).resolves.toBeUndefined()
      expect(elector.status().state).toBe("stopped")
      expect(logs.some((line) => line.includes("failed while stopping") && line.includes("pool end failed"))).toBe(true)
    })
  })

  describe("callbacks", () => {
    it("stop() is bounded: a callback that never settles is given up on after leaseDuration", async () => {
      const store = await memory()
      const logs = captureLogs()
      const elector = createElector({
        ...short,
        store,
        identity: "a",
        // Ignores its signal and never settles.
        onStartedLeading: () => new Promise<void>(() => {}),
        onStoppedLeading: () => new Promise<void>(() => {})
      })
      await elector.start()
      await eventually(() => elector.isLeader(), "leadership")
      await elector.stop()
      expect(elector.status().state).toBe("stopped")
      expect(logs.some((line) => line.includes("onStartedLeading did not settle within leaseDuration (1s)"))).toBe(true)
      // onStoppedLeading runs after the release, on the advisory queue, which
      // shutdown waits for at most operationTimeout.
      expect(logs.some((line) => line.includes("advisory callbacks still running at shutdown"))).toBe(true)
      expect(await vacant(store)).toBe(true)
    }, 15_000)

    it("throws and rejections are contained and logged, never an unhandled rejection", async () => {
      const store = await memory()
      const unhandled: Array<unknown> = []
      const onUnhandled = (reason: unknown) => unhandled.push(reason)
      process.on("unhandledRejection", onUnhandled)
      const logs = captureLogs()
      try {
        const elector = createElector({
          ...fast,
          store,
          identity: "a",
          onStartedLeading: () => {
            throw new Error("work threw")
          },
          onStoppedLeading: () => Promise.reject(new Error("cleanup rejected")),
          onNewLeader: () => {
            throw new Error("observer threw")
          }
        })
        await elector.start()
        await eventually(() => logs.some((line) => line.includes("work threw")), "the work's failure logged")
        await elector.stop()
        expect(logs.some((line) => line.includes("onNewLeader failed") && line.includes("observer threw"))).toBe(true)
        expect(logs.some((line) => line.includes("onStoppedLeading failed") && line.includes("cleanup rejected"))).toBe(
          true
        )
        expect(elector.status().state).toBe("stopped")
        // A macrotask, so that Node has reported any unhandled rejection by now.
        await new Promise((resolve) => setTimeout(resolve, 0))
        expect(unhandled).toEqual([])
      } finally {
        process.off("unhandledRejection", onUnhandled)
      }
    })

    it("a slow onNewLeader does not hold up the election", async () => {
      const store = await memory()
      const observed: Array<string> = []
      const elector = createElector({
        ...fast,
        store,
        identity: "a",
        // An async observer that never settles.
        onNewLeader: (identity) => {
          observed.push(identity)
          return new Promise<void>(() => {}) as unknown as void
        }
      })
      await elector.start()
      await eventually(() => elector.isLeader(), "leadership")
      expect(observed).toEqual(["a"])
      await elector.stop()
    })
  })

  describe("operating it", () => {
    it("logLevel sets the least severe level logged", async () => {
      const store = await memory()
      const logs = captureLogs()
      const quiet = createElector({ ...fast, name: unique("quiet"), store, identity: "a", logLevel: "Warning" })
      await quiet.start()
      await eventually(() => quiet.isLeader(), "leadership")
      await quiet.stop()
      expect(logs.filter((line) => !line.includes("level=WARN") && !line.includes("level=ERROR"))).toEqual([])
      const chatty = createElector({ ...fast, name: unique("chatty"), store, identity: "a" })
      await chatty.start()
      await eventually(() => chatty.isLeader(), "leadership")
      await chatty.stop()
      expect(logs.some((line) => line.includes("level=INFO") && line.includes("started leading under fence 1"))).toBe(
        true
      )
    })

    it("status() is JSON: bigints as strings, dates as ISO strings, the payload in base64", async () => {
      const memoryStore = await memory()
      let down = false
      // While `down`, every call fails as an unreachable database would.
      const refused = <A, E>(
        operation: Store.Operation,
        call: Effect.Effect<A, E>
      ): Effect.Effect<A, E | Store.StoreError> =>
        Effect.suspend((): Effect.Effect<A, E | Store.StoreError> =>
          down
            ? Effect.fail(
              new Store.StoreError({ operation, retryable: true, reason: "connection refused", cause: undefined })
            )
            : call
        )
      const store: Store.StoreShape = {
        ...memoryStore,
        acquire: (...args) => refused("acquire", memoryStore.acquire(...args)),
        renew: (...args) => refused("renew", memoryStore.renew(...args)),
        inspect: (...args) => refused("inspect", memoryStore.inspect(...args))
      }
      const elector = createElector({ ...fast, store, identity: "a", payload: new Uint8Array([104, 105]) })
      expect(JSON.parse(JSON.stringify(elector.status()))).toEqual({
        state: "stopped",
        isLeader: false,
        fence: null,
        identity: "a",
        leader: null,
        leaderFence: null,
        leaderPayload: null,
        observedAt: null,
        validUntil: null,
        lastError: null,
        identityCollision: null,
        error: null
      })
      await elector.start()
      await eventually(() => elector.isLeader(), "leadership")
      const json = JSON.parse(JSON.stringify(elector.status()))
      expect(json).toMatchObject({
        state: "running",
        isLeader: true,
        fence: "1",
        identity: "a",
        leader: "a",
        leaderFence: "1",
        leaderPayload: "aGk=",
        lastError: null,
        error: null
      })
      expect(new Date(json.observedAt).toISOString()).toBe(json.observedAt)
      expect(new Date(json.validUntil).toISOString()).toBe(json.validUntil)
      down = true
      await eventually(() => elector.status().lastError !== undefined, "a failed call")
      expect(elector.status().toJSON().lastError).toEqual({
        _tag: "StoreError",
        message: "renew failed (retryable): connection refused"
      })
      await elector.stop()
    })

    it("metrics() exposes this elector's metrics in the Prometheus text format", async () => {
      const store = await memory()
      const name = unique("metrics")
      const other = unique("metrics")
      const a = createElector({ ...fast, name, store, identity: "a" })
      // Another participant of the same election, and one of another election.
      const b = createElector({ ...fast, name, store, identity: "b" })
      const c = createElector({ ...fast, name: other, store, identity: "c\"quoted\"" })
      await a.start()
      await eventually(() => a.isLeader(), "leadership")
      // A renewal, for the latency histogram.
      await eventually(() => a.metrics().includes("leaderelection_renew_latency_count"), "a renewal")
      const text = a.metrics()
      expect(text).toContain(
        "# HELP leaderelection_is_leader 1 while this participant leads the election, 0 otherwise\n# TYPE leaderelection_is_leader gauge\n"
      )
      expect(text).toContain(`leaderelection_is_leader{election="${name}"} 1\n`)
      expect(text).toContain(
        `# TYPE leaderelection_info gauge\nleaderelection_info{election="${name}",identity="a"} 1\n`
      )
      expect(text).toContain(
        `# TYPE leaderelection_terms_total counter\nleaderelection_terms_total{election="${name}"} 1\n`
      )
      expect(text).toContain("# TYPE leaderelection_renew_latency histogram\n")
      expect(text).toMatch(
        new RegExp(`leaderelection_renew_latency_bucket\\{[^}]*election="${name}"[^}]*le="\\+Inf"\\} [1-9]\\d*\n`)
      )
      expect(text).toMatch(/leaderelection_renew_latency_bucket\{[^}]*le="1"\} \d+\n/)
      expect(text).toMatch(/leaderelection_renew_latency_sum\{[^}]*\} [\d.]+\n/)
      // Only this elector's series: not b's info, nor other elections'. (Series
      // other than the info gauge are per election and process: b's updates
      // land on the same is_leader series as a's.)
      await b.start()
      await c.start()
      expect(a.metrics()).not.toContain(`identity="b"`)
      expect(b.metrics()).toContain(`leaderelection_info{election="${name}",identity="b"} 1\n`)
      expect(a.metrics().match(/election="[^"]*"/g)?.every((label) => label === `election="${name}"`)).toBe(true)
      expect(c.metrics()).toContain(`leaderelection_info{election="${other}",identity="c\\"quoted\\""} 1\n`)
      // The app's own metrics tagged with the election come along, but only kinds Prometheus has a type for.
      await Effect.runPromise(Effect.all([
        Metric.increment(Metric.tagged(Metric.counter("app_jobs_total"), "election", name)),
        Metric.update(Metric.tagged(Metric.frequency("app_outcomes"), "election", name), "ok")
      ]))
      expect(a.metrics()).toContain(`# TYPE app_jobs_total counter\napp_jobs_total{election="${name}"} 1\n`)
      expect(a.metrics()).not.toContain("app_outcomes")
      // The follower first: a's release would wake it to lead (MemoryStore's hint), and step down again.
      await b.stop()
      await a.stop()
      await c.stop()
      expect(a.metrics()).toContain(`leaderelection_step_downs_total{election="${name}",reason="shutdown"} 1\n`)
      expect(a.metrics()).toContain(`leaderelection_info{election="${name}",identity="a"} 0\n`)
    })
  })
})
