/**
 * The watchdog keeps the deadline the latest renewal left: a renewal whose
 * answer leaves less of the lease than the last one (the database's clock or
 * TTL moved) brings the end of the term forward, and the term's work is
 * interrupted then, not at the deadline in force before.
 *
 * And it is an alarm on the process's deadline timer, not a fiber: a term
 * runs one fiber of its own, the renewals (it ran three: a watchdog waiting
 * for a wake-up, an alarm fiber set again at each deadline, the renewals).
 */
import { describe, expect, it } from "@effect/vitest"
import { Clock, Duration, Effect, Option, TestClock } from "effect"
import * as Elector from "../src/Elector.js"
import type * as Lease from "../src/Lease.js"
import * as Store from "../src/Store.js"
import * as MemoryStore from "../src/stores/MemoryStore.js"
import { Started } from "./support/Started.js"

describe("Watchdog", () => {
  it.scoped("ends the term at an earlier deadline a renewal brings", () =>
    Effect.gen(function*() {
      const epoch = new Date(0)
      const lease = (name: string, holder: string, ttl: number): Lease.Lease => ({
        name,
        holder,
        fence: 1n,
        payload: null,
        acquiredAt: epoch,
        renewedAt: epoch,
        expiresAt: new Date(ttl),
        now: epoch
      })
      let renewals = 0
      let renewedAt: number | undefined
      let stoppedAt: number | undefined
      const store: Store.StoreShape = {
        acquire: (name, identity) => Effect.succeed(lease(name, identity, 15_000)),
        // The first renewal grants 3 s; the ones after never answer.
        renew: (name, identity) =>
          renewals++ === 0
            ? Effect.map(Clock.currentTimeMillis, (now) => {
              renewedAt = now
              return lease(name, identity, 3_000)
            })
            : Effect.never,
        release: () => Effect.void,
        inspect: (name) => Effect.fail(new Store.NoLease({ name }))
      }
      const elector = yield* Elector.make({
        name: "job",
        identity: "me",
        leaseDuration: "15 seconds",
        renewInterval: "5 seconds",
        safetyMargin: "1 second",
        onStartedLeading: () =>
          Effect.onInterrupt(Effect.never, () =>
            Effect.map(Clock.currentTimeMillis, (now) => {
              stoppedAt = now
            }))
      }).pipe(Effect.provideService(Store.Store, store))
      yield* Effect.forkScoped(elector.run)
      for (let i = 0; i < 200 && stoppedAt === undefined; i++) yield* TestClock.adjust(Duration.millis(100))
      // The renewal left 3 s of lease, less the 1 s margin: the term ends 2 s
      // after it was sent, not 14 s after the claim.
      expect(renewedAt).toBeDefined()
      expect(stoppedAt! - renewedAt!).toBeGreaterThanOrEqual(1_900)
      expect(stoppedAt! - renewedAt!).toBeLessThanOrEqual(2_100)
    }))

  it.scoped("holds no fiber: a term runs one fiber of its own, its renewals", () =>
    Effect.gen(function*() {
      // Calls on the elector's fiber (the store promises to answer in time),
      // so that every fiber counted is the term's.
      const db = yield* MemoryStore.make()
      const store = { ...db, answersWithin: Duration.seconds(1) }
      const started = new Started()
      const elector = yield* Elector.make({ name: "job", identity: "me", renewInterval: "5 seconds" }).pipe(
        Effect.provideService(Store.Store, store)
      )
      yield* Effect.forkScoped(Effect.supervised(elector.run, started))
      // A minute of one term: twelve renewals, four deadlines gone by.
      for (let i = 0; i < 60; i++) yield* TestClock.adjust(Duration.seconds(1))
      expect(yield* elector.fence).toEqual(Option.some(1n))
      expect(started.count).toBe(1)
    }))
})
