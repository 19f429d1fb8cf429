/**
 * The leases of the Store contract of 0.2 (`StoreShape.acquire`): a lease is
 * its holder's incarnation's, and a claim on a record another server wrote
 * holds the lease back rather than begin a term.
 *
 * A store without `incarnations` has the incarnation cases skipped, saying
 * that it runs the contract of 0.1; the cases after a change of server need
 * the harness's `writtenElsewhere`, and are skipped without it.
 */
import { Duration, Effect } from "effect"
import * as Lease from "../../../Lease.js"
import { rule, Skipped } from "../contract.js"
import { bytes, race, type Session, storeCase, uniqueName } from "./kit.js"

const withIncarnations = (f: (session: Session) => Effect.Effect<void, unknown>) => (session: Session) =>
  session.store.incarnations === true ? f(session) : Effect.fail(
    new Skipped({
      reason: "the store does not keep incarnations (StoreShape.incarnations): it runs the contract of 0.1, " +
        "where two processes given one identity are not told apart"
    })
  )

const withServers = (
  f: (
    session: Session,
    writtenElsewhere: (name: string) => Effect.Effect<void, unknown>
  ) => Effect.Effect<void, unknown>
) =>
(session: Session) =>
  session.writtenElsewhere === undefined
    ? Effect.fail(
      new Skipped({
        reason: "the suite was given no writtenElsewhere (StoreSuite Options): the rules after the database " +
          "behind the store changed are not checked"
      })
    )
    : f(session, session.writtenElsewhere)

/** The longest incarnation a store must keep. */
const longest = "i".repeat(Lease.maxIncarnationBytes - 1) + "1"

const ownIncarnation = storeCase(
  "a lease is its incarnation's: the same identity under another neither continues nor takes it over",
  withIncarnations(({ elapse, long, pastShort, short, store }) =>
    Effect.gen(function*() {
      const name = uniqueName("incarnation")
      const first = yield* store.acquire(name, "a", short, bytes(1), longest)
      rule("the first term is its caller's incarnation's, kept whole", first).matches({
        holder: "a",
        incarnation: longest,
        fence: 1n
      })
      rule("inspect shows the lease's incarnation", (yield* store.inspect(name)).incarnation).is(longest)
      const other = yield* store.acquire(name, "a", long, bytes(2), "i2")
      rule("an acquire by the same identity under another incarnation leaves the lease as it was", other).matches({
        incarnation: longest,
        fence: first.fence,
        payload: bytes(1),
        expiresAt: first.expiresAt
      })
      const none = yield* store.acquire(name, "a", long, bytes(3))
      rule("an acquire by the same identity without an incarnation leaves the lease as it was", none).matches({
        incarnation: longest,
        payload: bytes(1),
        expiresAt: first.expiresAt
      })
      yield* elapse(Duration.millis(10))
      const again = yield* store.acquire(name, "a", short, bytes(4), longest)
      rule("the holder's incarnation continues its term under the same fence", again).matches({
        incarnation: longest,
        fence: first.fence,
        acquiredAt: first.acquiredAt,
        payload: bytes(4)
      })
      rule("the holder's incarnation renews: expiresAt moves on", again.expiresAt).above(first.expiresAt.getTime())
      // The fence alone names the term: a renewal needs no incarnation, and keeps it.
      const renewed = yield* store.renew(name, "a", first.fence, short, null)
      rule("a renewal keeps the lease's incarnation", renewed.incarnation).is(longest)
      yield* elapse(pastShort)
      const taken = yield* store.acquire(name, "a", short, null, "i2")
      rule("another incarnation takes an expired lease over under the next fence", taken).matches({
        holder: "a",
        incarnation: "i2",
        fence: first.fence + 1n
      })
      yield* elapse(pastShort)
      const bare = yield* store.acquire(name, "a", long, null)
      rule("a term begun without an incarnation has none (undefined)", bare).matches({ fence: first.fence + 2n })
      rule("a term begun without an incarnation has none (undefined)", bare.incarnation).is(undefined)
      rule(
        "an acquire without an incarnation continues a term begun without one",
        (yield* store.acquire(name, "a", long, bytes(5))).fence
      ).is(bare.fence)
      rule(
        "an acquire with an incarnation leaves a term begun without one alone",
        (yield* store.acquire(name, "a", long, bytes(6), "i3")).payload
      ).is(bytes(5))
    })
  )
)

const incarnationRace = storeCase(
  "concurrent acquires by one identity under twelve incarnations elect exactly one",
  withIncarnations((session) =>
    Effect.gen(function*() {
      const name = uniqueName("incarnation-race")
      const { winner } = yield* race(session, name, "a")
      const lease = yield* session.store.inspect(name)
      rule("the record is the winning incarnation's", lease).matches({ holder: "a", incarnation: winner.incarnation })
    })
  )
)

