import { Duration } from "effect"
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import { localDeadline } from "../../src/internal/election/timing.js"
import * as Lease from "../../src/Lease.js"

// Database instants three days out, in either order.
const instant = fc.integer({ min: 259_200_000 - 100_000, max: 259_200_000 + 100_000 })

const lease = fc.record({ now: instant, expiresAt: instant, holder: fc.constantFrom("a", "b") }).map(
  ({ expiresAt, holder, now }): Lease.Lease => ({
    name: "jobs",
    holder,
    fence: 1n,
    payload: null,
    acquiredAt: new Date(now - 1000),
    renewedAt: new Date(now - 1000),
    expiresAt: new Date(expiresAt),
    now: new Date(now)
  })
)

const ms = 1_000_000n

describe("lease duration maths", () => {
  it("ttl is expiresAt - now floored at zero, consistent with isExpired and isHeldBy", () =>
    fc.assert(
      fc.property(lease, fc.constantFrom("a", "b"), (l, who) => {
        const left = l.expiresAt.getTime() - l.now.getTime()
        const ttl = Duration.toMillis(Lease.ttl(l))
        expect(ttl).toBe(Math.max(0, left))
        expect(Lease.isExpired(l)).toBe(left <= 0)
        expect(Lease.isExpired(l)).toBe(ttl === 0)
        expect(Lease.isHeldBy(l, who)).toBe(l.holder === who && left > 0)
      }),
      { numRuns: 2000 }
    ))

  it("the local deadline never exceeds sentAt + requested - margin, nor sentAt + ttl - margin", () =>
    fc.assert(
      fc.property(
        lease,
        fc.bigInt({ min: 0n, max: 10n ** 15n }),
        fc.integer({ min: 1, max: 60_000 }),
        fc.integer({ min: 0, max: 10_000 }),
        (l, sentAt, requested, margin) => {
          const deadline = localDeadline(sentAt, l, Duration.millis(requested), Duration.millis(margin))
          const ttl = BigInt(Duration.toMillis(Lease.ttl(l)))
          expect(deadline).toBeLessThanOrEqual(sentAt + BigInt(requested) * ms - BigInt(margin) * ms)
          expect(deadline).toBeLessThanOrEqual(sentAt + ttl * ms - BigInt(margin) * ms)
          const shorter = ttl < BigInt(requested) ? ttl : BigInt(requested)
          expect(deadline).toBe(sentAt + (shorter - BigInt(margin)) * ms)
        }
      ),
      { numRuns: 2000 }
    ))
})
