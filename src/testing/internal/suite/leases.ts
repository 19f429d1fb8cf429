/**
 * The leases of the Store contract (`Store.StoreShape`'s acquire, renew,
 * release and inspect): terms and fences, guarded renewals, releases, the
 * database clock, and the documented limits at the store boundary.
 */
import { Duration, Effect } from "effect"
import * as Lease from "../../../Lease.js"
import type * as Store from "../../../Store.js"
import { refuses, rule } from "../contract.js"
import { bytes, race, storeCase, uniqueName } from "./kit.js"

const missingRecord = storeCase(
  "inspect of a missing record fails with NoLease",
  ({ store }) =>
    Effect.gen(function*() {
      const name = uniqueName("missing")
      const error = yield* refuses(store.inspect(name), "NoLease", "inspecting an election with no record")
      rule("NoLease names the election", error.name).is(name)
    })
)

const freshAcquire = storeCase(
  "a fresh acquire starts the first term with a TTL from the database clock",
  ({ store }) =>
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
)

const heldLease = storeCase(
  "a held lease is not taken over, and the loser learns who holds it",
  ({ long, store }) =>
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
)

const acquireAgain = storeCase(
  "the holder acquiring again continues its term under the same fence",
  ({ elapse, long, short, store }) =>
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
)

const concurrentAcquires = storeCase(
  "concurrent acquires elect exactly one holder",
  (session) =>
    Effect.gen(function*() {
      const { results, winner } = yield* race(session, uniqueName("race"))
      for (const lease of results) {
        rule("every contender sees the winner's lease, at fence 1", lease).matches({
          holder: winner.holder,
          fence: 1n
        })
      }
    })
)

const concurrentTakeovers = storeCase(
  "concurrent takeovers of an expired lease elect exactly one and advance the fence once",
  (session) =>
    Effect.gen(function*() {
      const { elapse, pastShort, short, store } = session
      const name = uniqueName("takeover-race")
      yield* store.acquire(name, "old", short, null)
      yield* elapse(pastShort)
      const { results, winner } = yield* race(session, name)
      rule("concurrent takeovers of an expired lease advance the fence once, to 2", [
        ...new Set(results.map((lease) => lease.fence))
      ]).is([2n])
      rule("the record is the winner's", (yield* store.inspect(name)).holder).is(winner.holder)
    })
)

const reclaim = storeCase(
  "the fence advances exactly when an expired lease is reclaimed, even by its holder",
  ({ elapse, long, pastShort, short, store }) =>
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
)

const renewExtends = storeCase(
  "renew extends the term and keeps the fence",
  ({ elapse, long, pastShort, short, store }) =>
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
)

const renewGuard = storeCase(
  "renew fails with LeaseLost rather than silently succeeding when its guard does not match",
  ({ elapse, long, pastShort, short, store }) =>
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
)

const concurrentRenewals = storeCase(
  "renewals of many elections at once: each under its own guard, with its own TTL and payload, answered its own",
  ({ elapse, long, pastShort, short, store }) =>
    Effect.gen(function*() {
      // A store may send renewals that meet in flight together (the SQL
      // stores do): one that lost its lease must not fail or change the others.
      // Some names are what an array literal or a statement would have to quote.
      const names = Array.from(
        { length: 24 },
        (_, i) => uniqueName(i % 4 === 1 ? `many${i} "{a},\\ NULL'` : `many${i}`)
      )
      const taken = names[3]!
      const leases = yield* Effect.forEach(
        names,
        (name) => store.acquire(name, "a", name === taken ? short : long, null)
      )
      yield* elapse(pastShort)
      const theirs = yield* store.acquire(taken, "b", long, null)
      const ttlOf = (i: number) => Duration.sum(long, Duration.seconds(i))
      const answers = yield* Effect.forEach(
        leases,
        (lease, i) =>
          Effect.either(store.renew(lease.name, "a", lease.fence + (i === 5 ? 1n : 0n), ttlOf(i), bytes(i))),
        { concurrency: "unbounded" }
      )
      for (const [i, answer] of answers.entries()) {
        const { name } = leases[i]!
        if (name === taken || i === 5) {
          rule(`the renewal of ${name}, whose guard matches no row, is LeaseLost`, answer).matches({
            _tag: "Left",
            left: { _tag: "LeaseLost", name }
          })
          continue
        }
        if (answer._tag === "Left") return yield* answer.left
        rule(`the renewal of ${name} keeps its term and stores its own payload`, answer.right).matches({
          name,
          holder: "a",
          fence: leases[i]!.fence,
          payload: bytes(i)
        })
        const ttl = Duration.toMillis(Lease.ttl(answer.right))
        rule(`the renewal of ${name} has its own TTL (±1ms)`, Math.abs(ttl - Duration.toMillis(ttlOf(i)))).atMost(1)
      }
      rule("a renewal that lost leaves the new holder's lease as it was", yield* store.inspect(taken)).matches({
        holder: "b",
        fence: theirs.fence,
        expiresAt: theirs.expiresAt
      })
    })
)

