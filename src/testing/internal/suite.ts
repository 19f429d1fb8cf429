/**
 * The acceptance suite every store runs, unchanged: the in-memory reference,
 * PostgreSQL direct and through PgBouncer, MariaDB, and users' own stores
 * through `effect-leaderelection/testing`. It pins down the contract that the
 * elector's safety argument rests on, so that no store can drift into
 * dialect-specific semantics.
 *
 * The suite is a list of named cases, each run on its own (`runCase`): a case
 * passes, fails with a {@link ContractViolation} (the call, the store's answer,
 * the rule), or is skipped when the store lacks an optional operation.
 * `register.ts` makes them tests of the caller's vitest; `checkStore` runs
 * them all as one Effect, anywhere.
 */
import type { Layer } from "effect"
import { Cause, Data, Duration, Effect, Exit, type Scope, TestClock, TestContext } from "effect"
import * as fc from "effect/FastCheck"
import { randomBytes } from "node:crypto"
import * as Lease from "../../Lease.js"
import * as Store from "../../Store.js"
import { ContractViolation, Probe, refuses, rule, show, Skipped, traced } from "./contract.js"
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
  /** Model runs (default {@link defaultModelRuns}). */
  readonly modelRuns?: number | undefined
  /** How long one case may take (default {@link defaultTimeout}). */
  readonly timeout?: Duration.DurationInput | undefined
}

/**
 * Model runs by default. A live store sleeps through every expiry (0.7s
 * each, a couple per run), so it gets fewer.
 */
export const defaultModelRuns = (live: boolean): number => live ? 25 : 200

/**
 * How long one case may take by default. A live case sleeps through up to
 * four expiries on a real server; the model through a couple per run.
 */
export const defaultTimeout = (harness: Pick<StoreHarness, "live" | "modelRuns">, model: boolean): Duration.Duration =>
  model
    ? Duration.seconds(30 + (harness.live ? 3 : 0.2) * (harness.modelRuns ?? defaultModelRuns(harness.live)))
    : Duration.seconds(harness.live ? 30 : 10)

let counter = 0
const run = randomBytes(6).toString("hex")
/** Election names unique to this process and run, so suites can share a table. */
export const uniqueName = (label: string): string => `storetest-${label}-${run}-${(counter++).toString(36)}`

const bytes = (...values: Array<number>) => new Uint8Array(values)

/** One case of the suite: a name and a test body. */
export interface Case {
  readonly name: string
  readonly model: boolean
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
  const race = (store: Store.StoreShape, probe: Probe, name: string) =>
    Effect.gen(function*() {
      const contenders = Array.from({ length: 12 }, (_, i) => `c${i}`)
      const results = yield* Effect.all(
        contenders.map((who) => store.acquire(name, who, long, null)),
        { concurrency: "unbounded" }
      )
      probe.note(
        `12 concurrent acquire(${show(name)}, "c0" ... "c11", ${show(long)}, null)`,
        show(results.map((lease) => `${lease.holder}@${lease.fence}`))
      )
      const winners = results.filter((lease, i) => Lease.isHeldBy(lease, contenders[i]!))
      rule("exactly one of concurrent acquires wins, the others see its lease: winners", winners.length).is(1)
      return { results, winner: winners[0]! }
    })
  /** Runs `f` on the harness's store, each call recorded so that a broken rule names it. */
  const withStore = <A>(f: (store: Store.StoreShape, probe: Probe) => Effect.Effect<A, unknown>) =>
    Effect.flatMap(Store.Store, (store) => {
      const probe = new Probe()
      return Effect.catchAllCause(f(traced(store, probe), probe), (cause) => Effect.failCause(probe.explain(cause)))
    }).pipe(Effect.provide(harness.layer))

