/**
 * The acceptance suite every store runs, unchanged: the in-memory reference,
 * PostgreSQL direct and through PgBouncer, MariaDB, and users' own stores
 * through `effect-leaderelection/testing`. It pins down the contract that the
 * elector's safety argument rests on, so that no store can drift into
 * dialect-specific semantics.
 *
 * The suite is a list of named cases: `storeSuite` registers each as a test
 * of the caller's vitest, `checkStore` runs them all as one Effect and
 * reports every case that failed.
 */
import { describe, expect, it } from "@effect/vitest"
import type { Layer } from "effect"
import { Cause, Duration, Effect, Either, Exit, type Scope, TestClock, TestContext } from "effect"
import * as fc from "fast-check"
import { randomBytes } from "node:crypto"
import * as Lease from "../../Lease.js"
import * as Store from "../../Store.js"
import { modelCommands, runModel } from "./model.js"

export interface StoreHarness {
  /** Shown in the test names. */
  readonly name: string
  /** Built afresh for every test and every model run. */
  readonly layer: Layer.Layer<Store.Store, unknown>
  /**
   * true when the store's clock is a real server's: time passes by sleeping.
   * false when it follows Effect's Clock: time passes through TestClock.
   */
  readonly live: boolean
  /** Model runs; live stores sleep through every expiry, so they get fewer. */
  readonly modelRuns?: number
}

let counter = 0
const run = randomBytes(6).toString("hex")
/** Election names unique to this process and run, so suites can share a table. */
export const uniqueName = (label: string): string => `storetest-${label}-${run}-${(counter++).toString(36)}`

const bytes = (...values: Array<number>) => new Uint8Array(values)

/** One case of the suite: a name and a test body. */
export interface Case {
  readonly name: string
  readonly body: Effect.Effect<void, unknown, Scope.Scope>
}

const timing = (harness: StoreHarness) => {
  // Short leases are what a test waits out; long ones never expire during a test.
  const short = harness.live ? Duration.millis(400) : Duration.seconds(2)
  return {
    short,
    long: Duration.minutes(5),
    elapse: (d: Duration.Duration) => harness.live ? Effect.sleep(d) : TestClock.adjust(d),
    pastShort: Duration.sum(short, harness.live ? Duration.millis(300) : Duration.millis(1))
  }
}