/** What a claim on another server's record leaves: held by nobody, the fence jumped, for the claim's ttl. */
const heldBack = (what: string, lease: Lease.Lease, fence: bigint, ttl: Duration.Duration) => {
  rule(`${what}: held back by nobody, under the fence moved on by Lease.fenceJump`, lease).matches({
    holder: "",
    fence: fence + Lease.fenceJump,
    payload: null
  })
  rule(`${what}: a held-back lease has no incarnation`, lease.incarnation).is(undefined)
  rule(`${what}: a hold-back begins at the database's now`, lease.acquiredAt.getTime()).is(lease.now.getTime())
  rule(`${what}: a hold-back begins at the database's now`, lease.renewedAt.getTime()).is(lease.now.getTime())
  const ttlMillis = Duration.toMillis(Lease.ttl(lease))
  const asked = Duration.toMillis(ttl)
  rule(`${what}: a hold-back lasts the claim's TTL, ${asked}ms (±1ms)`, ttlMillis).atLeast(asked - 1)
  rule(`${what}: a hold-back lasts the claim's TTL, ${asked}ms (±1ms)`, ttlMillis).atMost(asked + 1)
}

const afterServerChange = storeCase(
  "after the database changed, a claim holds the lease back; the leader whose lease survived renews it",
  withServers(({ elapse, long, pastShort, short, store }, writtenElsewhere) =>
    Effect.gen(function*() {
      // The claimant's own valid lease: a term it may have lost track of.
      const own = uniqueName("own-elsewhere")
      const first = yield* store.acquire(own, "a", long, bytes(1), "i1")
      yield* writtenElsewhere(own)
      heldBack(
        "a claim on one's own lease written by another server",
        yield* store.acquire(own, "a", short, bytes(2), "i1"),
        first.fence,
        short
      )
      const held = yield* store.inspect(own)
      rule("inspect shows the lease held back", Lease.isHeldBack(held)).is(true)
      const during = yield* store.acquire(own, "b", long, null, "i2")
      rule("a claim during the hold-back leaves it as it was", during).matches({
        holder: "",
        fence: held.fence,
        expiresAt: held.expiresAt
      })
      yield* elapse(pastShort)
      rule(
        "the first claim after the hold-back expired begins a term under the next fence",
        yield* store.acquire(own, "b", long, null, "i2")
      ).matches({ holder: "b", incarnation: "i2", fence: held.fence + 1n })

      // An expired lease: here released, which does not make it this server's.
      const expired = uniqueName("expired-elsewhere")
      const released = yield* store.acquire(expired, "a", long, null, "i1")
      yield* writtenElsewhere(expired)
      yield* store.release(expired, "a", released.fence)
      heldBack(
        "a claim on an expired lease written by another server",
        yield* store.acquire(expired, "b", short, bytes(3), "i2"),
        released.fence,
        short
      )

      // Another participant's valid lease is left to it, and its renewal makes it this server's.
      const others = uniqueName("others-elsewhere")
      const theirs = yield* store.acquire(others, "a", short, bytes(4), "i1")
      yield* writtenElsewhere(others)
      rule(
        "a claim on another's valid lease written by another server leaves it as it was",
        yield* store.acquire(others, "b", long, null, "i2")
      ).matches({ holder: "a", incarnation: "i1", fence: theirs.fence, expiresAt: theirs.expiresAt })
      rule(
        "so does one by its identity under another incarnation",
        yield* store.acquire(others, "a", long, null, "i2")
      ).matches({ holder: "a", incarnation: "i1", fence: theirs.fence, expiresAt: theirs.expiresAt })
      const renewed = yield* store.renew(others, "a", theirs.fence, short, bytes(5))
      rule("the holder's renewal of its lease written by another server succeeds", renewed).matches({
        holder: "a",
        fence: theirs.fence,
        payload: bytes(5)
      })
      rule(
        "a renewed lease is this server's: its holder continues it",
        yield* store.acquire(others, "a", short, bytes(6), "i1")
      ).matches({ holder: "a", incarnation: "i1", fence: theirs.fence, payload: bytes(6) })
      yield* elapse(pastShort)
      rule(
        "and its expiry is taken over under the next fence",
        yield* store.acquire(others, "b", long, null, "i2")
      ).matches({ holder: "b", fence: theirs.fence + 1n })
    })
  )
)

/** The cases of 0.2's leases, in the order the suite runs them. */
export const incarnationCases = [ownIncarnation, incarnationRace, afterServerChange]
