import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Exit, Option, Scope } from "effect"
import * as Elector from "../src/Elector.js"
import { compareVersions, outranks } from "../src/internal/election/candidacy.js"
import * as Lease from "../src/Lease.js"
import * as Store from "../src/Store.js"
import * as Faulty from "../src/testing/FaultyStore.js"
import { join, seconds, stepDowns, world } from "./support/fleet.js"

let elections = 0
const election = () => `candidates-${++elections}`

/** Who holds a valid lease, if anyone. */
const holder = (db: Store.StoreShape, name: string) =>
  Effect.map(db.inspect(name), (lease) => Lease.isExpired(lease) ? undefined : `${lease.holder}@${lease.fence}`)

describe("preferred leaders", () => {
  it.scoped("a leader hands over to a preferred candidate once it has been alive for preemptAfter, then stays", () =>
    Effect.gen(function*() {
      const name = election()
      const db = yield* world
      const a = yield* join(db, { name, identity: "a", priority: 1 })
      expect(yield* a.elector.fence).toEqual(Option.some(1n))
      const b = yield* join(db, { name, identity: "b", priority: 5 })
      // b has been advertising for 29s: not yet.
      yield* seconds(29)
      expect(yield* a.elector.fence).toEqual(Option.some(1n))
      // Within one more poll of a's (up to retryPeriod) and one of b's.
      yield* seconds(1 + 3 + 3)
      expect(yield* a.elector.isLeader).toBe(false)
      expect(yield* b.elector.fence).toEqual(Option.some(2n))
      expect(yield* stepDowns(name, "preempted")).toBe(1)
      // No flapping: a is no candidate b would hand over to.
      yield* seconds(300)
      expect(yield* holder(db, name)).toBe("b@2")
      expect(yield* stepDowns(name, "preempted")).toBe(1)
    }))

  it.scoped("followers leave a free lease to a live preferred candidate; when it is down, anyone leads", () =>
    Effect.gen(function*() {
      const name = election()
      const db = yield* world
      const a = yield* join(db, { name, identity: "a", priority: 10, resignHoldOff: "10 minutes" })
      // c polls far more often than b: without deferring, c would claim first.
      const c = yield* join(db, { name, identity: "c", priority: 1, retryPeriod: "100 millis" })
      const bStore = Faulty.make(db)
      const b = yield* join(bStore, { name, identity: "b", priority: 5 })
      yield* seconds(5)
      yield* a.elector.resign
      // a withdrew before releasing: b claims at its next poll, c leaves it alone.
      yield* seconds(3)
      expect(yield* b.elector.fence).toEqual(Option.some(2n))
      expect(yield* holder(db, name)).toBe("b@2")
      // b is cut off from the database: it steps down at its deadline, its
      // advertisement lapses, and c, the only one left, leads.
      bStore.set(Faulty.hang)
      yield* seconds(15 + 3)
      expect(yield* c.elector.fence).toEqual(Option.some(3n))
      expect(yield* b.elector.isLeader).toBe(false)
    }))

  it.scoped("a stopping preferred leader withdraws before it releases, so the successor does not wait", () =>
    Effect.gen(function*() {
      const name = election()
      const db = yield* world
      const a = yield* join(db, { name, identity: "a", priority: 10 })
      const b = yield* join(db, { name, identity: "b", priority: 1, retryPeriod: "200 millis" })
      yield* seconds(1)
      yield* Scope.close(a.scope, Exit.void)
      yield* seconds(0.2)
      expect(yield* b.elector.fence).toEqual(Option.some(2n))
      // A stopping follower withdraws too: b is the only candidate left.
      const c = yield* join(db, { name, identity: "c", priority: 20 })
      yield* Scope.close(c.scope, Exit.void)
      const live = yield* db.advertise!(name, "d", { priority: 0, version: null }, Duration.seconds(1))
      expect(live.map((candidate) => candidate.identity).sort()).toEqual(["b", "d"])
    }))

  it.scoped("rolling upgrade: leadership moves to the new version under \"newer\", stays under \"older\"", () =>
    Effect.gen(function*() {
      for (const versionPolicy of ["newer", "older"] as const) {
        const name = election()
        const db = yield* world
        const old = { versionPolicy, preemptAfter: "20 seconds" } as const
        const a = yield* join(db, { name, identity: "a", version: "1.9.2", priority: 9, ...old })
        yield* join(db, { name, identity: "b", version: "1.9.2", ...old })
        const c = yield* join(db, { name, identity: "c", version: "1.10.0", ...old })
        yield* seconds(60)
        if (versionPolicy === "newer") {
          expect(yield* c.elector.fence).toEqual(Option.some(2n))
        } else {
          expect(yield* a.elector.fence).toEqual(Option.some(1n))
        }
      }
    }))

  it.scoped("a failing advertisement is reported and never keeps a participant from leading", () =>
    Effect.gen(function*() {
      const name = election()
      const store = Faulty.make(yield* world)
      store.set(Faulty.fail, "advertise")
      const a = yield* join(store, { name, identity: "a", priority: 1 })
      expect(yield* a.elector.fence).toEqual(Option.some(1n))
      yield* seconds(10)
      const error = (yield* a.elector.status).lastError
      expect(Option.map(error, (e) => e.message)).toEqual(Option.some("advertise failed (retryable): injected"))
      expect(yield* a.elector.fence).toEqual(Option.some(1n))
    }))

  it.scoped("a candidate needs a store with the candidate operations", () =>
    Effect.gen(function*() {
      const { acquire, inspect, release, renew } = yield* world
      const bare: Store.StoreShape = { acquire, inspect, release, renew }
      const make = (config: Elector.ElectorConfig) =>
        Effect.flip(Elector.make(config).pipe(Effect.provideService(Store.Store, bare)))
      expect((yield* make({ name: election(), priority: 1 })).message).toBe(
        "invalid config: priority: needs a store with the candidate operations (advertise, withdraw)"
      )
      expect((yield* make({ name: election(), version: "2" })).message).toContain("invalid config: version: ")
      // Not a candidate: any store will do.
      yield* Elector.make({ name: election() }).pipe(Effect.provideService(Store.Store, bare))
    }))

  it("priority, version and versionPolicy are validated", () => {
    const refused = (config: Elector.ElectorConfig) => Effect.runSync(Effect.flip(Elector.validate(config))).message
    expect(refused({ name: "jobs", priority: 1.5 })).toBe(
      "invalid config: priority: must be an integer from -2147483648 to 2147483647, got 1.5"
    )
    expect(refused({ name: "jobs", version: "" })).toBe("invalid config: version: must not be empty")
    expect(refused({ name: "jobs", priority: 1, versionPolicy: "latest" as "newer" })).toBe(
      "invalid config: versionPolicy: must be \"newer\" or \"older\", got \"latest\""
    )
    const resolved = Effect.runSync(Elector.validate({ name: "jobs", version: "2.0" }))
    expect(resolved.candidacy).toEqual({ priority: 0, version: "2.0" })
  })

  it("versions compare segment by segment; no version is the oldest", () => {
    expect(compareVersions("1.9.2", "1.10.0")).toBe(-1)
    expect(compareVersions("1.10.0", "1.9.2")).toBe(1)
    expect(compareVersions("1.0", "1.0.0")).toBe(-1)
    expect(compareVersions("1.0.0-1", "1.0.0-rc")).toBe(-1)
    expect(compareVersions("1.0.0-rc", "1.0.0-1")).toBe(1)
    expect(compareVersions("1.0.0-beta", "1.0.0-alpha")).toBe(1)
    expect(compareVersions("1.0.0-alpha", "1.0.0-beta")).toBe(-1)
    expect(compareVersions("2.0", "2.0")).toBe(0)
    const v = (version: string | null, priority = 0) => ({ version, priority })
    expect(outranks(v("2"), v(null, 100), "newer")).toBe(true)
    expect(outranks(v(null, 100), v("2"), "newer")).toBe(false)
    expect(outranks(v("1"), v("2", 100), "older")).toBe(true)
    expect(outranks(v("1", 2), v("1", 1), "older")).toBe(true)
    expect(outranks(v("1", 1), v("1", 1), "newer")).toBe(false)
  })
})
