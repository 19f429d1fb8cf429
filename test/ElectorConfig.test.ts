import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Either } from "effect"
import { hostname } from "node:os"
import * as Elector from "../src/Elector.js"
import * as ElectorError from "../src/ElectorError.js"
import * as index from "../src/index.js"
import * as Store from "../src/Store.js"

const refuse = (config: Elector.ElectorConfig) => Effect.runSync(Effect.flip(Elector.validate(config)))

describe("Elector config", () => {
  it("fills in every default from the reference", () => {
    const config = Effect.runSync(Elector.validate({ name: "jobs", identity: "a" }))
    const millis = (d: Duration.Duration) => Duration.toMillis(d)
    expect({
      ...config,
      leaseDuration: millis(config.leaseDuration),
      renewInterval: millis(config.renewInterval),
      retryPeriod: millis(config.retryPeriod),
      operationTimeout: millis(config.operationTimeout),
      safetyMargin: millis(config.safetyMargin),
      retryDelay: millis(config.retryDelay),
      workFailureBackoff: millis(config.workFailureBackoff)
    }).toEqual({
      name: "jobs",
      identity: "a",
      payload: null,
      leaseDuration: 15_000,
      renewInterval: 5_000,
      retryPeriod: 3_000,
      operationTimeout: 3_000,
      safetyMargin: 1_500,
      retryDelay: 1_250,
      disableRelease: false,
      onWorkFailure: "stepDown",
      workFailureBackoff: 15_000,
      failFast: false
    })
  })

  it("floors the default margin at one second and retryDelay at 50ms", () => {
    const config = Effect.runSync(
      Elector.validate({ name: "jobs", leaseDuration: "5 seconds", renewInterval: "100 millis", operationTimeout: "1 second" })
    )
    expect(Duration.toMillis(config.safetyMargin)).toBe(1000)
    expect(Duration.toMillis(config.retryDelay)).toBe(50)
  })

  it("refuses a config that cannot survive one lost renewal, showing the numbers", () => {
    const error = refuse({
      name: "too-tight",
      identity: "a",
      leaseDuration: "10 seconds",
      renewInterval: "5 seconds",
      retryPeriod: "1 second",
      operationTimeout: "3 seconds",
      safetyMargin: "1 second"
    })
    expect(error).toMatchObject({ _tag: "ConfigError", field: "renewInterval" })
    expect(error.message).toBe(
      "invalid elector config: renewInterval: a lost renewal needs renewInterval+2*operationTimeout+retryDelay (12.25s) but only leaseDuration-safetyMargin (9s) is available"
    )
  })

  it("accepts a config exactly on the invariant's boundary", () => {
    // 5 + 2*3 + 1.25 = 12.25 = 13.25 - 1
    const config = Elector.validate({
      name: "edge",
      leaseDuration: "13250 millis",
      renewInterval: "5 seconds",
      operationTimeout: "3 seconds",
      safetyMargin: "1 second"
    })
    expect(Either.isRight(Effect.runSync(Effect.either(config)))).toBe(true)
  })

  it.each([
    [{ name: "" }, "name", "must be a non-empty string"],
    [{ name: "jobs", identity: "" }, "identity", "must be a non-empty string when set"],
    [{ name: "jobs", leaseDuration: "soon" as Duration.DurationInput }, "leaseDuration", `"soon" is not a duration`],
    [{ name: "jobs", renewInterval: -5 }, "renewInterval", "must be positive, got -5"],
    [{ name: "jobs", retryPeriod: "0 seconds" }, "retryPeriod", `must be positive, got "0 seconds"`],
    [{ name: "jobs", retryPeriod: Duration.zero }, "retryPeriod", "must be positive, got 0s"],
    [{ name: "jobs", operationTimeout: Duration.infinity }, "operationTimeout", "must be finite"],
    [{ name: "jobs", safetyMargin: "15 seconds" }, "safetyMargin", "must be shorter than leaseDuration (15s), got 15s"]
  ] as const)("refuses %j: %s %s", (config, field, reason) => {
    const error = refuse(config)
    expect(error).toMatchObject({ _tag: "ConfigError", field, reason })
    expect(error.message).toBe(`invalid elector config: ${field}: ${reason}`)
  })

  it("generates hostname-pid-random identities that never repeat", () => {
    const ids = Array.from({ length: 1000 }, () => Effect.runSync(Elector.generateIdentity))
    expect(new Set(ids).size).toBe(1000)
    for (const id of ids.slice(0, 10)) {
      expect(id.startsWith(`${hostname()}-${process.pid}-`)).toBe(true)
      expect(id.slice(`${hostname()}-${process.pid}-`.length)).toMatch(/^[0-9a-f]{12}$/)
    }
    const config = Effect.runSync(Elector.validate({ name: "jobs" }))
    expect(config.identity.startsWith(`${hostname()}-${process.pid}-`)).toBe(true)
  })
})

describe("errors", () => {
  it("derive their messages from their fields", () => {
    expect(new ElectorError.IdentityError({ cause: new Error("no entropy") }).message).toBe(
      "cannot generate an identity: Error: no entropy"
    )
    expect(new ElectorError.LeaseExpiredLocally({ name: "jobs", fence: 4n }).message).toBe(
      `lease "jobs" (fence 4) expired locally before it could be renewed`
    )
    expect(new Store.NoLease({ name: "jobs" }).message).toBe(`no lease record for "jobs"`)
    expect(new Store.LeaseLost({ name: "jobs", identity: "a", fence: 3n }).message).toBe(
      `lease "jobs" is no longer held by a under fence 3`
    )
    const coded = new Store.StoreError({ operation: "acquire", retryable: false, reason: "no table", code: "42P01", cause: null })
    expect(coded.message).toBe("acquire failed (fatal) [42P01]: no table")
  })

  it("classify store errors for alerting", () => {
    const retryable = new Store.StoreError({ operation: "renew", retryable: true, reason: "reset", cause: null })
    const fatal = new Store.StoreError({ operation: "renew", retryable: false, reason: "denied", cause: null })
    expect([Store.isRetryable(retryable), Store.isFatal(retryable)]).toEqual([true, false])
    expect([Store.isRetryable(fatal), Store.isFatal(fatal)]).toEqual([false, true])
    expect([Store.isRetryable(new Error("x")), Store.isFatal(undefined)]).toEqual([false, false])
  })
})

describe("the package barrel", () => {
  it("exposes every module under its name", () => {
    expect(Object.keys(index).sort()).toEqual(["Elector", "ElectorError", "Leadership", "Lease", "MemoryStore", "Metrics", "Store"])
    expect(index.Elector.make).toBe(Elector.make)
  })
})
