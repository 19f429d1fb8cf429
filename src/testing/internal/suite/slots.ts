/**
 * The scheduled-job slots of the Store contract (`Store.SlotStore`): claimed
 * under the term, completed once, at most or at least once across a
 * handover. Optional: a store without them has these cases skipped.
 */
import { Effect } from "effect"
import * as Lease from "../../../Lease.js"
import type * as Store from "../../../Store.js"
import { refuses, rule, Skipped } from "../contract.js"
import { type Session, storeCase, uniqueName } from "./kit.js"

const withSlots =
  (f: (session: Session, slots: Store.SlotStore) => Effect.Effect<void, unknown>) => (session: Session) =>
    session.store.slots === undefined
      ? Effect.fail(new Skipped({ reason: "the store has no scheduled-job slots (StoreShape.slots)" }))
      : f(session, session.store.slots)

const minute = (k: number) => new Date(Date.UTC(2031, 0, 1, 0, k))
const claimed = (text: string, claim: { readonly claimed: boolean }, expected: boolean) =>
  rule(text, claim).matches({ claimed: expected })

const claimCompleteLast = storeCase(
  "a slot is claimed under the term, completed once, and reported as the job's latest",
  withSlots(({ long, store }, slots) =>
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
  )
)

const deposedTerm = storeCase(
  "a deposed term can neither claim nor complete; its successor re-runs an open slot only when asked",
  withSlots(({ elapse, long, pastShort, short, store }, slots) =>
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
  )
)

const slotLimits = storeCase(
  "slot calls are held to the limits",
  withSlots(({ long, store }, slots) =>
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
  )
)

/** The slot cases, in the order the suite runs them. */
export const slotCases = [
  claimCompleteLast,
  deposedTerm,
  slotLimits
]
