import { Duration, Effect, Either } from "effect"
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import * as Elector from "../../src/Elector.js"
import * as Lease from "../../src/Lease.js"
import * as MemoryStore from "../../src/stores/MemoryStore.js"

// An oracle written independently of src/internal/limits.ts.
const isWellFormed = (s: string): boolean => (s as unknown as { isWellFormed(): boolean }).isWellFormed()
const holdable = (s: string, maxBytes: number): boolean =>
  s.length > 0 && !s.includes("\u0000") && isWellFormed(s) && new TextEncoder().encode(s).length <= maxBytes

// Strings around the 1020-byte boundary, made of 1-, 2- and 4-byte characters, NUL and lone surrogates.
const text = fc.oneof(
  fc.string({ unit: "binary", maxLength: 20 }),
  fc.string({ unit: fc.constantFrom("a", "é", "🚀", "\u0000", "\ud800", "\udc00"), minLength: 0, maxLength: 600 }),
  fc.integer({ min: 1000, max: 1030 }).map((bytes) => "x".repeat(bytes)),
  fc.integer({ min: 250, max: 260 }).map((n) => "🚀".repeat(n))
)

const store = Effect.runSync(MemoryStore.make())
const validate = (config: Elector.ElectorConfig) => Effect.runSync(Effect.either(Elector.validate(config)))
const acquire = (name: string, identity: string, payload: Uint8Array | null) =>
  Effect.runSync(Effect.either(store.acquire(name, identity, Duration.seconds(15), payload)))

let counter = 0

describe("documented limits", () => {
  it("a name is accepted by the elector and a store exactly when every store can hold it", () =>
    fc.assert(
      fc.property(text, (name) => {
        const ok = holdable(name, Lease.maxNameBytes)
        const config = validate({ name, identity: "a" })
        const stored = acquire(name, `p${counter++}`, null)
        expect([Either.isRight(config), Either.isRight(stored)]).toEqual([ok, ok])
        if (Either.isLeft(config)) expect(config.left).toMatchObject({ _tag: "InvalidConfig", field: "name" })
        if (Either.isLeft(stored)) {
          expect(stored.left).toMatchObject({ _tag: "StoreError", retryable: false, cause: { field: "name" } })
        }
      }),
      { numRuns: 500 }
    ))

  it("an identity is accepted exactly when every store can hold it", () =>
    fc.assert(
      fc.property(text, (identity) => {
        const ok = holdable(identity, Lease.maxIdentityBytes)
        const config = validate({ name: "jobs", identity })
        const stored = acquire(`identity-${counter++}`, identity, null)
        expect([Either.isRight(config), Either.isRight(stored)]).toEqual([ok, ok])
        if (Either.isLeft(config)) expect(config.left).toMatchObject({ _tag: "InvalidConfig", field: "identity" })
        if (Either.isLeft(stored)) expect(stored.left).toMatchObject({ cause: { field: "identity" } })
      }),
      { numRuns: 500 }
    ))

  it("a store remembers only names that passed, and at most 10,000 of them", () => {
    const fresh = Effect.runSync(MemoryStore.make())
    const inspect = (name: string) => Effect.runSync(Effect.either(fresh.inspect(name)))
    const refused = (name: string) => {
      const result = inspect(name)
      return Either.isLeft(result) && result.left._tag === "StoreError"
    }
    // Refused every time, not once.
    expect([refused("bad\u0000"), refused("bad\u0000")]).toEqual([true, true])
    // More distinct names than it keeps: it starts over, and still checks each one.
    for (let i = 0; i < 10_050; i++) expect(refused(`name-${i}`)).toBe(false)
    expect([refused("name-0"), refused("x".repeat(Lease.maxNameBytes + 1)), refused("name-10049")]).toEqual([
      false,
      true,
      false
    ])
  })

  it("a payload is accepted exactly up to maxPayloadBytes", () =>
    fc.assert(
      fc.property(fc.integer({ min: 0, max: Lease.maxPayloadBytes + 10 }), (bytes) => {
        const payload = new Uint8Array(bytes)
        const ok = bytes <= 65_536
        const config = validate({ name: "jobs", identity: "a", payload })
        const stored = acquire(`payload-${counter++}`, "a", payload)
        expect([Either.isRight(config), Either.isRight(stored)]).toEqual([ok, ok])
        if (Either.isLeft(config)) expect(config.left).toMatchObject({ field: "payload" })
      }),
      { numRuns: 200 }
    ))

  it("an incarnation is accepted exactly as 1 to maxIncarnationBytes printable ASCII characters", () =>
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: Lease.maxIncarnationBytes + 4 }), (incarnation) => {
        const ok = /^[\x21-\x7e]{1,64}$/.test(incarnation)
        const stored = Effect.runSync(
          Effect.either(store.acquire(`incarnation-${counter++}`, "a", Duration.seconds(15), null, incarnation))
        )
        expect(Either.isRight(stored)).toBe(ok)
        if (Either.isLeft(stored)) {
          expect(stored.left).toMatchObject({ operation: "acquire", retryable: false })
          expect(stored.left.reason).toMatch(/^incarnation: must be 1 to 64 printable ASCII characters/)
        } else expect(stored.right.incarnation).toBe(incarnation)
      }),
      { numRuns: 200, examples: [["a".repeat(64)], ["a".repeat(65)], [""], ["has space"]] }
    ))

  it("a duration is accepted exactly between its minimum and 2^31-1 ms, and a refusal names the field", () =>
    fc.assert(
      fc.property(
        fc.oneof(
          fc.double(),
          fc.double({ min: -10, max: 10 }),
          fc.integer({ min: 2 ** 31 - 5, max: 2 ** 31 + 5 })
        ),
        (millis) => {
          const ok = Number.isFinite(millis) && millis >= 2 && millis <= 2 ** 31 - 1
          const result = validate({ name: "jobs", identity: "a", retryPeriod: millis })
          expect(Either.isRight(result)).toBe(ok)
          if (Either.isLeft(result)) {
            expect(result.left).toMatchObject({ _tag: "InvalidConfig", field: "retryPeriod" })
            expect(result.left.message).not.toContain("null")
          }
        }
      ),
      { numRuns: 1000 }
    ))
})
