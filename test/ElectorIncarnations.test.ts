/**
 * Two processes given one identity (issue 39): each elector draws an
 * incarnation, and a lease held under its identity by another incarnation is
 * somebody else's. The one that follows never releases, renews or continues
 * it, and reports the collision once the other process shows itself alive.
 * A store that keeps no incarnations elects as 0.1 did, and says so once.
 * A lease the store holds back after the database changed is nobody's.
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Exit, LogLevel, Metric, Option, Scope, TestClock } from "effect"
import * as Elector from "../src/Elector.js"
import { Incarnations } from "../src/internal/election/incarnation.js"
import * as Lease from "../src/Lease.js"
import * as Metrics from "../src/Metrics.js"
import * as Store from "../src/Store.js"
import * as MemoryStore from "../src/stores/MemoryStore.js"
import { logLines } from "./support/logLines.js"
import { steady } from "./support/steady.js"

// The database clock is three days ahead of the local one, as in every unit test.
const world = Effect.gen(function*() {
  const clock = yield* MemoryStore.makeClock({ offset: Duration.days(3) })
  return yield* MemoryStore.makeWithContents({ clock })
})

let elections = 0
/** A fresh election per test: metrics are process-wide, their tags keep the tests apart. */
const fresh = () => `incarnations-${++elections}`

/** An elector whose process draws `incarnation`. */
const participant = (store: Store.StoreShape, config: Elector.ElectorConfig, incarnation: string) =>
  Elector.make(config).pipe(
    Effect.provideService(Store.Store, store),
    Effect.provideService(Incarnations, { draw: Effect.succeed(incarnation) })
  )

/** Starts an elector's run and lets it take its first steps. */
const start = (elector: Elector.ElectorShape) =>
  Effect.gen(function*() {
    const fiber = yield* Effect.forkScoped(steady(elector.run))
    yield* TestClock.adjust(Duration.millis(1))
    return fiber
  })

const seconds = (n: number) => TestClock.adjust(Duration.millis(n * 1000))

/**
 * `store` with every election's calls sent to `name`: two electors of one
 * identity in one process (which `make` refuses for one name) elect as two
 * processes would, in one row.
 */
const renamed = (store: Store.StoreShape, name: string): Store.StoreShape => ({
  ...store,
  wakeUps: undefined,
  acquire: (_, ...rest) => store.acquire(name, ...rest),
  renew: (_, ...rest) => store.renew(name, ...rest),
  release: (_, ...rest) => store.release(name, ...rest),
  inspect: () => store.inspect(name)
})

const collisions = (election: string) =>
  Effect.map(Metric.value(Metrics.identityCollisions.pipe(Metric.tagged("election", election))), (s) => s.count)

const collisionLine = (election: string) =>
  `ERROR identity "a" is in use by another process (election "${election}"): give every process an identity of its own`

