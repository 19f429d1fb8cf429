/**
 * Spreading many elections over a group's live members: `Elector.spread`.
 */
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Duration, Effect, ExecutionStrategy, Exit, Fiber, Option, Ref, Scope, Stream, TestClock } from "effect"
import * as Elector from "../src/Elector.js"
import * as Leadership from "../src/Leadership.js"
import * as Lease from "../src/Lease.js"
import * as Store from "../src/Store.js"
import * as MemoryStore from "../src/stores/MemoryStore.js"
import * as Faulty from "../src/testing/FaultyStore.js"

const names = Array.from({ length: 10 }, (_, i) => `job-${i}`)

const fleet = Effect.gen(function*() {
  const db = yield* MemoryStore.make({ clock: yield* MemoryStore.makeClock({ offset: Duration.days(3) }) })
  // Who leads each election, from the database.
  const holders = Effect.gen(function*() {
    const held = new Map<string, number>()
    for (const name of names) {
      const lease = yield* Effect.option(db.inspect(name))
      if (Option.isSome(lease) && !Lease.isExpired(lease.value)) {
        held.set(lease.value.holder, (held.get(lease.value.holder) ?? 0) + 1)
      }
    }
    return held
  })
  // One member: its own store (so that it can fail alone) and its own scope.
  const join = (
    identity: string,
    work: (name: string) => Effect.Effect<unknown, never, Leadership.Leadership> = () => Effect.never
  ) =>
    Effect.gen(function*() {
      const store = Faulty.make(db)
      const scope = yield* Scope.fork(yield* Effect.scope, ExecutionStrategy.sequential)
      const group = yield* Elector.spread({ group: "jobs", names, identity }, work).pipe(
        Effect.provideService(Store.Store, store),
        Scope.extend(scope)
      )
      return { group, scope, store }
    })
  return { db, holders, join }
})

const settle = TestClock.adjust(Duration.seconds(60))