  const all: Array<Case> = []
  const test = (name: string, body: () => Effect.Effect<void, unknown, Scope.Scope>): void => {
    all.push({ name, model: false, body: Effect.suspend(body) })
  }
  {
    test("inspect of a missing record fails with NoLease", () =>
      withStore((store) =>
        Effect.gen(function*() {
          const name = uniqueName("missing")
          const error = yield* refuses(store.inspect(name), "NoLease", "inspecting an election with no record")
          rule("NoLease names the election", error.name).is(name)
        })
      ))

    test("a fresh acquire starts the first term with a TTL from the database clock", () =>
      withStore((store) =>
        Effect.gen(function*() {
          const name = uniqueName("fresh")
          const lease = yield* store.acquire(name, "a", Duration.seconds(15), null)
          rule("the first term of an election is its caller's, at fence 1", lease).matches({
            name,
            holder: "a",
            fence: 1n
          })
          rule("a fresh lease is held by its caller (not expired)", Lease.isHeldBy(lease, "a")).is(true)
          rule("a fresh lease's acquiredAt is the database's now", lease.acquiredAt.getTime()).is(lease.now.getTime())
          rule("a fresh lease's renewedAt is the database's now", lease.renewedAt.getTime()).is(lease.now.getTime())
          // Expiry and now come from one clock read: the difference is what was asked.
          rule("expiresAt - now is the TTL asked for, 15000ms (±1ms)", Duration.toMillis(Lease.ttl(lease)))
            .atLeast(14_999)
          rule("expiresAt - now is the TTL asked for, 15000ms (±1ms)", Duration.toMillis(Lease.ttl(lease)))
            .atMost(15_001)
          const seen = yield* store.inspect(name)
          rule("inspect shows the lease just acquired", seen).matches({ holder: "a", fence: 1n, payload: null })
          rule("inspect shows the lease's expiry", seen.expiresAt).is(lease.expiresAt)
        })
      ))

    test("a held lease is not taken over, and the loser learns who holds it", () =>
      withStore((store) =>
        Effect.gen(function*() {
          const name = uniqueName("held")
          const first = yield* store.acquire(name, "a", long, bytes(1))
          const second = yield* store.acquire(name, "b", long, bytes(2))
          rule("an acquire of a valid lease held by another returns the holder's lease unchanged", second).matches({
            holder: "a",
            fence: first.fence,
            payload: bytes(1),
            expiresAt: first.expiresAt
          })
        })
      ))

    test("the holder acquiring again continues its term under the same fence", () =>
      withStore((store) =>
        Effect.gen(function*() {
          const name = uniqueName("again")
          const first = yield* store.acquire(name, "a", short, null)
          yield* elapse(Duration.millis(10))
          const again = yield* store.acquire(name, "a", long, bytes(9))
          rule("the holder's acquire of its valid lease keeps the term", again).matches({
            fence: first.fence,
            acquiredAt: first.acquiredAt,
            payload: bytes(9)
          })
          rule("the holder's acquire renews: renewedAt moves on", again.renewedAt).above(first.renewedAt.getTime())
          rule("the holder's acquire renews: expiresAt moves on", again.expiresAt).above(first.expiresAt.getTime())
        })
      ))

    test("concurrent acquires elect exactly one holder", () =>
      withStore((store, probe) =>
        Effect.gen(function*() {
          const { results, winner } = yield* race(store, probe, uniqueName("race"))
          for (const lease of results) {
            rule("every contender sees the winner's lease, at fence 1", lease).matches({
              holder: winner.holder,
              fence: 1n
            })
          }
        })
      ))

    test("concurrent takeovers of an expired lease elect exactly one and advance the fence once", () =>
      withStore((store, probe) =>
        Effect.gen(function*() {
          const name = uniqueName("takeover-race")
          yield* store.acquire(name, "old", short, null)
          yield* elapse(pastShort)
          const { results, winner } = yield* race(store, probe, name)
          rule("concurrent takeovers of an expired lease advance the fence once, to 2", [
            ...new Set(results.map((lease) => lease.fence))
          ]).is([2n])
          rule("the record is the winner's", (yield* store.inspect(name)).holder).is(winner.holder)
        })
      ))

    test("the fence advances exactly when an expired lease is reclaimed, even by its holder", () =>
      withStore((store) =>
        Effect.gen(function*() {
          const name = uniqueName("reclaim")
          const first = yield* store.acquire(name, "a", short, null)
          yield* elapse(pastShort)
          const expired = yield* store.inspect(name)
          rule("a lease past its TTL is expired", Lease.isExpired(expired)).is(true)
          rule("an expired lease's TTL is zero", Duration.toMillis(Lease.ttl(expired))).is(0)
          // Ran out, not released: the expiry is still a TTL after the last renewal.
          rule("a lease that ran out keeps expiresAt after renewedAt", expired.expiresAt).above(
            expired.renewedAt.getTime()
          )
          const byOther = yield* store.acquire(name, "b", short, null)
          rule("taking over an expired lease starts a new term under the next fence", byOther).matches({
            holder: "b",
            fence: first.fence + 1n
          })
          rule("a new term has a new acquiredAt", byOther.acquiredAt).above(first.acquiredAt.getTime())
          yield* elapse(pastShort)
          const byHolder = yield* store.acquire(name, "b", long, null)
          rule("reclaiming one's own expired lease starts a new term under the next fence", byHolder).matches({
            holder: "b",
            fence: first.fence + 2n
          })
        })
      ))

    test("renew extends the term and keeps the fence", () =>
      withStore((store) =>
        Effect.gen(function*() {
          const name = uniqueName("renew")
          const lease = yield* store.acquire(name, "a", short, bytes(1))
          yield* elapse(Duration.millis(20))
          const renewed = yield* store.renew(name, "a", lease.fence, long, bytes(2, 3))
          rule("a renewal keeps the term and stores the new payload", renewed).matches({
            fence: lease.fence,
            acquiredAt: lease.acquiredAt,
            payload: bytes(2, 3)
          })
          rule("a renewal moves renewedAt on", renewed.renewedAt).above(lease.renewedAt.getTime())
          const ttl = Duration.toMillis(Lease.ttl(renewed))
          rule(`a renewal's expiresAt - now is the TTL asked for, ${Duration.toMillis(long)}ms (±1ms)`, ttl)
            .atLeast(Duration.toMillis(long) - 1)
          rule(`a renewal's expiresAt - now is the TTL asked for, ${Duration.toMillis(long)}ms (±1ms)`, ttl)
            .atMost(Duration.toMillis(long) + 1)
          // The short lease would have expired by now; the renewal carried it over.
          yield* elapse(pastShort)
          rule("a renewed lease is still held after its first TTL", Lease.isHeldBy(yield* store.inspect(name), "a"))
            .is(true)
        })
      ))

    test("renew fails with LeaseLost rather than silently succeeding when its guard does not match", () =>
      withStore((store) =>
        Effect.gen(function*() {
          const name = uniqueName("guard")
          const missing = yield* refuses(store.renew(name, "a", 1n, long, null), "LeaseLost", "renewing no record")
          rule("LeaseLost names the election, identity and fence", missing).matches({ name, identity: "a", fence: 1n })
          const lease = yield* store.acquire(name, "a", short, null)
          yield* refuses(store.renew(name, "b", lease.fence, long, null), "LeaseLost", "renewing as a non-holder")
          yield* refuses(store.renew(name, "a", lease.fence - 1n, long, null), "LeaseLost", "renewing a stale fence")
          yield* refuses(store.renew(name, "a", lease.fence + 1n, long, null), "LeaseLost", "renewing a future fence")
          yield* elapse(pastShort)
          yield* refuses(store.renew(name, "a", lease.fence, long, null), "LeaseLost", "renewing an expired lease")
          // None of the failed renewals changed the record.
          const after = yield* store.inspect(name)
          rule("a refused renewal leaves the record as it was", after).matches({
            fence: lease.fence,
            expiresAt: lease.expiresAt
          })
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
          rule(
            "a release by another identity or fence leaves the lease held",
            Lease.isHeldBy(
              yield* store.inspect(name),
              "a"
            )
          ).is(true)
          yield* store.release(name, "a", a.fence)
          yield* store.release(name, "a", a.fence)
          const released = yield* store.inspect(name)
          rule("a released lease is expired at once", Lease.isExpired(released)).is(true)
          rule("a release keeps the record's fence", released.fence).is(a.fence)
          // Released, not run out: the expiry is the release's instant, not a TTL after a renewal.
          rule("a release sets expiresAt to its instant, at most renewedAt", released.expiresAt).atMost(
            released.renewedAt.getTime()
          )
          const b = yield* store.acquire(name, "b", long, null)
          rule("the next acquire after a release starts a term under the next fence", b).matches({
            holder: "b",
            fence: a.fence + 1n
          })
          // The old holder's late release must not end the new term.
          yield* store.release(name, "a", a.fence)
          rule("a stale release leaves the new term alone", Lease.isHeldBy(yield* store.inspect(name), "b")).is(true)
          yield* refuses(store.renew(name, "a", a.fence, long, null), "LeaseLost", "renewing a released term")
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
            rule("an acquire after a release is the caller's", lease.holder).is(who)
            fences.push(lease.fence)
            yield* store.release(name, who, lease.fence)
          }
          rule("eight terms, each after a release, have fences 1 to 8", fences).is([1n, 2n, 3n, 4n, 5n, 6n, 7n, 8n])
        })
      ))

