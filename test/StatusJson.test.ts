import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Either, Option, Schema, TestClock } from "effect"
import * as Elector from "../src/Elector.js"
import * as Store from "../src/Store.js"
import * as MemoryStore from "../src/stores/MemoryStore.js"
import * as Faulty from "../src/testing/FaultyStore.js"

const world = Effect.flatMap(
  MemoryStore.makeClock({ offset: Duration.days(3) }),
  (clock) => MemoryStore.make({ clock })
)

const join = (store: Store.StoreShape, config: Elector.ElectorConfig) =>
  Effect.gen(function*() {
    const elector = yield* Elector.make(config).pipe(Effect.provideService(Store.Store, store))
    yield* Effect.forkScoped(elector.run)
    yield* TestClock.adjust(Duration.millis(1))
    return elector
  })

/** Through text and back, as a probe or a log reader would see it. */
const roundTrip = (status: Elector.Status) =>
  Schema.decodeUnknownSync(Elector.StatusFromJson)(JSON.parse(JSON.stringify(Elector.statusToJson(status))))

const summary = (status: Elector.Status): Elector.DecodedStatus => ({
  ...status,
  lastError: Option.map(status.lastError, (e) => ({ _tag: e._tag, message: e.message }))
})

describe("Status as JSON", () => {
  it("JSON.stringify of a raw status throws on the bigint fence: this is what statusToJson is for", () => {
    expect(() => JSON.stringify({ fence: Option.some(1n) })).toThrow(/BigInt/)
  })

  it.scoped("a leader's status: fences as strings, instants as ISO strings, payload as base64", () =>
    Effect.gen(function*() {
      const db = yield* world
      const payload = new TextEncoder().encode("10.0.0.7:8080")
      const leader = yield* join(db, { name: "json-leader", identity: "a", payload })
      yield* TestClock.adjust(Duration.seconds(6))
      const status = yield* leader.status
      expect(status.isLeader).toBe(true)
      const json = Elector.statusToJson(status)
      expect(json).toEqual({
        isLeader: true,
        fence: "1",
        identity: "a",
        leader: "a",
        leaderFence: "1",
        leaderPayload: Buffer.from("10.0.0.7:8080").toString("base64"),
        observedAt: Option.getOrThrow(status.observedAt).toISOString(),
        validUntil: Option.getOrThrow(status.validUntil).toISOString(),
        lastError: null,
        identityCollision: null
      })
      expect(roundTrip(status)).toEqual(summary(status))
    }))

  it.scoped("a follower that has seen nothing yet and failed: nulls and the error's tag and message", () =>
    Effect.gen(function*() {
      const store = Faulty.make(yield* world)
      store.set(Faulty.fatal)
      const follower = yield* join(store, { name: "json-follower", identity: "b" })
      const status = yield* follower.status
      const json = Elector.statusToJson(status)
      expect(json.fence).toBeNull()
      expect(json.leader).toBeNull()
      expect(json.leaderPayload).toBeNull()
      expect(json.observedAt).toBeNull()
      expect(json.validUntil).toBeNull()
      expect(json.lastError?._tag).toBe("StoreError")
      expect(json.lastError?.message).toBe(Option.getOrThrow(status.lastError).message)
      expect(Object.keys(json.lastError ?? {})).toEqual(["_tag", "message"])
      expect(roundTrip(status)).toEqual(summary(status))
    }))

  it("refuses JSON that is not a status, naming the field", () => {
    const decoded = Schema.decodeUnknownEither(Elector.StatusFromJson)({
      isLeader: false,
      fence: "not a number",
      identity: "a",
      leader: null,
      leaderFence: null,
      leaderPayload: null,
      observedAt: null,
      validUntil: null,
      lastError: null
    })
    expect(Either.isLeft(decoded)).toBe(true)
    if (Either.isLeft(decoded)) expect(String(decoded.left.message)).toContain("fence")
  })
})