describe("two processes given one identity", () => {
  it.scoped("never lead together: the one that follows never takes the other's lease, and reports it", () =>
    Effect.gen(function*() {
      const { store: db } = yield* world
      const name = fresh()
      const errors = yield* logLines(LogLevel.Error)
      const first = yield* participant(renamed(db, name), { name: `${name}.p0`, identity: "a" }, "p0")
      const second = yield* participant(renamed(db, name), { name: `${name}.p1`, identity: "a" }, "p1")
      yield* start(first)
      yield* start(second)
      let together = 0
      for (let t = 0; t < 150; t++) {
        yield* seconds(1)
        if ((yield* first.isLeader) && (yield* second.isLeader)) together++
      }
      expect(together).toBe(0)
      // The first term is the only one: never released, continued or taken by the second.
      expect(yield* first.fence).toEqual(Option.some(1n))
      expect(yield* db.inspect(name)).toMatchObject({ holder: "a", incarnation: "p0", fence: 1n })
      // Seen alive at its first renewal (5s): ERROR then, and once a minute while it lasts.
      expect(errors).toEqual([collisionLine(`${name}.p1`), collisionLine(`${name}.p1`), collisionLine(`${name}.p1`)])
      expect(yield* collisions(`${name}.p1`)).toBeGreaterThan(3)
      expect(yield* collisions(`${name}.p0`)).toBe(0)
      const status = yield* second.status
      expect(status).toMatchObject({ isLeader: false, leader: Option.some("a"), leaderFence: Option.some(1n) })
      expect(Option.map(status.identityCollision, (at) => at.getTime())).toEqual(status.observedAt.pipe(
        Option.map((at) => at.getTime())
      ))
      expect(Elector.statusToJson(status).identityCollision).toBe(Option.getOrThrow(status.observedAt).toISOString())
      expect(Option.isNone((yield* first.status).identityCollision)).toBe(true)
    }))

  it.scoped("the second takes over once the first is gone, under a fence of its own", () =>
    Effect.gen(function*() {
      const { store: db } = yield* world
      const name = fresh()
      const scope = yield* Scope.make()
      const first = yield* participant(
        renamed(db, name),
        { name: `${name}.p0`, identity: "a", disableRelease: true },
        "p0"
      )
        .pipe(Scope.extend(scope))
      yield* Effect.forkIn(steady(first.run), scope)
      yield* seconds(0.001)
      const second = yield* participant(renamed(db, name), { name: `${name}.p1`, identity: "a" }, "p1")
      yield* start(second)
      yield* seconds(10)
      // The first stops without releasing: its lease runs out at 15s (its last renewal at 10s: 25s).
      yield* Scope.close(scope, Exit.void)
      yield* seconds(14.9)
      expect(yield* second.isLeader).toBe(false)
      yield* seconds(0.2)
      expect(yield* second.fence).toEqual(Option.some(2n))
      expect(yield* db.inspect(name)).toMatchObject({ holder: "a", incarnation: "p1", fence: 2n })
    }))

  it.scoped("a lease this process left behind is followed until it expires, and not reported", () =>
    Effect.gen(function*() {
      const { store: db } = yield* world
      const name = fresh()
      const errors = yield* logLines(LogLevel.Error)
      // The previous run, stopped without a release just before this one started.
      yield* db.acquire(name, "a", Duration.seconds(15), null, "before")
      const elector = yield* participant(db, { name, identity: "a" }, "now")
      yield* start(elector)
      yield* seconds(14.9)
      expect(yield* elector.isLeader).toBe(false)
      expect(yield* db.inspect(name)).toMatchObject({ incarnation: "before", fence: 1n })
      yield* seconds(0.2)
      expect(yield* elector.fence).toEqual(Option.some(2n))
      expect(errors).toEqual([])
      expect(yield* collisions(name)).toBe(0)
      expect(Option.isNone((yield* elector.status).identityCollision)).toBe(true)
    }))

  it.scoped("a lease claimed after this elector's first answer is another process's, reported at once", () =>
    Effect.gen(function*() {
      const { store: db } = yield* world
      const name = fresh()
      const errors = yield* logLines(LogLevel.Error)
      yield* db.acquire(name, "x", Duration.seconds(60), null, "x")
      // Without wake-up hints, it sees the change of holder at its next poll.
      const elector = yield* participant({ ...db, wakeUps: undefined }, { name, identity: "a" }, "mine")
      yield* start(elector)
      yield* seconds(10.2)
      // Another process given identity "a" takes over from x, and never renews.
      yield* db.release(name, "x", 1n)
      yield* db.acquire(name, "a", Duration.seconds(60), null, "theirs")
      yield* seconds(1)
      expect(errors).toEqual([collisionLine(name)])
      expect(Option.isSome((yield* elector.status).identityCollision)).toBe(true)
      yield* seconds(40)
      expect(yield* elector.isLeader).toBe(false)
      expect(yield* db.inspect(name)).toMatchObject({ holder: "a", incarnation: "theirs", fence: 2n })
    }))

  it.scoped("an acquire whose reply was lost is still recognised as this incarnation's, and given up at once", () =>
    Effect.gen(function*() {
      const { store: db } = yield* world
      const name = fresh()
      let lost = true
      const store: Store.StoreShape = {
        ...db,
        acquire: (...args) =>
          Effect.flatMap(db.acquire(...args), (lease) => {
            if (!lost) return Effect.succeed(lease)
            lost = false
            return Effect.fail(
              new Store.StoreError({ operation: "acquire", retryable: true, reason: "connection reset", cause: null })
            )
          })
      }
      const elector = yield* participant(store, { name, identity: "a" }, "mine")
      yield* start(elector)
      expect(yield* elector.isLeader).toBe(false)
      expect(yield* db.inspect(name)).toMatchObject({ incarnation: "mine", fence: 1n })
      // The next poll (after a retry period, doubled by the failure) gives it
      // up and claims again: a fresh fence, without waiting the lease out.
      yield* seconds(5)
      expect(yield* elector.fence).toEqual(Option.some(2n))
    }))
})

