import { Cause, Effect, Layer, Logger, LogLevel } from "effect"
import { afterEach, describe, expect, it, vi } from "vitest"
import * as Logs from "../src/internal/promise/logger.js"
import { createElector, type PromiseLogFields, type PromiseLogger } from "../src/promise.js"
import * as Store from "../src/Store.js"
import * as MemoryStore from "../src/stores/MemoryStore.js"
import { captureLogs } from "./support/consoleLogs.js"
import { eventually, fast as fastTiming } from "./support/promiseTiming.js"
import { fatal, refusing } from "./support/RefusingStore.js"

let elections = 0
/** An election name no other test has seen. */
const unique = (prefix: string) => `${prefix}-${process.pid}-${++elections}`

const memory = () => Effect.runPromise(MemoryStore.make())

type Level = "trace" | "debug" | "info" | "warn" | "error" | "fatal"

interface Call {
  readonly level: Level
  readonly args: ReadonlyArray<unknown>
}

/**
 * A logger that records its calls: shaped as pino's (level methods, no
 * `log`), or as winston's and console's (a `log` method as well).
 */
const recording = (shape: "pino" | "winston" = "pino") => {
  const calls: Array<Call> = []
  const method = (level: Level) => (...args: Array<unknown>) => {
    calls.push({ level, args })
  }
  const levels = {
    trace: method("trace"),
    debug: method("debug"),
    info: method("info"),
    warn: method("warn"),
    error: method("error"),
    fatal: method("fatal")
  }
  const logger = shape === "pino" ? levels : { ...levels, log: method("info") }
  /** The records, read pino's way: fields first, then the message. */
  const records = () =>
    calls.map(({ args, level }) => ({ level, fields: args[0] as PromiseLogFields, message: args[1] as string }))
  return { calls, logger, records }
}

afterEach(() => {
  vi.restoreAllMocks()
})

describe("createElector's logger option", () => {
  it("gives a pino-shaped logger each record as (fields, message), with election, identity, fence and error", async () => {
    const memoryStore = await memory()
    let refuse = false
    // While `refuse`, renewals fail as an unreachable database's would.
    const store: Store.StoreShape = {
      ...memoryStore,
      renew: (...args) =>
        Effect.suspend(() =>
          refuse
            ? Effect.fail(
              new Store.StoreError({
                operation: "renew",
                retryable: true,
                reason: "connection reset",
                cause: undefined
              })
            )
            : memoryStore.renew(...args)
        )
    }
    const lines = captureLogs()
    const { calls, logger, records } = recording()
    const name = unique("logged")
    const elector = createElector({ ...fastTiming, name, store, identity: "a", logger })
    await elector.start()
    await eventually(() => elector.isLeader(), "leadership")
    refuse = true
    await eventually(() => records().some((r) => r.level === "warn"), "a failed renewal logged")
    refuse = false
    await elector.stop()
    expect(calls.every(({ args }) => args.length === 2 && typeof args[0] === "object" && typeof args[1] === "string"))
      .toBe(true)
    expect(records()).toContainEqual({
      level: "info",
      fields: { election: name, identity: "a", fence: "1" },
      message: "started leading under fence 1"
    })
    expect(records()).toContainEqual({
      level: "warn",
      fields: { election: name, identity: "a", error: "StoreError", retryable: true },
      message: "renew failed (retryable): connection reset"
    })
    expect(records()).toContainEqual({
      level: "info",
      fields: { election: name, identity: "a", fence: "1" },
      message: "stopped leading under fence 1 (shutdown)"
    })
    expect(records().every((r) => r.fields.election === name && r.fields.identity === "a")).toBe(true)
    // Instead of Effect's default logger, not as well.
    expect(lines).toEqual([])
  })

  it("gives a logger with a log method of its own (winston, console) each record as (message, fields)", async () => {
    const store = await memory()
    const { calls, logger } = recording("winston")
    const name = unique("message-first")
    const elector = createElector({ ...fastTiming, name, store, identity: "a", logger })
    await elector.start()
    await eventually(() => calls.some(({ args }) => args[0] === "started leading under fence 1"), "leadership logged")
    await elector.stop()
    expect(calls).toContainEqual({
      level: "info",
      args: ["started leading under fence 1", { election: name, identity: "a", fence: "1" }]
    })
    expect(calls.every(({ args }) => typeof args[0] === "string" && typeof args[1] === "object")).toBe(true)
  })

  it("a failed callback's record carries the error and its cause; logLevel still filters", async () => {
    const store = await memory()
    const { logger, records } = recording()
    const name = unique("quiet")
    const elector = createElector({
      ...fastTiming,
      name,
      store,
      identity: "a",
      logger,
      logLevel: "Warning",
      onStoppedLeading: () => Promise.reject(new TypeError("cleanup rejected"))
    })
    await elector.start()
    await eventually(() => elector.isLeader(), "leadership")
    await elector.stop()
    expect(records().map((r) => r.level)).toEqual(["error"])
    const [record] = records()
    expect(record?.message).toBe("onStoppedLeading failed")
    expect(record?.fields).toMatchObject({ election: name, identity: "a", error: "TypeError" })
    expect(record?.fields.cause).toContain("TypeError: cleanup rejected")
  })

  it("a failed start is rejected, not logged: the logger hears nothing of it", async () => {
    const { logger, records } = recording()
    const unreachable = new Store.StoreError({
      operation: "ensureSchema",
      retryable: false,
      reason: "password authentication failed",
      cause: undefined
    })
    const elector = createElector({ ...fastTiming, name: unique("refused"), store: Layer.fail(unreachable), logger })
    await expect(elector.start()).rejects.toBe(unreachable)
    expect(elector.status().state).toBe("failed")
    expect(records().filter((r) => r.level === "error" || r.level === "fatal")).toEqual([])
    await elector.stop()
  })

  it("under failFast, a fatal first answer fails the start and is not logged; without it, it is logged", async () => {
    const strict = recording()
    const elector = createElector({
      ...fastTiming,
      name: unique("strict"),
      store: refusing,
      failFast: true,
      logger: strict.logger
    })
    await expect(elector.start()).rejects.toBe(fatal)
    await elector.stop()
    expect(strict.records().filter((r) => r.level === "error")).toEqual([])
    const lenient = recording()
    const name = unique("lenient")
    const running = createElector({ ...fastTiming, name, store: refusing, identity: "a", logger: lenient.logger })
    await running.start()
    await eventually(() => lenient.records().some((r) => r.level === "error"), "the fatal error logged")
    await running.stop()
    expect(lenient.records().filter((r) => r.level === "error")).toEqual([{
      level: "error",
      fields: { election: name, identity: "a", error: "StoreError", retryable: false },
      message:
        "inspect failed (fatal): no privilege; the store needs an operator (retrying; repeats logged at most once a minute)"
    }])
  })
})

