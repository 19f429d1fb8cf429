import { Duration } from "effect"
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import { backoff, jittered, maxBackoffFactor, renewalDelay, retryDelay } from "../../src/internal/election/timing.js"

// u as Random.next yields it, k / 2^53 for k < 2^53, but for its very last
// value: at u = 1 - 2^-53, 0.5 + u / 2 rounds to 1 and the delay is the whole
// period (a chance of 2^-53 per poll; harmless, the bounds below only need
// delay <= period, but it is the one point where "< period" does not hold).
const unit = fc.double({ min: 0, max: 1 - 2 ** -52, noNaN: true })

describe("backoff and jitter", () => {
  it("a poll delay is a whole number of milliseconds in [period/2, period)", () =>
    fc.assert(
      fc.property(fc.integer({ min: 2, max: 10_000_000 }), unit, (period, u) => {
        const d = Duration.toMillis(jittered(Duration.millis(period), u))
        expect(Number.isInteger(d)).toBe(true)
        // Flooring to whole milliseconds: exactly period/2 for an even period.
        expect(d).toBeGreaterThanOrEqual(Math.floor(period / 2))
        expect(d).toBeLessThan(period)
      }),
      { numRuns: 5000 }
    ))

  it("after failures a poll delay doubles per failure, up to the factor or the cap, never under the plain period", () =>
    fc.assert(
      fc.property(
        fc.integer({ min: 2, max: 1_000_000 }),
        fc.integer({ min: 0, max: 60 }),
        fc.integer({ min: 1, max: 10_000_000 }),
        unit,
        (period, failures, cap, u) => {
          const d = Duration.toMillis(backoff(Duration.millis(period), failures, Duration.millis(cap), u))
          const grown = Math.max(period, Math.min(period * Math.min(2 ** failures, maxBackoffFactor), cap))
          expect(d).toBe(Duration.toMillis(jittered(Duration.millis(grown), u)))
          expect(d).toBeLessThan(Math.max(period, Math.min(period * maxBackoffFactor, cap)))
          if (failures === 0) expect(d).toBe(Duration.toMillis(jittered(Duration.millis(period), u)))
        }
      ),
      { numRuns: 5000 }
    ))

  it("backs off 3 s polls to 6 then 12 s, and stays there under a 60 s cap; a 10 s lease caps them at 10 s", () => {
    const period = Duration.seconds(3)
    const at = (failures: number, cap: Duration.Duration) => Duration.toMillis(backoff(period, failures, cap, 0))
    expect([0, 1, 2, 3, 10].map((f) => at(f, Duration.minutes(1)))).toEqual([1500, 3000, 6000, 6000, 6000])
    expect([0, 1, 2].map((f) => at(f, Duration.seconds(10)))).toEqual([1500, 3000, 5000])
    // A cap under the period never shortens it.
    expect(at(2, Duration.seconds(1))).toBe(1500)
  })

  it("spreads over the whole interval", () => {
    expect(Duration.toMillis(jittered(Duration.seconds(3), 0))).toBe(1500)
    expect(Duration.toMillis(jittered(Duration.seconds(3), 0.999_999))).toBe(2999)
  })

  it("a renewal delay is a whole number of milliseconds, never later than renewInterval nor sooner than half of it (the first) or 9/10 (the others)", () =>
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 2 ** 31 - 1 }), unit, fc.boolean(), (interval, u, first) => {
        const d = Duration.toMillis(renewalDelay(Duration.millis(interval), u, first))
        expect(Number.isInteger(d)).toBe(true)
        expect(d).toBeLessThanOrEqual(interval)
        expect(d).toBeGreaterThanOrEqual(Math.max(1, Math.floor(interval * (first ? 0.5 : 0.9))))
      }),
      { numRuns: 5000 }
    ))

  it("renewal jitter spreads over its whole range, and draws of 0 renew at exactly renewInterval", () => {
    expect(Duration.toMillis(renewalDelay(Duration.seconds(5), 0, true))).toBe(5000)
    expect(Duration.toMillis(renewalDelay(Duration.seconds(5), 0, false))).toBe(5000)
    expect(Duration.toMillis(renewalDelay(Duration.seconds(5), 0.999_999, true))).toBe(2500)
    expect(Duration.toMillis(renewalDelay(Duration.seconds(5), 0.999_999, false))).toBe(4500)
    // A sub-millisecond interval still waits a millisecond, never zero.
    expect(Duration.toMillis(renewalDelay(Duration.millis(1), 0.999_999, true))).toBe(1)
  })

  it("retryDelay is max(renewInterval / 4, 50ms)", () =>
    fc.assert(fc.property(fc.integer({ min: 1, max: 10_000_000 }), (renew) => {
      expect(Duration.toMillis(retryDelay(Duration.millis(renew)))).toBe(Math.max(renew / 4, 50))
    })))
})