describe("a store that keeps no incarnations (the 0.1 contract)", () => {
  it.scoped("elects by identity alone, as 0.1 did, and warns once at startup", () =>
    Effect.gen(function*() {
      const { store: db } = yield* world
      const name = fresh()
      const warnings = yield* logLines(LogLevel.Warning)
      const legacy: Store.StoreShape = { ...db, incarnations: undefined }
      // A lease of identity "a" that another elector of "a" left: under 0.1, its own.
      yield* db.acquire(name, "a", Duration.seconds(15), null, "before")
      const elector = yield* participant(legacy, { name, identity: "a" }, "now")
      yield* start(elector)
      yield* seconds(30)
      // Given up at the first poll and claimed again, rather than waited out.
      expect((yield* db.inspect(name)).fence).toBe(2n)
      expect(yield* elector.fence).toEqual(Option.some(2n))
      expect(warnings).toEqual([
        "WARN the store does not keep incarnations (StoreShape.incarnations, Store contract 0.2): " +
        "two processes given one identity are not told apart, and may lead together; " +
        "give every process an identity of its own, or use a store that keeps them"
      ])
    }))

  it.scoped("warns once per store, not once per elector", () =>
    Effect.gen(function*() {
      const { store: db } = yield* world
      const warnings = yield* logLines(LogLevel.Warning)
      const legacy: Store.StoreShape = { ...db, incarnations: undefined }
      for (const identity of ["a", "b", "c"]) {
        yield* start(yield* participant(legacy, { name: fresh(), identity }, identity))
      }
      expect(warnings).toHaveLength(1)
      // Another store of the same kind is another store: it is warned of too.
      yield* start(yield* participant({ ...db, incarnations: undefined }, { name: fresh(), identity: "d" }, "d"))
      expect(warnings).toHaveLength(2)
    }))

  it.scoped("a store that keeps them draws no warning", () =>
    Effect.gen(function*() {
      const { store: db } = yield* world
      const warnings = yield* logLines(LogLevel.Warning)
      const elector = yield* participant(db, { name: fresh(), identity: "a" }, "now")
      yield* start(elector)
      yield* seconds(30)
      expect(yield* elector.isLeader).toBe(true)
      expect(warnings).toEqual([])
    }))
})

describe("a lease held back after the database changed", () => {
  it.scoped("is no new leader: said once at INFO, no leader shown meanwhile, claimed once it expires", () =>
    Effect.gen(function*() {
      const { copy, restore, store: db } = yield* world
      const name = fresh()
      // A term on the old server, which then fails over to a copy of itself.
      yield* db.acquire(name, "x", Duration.seconds(1), null, "x")
      yield* restore(yield* copy)
      yield* seconds(2)
      const lines = yield* logLines(LogLevel.Info)
      const announced: Array<string> = []
      const elector = yield* participant(db, {
        name,
        identity: "b",
        onNewLeader: (holder, fence) => Effect.sync(() => void announced.push(`${holder}@${fence}`))
      }, "b")
      yield* start(elector)
      const heldBack = yield* db.inspect(name)
      expect(Lease.isHeldBack(heldBack)).toBe(true)
      const fence = 1n + Lease.fenceJump
      expect(heldBack.fence).toBe(fence)
      const said = () => lines.filter((line) => line.includes("held back"))
      const expected = `INFO lease "${name}" is held back until ${heldBack.expiresAt.toISOString()} under fence ` +
        `${fence}: the database behind the store changed (a failover or a restart)`
      expect(said()).toEqual([expected])
      const status = yield* elector.status
      expect(status).toMatchObject({ isLeader: false, leader: Option.none(), leaderFence: Option.none() })
      // Its polls meanwhile see it again, and say nothing more.
      yield* seconds(14.9)
      expect(yield* elector.isLeader).toBe(false)
      expect(said()).toEqual([expected])
      yield* seconds(0.2)
      expect(yield* elector.fence).toEqual(Option.some(fence + 1n))
      expect(announced).toEqual([`b@${fence + 1n}`])
    }))
})
