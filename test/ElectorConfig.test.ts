import { describe, expect, it } from "@effect/vitest"
import { Config, ConfigError, ConfigProvider, Duration, Effect, Either, Layer, Option } from "effect"
import { hostname } from "node:os"
import * as Elector from "../src/Elector.js"
import * as ElectorError from "../src/ElectorError.js"
import * as index from "../src/index.js"
import * as Lease from "../src/Lease.js"
import * as Store from "../src/Store.js"
import * as MemoryStore from "../src/stores/MemoryStore.js"

const refuse = (config: Elector.ElectorConfig) => {
  const result = Effect.runSync(Effect.either(Elector.validate(config)))
  // Not the accepted config itself: a diff of a 64 KiB payload takes minutes to print.
  if (Either.isRight(result)) expect.fail("the config was accepted")
  return Either.getLeft(result).pipe(Option.getOrThrow)
}

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
      workFailureBackoff: millis(config.workFailureBackoff),
      resignHoldOff: millis(config.resignHoldOff),
      preemptAfter: millis(config.preemptAfter),
      candidateTtl: millis(config.candidateTtl)
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
      resignHoldOff: 15_000,
      candidacy: null,
      versionPolicy: "newer",
      preemptAfter: 30_000,
      candidateTtl: 12_000,
      failFast: false
    })
  })

  it("floors the default margin at one second and retryDelay at 50ms", () => {
    const config = Effect.runSync(
      Elector.validate({
        name: "jobs",
        leaseDuration: "5 seconds",
        renewInterval: "100 millis",
        operationTimeout: "1 second"
      })
    )
    expect(Duration.toMillis(config.safetyMargin)).toBe(1000)
    expect(Duration.toMillis(config.retryDelay)).toBe(50)
  })

  it("refuses a config that cannot survive one lost renewal, showing the numbers and what fits", () => {
    const error = refuse({
      name: "too-tight",
      identity: "a",
      leaseDuration: "10 seconds",
      renewInterval: "5 seconds",
      retryPeriod: "1 second",
      operationTimeout: "3 seconds",
      safetyMargin: "1 second"
    })
    expect(error).toMatchObject({ _tag: "InvalidConfig", field: "renewInterval" })
    expect(error.message).toBe(
      "invalid config: renewInterval: renewInterval 5s + 2 × operationTimeout 3s + retryDelay 1.25s = 12.25s must fit in leaseDuration 10s - safetyMargin 1s = 9s, so that a leader can lose one renewal and retry it before it steps down; any one of these fits: " +
        `{ renewInterval: "2400 millis" }, { operationTimeout: "1300 millis" }, { leaseDuration: "14 seconds" }`
    )
  })

  // A client-go user's settings, in its seconds, and a natural short lease.
  it.each(
    [
      [
        { leaseDuration: 15 },
        "leaseDuration",
        `numbers are milliseconds (leaseDuration 15 is 15ms): did you mean "15 seconds"?`
      ],
      [
        { leaseDuration: "15 seconds", renewInterval: "10 seconds" },
        "renewInterval",
        "renewInterval 10s + 2 × operationTimeout 3s (the default) + retryDelay 2.5s = 18.5s must fit in leaseDuration 15s - safetyMargin 1.5s (the default) = 13.5s, so that a leader can lose one renewal and retry it before it steps down; any one of these fits: " +
        `{ renewInterval: "6 seconds" }, { operationTimeout: "500 millis" }, { leaseDuration: "21 seconds" }`
      ],
      [
        { leaseDuration: "6 seconds", renewInterval: "2 seconds" },
        "operationTimeout",
        "renewInterval 2s + 2 × operationTimeout 3s (the default) + retryDelay 0.5s = 8.5s must fit in leaseDuration 6s - safetyMargin 1s (the default) = 5s, so that a leader can lose one renewal and retry it before it steps down; any one of these fits: " +
        `{ operationTimeout: "1200 millis" }, { leaseDuration: "9500 millis" }`
      ],
      [
        { leaseDuration: 15, renewInterval: 10, retryPeriod: 2 },
        "leaseDuration",
        "numbers are milliseconds (leaseDuration 15 is 15ms, renewInterval 10 is 10ms, retryPeriod 2 is 2ms), and as seconds this is refused too: " +
        "renewInterval 10s + 2 × operationTimeout 3s (the default) + retryDelay 2.5s = 18.5s must fit in leaseDuration 15s - safetyMargin 1.5s (the default) = 13.5s, so that a leader can lose one renewal and retry it before it steps down; any one of these fits: " +
        `{ leaseDuration: "15 seconds", renewInterval: "6 seconds", retryPeriod: "2 seconds" }, ` +
        `{ leaseDuration: "15 seconds", renewInterval: "10 seconds", retryPeriod: "2 seconds", operationTimeout: "500 millis" }, ` +
        `{ leaseDuration: "21 seconds", renewInterval: "10 seconds", retryPeriod: "2 seconds" }`
      ],
      [
        { leaseDuration: 15, renewInterval: 5 },
        "leaseDuration",
        `numbers are milliseconds (leaseDuration 15 is 15ms, renewInterval 5 is 5ms): did you mean { leaseDuration: "15 seconds", renewInterval: "5 seconds" }?`
      ],
      [
        { leaseDuration: "5 seconds" },
        "renewInterval",
        "renewInterval 5s (the default) + 2 × operationTimeout 3s (the default) + retryDelay 1.25s = 12.25s must fit in leaseDuration 5s - safetyMargin 1s (the default) = 4s, so that a leader can lose one renewal and retry it before it steps down; any one of these fits: " +
        `{ renewInterval: "1200 millis", operationTimeout: "1200 millis" }, { leaseDuration: "14 seconds" }`
      ],
      [
        {
          leaseDuration: "2 seconds",
          renewInterval: "1 second",
          operationTimeout: "20 days",
          safetyMargin: "1 second"
        },
        "leaseDuration",
        "renewInterval 1s + 2 × operationTimeout 1728000s + retryDelay 0.25s = 3456001.25s must fit in leaseDuration 2s - safetyMargin 1s = 1s, so that a leader can lose one renewal and retry it before it steps down; any one of these fits: " +
        `{ leaseDuration: "15 seconds", renewInterval: "5 seconds", operationTimeout: "3 seconds", safetyMargin: "1500 millis" }`
      ]
    ] as const
  )("names the field to change and values that fit: %j", (timing, field, reason) => {
    const error = refuse({ name: "jobs", ...timing } as Elector.ElectorConfig)
    expect(error).toMatchObject({ _tag: "InvalidConfig", field, reason })
  })

  it("offers presets that are accepted as they are", () => {
    for (const preset of [Elector.timing.fast, Elector.timing.default, Elector.timing.wan]) {
      expect(Either.isRight(Effect.runSync(Effect.either(Elector.validate({ name: "jobs", ...preset }))))).toBe(true)
    }
    // The default preset is the defaults.
    const resolved = Effect.runSync(Elector.validate({ name: "jobs", identity: "a" }))
    const preset = Effect.runSync(Elector.validate({ name: "jobs", identity: "a", ...Elector.timing.default }))
    expect(preset).toEqual(resolved)
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

  const big = (bytes: number) => new Uint8Array(bytes)
  it.each(([
    [{ name: "" }, "name", "must not be empty"],
    [{ name: 42 }, "name", "must be a string, got a number"],
    [{ name: "jobs", identity: "" }, "identity", "must not be empty"],
    [{ name: "jobs", identity: null }, "identity", "must be a string, got null"],
    [{ name: "jobs", leaseDuration: "soon" as Duration.DurationInput }, "leaseDuration", `"soon" is not a duration`],
    [{ name: "jobs", renewInterval: -5 }, "renewInterval", "must be positive, got -5"],
    [{ name: "jobs", renewInterval: -5n }, "renewInterval", "must be positive, got -5n"],
    [{ name: "jobs", retryPeriod: "0 seconds" }, "retryPeriod", `must be positive, got "0 seconds"`],
    [{ name: "jobs", retryPeriod: Duration.zero }, "retryPeriod", "must be positive, got 0s"],
    [{ name: "jobs", operationTimeout: Duration.infinity }, "operationTimeout", "must be finite"],
    [
      { name: "jobs", safetyMargin: "15 seconds" },
      "safetyMargin",
      `safetyMargin 15s must be shorter than leaseDuration 15s (the default); any one of these fits: { safetyMargin: "2700 millis" }, { leaseDuration: "28 seconds" }`
    ],
    // Plain JavaScript passes anything.
    [{ name: "jobs", payload: "10.0.0.7" }, "payload", "must be a Uint8Array or null, got a string"],
    [{ name: "jobs", payload: [1, 2] }, "payload", "must be a Uint8Array or null, got an array"],
    [{ name: "jobs", leaseDuration: NaN }, "leaseDuration", "NaN is not a duration"],
    [{ name: "jobs", renewInterval: Infinity }, "renewInterval", "Infinity is not a duration"],
    [{ name: "jobs", operationTimeout: [NaN, 0] }, "operationTimeout", "[NaN, 0] is not a duration"],
    [{ name: "jobs", safetyMargin: {} }, "safetyMargin", "an object is not a duration"],
    [{ name: "jobs", disableRelease: "no" }, "disableRelease", "must be a boolean when set, got a string"],
    [{ name: "jobs", onStartedLeading: Effect.void }, "onStartedLeading", "must be a function when set, got an object"],
    [{ name: "jobs", onNewLeader: "log" }, "onNewLeader", "must be a function when set, got a string"],
    [
      { name: "jobs", onStoppedLeading: () => Effect.void },
      "onStoppedLeading",
      "must be an Effect when set, got a function"
    ],
    // Names and identities the databases would refuse or corrupt.
    [{ name: "jo\u0000bs" }, "name", "must not contain a NUL character"],
    [{ name: "jobs\ud800" }, "name", "must be well-formed Unicode (it contains a lone surrogate)"],
    [{ name: "jobs", identity: "\udc00a" }, "identity", "must be well-formed Unicode (it contains a lone surrogate)"],
    [{ name: "jobs", identity: "a\u0000" }, "identity", "must not contain a NUL character"],
    // The documented limits, one past each.
    [{ name: "é".repeat(510) + "x" }, "name", "must be at most 1020 bytes of UTF-8, got 1021"],
    [{ name: "jobs", identity: "🚀".repeat(255) + "x" }, "identity", "must be at most 1020 bytes of UTF-8, got 1021"],
    [{ name: "jobs", payload: big(65_537) }, "payload", "must be at most 65536 bytes, got 65537"],
    [
      { name: "jobs", leaseDuration: "30 days" },
      "leaseDuration",
      `must be at most 2147483647ms (about 24.8 days, the longest timer Node.js can set), got "30 days"`
    ],
    [
      { name: "jobs", renewInterval: 2 ** 31 },
      "renewInterval",
      "must be at most 2147483647ms (about 24.8 days, the longest timer Node.js can set), got 2147483648"
    ],
    [{ name: "jobs", operationTimeout: Duration.micros(500n) }, "operationTimeout", "must be at least 1ms, got 0.5ms"],
    [
      { name: "jobs", retryPeriod: 1 },
      "retryPeriod",
      `must be at least 2ms, got 1; numbers are milliseconds: did you mean "1 second"?`
    ],
    [{ name: "jobs", retryPeriod: "1999 micros" }, "retryPeriod", `must be at least 2ms, got "1999 micros"`],
    // The field named is one to change, with values that fit.
    [
      { name: "jobs", leaseDuration: "500 millis" },
      "leaseDuration",
      `safetyMargin 1s (the default) must be shorter than leaseDuration 0.5s; any one of these fits: { leaseDuration: "14 seconds" }`
    ],
    [
      { name: "jobs", operationTimeout: "6 seconds" },
      "renewInterval",
      "renewInterval 5s (the default) + 2 × operationTimeout 6s + retryDelay 1.25s = 18.25s must fit in leaseDuration 15s (the default) - safetyMargin 1.5s (the default) = 13.5s, so that a leader can lose one renewal and retry it before it steps down; any one of these fits: " +
      `{ renewInterval: "1200 millis" }, { operationTimeout: "3600 millis" }, { leaseDuration: "21 seconds" }`
    ],
    [
      { name: "jobs", safetyMargin: "5 seconds" },
      "renewInterval",
      "renewInterval 5s (the default) + 2 × operationTimeout 3s (the default) + retryDelay 1.25s = 12.25s must fit in leaseDuration 15s (the default) - safetyMargin 5s = 10s, so that a leader can lose one renewal and retry it before it steps down; any one of these fits: " +
      `{ renewInterval: "3200 millis" }, { operationTimeout: "1800 millis" }, { leaseDuration: "18 seconds" }, { safetyMargin: "2700 millis" }`
    ]
  ] as const).map(([config, field, reason]) => [field, reason, config] as const))(
    "refuses %s: %s",
    (field, reason, config) => {
      const error = refuse(config as unknown as Elector.ElectorConfig)
      expect(error).toMatchObject({ _tag: "InvalidConfig", field, reason })
      expect(error.message).toBe(`invalid config: ${field}: ${reason}`)
    }
  )

  it("refuses a config that is not an object", () => {
    expect(refuse(undefined as unknown as Elector.ElectorConfig)).toMatchObject({
      _tag: "InvalidConfig",
      field: "config",
      reason: "must be an object, got undefined"
    })
  })

  it("accepts every documented limit exactly", () => {
    const config = Effect.runSync(Elector.validate({
      name: "é".repeat(510),
      identity: "🚀".repeat(255),
      payload: big(Lease.maxPayloadBytes),
      leaseDuration: Lease.maxDuration,
      renewInterval: Lease.minDuration,
      retryPeriod: Lease.minRetryPeriod,
      operationTimeout: Lease.minDuration,
      disableRelease: true,
      onStartedLeading: () => Effect.void,
      onNewLeader: () => Effect.void,
      onStoppedLeading: Effect.void
    }))
    expect(Buffer.byteLength(config.name)).toBe(Lease.maxNameBytes)
    expect(Buffer.byteLength(config.identity)).toBe(Lease.maxIdentityBytes)
    expect(config.payload?.byteLength).toBe(Lease.maxPayloadBytes)
    expect(Duration.toMillis(config.leaseDuration)).toBe(2 ** 31 - 1)
    expect(Duration.toMillis(config.retryPeriod)).toBe(2)
    expect([Lease.maxNameBytes, Lease.maxIdentityBytes, Lease.maxPayloadBytes]).toEqual([1020, 1020, 65_536])
    expect(Duration.toMillis(Lease.minDuration)).toBe(1)
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

  it("resolves durations of one length to one object, however many configs and lengths there are", () => {
    const resolve = (leaseDuration: Duration.DurationInput) =>
      Effect.runSync(Elector.validate({ name: "jobs", leaseDuration }))
    const first = resolve(Duration.seconds(20))
    // The same lengths, written another way: the same objects, derived ones included.
    const second = resolve("20 seconds")
    expect(second.leaseDuration).toBe(first.leaseDuration)
    expect(second.safetyMargin).toBe(first.safetyMargin)
    expect(second.renewInterval).toBe(first.renewInterval)
    // More distinct lengths than are kept: still each its own length.
    for (let seconds = 21; seconds < 421; seconds++) {
      expect(Duration.toSeconds(resolve(Duration.seconds(seconds)).leaseDuration)).toBe(seconds)
    }
    const again = resolve("20 seconds")
    expect(Duration.toSeconds(again.leaseDuration)).toBe(20)
    expect(Duration.toSeconds(again.safetyMargin)).toBe(2)
  })
})

describe("Elector.layerConfig", () => {
  const env = (vars: Record<string, string>) =>
    Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(vars))))
  const build = (layer: Layer.Layer<Elector.Elector, unknown, Store.Store>) =>
    Effect.flatMap(Elector.Elector, (elector) => Effect.succeed(elector.config)).pipe(
      Effect.provide(Layer.provide(layer, MemoryStore.layer()))
    )
  const fromEnv = Elector.layerConfig({
    name: Config.string("ELECTION_NAME"),
    identity: Config.string("POD_NAME"),
    leaseDuration: Config.duration("LEASE_DURATION"),
    retryPeriod: Config.duration("RETRY_PERIOD").pipe(Config.withDefault(undefined))
  })

  it.effect("reads each field from effect's Config, durations as Duration", () =>
    Effect.gen(function*() {
      const config = yield* build(fromEnv).pipe(
        env({ ELECTION_NAME: "jobs", POD_NAME: "pod-0", LEASE_DURATION: "20 seconds" })
      )
      expect(config).toMatchObject({ name: "jobs", identity: "pod-0" })
      expect(Duration.toMillis(config.leaseDuration)).toBe(20_000)
      expect(Duration.toMillis(config.retryPeriod)).toBe(3_000)
    }))

  it.effect("accepts one Config of the whole ElectorConfig", () =>
    Effect.gen(function*() {
      const whole = Config.all({ name: Config.string("NAME"), disableRelease: Config.boolean("KEEP") })
      const config = yield* build(Elector.layerConfig(whole)).pipe(env({ NAME: "jobs", KEEP: "true" }))
      expect(config).toMatchObject({ name: "jobs", disableRelease: true })
    }))

  it.effect("a missing variable fails with effect's ConfigError, a bad value with InvalidConfig naming the field", () =>
    Effect.gen(function*() {
      const missing = yield* Effect.flip(build(fromEnv).pipe(env({ ELECTION_NAME: "jobs" })))
      expect(ConfigError.isConfigError(missing)).toBe(true)
      const tooLong = yield* Effect.flip(
        build(fromEnv).pipe(env({ ELECTION_NAME: "jobs", POD_NAME: "pod-0", LEASE_DURATION: "30 days" }))
      )
      expect(tooLong).toMatchObject({ _tag: "InvalidConfig", field: "leaseDuration" })
      const nul = yield* Effect.flip(
        build(fromEnv).pipe(env({ ELECTION_NAME: "jo\u0000bs", POD_NAME: "pod-0", LEASE_DURATION: "20 seconds" }))
      )
      expect(nul).toMatchObject({ _tag: "InvalidConfig", field: "name", reason: "must not contain a NUL character" })
    }))
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
    const coded = new Store.StoreError({
      operation: "acquire",
      retryable: false,
      reason: "no table",
      code: "42P01",
      cause: null
    })
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
    expect(Object.keys(index).sort()).toEqual([
      "Elector",
      "ElectorError",
      "Health",
      "Job",
      "Leadership",
      "Lease",
      "MemoryStore",
      "Metrics",
      "Store"
    ])
    expect(index.Elector.make).toBe(Elector.make)
  })
})
