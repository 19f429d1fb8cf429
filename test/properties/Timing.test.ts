import { Duration, Effect, Either } from "effect"
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import * as Elector from "../../src/Elector.js"

const millis = fc.integer({ min: 1, max: 120_000 })

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
          if (safety >= lease) expect(error.field).toBe(margin === undefined ? "leaseDuration" : "safetyMargin")
          else {
            expect(fits).toBe(false)
            expect(error.field).toBe("renewInterval")
            expect(error.message).toContain("leaseDuration-safetyMargin")
          }
        }
      }),
      { numRuns: 2000 }
    ))
})