describe("Elector.spread", () => {
  it.scoped("shares the elections out evenly, each led once, the work running under each term", () =>
    Effect.gen(function*() {
      const { holders, join } = yield* fleet
      const running = yield* Ref.make(new Map<string, bigint>())
      const work = (name: string) =>
        Effect.flatMap(Leadership.fence, (fence) => Ref.update(running, (m) => new Map(m).set(name, fence)))
      const members = yield* Effect.forEach(["a", "b", "c"], (id) => join(id, work))
      yield* settle
      const held = yield* holders
      expect([...held.values()].sort()).toEqual([3, 3, 4])
      const leading = yield* Effect.forEach(members, ({ group }) => group.leading)
      expect(leading.flat().sort()).toEqual([...names].sort())
      expect([...(yield* Ref.get(running)).keys()].sort()).toEqual([...names].sort())
      expect(yield* members[0]!.group.members).toEqual(["a", "b", "c"])
      expect(yield* members[0]!.group.target).toBe(held.get("a"))
    }))

  it.scoped("a member advertises itself once each of its electors has had its first answer", () =>
    Effect.gen(function*() {
      const { db } = yield* fleet
      const store = Faulty.make(db)
      // What the member's electors had asked when the others could first see it.
      let askedBefore: number | undefined
      const watched: Store.StoreShape = {
        ...store,
        advertise: (...args) =>
          Effect.suspend(() => {
            askedBefore ??= store.calls.inspect + store.calls.acquire
            return store.advertise!(...args)
          })
      }
      yield* Elector.spread({ group: "jobs", names, identity: "a" }, () => Effect.never).pipe(
        Effect.provideService(Store.Store, watched)
      )
      expect(askedBefore).toBeGreaterThanOrEqual(names.length)
    }))

  it.scoped("a member that joins takes its share from those above theirs; nothing else moves", () =>
    Effect.gen(function*() {
      const { holders, join } = yield* fleet
      const members = yield* Effect.forEach(["a", "b"], (id) => join(id))
      yield* settle
      expect([...(yield* holders).values()]).toEqual([5, 5])
      const before = new Map(
        yield* Effect.forEach(
          members,
          ({ group }) => Effect.map(group.leading, (led) => [group.identity, led] as const)
        )
      )
      const c = yield* join("c")
      yield* settle
      const held = yield* holders
      expect([held.get("a"), held.get("b"), held.get("c")].sort()).toEqual([3, 3, 4])
      // What a and b still lead, they led before: the moves went to c alone.
      for (const { group } of members) {
        for (const name of yield* group.leading) expect(before.get(group.identity)).toContain(name)
      }
      expect((yield* c.group.leading).length).toBe(held.get("c"))
    }))

  it.scoped("a member that stops cleanly hands everything over, spread over the others", () =>
    Effect.gen(function*() {
      const { holders, join } = yield* fleet
      const members = yield* Effect.forEach(["a", "b", "c"], (id) => join(id))
      yield* settle
      yield* Scope.close(members[2]!.scope, Exit.void)
      // Released, not expired: taken within a few retry periods.
      yield* TestClock.adjust(Duration.seconds(10))
      expect([...(yield* holders).values()]).toEqual([5, 5])
      expect(members[2]!.store.calls.withdraw).toBe(1)
    }))

  it.scoped("a member that crashes loses its elections to the survivors, evenly", () =>
    Effect.gen(function*() {
      const { holders, join } = yield* fleet
      const members = yield* Effect.forEach(["a", "b", "c", "d"], (id) => join(id))
      yield* settle
      // Cut off for good: its leases expire and its advertisement lapses.
      members[3]!.store.set(Faulty.fail)
      yield* settle
      const held = yield* holders
      expect(held.has("d")).toBe(false)
      expect([...held.values()].sort()).toEqual([3, 3, 4])
    }))

  it.scoped("elections are added and removed while it runs; the statuses follow", () =>
    Effect.gen(function*() {
      const { db, join } = yield* fleet
      const { group } = yield* join("a")
      const seen = yield* group.changes.pipe(
        Stream.filter(({ name, status }) => name === "extra" && status.isLeader),
        Stream.take(1),
        Stream.runCollect,
        Effect.fork
      )
      yield* settle
      yield* group.add("extra")
      yield* group.add("extra")
      yield* settle
      expect(Chunk.size(yield* Fiber.join(seen))).toBe(1)
      expect(yield* group.names).toContain("extra")
      expect((yield* db.inspect("extra")).holder).toBe("a")
      yield* group.remove("extra")
      yield* group.remove("extra")
      expect(yield* group.elector("extra")).toEqual(Option.none())
      // Released on its removal, not left to expire.
      expect(Lease.isExpired(yield* db.inspect("extra"))).toBe(true)
      expect(yield* group.leading).toHaveLength(names.length)
    }))

  it.scoped("resign hands one election over; the member keeps its share", () =>
    Effect.gen(function*() {
      const { db, holders, join } = yield* fleet
      const members = yield* Effect.forEach(["a", "b"], (id) => join(id))
      yield* settle
      const name = (yield* members[0]!.group.leading)[0]!
      const elector = Option.getOrThrow(yield* members[0]!.group.elector(name))
      yield* elector.resign
      yield* TestClock.adjust(Duration.seconds(10))
      expect((yield* db.inspect(name)).holder).toBe("b")
      yield* settle
      expect([...(yield* holders).values()]).toEqual([5, 5])
    }))

  it.scoped("refuses preferred leaders, the group's own name as an election, and stores without candidates", () =>
    Effect.gen(function*() {
      const store = yield* MemoryStore.make()
      const refused = (options: Elector.SpreadConfig, on: Store.StoreShape = store) =>
        Elector.spread(options, () => Effect.void).pipe(
          Effect.provideService(Store.Store, on),
          Effect.flip,
          Effect.map((e) => e._tag === "InvalidConfig" ? [e.field, e.reason] : e._tag)
        )
      const priority = { group: "g", names: ["x"], priority: 1 } as Elector.SpreadConfig
      expect((yield* refused(priority))[0]).toBe("priority")
      expect((yield* refused({ group: "g", names: ["x", "g"] }))[0]).toBe("names")
      const { advertise: _a, withdraw: _w, ...bare } = store
      expect((yield* refused({ group: "g", names: ["x"] }, bare))[0]).toBe("group")
      const group = yield* Elector.spread({ group: "g", names: ["x"] }, () => Effect.void).pipe(
        Effect.provideService(Store.Store, store)
      )
      expect((yield* Effect.flip(group.add("g")))._tag).toBe("InvalidConfig")
      expect((yield* Effect.flip(group.add("")))._tag).toBe("InvalidConfig")
      expect(yield* group.names).toEqual(["x"])
    }))
})
