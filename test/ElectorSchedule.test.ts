/**
 * When followers and leaders call the store: a follower claims a crashed
 * leader's lease at the instant the database lets it, not at its next poll,
 * and not before; leaders elected together spread their renewals out.
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Fiber, Option, Random, TestClock } from "effect"
import * as Elector from "../src/Elector.js"
import * as Lease from "../src/Lease.js"
import * as Store from "../src/Store.js"
import * as MemoryStore from "../src/stores/MemoryStore.js"
import { steady } from "./support/steady.js"

const seconds = (n: number) => TestClock.adjust(Duration.millis(n * 1000))

/** What a follower's acquire found: when it landed on the database clock, and the lease it returned. */
interface Attempt {
  readonly at: number
  readonly lease: Lease.Lease
}

/** `store`, recording every acquire with the database instant it landed at. */
const recordingAcquires = (store: Store.StoreShape) => {
  const attempts: Array<Attempt> = []
  const recorded: Store.StoreShape = {
    ...store,
    acquire: (...args) =>
      Effect.tap(
        store.acquire(...args),
        (lease) => Effect.sync(() => attempts.push({ at: lease.now.getTime(), lease }))
      )
  }
  return { attempts, store: recorded }
}

/**
 * A leader `a` that crashes (no release) at 12s, after its renewals at 5s and
 * 10s, and a follower `b` polling every 1.5s from 1ms on, both with their
 * jitter pinned: the lease expires at 25s on the database clock (three days
 * ahead, at `rate` database seconds per local second).
 */
const crash = (rate: number) =>
  Effect.gen(function*() {
    const clock = yield* MemoryStore.makeClock({ offset: Duration.days(3), rate })
    const db = yield* MemoryStore.make({ clock })
    const b = recordingAcquires(db)
    const a = yield* Elector.make({ name: "jobs", identity: "a", disableRelease: true }).pipe(
      Effect.provideService(Store.Store, db)
    )
    const follower = yield* Elector.make({ name: "jobs", identity: "b" }).pipe(
      Effect.provideService(Store.Store, b.store)
    )
    const runA = yield* Effect.fork(steady(a.run))
    yield* TestClock.adjust(Duration.millis(1))
    yield* Effect.fork(steady(follower.run))
    yield* seconds(12 - 0.001)
    expect(yield* a.isLeader).toBe(true)
    const expiresAt = (yield* db.inspect("jobs")).expiresAt.getTime()
    yield* Fiber.interrupt(runA)
    return { attempts: b.attempts, clock, expiresAt, follower }
  })

describe("follower schedule", () => {
  it.scoped("a follower claims a crashed leader's lease as soon as it expires: not before, not at its next poll", () =>
    Effect.gen(function*() {
      const { attempts, clock, expiresAt, follower } = yield* crash(1)
      const origin = (yield* clock.now).getTime() - 12_000
      expect(expiresAt - origin).toBe(25_000)
      // b saw the lease at every poll (its polls go on the timer's 20ms
      // grain, so the last at 24s, 1000ms left) and tried nothing while it
      // was valid.
      yield* seconds(24.999 - 12)
      expect(yield* follower.isLeader).toBe(false)
      expect(attempts).toEqual([])
      // Its claim, at its own instant: 24s + (1000ms + 1ms) * 1.001, rounded
      // up to 1003ms. Blind polling would have claimed at its next poll, 25.5s.
      yield* seconds(0.003)
      expect(yield* follower.isLeader).toBe(false)
      yield* seconds(0.001)
      expect(yield* follower.fence).toEqual(Option.some(2n))
      expect(attempts.map((a) => a.at - origin)).toEqual([25_003])
      expect(attempts.every((a) => a.at >= expiresAt)).toBe(true)
    }))

  it.scoped("a claim that lands early (a follower clock faster than tolerated) is refused, and the next lands at the expiry", () =>
    Effect.gen(function*() {
      // The database clock runs at 0.99 of the local one: every local wait
      // is 1% short on the database clock, ten times the tolerance.
      const { attempts, expiresAt, follower } = yield* crash(0.99)
      yield* seconds(20)
      expect(yield* follower.fence).toEqual(Option.some(2n))
      // The first claim found a's lease still valid and waited again on what
      // its reply said was left: the lease was never taken early, and the
      // claims did not spin.
      const early = attempts.filter((a) => a.at < expiresAt)
      expect(early.length).toBeGreaterThanOrEqual(1)
      expect(early.every((a) => Lease.isHeldBy(a.lease, "a"))).toBe(true)
      const won = attempts.filter((a) => Lease.isHeldBy(a.lease, "b"))
      expect(won).toHaveLength(1)
      expect(won[0]!.at).toBeGreaterThanOrEqual(expiresAt)
      expect(won[0]!.at - expiresAt).toBeLessThan(5)
      expect(attempts.length).toBeLessThanOrEqual(3)
    }))
})

describe("renewal schedule", () => {
  // Twelve elections whose leaders are elected at the same instant.
  const together = (jitter: (i: number) => Random.Random) =>
    Effect.gen(function*() {
      const clock = yield* MemoryStore.makeClock({ offset: Duration.days(3) })
      const db = yield* MemoryStore.make({ clock })
      const renewals: Array<Array<number>> = []
      for (let i = 0; i < 12; i++) {
        const at: Array<number> = []
        renewals.push(at)
        const store: Store.StoreShape = {
          ...db,
          renew: (...args) =>
            Effect.zipRight(
              Effect.map(Effect.clockWith((c) => c.currentTimeMillis), (ms) => at.push(ms)),
              db.renew(...args)
            )
        }
        const elector = yield* Elector.make({ name: `jobs-${i}`, identity: "a" }).pipe(
          Effect.provideService(Store.Store, store)
        )
        yield* Effect.fork(Effect.withRandom(elector.run, jitter(i)))
      }
      yield* seconds(60)
      return renewals
    })

  it.scoped("leaders elected together spread their renewals out, each never later than renewInterval", () =>
    Effect.gen(function*() {
      const renewals = yield* together((i) => Random.make(i))
      for (const at of renewals) {
        const gaps = at.map((t, k) => t - (at[k - 1] ?? 0))
        expect(gaps[0]).toBeGreaterThanOrEqual(2500)
        for (const gap of gaps) expect(gap).toBeLessThanOrEqual(5000)
        for (const gap of gaps.slice(1)) expect(gap).toBeGreaterThanOrEqual(4500)
      }
      // The first renewals already spread over the first half-cycle; by the
      // last ones, the leaders renew at 11 different instants: renewals go
      // on the timer's 20ms grain (Deadlines.grain), and two of these twelve
      // share one.
      const first = renewals.map((at) => at[0]!)
      expect(Math.max(...first) - Math.min(...first)).toBeGreaterThan(1000)
      const last = renewals.map((at) => at.at(-1)! % 5000)
      expect(last.every((t) => t % 20 === 0)).toBe(true)
      expect(new Set(last).size).toBe(11)
    }))

  it.scoped("with the jitter pinned they would renew together forever", () =>
    Effect.gen(function*() {
      const renewals = yield* together(() => Random.fixed([0]))
      expect(new Set(renewals.map((at) => at.join())).size).toBe(1)
    }))
})