    test("payloads round-trip byte for byte, including null and empty", () =>
      withStore((store) =>
        Effect.gen(function*() {
          const name = uniqueName("payload")
          const all = new Uint8Array(256).map((_, i) => i)
          const lease = yield* store.acquire(name, "a", long, all)
          rule("the payload comes back byte for byte", lease.payload).is(all)
          rule("inspect returns the payload byte for byte", (yield* store.inspect(name)).payload).is(all)
          const empty = yield* store.renew(name, "a", lease.fence, long, new Uint8Array(0))
          rule("an empty payload stays empty (not null)", empty.payload).is(new Uint8Array(0))
          const none = yield* store.renew(name, "a", lease.fence, long, null)
          rule("a null payload stays null", none.payload).is(null)
          rule("inspect returns the null payload", (yield* store.inspect(name)).payload).is(null)
        })
      ))

    test("unrelated elections share a table without touching each other", () =>
      withStore((store) =>
        Effect.gen(function*() {
          const one = uniqueName("one")
          const two = uniqueName("two")
          const a = yield* store.acquire(one, "a", long, null)
          const b = yield* store.acquire(two, "b", long, null)
          rule("each election has its own record", [a.holder, b.holder]).is(["a", "b"])
          yield* store.release(one, "a", a.fence)
          rule("a release in one election leaves another held", Lease.isHeldBy(yield* store.inspect(two), "b")).is(
            true
          )
          const c = yield* store.acquire(one, "c", long, null)
          rule("each election has its own fences", c.fence).is(2n)
          rule("each election has its own fences", (yield* store.inspect(two)).fence).is(1n)
        })
      ))