const cases = (harness: StoreHarness): ReadonlyArray<Case> => {
  const { elapse, long, pastShort, short } = timing(harness)
  /** Twelve contenders acquire at once: exactly one of them must win. */
  const race = (store: Store.StoreShape, name: string) =>
    Effect.gen(function*() {
      const contenders = Array.from({ length: 12 }, (_, i) => `c${i}`)
      const results = yield* Effect.all(
        contenders.map((who) => store.acquire(name, who, long, null)),
        { concurrency: "unbounded" }
      )
      const winners = results.filter((lease, i) => Lease.isHeldBy(lease, contenders[i]!))
      expect(winners).toHaveLength(1)
      return { results, winner: winners[0]! }
    })
  const withStore = <A, E>(f: (store: Store.StoreShape) => Effect.Effect<A, E>) =>
    Effect.flatMap(Store.Store, f).pipe(Effect.provide(harness.layer))

  const all: Array<Case> = []
  const test = (name: string, body: () => Effect.Effect<void, unknown, Scope.Scope>): void => {
    all.push({ name, body: Effect.suspend(body) })
  }
  {
    test("inspect of a missing record fails with NoLease", () =>
      withStore((store) =>
        Effect.gen(function*() {
          const name = uniqueName("missing")
          const error = yield* Effect.flip(store.inspect(name))
          expect(error._tag).toBe("NoLease")
          expect(error).toMatchObject({ name })
        })
      ))

    test("a fresh acquire starts the first term with a TTL from the database clock", () =>
      withStore((store) =>
        Effect.gen(function*() {
          const name = uniqueName("fresh")
          const lease = yield* store.acquire(name, "a", Duration.seconds(15), null)
          expect(lease.name).toBe(name)
          expect(lease.holder).toBe("a")
          expect(lease.fence).toBe(1n)
          expect(Lease.isHeldBy(lease, "a")).toBe(true)
          expect(lease.acquiredAt.getTime()).toBe(lease.now.getTime())
          expect(lease.renewedAt.getTime()).toBe(lease.now.getTime())
          // Expiry and now come from one clock read: the difference is what was asked.
          expect(Math.abs(Duration.toMillis(Lease.ttl(lease)) - 15_000)).toBeLessThanOrEqual(1)
          const seen = yield* store.inspect(name)
          expect(seen).toMatchObject({ holder: "a", fence: 1n, payload: null })
          expect(seen.expiresAt.getTime()).toBe(lease.expiresAt.getTime())
        })
      ))

    test("a held lease is not taken over, and the loser learns who holds it", () =>
      withStore((store) =>
        Effect.gen(function*() {
          const name = uniqueName("held")
          const first = yield* store.acquire(name, "a", long, bytes(1))
          const second = yield* store.acquire(name, "b", long, bytes(2))
          expect(second.holder).toBe("a")
          expect(second.fence).toBe(first.fence)
          expect(second.payload).toEqual(bytes(1))
          expect(Lease.isHeldBy(second, "b")).toBe(false)
          expect(second.expiresAt.getTime()).toBe(first.expiresAt.getTime())
        })
      ))

    test("the holder acquiring again continues its term under the same fence", () =>
      withStore((store) =>
        Effect.gen(function*() {
          const name = uniqueName("again")
          const first = yield* store.acquire(name, "a", short, null)
          yield* elapse(Duration.millis(10))
          const again = yield* store.acquire(name, "a", long, bytes(9))
          expect(again.fence).toBe(first.fence)
          expect(again.acquiredAt.getTime()).toBe(first.acquiredAt.getTime())
          expect(again.renewedAt.getTime()).toBeGreaterThan(first.renewedAt.getTime())
          expect(again.expiresAt.getTime()).toBeGreaterThan(first.expiresAt.getTime())
          expect(again.payload).toEqual(bytes(9))
        })
      ))

    test("concurrent acquires elect exactly one holder", () =>
      withStore((store) =>
        Effect.gen(function*() {
          const { results, winner } = yield* race(store, uniqueName("race"))
          for (const lease of results) {
            expect(lease.holder).toBe(winner.holder)
            expect(lease.fence).toBe(1n)
          }
        })
      ))

    test("concurrent takeovers of an expired lease elect exactly one and advance the fence once", () =>
      withStore((store) =>
        Effect.gen(function*() {
          const name = uniqueName("takeover-race")
          yield* store.acquire(name, "old", short, null)
          yield* elapse(pastShort)
          const { results, winner } = yield* race(store, name)
          expect(new Set(results.map((lease) => lease.fence))).toEqual(new Set([2n]))
          expect((yield* store.inspect(name)).holder).toBe(winner.holder)
        })
      ))

    test("the fence advances exactly when an expired lease is reclaimed, even by its holder", () =>
      withStore((store) =>
        Effect.gen(function*() {
          const name = uniqueName("reclaim")
          const first = yield* store.acquire(name, "a", short, null)
          yield* elapse(pastShort)
          const expired = yield* store.inspect(name)
          expect(Lease.isExpired(expired)).toBe(true)
          expect(Duration.toMillis(Lease.ttl(expired))).toBe(0)
          // Ran out, not released: the expiry is still a TTL after the last renewal.
          expect(expired.expiresAt.getTime()).toBeGreaterThan(expired.renewedAt.getTime())
          const byOther = yield* store.acquire(name, "b", short, null)
          expect(byOther).toMatchObject({ holder: "b", fence: first.fence + 1n })
          expect(byOther.acquiredAt.getTime()).toBeGreaterThan(first.acquiredAt.getTime())
          yield* elapse(pastShort)
          const byHolder = yield* store.acquire(name, "b", long, null)
          expect(byHolder).toMatchObject({ holder: "b", fence: first.fence + 2n })
        })
      ))

    test("renew extends the term and keeps the fence", () =>
      withStore((store) =>
        Effect.gen(function*() {
          const name = uniqueName("renew")
          const lease = yield* store.acquire(name, "a", short, bytes(1))
          yield* elapse(Duration.millis(20))
          const renewed = yield* store.renew(name, "a", lease.fence, long, bytes(2, 3))
          expect(renewed.fence).toBe(lease.fence)
          expect(renewed.acquiredAt.getTime()).toBe(lease.acquiredAt.getTime())
          expect(renewed.renewedAt.getTime()).toBeGreaterThan(lease.renewedAt.getTime())
          expect(Math.abs(Duration.toMillis(Lease.ttl(renewed)) - Duration.toMillis(long))).toBeLessThanOrEqual(1)
          expect(renewed.payload).toEqual(bytes(2, 3))
          // The short lease would have expired by now; the renewal carried it over.
          yield* elapse(pastShort)
          expect(Lease.isHeldBy(yield* store.inspect(name), "a")).toBe(true)
        })
      ))

    test("renew fails with LeaseLost rather than silently succeeding when its guard does not match", () =>
      withStore((store) =>
        Effect.gen(function*() {
          const name = uniqueName("guard")
          const missing = yield* Effect.flip(store.renew(name, "a", 1n, long, null))
          expect(missing).toMatchObject({ _tag: "LeaseLost", name, identity: "a", fence: 1n })
          const lease = yield* store.acquire(name, "a", short, null)
          const wrongHolder = yield* Effect.flip(store.renew(name, "b", lease.fence, long, null))
          expect(wrongHolder._tag).toBe("LeaseLost")
          const staleFence = yield* Effect.flip(store.renew(name, "a", lease.fence - 1n, long, null))
          expect(staleFence._tag).toBe("LeaseLost")
          const futureFence = yield* Effect.flip(store.renew(name, "a", lease.fence + 1n, long, null))
          expect(futureFence._tag).toBe("LeaseLost")
          yield* elapse(pastShort)
          const expired = yield* Effect.flip(store.renew(name, "a", lease.fence, long, null))
          expect(expired._tag).toBe("LeaseLost")
          // None of the failed renewals changed the record.
          const after = yield* store.inspect(name)
          expect(after.expiresAt.getTime()).toBe(lease.expiresAt.getTime())
          expect(after.fence).toBe(lease.fence)
        })
      ))

    test("release hands over at once, is idempotent, and a stale release changes nothing", () =>
      withStore((store) =>
        Effect.gen(function*() {
          const name = uniqueName("release")
          yield* store.release(name, "nobody", 1n)
          const a = yield* store.acquire(name, "a", long, null)
          yield* store.release(name, "b", a.fence)
          yield* store.release(name, "a", a.fence + 1n)
          expect(Lease.isHeldBy(yield* store.inspect(name), "a")).toBe(true)
          yield* store.release(name, "a", a.fence)
          yield* store.release(name, "a", a.fence)
          const released = yield* store.inspect(name)
          expect(Lease.isExpired(released)).toBe(true)
          expect(released.fence).toBe(a.fence)
          // Released, not run out: the expiry is the release's instant, not a TTL after a renewal.
          expect(released.expiresAt.getTime()).toBeLessThanOrEqual(released.renewedAt.getTime())
          const b = yield* store.acquire(name, "b", long, null)
          expect(b).toMatchObject({ holder: "b", fence: a.fence + 1n })
          // The old holder's late release must not end the new term.
          yield* store.release(name, "a", a.fence)
          expect(Lease.isHeldBy(yield* store.inspect(name), "b")).toBe(true)
          const renewed = yield* Effect.either(store.renew(name, "a", a.fence, long, null))
          expect(Either.isLeft(renewed)).toBe(true)
        })
      ))

    test("fences never repeat across a chain of handovers", () =>
      withStore((store) =>
        Effect.gen(function*() {
          const name = uniqueName("chain")
          const fences: Array<bigint> = []
          for (let i = 0; i < 8; i++) {
            const who = `p${i % 3}`
            const lease = yield* store.acquire(name, who, long, null)
            expect(lease.holder).toBe(who)
            fences.push(lease.fence)
            yield* store.release(name, who, lease.fence)
          }
          expect(fences).toEqual([1n, 2n, 3n, 4n, 5n, 6n, 7n, 8n])
        })
      ))

    test("payloads round-trip byte for byte, including null and empty", () =>
      withStore((store) =>
        Effect.gen(function*() {
          const name = uniqueName("payload")
          const all = new Uint8Array(256).map((_, i) => i)
          const lease = yield* store.acquire(name, "a", long, all)
          expect(lease.payload).toEqual(all)
          expect((yield* store.inspect(name)).payload).toEqual(all)
          const empty = yield* store.renew(name, "a", lease.fence, long, new Uint8Array(0))
          expect(empty.payload).toEqual(new Uint8Array(0))
          const none = yield* store.renew(name, "a", lease.fence, long, null)
          expect(none.payload).toBeNull()
          expect((yield* store.inspect(name)).payload).toBeNull()
        })
      ))

    test("unrelated elections share a table without touching each other", () =>
      withStore((store) =>
        Effect.gen(function*() {
          const one = uniqueName("one")
          const two = uniqueName("two")
          const a = yield* store.acquire(one, "a", long, null)
          const b = yield* store.acquire(two, "b", long, null)
          expect(Lease.isHeldBy(a, "a")).toBe(true)
          expect(Lease.isHeldBy(b, "b")).toBe(true)
          yield* store.release(one, "a", a.fence)
          expect(Lease.isHeldBy(yield* store.inspect(two), "b")).toBe(true)
          const c = yield* store.acquire(one, "c", long, null)
          expect(c.fence).toBe(2n)
          expect((yield* store.inspect(two)).fence).toBe(1n)
        })
      ))

    test("names and identities are data, never SQL", () =>
      withStore((store) =>
        Effect.gen(function*() {
          const name = `${uniqueName("quote")}'; DROP TABLE x; --"\\`
          const who = `o'brien "the" \\ holder 🚀`
          const lease = yield* store.acquire(name, who, long, null)
          expect(lease).toMatchObject({ name, holder: who })
          expect((yield* store.inspect(name)).holder).toBe(who)
        })
      ))

    test("holds exactly the documented limits", () =>
      withStore((store) =>
        Effect.gen(function*() {
          // Multi-byte characters: the limits count bytes of UTF-8, not characters.
          const base = `${uniqueName("limits")}-é🚀`
          const name = base + "x".repeat(Lease.maxNameBytes - Buffer.byteLength(base))
          const identity = "🚀".repeat(Lease.maxIdentityBytes / 4)
          const payload = new Uint8Array(Lease.maxPayloadBytes).map((_, i) => i * 7)
          expect([Buffer.byteLength(name), Buffer.byteLength(identity)]).toEqual([1020, 1020])
          const lease = yield* store.acquire(name, identity, long, payload)
          expect(lease).toMatchObject({ name, holder: identity, fence: 1n })
          expect(lease.payload).toEqual(payload)
          expect(yield* store.inspect(name)).toMatchObject({ name, holder: identity, payload })
          const reversed = payload.slice().reverse()
          const renewed = yield* store.renew(name, identity, lease.fence, long, reversed)
          expect(renewed.payload).toEqual(reversed)

          // One byte more is refused at the store boundary, naming the argument.
          const refused = <A, E>(call: Effect.Effect<A, E>, field: string, reason: string) =>
            Effect.gen(function*() {
              const error = yield* Effect.flip(call)
              expect(error).toMatchObject({ _tag: "StoreError", retryable: false, reason: `${field}: ${reason}` })
              expect((error as Store.StoreError).cause).toMatchObject({ _tag: "InvalidConfig", field, reason })
            })
          const longName = `${name}y`
          const longIdentity = `${identity}y`
          const bigPayload = new Uint8Array(Lease.maxPayloadBytes + 1)
          const tooLong = (bytes: number) => `must be at most ${bytes} bytes of UTF-8, got ${bytes + 1}`
          const tooBig = `must be at most ${Lease.maxPayloadBytes} bytes, got ${Lease.maxPayloadBytes + 1}`
          yield* refused(store.acquire(longName, "a", long, null), "name", tooLong(Lease.maxNameBytes))
          yield* refused(store.inspect(longName), "name", tooLong(Lease.maxNameBytes))
          yield* refused(store.release(longName, "a", 1n), "name", tooLong(Lease.maxNameBytes))
          yield* refused(store.acquire(name, longIdentity, long, null), "identity", tooLong(Lease.maxIdentityBytes))
          yield* refused(store.acquire(name, identity, long, bigPayload), "payload", tooBig)
          yield* refused(store.renew(name, identity, lease.fence, long, bigPayload), "payload", tooBig)
          yield* refused(store.release(name, longIdentity, lease.fence), "identity", tooLong(Lease.maxIdentityBytes))
          // What the databases would refuse or corrupt, and what plain JavaScript can pass.
          yield* refused(
            store.acquire(`${name.slice(0, 20)}\u0000`, "a", long, null),
            "name",
            "must not contain a NUL character"
          )
          yield* refused(
            store.acquire(name, "a\ud800", long, null),
            "identity",
            "must be well-formed Unicode (it contains a lone surrogate)"
          )
          yield* refused(
            store.acquire(name, identity, long, "text" as unknown as Uint8Array),
            "payload",
            "must be a Uint8Array or null, got a string"
          )
          // None of the refused calls reached the record.
          const after = yield* store.inspect(name)
          expect(after).toMatchObject({ holder: identity, fence: lease.fence, payload: reversed })
          expect(after.expiresAt.getTime()).toBe(renewed.expiresAt.getTime())
        })
      ))

    // Job slots (`Store.SlotStore`): optional, so a store without them passes these vacuously.
    const withSlots = (f: (store: Store.StoreShape, slots: Store.SlotStore) => Effect.Effect<void, unknown>) =>
      withStore((store) => store.slots === undefined ? Effect.void : f(store, store.slots))
    const minute = (k: number) => new Date(Date.UTC(2031, 0, 1, 0, k))

    test("a slot is claimed under the term, completed once, and reported as the job's latest", () =>
      withSlots((store, slots) =>
        Effect.gen(function*() {
          const name = uniqueName("slot")
          const job = `report's "job" \\ 🚀`
          const lease = yield* store.acquire(name, "a", long, null)
          const none = yield* slots.last(name, job)
          expect(none.slot).toBeUndefined()
          expect(Math.abs(none.now.getTime() - lease.now.getTime())).toBeLessThan(60_000)
          const first = yield* slots.claim(name, "a", lease.fence, job, minute(1), false)
          expect(first.claimed).toBe(true)
          expect(first.slot).toMatchObject({ job, at: minute(1), fence: lease.fence, completedAt: null })
          // A retry by the same term (its first reply lost) claims it again, until it completes.
          expect((yield* slots.claim(name, "a", lease.fence, job, minute(1), false)).claimed).toBe(true)
          const done = yield* slots.complete(name, "a", lease.fence, job, minute(1))
          expect(done.getTime()).toBeGreaterThanOrEqual(first.now.getTime())
          const again = yield* slots.claim(name, "a", lease.fence, job, minute(1), true)
          expect(again.claimed).toBe(false)
          expect(again.slot?.completedAt).not.toBeNull()
          expect((yield* slots.claim(name, "a", lease.fence, job, minute(0), false)).claimed).toBe(true)
          const latest = yield* slots.last(name, job)
          expect(latest.slot).toMatchObject({ job, at: minute(1), fence: lease.fence })
          expect(latest.slot?.completedAt?.getTime()).toBeGreaterThanOrEqual(
            latest.slot?.startedAt.getTime() ?? Infinity
          )
          // Another job and another election have slots of their own.
          expect((yield* slots.last(name, "other")).slot).toBeUndefined()
          const elsewhere = yield* store.acquire(uniqueName("slot-other"), "a", long, null)
          expect((yield* slots.claim(elsewhere.name, "a", elsewhere.fence, job, minute(1), false)).claimed).toBe(true)
        })
      ))

    test("a deposed term can neither claim nor complete; its successor re-runs an open slot only when asked", () =>
      withSlots((store, slots) =>
        Effect.gen(function*() {
          const name = uniqueName("slot-fence")
          const job = "nightly"
          const old = yield* store.acquire(name, "a", short, null)
          expect((yield* slots.claim(name, "a", old.fence, job, minute(1), false)).claimed).toBe(true)
          yield* elapse(pastShort)
          // Expired, not yet taken over: the guard already refuses.
          expect((yield* Effect.flip(slots.claim(name, "a", old.fence, job, minute(2), false)))._tag).toBe("LeaseLost")
          const next = yield* store.acquire(name, "b", long, null)
          expect(next.fence).toBe(old.fence + 1n)
          const late = yield* Effect.flip(slots.complete(name, "a", old.fence, job, minute(1)))
          expect(late).toMatchObject({ _tag: "LeaseLost", name, identity: "a", fence: old.fence })
          expect((yield* Effect.flip(slots.claim(name, "a", old.fence, job, minute(1), true)))._tag).toBe("LeaseLost")
          // At most once: the interrupted slot stays the old term's.
          const kept = yield* slots.claim(name, "b", next.fence, job, minute(1), false)
          expect(kept.claimed).toBe(false)
          expect(kept.slot).toMatchObject({ fence: old.fence, completedAt: null })
          // Nor can the successor complete a slot it did not claim.
          expect((yield* Effect.flip(slots.complete(name, "b", next.fence, job, minute(1))))._tag).toBe("LeaseLost")
          // At least once: the successor takes it over under its own fence.
          const retaken = yield* slots.claim(name, "b", next.fence, job, minute(1), true)
          expect(retaken.claimed).toBe(true)
          expect(retaken.slot?.fence).toBe(next.fence)
          yield* slots.complete(name, "b", next.fence, job, minute(1))
          // A slot the old term never started is the successor's.
          expect((yield* slots.claim(name, "b", next.fence, job, minute(2), false)).claimed).toBe(true)
          // Someone else's claim with the holder's fence is refused too.
          expect((yield* Effect.flip(slots.claim(name, "c", next.fence, job, minute(3), false)))._tag).toBe("LeaseLost")
          expect((yield* Effect.flip(slots.claim(uniqueName("none"), "b", 1n, job, minute(3), false)))._tag).toBe(
            "LeaseLost"
          )
          const latest = yield* slots.last(name, job)
          expect(latest.slot).toMatchObject({ at: minute(2), fence: next.fence, completedAt: null })
        })
      ))

    test("slot calls are held to the limits", () =>
      withSlots((store, slots) =>
        Effect.gen(function*() {
          const name = uniqueName("slot-limits")
          const lease = yield* store.acquire(name, "a", long, null)
          const job = "j".repeat(Lease.maxNameBytes)
          expect((yield* slots.claim(name, "a", lease.fence, job, minute(1), false)).claimed).toBe(true)
          const error = yield* Effect.flip(slots.claim(name, "a", lease.fence, `${job}j`, minute(1), false))
          expect(error).toMatchObject({ _tag: "StoreError", operation: "claimSlot", retryable: false })
          const invalid = yield* Effect.flip(slots.complete(name, "a", lease.fence, "j", new Date(Number.NaN)))
          expect(invalid).toMatchObject({
            _tag: "StoreError",
            operation: "completeSlot",
            reason: "at: must be a valid Date, got an object"
          })
          expect(yield* Effect.flip(slots.last(name, ""))).toMatchObject({ operation: "lastSlot", retryable: false })
        })
      ))

    // Stores without the optional candidate operations pass these vacuously.
    const withCandidates = (
      f: (
        advertise: NonNullable<Store.StoreShape["advertise"]>,
        withdraw: NonNullable<Store.StoreShape["withdraw"]>
      ) => Effect.Effect<void, unknown>
    ) =>
      withStore(({ advertise, withdraw }) =>
        advertise === undefined || withdraw === undefined ? Effect.void : f(advertise, withdraw)
      )
    const byIdentity = (candidates: ReadonlyArray<Store.Candidate>) =>
      Object.fromEntries(candidates.map((c) => [c.identity, c]))

    test("candidates: every live one is returned with database-derived durations; a lapse restarts aliveFor", () =>
      withCandidates((advertise, withdraw) =>
        Effect.gen(function*() {
          const name = uniqueName("candidates")
          const first = yield* advertise(name, "a", { priority: 1, version: "1.2.0" }, short)
          expect(first).toHaveLength(1)
          expect(first[0]).toMatchObject({ identity: "a", priority: 1, version: "1.2.0" })
          // Live servers take a moment between a store's statements.
          expect(Duration.toMillis(first[0]!.aliveFor)).toBeLessThan(50)
          expect(Duration.toMillis(first[0]!.ttl)).toBeLessThanOrEqual(Duration.toMillis(short))
          expect(Duration.toMillis(first[0]!.ttl)).toBeGreaterThan(Duration.toMillis(short) - 50)
          yield* elapse(Duration.millis(50))
          const both = byIdentity(yield* advertise(name, "b", { priority: -2_147_483_648, version: null }, long))
          expect(Object.keys(both).sort()).toEqual(["a", "b"])
          expect(both["b"]).toMatchObject({ priority: -2_147_483_648, version: null })
          expect(Duration.toMillis(both["a"]!.aliveFor)).toBeGreaterThanOrEqual(50)
          // Renewed in time: a keeps counting, with what it declares now.
          yield* elapse(Duration.millis(50))
          const again = byIdentity(yield* advertise(name, "a", { priority: 2_147_483_647, version: "2" }, short))
          expect(again["a"]).toMatchObject({ priority: 2_147_483_647, version: "2" })
          expect(Duration.toMillis(again["a"]!.aliveFor)).toBeGreaterThanOrEqual(100)
          // a lapses: it is no longer a candidate, and comes back from zero.
          yield* elapse(pastShort)
          expect(Object.keys(byIdentity(yield* advertise(name, "b", { priority: 0, version: null }, long)))).toEqual([
            "b"
          ])
          const back = byIdentity(yield* advertise(name, "a", { priority: 1, version: null }, short))
          expect(Duration.toMillis(back["a"]!.aliveFor)).toBeLessThan(50)
          expect(Duration.toMillis(back["b"]!.aliveFor)).toBeGreaterThanOrEqual(Duration.toMillis(pastShort))
          // Withdrawn at once, idempotently; other elections untouched.
          yield* withdraw(name, "b")
          yield* withdraw(name, "b")
          const other = uniqueName("candidates-other")
          expect(yield* advertise(other, "c", { priority: 0, version: null }, long)).toHaveLength(1)
          expect(Object.keys(byIdentity(yield* advertise(name, "a", { priority: 1, version: null }, short)))).toEqual([
            "a"
          ])
        })
      ))

    test("candidates: priority and version are held to their limits at the store boundary", () =>
      withCandidates((advertise, withdraw) =>
        Effect.gen(function*() {
          const name = uniqueName("candidate-limits")
          const refused = (candidacy: Store.Candidacy, field: string) =>
            Effect.gen(function*() {
              const error = yield* Effect.flip(advertise(name, "a", candidacy, long))
              expect(error).toMatchObject({ _tag: "StoreError", operation: "advertise", retryable: false })
              expect(error.reason.startsWith(`${field}: `)).toBe(true)
            })
          yield* refused({ priority: 2 ** 31, version: null }, "priority")
          yield* refused({ priority: 1.5, version: null }, "priority")
          yield* refused({ priority: 0, version: "v".repeat(Store.maxVersionBytes + 1) }, "version")
          const error = yield* Effect.flip(withdraw(name, "a\u0000"))
          expect(error).toMatchObject({ operation: "withdraw", retryable: false })
          const longest = "é".repeat(Store.maxVersionBytes / 2) + "v"
          const [kept] = yield* advertise(name, "a", { priority: 0, version: longest }, long)
          expect(kept?.version).toBe(longest)
        })
      ))
  }
  return all
}