const concurrentInspections = storeCase(
  "polls of many elections at once: each answered its own record, NoLease where there is none",
  ({ long, store }) =>
    Effect.gen(function*() {
      // A store may send polls that meet in flight together (the SQL stores
      // do), names an array literal or a statement would have to quote among them.
      const names = Array.from(
        { length: 24 },
        (_, i) => uniqueName(i % 4 === 1 ? `poll${i} "{a},\\ NULL'` : `poll${i}`)
      )
      const held = yield* Effect.forEach(
        names.filter((_, i) => i % 3 !== 0),
        (name) => store.acquire(name, "a", long, bytes(name.length))
      )
      const answers = yield* Effect.forEach(names, (name) => Effect.either(store.inspect(name)), {
        concurrency: "unbounded"
      })
      for (const [i, answer] of answers.entries()) {
        const name = names[i]!
        const lease = held.find((lease) => lease.name === name)
        if (lease === undefined) {
          rule(`the poll of ${name}, never led, is NoLease`, answer).matches({
            _tag: "Left",
            left: { _tag: "NoLease", name }
          })
          continue
        }
        if (answer._tag === "Left") return yield* answer.left
        rule(`the poll of ${name} answers its own record`, answer.right).matches({
          name,
          holder: "a",
          fence: lease.fence,
          payload: bytes(name.length),
          expiresAt: lease.expiresAt
        })
      }
    })
)

const release = storeCase(
  "release hands over at once, is idempotent, and a stale release changes nothing",
  ({ long, store }) =>
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
)

const fenceChain = storeCase(
  "fences never repeat across a chain of handovers",
  ({ long, store }) =>
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
)

const payloads = storeCase(
  "payloads round-trip byte for byte, including null and empty",
  ({ long, store }) =>
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
)

const unrelatedElections = storeCase(
  "unrelated elections share a table without touching each other",
  ({ long, store }) =>
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
)

const namesAreData = storeCase("names and identities are data, never SQL", ({ long, store }) =>
  Effect.gen(function*() {
    const name = `${uniqueName("quote")}'; DROP TABLE x; --"\\`
    const who = `o'brien "the" \\ holder 🚀`
    const lease = yield* store.acquire(name, who, long, null)
    rule("quotes, backslashes and emoji come back as they went in", lease).matches({ name, holder: who })
    rule("inspect finds the record under that name", (yield* store.inspect(name)).holder).is(who)
  }))

const limits = storeCase("holds exactly the documented limits", ({ long, store }) =>
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
  }))

/** The lease cases, in the order the suite runs them. */
export const leaseCases = [
  missingRecord,
  freshAcquire,
  heldLease,
  acquireAgain,
  concurrentAcquires,
  concurrentTakeovers,
  reclaim,
  renewExtends,
  renewGuard,
  concurrentRenewals,
  concurrentInspections,
  release,
  fenceChain,
  payloads,
  unrelatedElections,
  namesAreData,
  limits
]
