/**
 * The candidates of the Store contract (`StoreShape.advertise` and
 * `withdraw`): live candidates with database-derived durations, and their
 * limits. Optional: a store without them has these cases skipped.
 */
import { Duration, Effect } from "effect"
import * as Store from "../../../Store.js"
import { refuses, rule, Skipped } from "../contract.js"
import { type Session, storeCase, uniqueName } from "./kit.js"

interface Candidates {
  readonly advertise: NonNullable<Store.StoreShape["advertise"]>
  readonly withdraw: NonNullable<Store.StoreShape["withdraw"]>
}

const withCandidates =
  (f: (session: Session, candidates: Candidates) => Effect.Effect<void, unknown>) => (session: Session) => {
    const { advertise, withdraw } = session.store
    return advertise === undefined || withdraw === undefined
      ? Effect.fail(new Skipped({ reason: "the store has no candidate operations (StoreShape.advertise, withdraw)" }))
      : f(session, { advertise, withdraw })
  }

const byIdentity = (candidates: ReadonlyArray<Store.Candidate>) =>
  Object.fromEntries(candidates.map((c) => [c.identity, c]))
const aliveFor = (candidate: Store.Candidate | undefined) =>
  candidate === undefined ? Number.NaN : Duration.toMillis(candidate.aliveFor)

const liveCandidates = storeCase(
  "candidates: every live one is returned with database-derived durations; a lapse restarts aliveFor",
  withCandidates(({ elapse, long, pastShort, short }, { advertise, withdraw }) =>
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
  )
)

const candidateLimits = storeCase(
  "candidates: priority and version are held to their limits at the store boundary",
  withCandidates(({ long }, { advertise, withdraw }) =>
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
  )
)

/** The candidate cases, in the order the suite runs them. */
export const candidateCases = [
  liveCandidates,
  candidateLimits
]