/** The operation-level model, as one property over command sequences (see model.ts). */
const model = (harness: StoreHarness): Effect.Effect<void> => {
  const { elapse, long, pastShort, short } = timing(harness)
  return Effect.promise(() =>
    fc.assert(
      fc.asyncProperty(modelCommands, (commands) => {
        const run = runModel(commands, { short, pastShort, long, elapse }).pipe(
          Effect.provide(harness.layer),
          Effect.scoped
        )
        return Effect.runPromise(harness.live ? run : Effect.provide(run, TestContext.TestContext))
      }),
      { numRuns: harness.modelRuns ?? 200 }
    )
  )
}

/** Registers the suite in the calling vitest file: one test per case, plus the model. */
export const storeSuite = (harness: StoreHarness): void => {
  const test = harness.live ? it.scopedLive : it.scoped
  describe(`store contract: ${harness.name}`, () => {
    for (const c of cases(harness)) test(c.name, () => c.body)
    it.live(`operation-level model of the contract (${harness.name})`, () => model(harness))
  })
}

/** A case that failed, with what it found. */
export interface CaseFailure {
  readonly name: string
  readonly message: string
}

/** The failure's message, and its cause's (fast-check keeps the property's own error there). */
const explain = (cause: Cause.Cause<unknown>): string => {
  const error = Cause.squash(cause)
  if (!(error instanceof Error)) return String(error)
  return error.cause instanceof Error ? `${error.message}\n${error.cause.message}` : error.message
}

/**
 * Runs every case (and the model) in turn, each on its own TestClock unless
 * the store is live, and returns the ones that failed; an empty array means
 * the store passes.
 */
export const checkStore = (harness: StoreHarness): Effect.Effect<ReadonlyArray<CaseFailure>> =>
  Effect.gen(function*() {
    const failures: Array<CaseFailure> = []
    const all = [...cases(harness), { name: "operation-level model of the contract", body: model(harness) }]
    for (const c of all) {
      const body = Effect.scoped(c.body)
      const exit = yield* Effect.exit(harness.live ? body : Effect.provide(body, TestContext.TestContext))
      if (Exit.isFailure(exit)) failures.push({ name: c.name, message: explain(exit.cause) })
    }
    return failures
  })
