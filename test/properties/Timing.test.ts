import { Duration, Effect, Either } from "effect"
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import * as Elector from "../../src/Elector.js"

const millis = fc.integer({ min: 1, max: 120_000 })

type Proposal = Record<string, string>

/** What a refusal proposes: each `{ field: "value", ... }`, and a `did you mean "value"?` for its field. */
const proposals = (error: { readonly field: string; readonly reason: string }): ReadonlyArray<Proposal> => {
  const listed = [...error.reason.matchAll(/\{ ([^}]*) \}/g)].map(([, body]) =>
    Object.fromEntries([...body!.matchAll(/(\w+): "([^"]*)"/g)].map(([, field, value]) => [field!, value!]))
  )
  const meant = /did you mean "([^"]*)"\?/.exec(error.reason)
  return meant === null ? listed : [...listed, { [error.field]: meant[1]! }]
}

const fields = ["leaseDuration", "renewInterval", "retryPeriod", "operationTimeout", "safetyMargin"] as const

/** A duration as a caller writes it, each within its own limits: a number (milliseconds), a string, a Duration. */
const written = fc.oneof(
  fc.integer({ min: 2, max: 999 }),
  fc.integer({ min: 1000, max: 60_000 }),
  fc.integer({ min: 1, max: 60 }).map((n) => `${n} seconds` as const),
  fc.integer({ min: 2, max: 60_000 }).map((n) => `${n} millis` as const),
  millis.map((n) => Duration.millis(Math.max(2, n)))
)

describe("timing invariant", () => {
  it("accepts exactly the configs that leave room for one lost renewal, and names the field otherwise", () =>
    fc.assert(
      fc.property(millis, millis, millis, fc.option(millis, { nil: undefined }), (lease, renew, timeout, margin) => {
        const result = Effect.runSync(Effect.either(Elector.validate({
          name: "jobs",
          identity: "a",
          leaseDuration: Duration.millis(lease),
          renewInterval: Duration.millis(renew),
          operationTimeout: Duration.millis(timeout),
          safetyMargin: margin === undefined ? undefined : Duration.millis(margin)
        })))
        const safety = margin ?? Math.max(lease / 10, 1000)
        const retryDelay = Math.max(renew / 4, 50)
        const fits = renew + 2 * timeout + retryDelay <= lease - safety
        if (Either.isRight(result)) {
          const c = result.right
          expect(safety).toBeLessThan(lease)
          expect(fits).toBe(true)
          expect(Duration.toMillis(c.retryDelay)).toBe(retryDelay)
          expect(Duration.toMillis(c.safetyMargin)).toBe(safety)
          const needed = Duration.sum(
            Duration.sum(c.renewInterval, Duration.times(c.operationTimeout, 2)),
            c.retryDelay
          )
          expect(Duration.lessThanOrEqualTo(needed, Duration.subtract(c.leaseDuration, c.safetyMargin))).toBe(true)
        } else {
          const error = result.left
          expect(error._tag).toBe("InvalidConfig")
          if (error._tag !== "InvalidConfig") return
          // The field named is one the caller set: the default margin is not.
          if (safety >= lease) expect(error.message).toContain("must be shorter than leaseDuration")
          else {
            expect(fits).toBe(false)
            expect(error.message).toContain("must fit in leaseDuration")
          }
          // The field named is the first one proposed.
          expect(proposals(error)[0]).toHaveProperty(error.field)
        }
      }),
      { numRuns: 2000 }
    ))
})

describe("a refusal's proposals", () => {
  it("are each accepted, and every refusal of fields that are each valid proposes something", () =>
    fc.assert(
      fc.property(
        fc.record(Object.fromEntries(fields.map((field) => [field, written])), { requiredKeys: [] }),
        (timing) => {
          const config = { name: "jobs", identity: "a", ...timing } as Elector.ElectorConfig
          const result = Effect.runSync(Effect.either(Elector.validate(config)))
          if (Either.isRight(result) || result.left._tag !== "InvalidConfig") return
          const found = proposals(result.left)
          expect(found.length).toBeGreaterThan(0)
          expect(found[0]).toHaveProperty(result.left.field)
          for (const proposal of found) {
            const fixed = Effect.runSync(Effect.either(Elector.validate({ ...config, ...proposal })))
            expect(Either.isRight(fixed), `${result.left.message}\n${JSON.stringify(proposal)}`).toBe(true)
          }
        }
      ),
      { numRuns: 3000 }
    ))
})
