import { Duration } from "effect"
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import { claimRateTolerance, claimSlack, nextStep, untilClaimable } from "../../src/internal/election/timing.js"

const ttlMillis = fc.integer({ min: 1, max: 2 ** 31 - 1 })
// A follower clock's rate, in its seconds per database second: anything from
// half as fast up to the tolerance (1/1000).
const rate = fc.double({ min: 0.5, max: 1.001, noNaN: true })

describe("when a follower claims", () => {
  it("untilClaimable is (ttl + 1ms) * (1 + 1/1000), rounded up to a whole millisecond", () =>
    fc.assert(
      fc.property(ttlMillis, (ttl) => {
        const wait = Duration.toMillis(untilClaimable(Duration.millis(ttl)))
        expect(Number.isInteger(wait)).toBe(true)
        // In integers: wait * 1000 >= (ttl + 1) * 1001, and by less than 1000 more.
        const needed = (BigInt(ttl) + 1n) * 1001n
        expect(BigInt(wait) * 1000n).toBeGreaterThanOrEqual(needed)
        expect(BigInt(wait) * 1000n - needed).toBeLessThan(2000n)
      }),
      { numRuns: 5000 }
    ))

  it("a claim never lands before the database's expiry, and comes no later than the next poll", () =>
    fc.assert(
      fc.property(
        ttlMillis,
        // The rounding of the lease's two timestamps: the true remaining time is within 1ms of ttl.
        fc.double({ min: -1, max: 1, noNaN: true, maxExcluded: true, minExcluded: true }),
        // Where between send and reply the database read its clock, as database time before the reply.
        fc.double({ min: 0, max: 5000, noNaN: true }),
        rate,
        // Local time spent since the reply, in whole nanoseconds as the monotonic clock gives it, and the jittered poll.
        fc.integer({ min: 0, max: 10_000_000_000 }),
        fc.integer({ min: 1, max: 10_000_000 }),
        (ttl, rounding, readBeforeReply, r, elapsedNanos, poll) => {
          const step = nextStep(Duration.millis(poll), ttl, elapsedNanos / 1_000_000)
          const elapsed = elapsedNanos / 1_000_000
          const wait = Duration.toMillis(step.wait)
          expect(Number.isInteger(wait)).toBe(true)
          expect(wait).toBeLessThanOrEqual(poll)
          const until = Duration.toMillis(untilClaimable(Duration.millis(ttl)))
          const claimIn = Math.max(0, Math.ceil(until - elapsed))
          expect(step.claim).toBe(claimIn <= poll)
          expect(wait).toBe(step.claim ? claimIn : poll)
          if (!step.claim) return
          // On the database clock, counted from the reply: the lease expires
          // at ttl + rounding - readBeforeReply, the claim lands at
          // (elapsed + wait) / r. Never before; and, on a clock at the
          // database's rate, within ttl / 1000 + 3ms of it.
          const expiry = ttl + rounding - readBeforeReply
          const lands = (elapsed + wait) / r
          if (elapsed <= until) {
            expect(lands).toBeGreaterThanOrEqual(expiry)
            expect(elapsed + wait).toBeLessThan((ttl + Duration.toMillis(claimSlack)) * (1 + claimRateTolerance) + 2)
          }
        }
      ),
      { numRuns: 5000 }
    ))

  it("a follower that saw 2.5s left claims 2.504s after the reply, or at once if that much time went by", () => {
    expect(nextStep(Duration.millis(400), 2500, 0)).toEqual({
      claim: false,
      wait: Duration.millis(400)
    })
    expect(nextStep(Duration.seconds(3), 2500, 0)).toEqual({
      claim: true,
      wait: Duration.millis(2504)
    })
    expect(nextStep(Duration.seconds(3), 2500, 10.5)).toEqual({
      claim: true,
      wait: Duration.millis(2494)
    })
    expect(nextStep(Duration.seconds(3), 2500, 3000)).toEqual({
      claim: true,
      wait: Duration.zero
    })
  })
})