describe("the logger's Effect Logger", () => {
  const logged = (sink: PromiseLogger, effect: Effect.Effect<void>) =>
    Effect.runSync(effect.pipe(Effect.provide(Logger.replace(Logger.defaultLogger, Logs.make(sink)))))

  it("maps Effect's levels onto the logger's methods: Fatal to fatal where there is one, else error", () => {
    const { logger, records } = recording()
    logged(
      logger,
      Effect.all([
        Effect.logTrace("t"),
        Effect.logDebug("d"),
        Effect.logInfo("i"),
        Effect.logWarning("w"),
        Effect.logError("e"),
        Effect.logFatal("f")
      ]).pipe(Logger.withMinimumLogLevel(LogLevel.All))
    )
    expect(records().map((r) => `${r.level} ${r.message}`)).toEqual([
      "debug t",
      "debug d",
      "info i",
      "warn w",
      "error e",
      "fatal f"
    ])
    const { fatal: _, ...withoutFatal } = logger
    logged(withoutFatal, Effect.logFatal("no fatal"))
    expect(records().at(-1)).toMatchObject({ level: "error", message: "no fatal" })
  })

  it("joins a message of several parts, and gives annotations and the cause's error as fields", () => {
    const { logger, records } = recording()
    logged(
      logger,
      Effect.logWarning(
        "lease",
        42,
        { lost: true },
        Cause.fail(new Store.LeaseLost({ name: "n", identity: "a", fence: 3n }))
      )
        .pipe(Effect.annotateLogs({ election: "n", at: 7n }))
    )
    const [record] = records()
    expect(record?.message).toBe(`lease 42 {"lost":true}`)
    expect(record?.fields).toMatchObject({ election: "n", at: "7", error: "LeaseLost", fence: "3" })
    expect(record?.fields.cause).toContain("no longer held by a under fence 3")
    // Whatever the error is, a record says what it can.
    logged(logger, Effect.logError("odd", Cause.fail("a string")))
    logged(logger, Effect.logError("odder", Cause.die(Object.assign(new RangeError("bad"), { retryable: false }))))
    logged(logger, Effect.logError("oddest", Cause.fail({ code: 7 })))
    expect(records().slice(1).map((r) => r.fields.error)).toEqual(["Unknown", "RangeError", "Unknown"])
    expect(records()[2]?.fields.retryable).toBe(false)
  })

  it("a logger that throws loses no record: it goes to Effect's default logger, with the throw", () => {
    const lines = captureLogs()
    const broken = {
      debug: () => {},
      info: () => {
        throw new Error("transport closed")
      },
      warn: () => {},
      error: () => {}
    }
    logged(broken, Effect.logInfo("started leading under fence 1"))
    expect(lines).toHaveLength(1)
    expect(lines[0]).toContain("started leading under fence 1")
    expect(lines[0]).toContain("transport closed")
  })
})