    test("names and identities are data, never SQL", () =>
      withStore((store) =>
        Effect.gen(function*() {
          const name = `${uniqueName("quote")}'; DROP TABLE x; --"\\`
          const who = `o'brien "the" \\ holder 🚀`
          const lease = yield* store.acquire(name, who, long, null)
          rule("quotes, backslashes and emoji come back as they went in", lease).matches({ name, holder: who })
          rule("inspect finds the record under that name", (yield* store.inspect(name)).holder).is(who)
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
          const lease = yield* store.acquire(name, identity, long, payload)
          rule("a name, identity and payload at their limits are accepted", lease).matches({
            name,
            holder: identity,
            fence: 1n,
            payload
          })
          rule("inspect returns them whole", yield* store.inspect(name)).matches({ name, holder: identity, payload })
          const reversed = payload.slice().reverse()
          const renewed = yield* store.renew(name, identity, lease.fence, long, reversed)
          rule("a renewal stores a payload at its limit", renewed.payload).is(reversed)

          // One byte more is refused at the store boundary, naming the argument.
          const refused = <A>(
            call: Effect.Effect<A, Store.StoreError | Store.LeaseLost | Store.NoLease>,
            field: string,
            reason: string
          ) =>
            Effect.gen(function*() {
              const error = yield* refuses(call, "StoreError", `passing a ${field} past its limit`)
              rule(`an argument past its limit is refused as a fatal StoreError naming it`, error).matches({
                retryable: false,
                reason: `${field}: ${reason}`
              })
              rule("the StoreError's cause is the InvalidConfig of Store.enforceLimits", error.cause).matches({
                _tag: "InvalidConfig",
                field,
                reason
              })
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
          rule("a refused call leaves the record as it was", after).matches({
            holder: identity,
            fence: lease.fence,
            payload: reversed,
            expiresAt: renewed.expiresAt
          })
        })
      ))

    // Job slots (`Store.SlotStore`): optional; a store without them skips these.
    const withSlots = (f: (store: Store.StoreShape, slots: Store.SlotStore) => Effect.Effect<void, unknown>) =>
      withStore((store) =>
        store.slots === undefined
          ? Effect.fail(new Skipped({ reason: "the store has no scheduled-job slots (StoreShape.slots)" }))
          : f(store, store.slots)
      )
    const minute = (k: number) => new Date(Date.UTC(2031, 0, 1, 0, k))
    const claimed = (text: string, claim: { readonly claimed: boolean }, expected: boolean) =>
      rule(text, claim).matches({ claimed: expected })

    test("a slot is claimed under the term, completed once, and reported as the job's latest", () =>
      withSlots((store, slots) =>
        Effect.gen(function*() {
          const name = uniqueName("slot")
          const job = `report's "job" \\ 🚀`
          const lease = yield* store.acquire(name, "a", long, null)
          const none = yield* slots.last(name, job)
          rule("a job that never ran has no latest slot", none.slot).is(undefined)
          rule("last reports the database's now", Math.abs(none.now.getTime() - lease.now.getTime())).below(60_000)
          const first = yield* slots.claim(name, "a", lease.fence, job, minute(1), false)
          rule("the holder claims a new slot, open, under its fence", first).matches({
            claimed: true,
            slot: { job, at: minute(1), fence: lease.fence, completedAt: null }
          })
          // A retry by the same term (its first reply lost) claims it again, until it completes.
          claimed(
            "the same term claims its open slot again",
            yield* slots.claim(name, "a", lease.fence, job, minute(1), false),
            true
          )
          const done = yield* slots.complete(name, "a", lease.fence, job, minute(1))
          rule("completedAt is the database's now", done).atLeast(first.now.getTime())
          const again = yield* slots.claim(name, "a", lease.fence, job, minute(1), true)
          claimed("a completed slot is never claimed again, even with reclaim", again, false)
          rule("a completed slot reports its completion", again.slot?.completedAt === null).is(false)
          claimed(
            "an earlier slot is claimed",
            yield* slots.claim(name, "a", lease.fence, job, minute(0), false),
            true
          )
          const latest = yield* slots.last(name, job)
          rule("the job's latest slot is the latest instant", latest.slot).matches({
            job,
            at: minute(1),
            fence: lease.fence
          })
          rule("completedAt is no earlier than startedAt", latest.slot?.completedAt?.getTime()).atLeast(
            latest.slot?.startedAt.getTime() ?? Infinity
          )
          // Another job and another election have slots of their own.
          rule("another job has its own slots", (yield* slots.last(name, "other")).slot).is(undefined)
          const elsewhere = yield* store.acquire(uniqueName("slot-other"), "a", long, null)
          claimed(
            "another election has its own slots",
            yield* slots.claim(elsewhere.name, "a", elsewhere.fence, job, minute(1), false),
            true
          )
        })
      ))

    test("a deposed term can neither claim nor complete; its successor re-runs an open slot only when asked", () =>
      withSlots((store, slots) =>
        Effect.gen(function*() {
          const name = uniqueName("slot-fence")
          const job = "nightly"
          const old = yield* store.acquire(name, "a", short, null)
          claimed("the holder claims a slot", yield* slots.claim(name, "a", old.fence, job, minute(1), false), true)
          yield* elapse(pastShort)
          // Expired, not yet taken over: the guard already refuses.
          yield* refuses(slots.claim(name, "a", old.fence, job, minute(2), false), "LeaseLost", "claiming when expired")
          const next = yield* store.acquire(name, "b", long, null)
          rule("the takeover advances the fence", next.fence).is(old.fence + 1n)
          const late = yield* refuses(
            slots.complete(name, "a", old.fence, job, minute(1)),
            "LeaseLost",
            "completing under a deposed term"
          )
          rule("LeaseLost names the deposed term", late).matches({ name, identity: "a", fence: old.fence })
          yield* refuses(
            slots.claim(name, "a", old.fence, job, minute(1), true),
            "LeaseLost",
            "claiming under a deposed term"
          )
          // At most once: the interrupted slot stays the old term's.
          const kept = yield* slots.claim(name, "b", next.fence, job, minute(1), false)
          rule("without reclaim, an open slot of a deposed term stays its own", kept).matches({
            claimed: false,
            slot: { fence: old.fence, completedAt: null }
          })
          // Nor can the successor complete a slot it did not claim.
          yield* refuses(
            slots.complete(name, "b", next.fence, job, minute(1)),
            "LeaseLost",
            "completing a slot another term claimed"
          )
          // At least once: the successor takes it over under its own fence.
          const retaken = yield* slots.claim(name, "b", next.fence, job, minute(1), true)
          rule("with reclaim, the successor takes the open slot under its fence", retaken).matches({
            claimed: true,
            slot: { fence: next.fence }
          })
          yield* slots.complete(name, "b", next.fence, job, minute(1))
          // A slot the old term never started is the successor's.
          claimed("a new slot is the holder's", yield* slots.claim(name, "b", next.fence, job, minute(2), false), true)
          // Someone else's claim with the holder's fence is refused too.
          yield* refuses(
            slots.claim(name, "c", next.fence, job, minute(3), false),
            "LeaseLost",
            "claiming as a non-holder with the holder's fence"
          )
          yield* refuses(
            slots.claim(uniqueName("none"), "b", 1n, job, minute(3), false),
            "LeaseLost",
            "claiming in an election with no record"
          )
          const latest = yield* slots.last(name, job)
          rule("the latest slot is the open one of the successor", latest.slot).matches({
            at: minute(2),
            fence: next.fence,
            completedAt: null
          })
        })
      ))

    test("slot calls are held to the limits", () =>
      withSlots((store, slots) =>
        Effect.gen(function*() {
          const name = uniqueName("slot-limits")
          const lease = yield* store.acquire(name, "a", long, null)
          const job = "j".repeat(Lease.maxNameBytes)
          claimed(
            "a job name at its limit is accepted",
            yield* slots.claim(name, "a", lease.fence, job, minute(1), false),
            true
          )
          const error = yield* refuses(
            slots.claim(name, "a", lease.fence, `${job}j`, minute(1), false),
            "StoreError",
            "claiming with a job name past its limit"
          )
          rule("a job name past its limit is a fatal StoreError", error).matches({
            operation: "claimSlot",
            retryable: false
          })
          const invalid = yield* refuses(
            slots.complete(name, "a", lease.fence, "j", new Date(Number.NaN)),
            "StoreError",
            "completing an invalid Date"
          )
          rule("an invalid Date is refused, naming it", invalid).matches({
            operation: "completeSlot",
            reason: "at: must be a valid Date, got an object"
          })
          const empty = yield* refuses(slots.last(name, ""), "StoreError", "asking for the empty job name")
          rule("an empty job name is a fatal StoreError", empty).matches({ operation: "lastSlot", retryable: false })
        })
      ))

    // The optional candidate operations; a store without them skips these.
    const withCandidates = (
      f: (
        advertise: NonNullable<Store.StoreShape["advertise"]>,
        withdraw: NonNullable<Store.StoreShape["withdraw"]>
      ) => Effect.Effect<void, unknown>
    ) =>
      withStore(({ advertise, withdraw }) =>
        advertise === undefined || withdraw === undefined
          ? Effect.fail(
            new Skipped({ reason: "the store has no candidate operations (StoreShape.advertise, withdraw)" })
          )
          : f(advertise, withdraw)
      )
    const byIdentity = (candidates: ReadonlyArray<Store.Candidate>) =>
      Object.fromEntries(candidates.map((c) => [c.identity, c]))
    const aliveFor = (candidate: Store.Candidate | undefined) =>
      candidate === undefined ? Number.NaN : Duration.toMillis(candidate.aliveFor)

    test("candidates: every live one is returned with database-derived durations; a lapse restarts aliveFor", () =>
      withCandidates((advertise, withdraw) =>
        Effect.gen(function*() {
          const name = uniqueName("candidates")
          const first = yield* advertise(name, "a", { priority: 1, version: "1.2.0" }, short)
          rule("advertise returns every live candidate", first.map((c) => c.identity)).is(["a"])
          rule("a candidate comes back as declared", first[0]).matches({ priority: 1, version: "1.2.0" })
          // Live servers take a moment between a store's statements.
          rule("a new candidate's aliveFor starts at zero", aliveFor(first[0])).below(50)
          const ttl = Duration.toMillis(first[0]!.ttl)
          rule("a candidate's ttl is what was asked, from the database clock", ttl).atMost(Duration.toMillis(short))
          rule("a candidate's ttl is what was asked, from the database clock", ttl).above(
            Duration.toMillis(short) - 50
          )
          yield* elapse(Duration.millis(50))
          const both = byIdentity(yield* advertise(name, "b", { priority: -2_147_483_648, version: null }, long))
          rule("both live candidates are returned", Object.keys(both).sort()).is(["a", "b"])
          rule("the lowest priority and a null version come back", both["b"]).matches({
            priority: -2_147_483_648,
            version: null
          })
          rule("aliveFor counts on the database clock", aliveFor(both["a"])).atLeast(50)
          // Renewed in time: a keeps counting, with what it declares now.
          yield* elapse(Duration.millis(50))
          const again = byIdentity(yield* advertise(name, "a", { priority: 2_147_483_647, version: "2" }, short))
          rule("a renewal stores what the candidate declares now", again["a"]).matches({
            priority: 2_147_483_647,
            version: "2"
          })
          rule("a renewal in time keeps aliveFor counting", aliveFor(again["a"])).atLeast(100)
          // a lapses: it is no longer a candidate, and comes back from zero.
          yield* elapse(pastShort)
          rule(
            "a lapsed candidate is not returned",
            Object.keys(byIdentity(yield* advertise(name, "b", { priority: 0, version: null }, long)))
          ).is(["b"])
          const back = byIdentity(yield* advertise(name, "a", { priority: 1, version: null }, short))
          rule("a candidate back after a lapse starts aliveFor from zero", aliveFor(back["a"])).below(50)
          rule("a candidate that never lapsed keeps counting", aliveFor(back["b"])).atLeast(
            Duration.toMillis(pastShort)
          )
          // Withdrawn at once, idempotently; other elections untouched.
          yield* withdraw(name, "b")
          yield* withdraw(name, "b")
          const other = uniqueName("candidates-other")
          rule(
            "another election has its own candidates",
            (yield* advertise(other, "c", { priority: 0, version: null }, long)).length
          ).is(1)
          rule(
            "a withdrawn candidate is gone at once",
            Object.keys(byIdentity(yield* advertise(name, "a", { priority: 1, version: null }, short)))
          ).is(["a"])
        })
      ))

    test("candidates: priority and version are held to their limits at the store boundary", () =>
      withCandidates((advertise, withdraw) =>
        Effect.gen(function*() {
          const name = uniqueName("candidate-limits")
          const refused = (candidacy: Store.Candidacy, field: string) =>
            Effect.gen(function*() {
              const error = yield* refuses(advertise(name, "a", candidacy, long), "StoreError", `advertising ${field}`)
              rule(`${field} past its limit is a fatal StoreError`, error).matches({
                operation: "advertise",
                retryable: false
              })
              rule(`the StoreError's reason starts with "${field}: "`, error.reason.startsWith(`${field}: `)).is(true)
            })
          yield* refused({ priority: 2 ** 31, version: null }, "priority")
          yield* refused({ priority: 1.5, version: null }, "priority")
          yield* refused({ priority: 0, version: "v".repeat(Store.maxVersionBytes + 1) }, "version")
          const error = yield* refuses(withdraw(name, "a\u0000"), "StoreError", "withdrawing a NUL identity")
          rule("a NUL identity is a fatal StoreError", error).matches({ operation: "withdraw", retryable: false })
          const longest = "é".repeat(Store.maxVersionBytes / 2) + "v"
          const [kept] = yield* advertise(name, "a", { priority: 0, version: longest }, long)
          rule("a version at its limit (bytes of UTF-8) is kept", kept?.version).is(longest)
        })
      ))
  }
  return all
}

/** The operation-level model, as one property over command sequences (see model.ts). */
const model = (harness: StoreHarness): Case => {
  const { elapse, long, pastShort, short } = timing(harness)
  const body = Effect.gen(function*() {
    const details = yield* Effect.promise(() =>
      fc.check(
        fc.asyncProperty(modelCommands, (commands) => {
          const run = runModel(commands, { short, pastShort, long, elapse }).pipe(
            Effect.provide(harness.layer),
            Effect.scoped
          )
          // What the property throws is what fast-check reports: the violation itself.
          return Effect.runPromiseExit(harness.live ? run : Effect.provide(run, TestContext.TestContext)).then(
            (exit) => {
              if (Exit.isFailure(exit)) throw Cause.squash(exit.cause)
            }
          )
        }),
        { numRuns: harness.modelRuns ?? defaultModelRuns(harness.live) }
      )
    )
    if (!details.failed) return
    const error = details.errorInstance
    const found = error instanceof ContractViolation ? error : undefined
    const shrunk =
      `(the shortest failing sequence found, after ${details.numRuns} run(s) and ${details.numShrinks} shrink(s))`
    return yield* Effect.fail(
      new ContractViolation({
        operation: `${found?.operation ?? `the sequence ${show(details.counterexample?.[0])}`} ${shrunk}`,
        answered: found?.answered ?? show(error),
        requires: found?.requires ?? "an answer: the model needs every call but renew's LeaseLost to succeed"
      })
    )
  })
  return { name: "operation-level model of the contract", model: true, body }
}

/** A case that ran past its timeout. */
class TimedOut extends Data.TaggedError("TimedOut")<{ readonly after: Duration.Duration }> {
  override get message(): string {
    return `the case did not finish within ${Duration.format(this.after)} (raise the \`timeout\` option)`
  }
}

/** How one case ended. */
export type CaseResult =
  | { readonly name: string; readonly status: "passed" }
  | { readonly name: string; readonly status: "failed"; readonly message: string }
  | { readonly name: string; readonly status: "skipped"; readonly reason: string }

/** Every case of the suite, the model last. */
export const suiteCases = (harness: StoreHarness): ReadonlyArray<Case> => [...cases(harness), model(harness)]

/**
 * Runs one case on its own (on a fresh TestClock unless the store is live),
 * within its timeout.
 */
/** How long `c` may take: the harness's `timeout`, or its default. */
export const caseTimeout = (harness: StoreHarness, c: Case): Duration.Duration =>
  Duration.decode(harness.timeout ?? defaultTimeout(harness, c.model))

export const runCase = (harness: StoreHarness, c: Case): Effect.Effect<CaseResult> => {
  const timeout = caseTimeout(harness, c)
  const body = Effect.scoped(c.body)
  // The deadline is outside the TestClock: a case's TestClock.adjust must not trip it.
  const bounded = Effect.timeoutFail(harness.live ? body : Effect.provide(body, TestContext.TestContext), {
    duration: timeout,
    onTimeout: () => new TimedOut({ after: timeout })
  })
  // Each case is a fiber of its own: a case cut short inside its TestContext
  // must not leave the TestClock to the caller (nor to the next case).
  const isolated = Effect.promise((signal) => Effect.runPromiseExit(bounded, { signal }))
  return Effect.map(isolated, (exit): CaseResult => {
    if (Exit.isSuccess(exit)) return { name: c.name, status: "passed" }
    const error = Cause.squash(exit.cause)
    if (error instanceof Skipped) return { name: c.name, status: "skipped", reason: error.reason }
    const message = error instanceof ContractViolation || error instanceof TimedOut
      ? error.message
      : `the store's layer or the case failed: ${show(error)}`
    return { name: c.name, status: "failed", message }
  })
}

/**
 * The failure a test runner shows: the case's own message, without a stack
 * into the toolkit's compiled files (the message names the store call).
 */
export const caseError = (message: string): Error => {
  const error = new Error(message)
  error.name = "StoreContractViolation"
  error.stack = `${error.name}: ${message}`
  return error
}

/** `c` as the body of a vitest test: skipped through the test's context, failed by throwing {@link caseError}. */
export const caseTest =
  (harness: StoreHarness, c: Case) => async (context: { readonly skip: (note: string) => void }): Promise<void> => {
    const result = await Effect.runPromise(runCase(harness, c))
    if (result.status === "skipped") context.skip(result.reason)
    if (result.status === "failed") throw caseError(result.message)
  }

/**
 * Runs every case (and the model) in turn and returns how each ended.
 */
export const checkStore = (harness: StoreHarness): Effect.Effect<ReadonlyArray<CaseResult>> =>
  Effect.forEach(suiteCases(harness), (c) => runCase(harness, c))

/** The results as vitest would list them: ✓ passed, × failed (with why), ↓ skipped. */
export const summary = (name: string, results: ReadonlyArray<CaseResult>): string => {
  const lines = [`store contract: ${name}`]
  for (const r of results) {
    if (r.status === "passed") lines.push(`  ✓ ${r.name}`)
    else if (r.status === "skipped") lines.push(`  ↓ ${r.name} (skipped: ${r.reason})`)
    else lines.push(`  × ${r.name}`, ...r.message.split("\n").map((line) => `      ${line}`))
  }
  const count = (status: CaseResult["status"]) => results.filter((r) => r.status === status).length
  lines.push(`${count("failed")} failed, ${count("passed")} passed, ${count("skipped")} skipped`)
  return lines.join("\n")
}
