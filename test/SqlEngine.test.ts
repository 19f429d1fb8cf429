/**
 * The SQL store engine on a fake driver and fake statements, no database:
 * what each answer means for the Store contract is decided by the engine,
 * once for every dialect (a guard that matched no row is `LeaseLost`, an
 * election without a row `NoLease`), a driver error becomes a `StoreError`
 * with the dialect's verdict, and `ensureSchema: true` waits for a database
 * that cannot be reached yet, logging at most once a minute.
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Either, Fiber, LogLevel, Option, TestClock } from "effect"
import type { Lease } from "../src/Lease.js"
import { LeaseLost, NoLease, StoreError } from "../src/Store.js"
import type * as Dialect from "../src/stores/internal/dialect.js"
import * as Engine from "../src/stores/internal/sqlStore.js"
import type { OwnedPoolOptions } from "../src/stores/SqlStore.js"
import { logLines } from "./support/logLines.js"

/** A request names its statement; a result is whatever the test queued for it. */
interface Request {
  readonly label: string
}

/** An error of the fake driver; `retryable` is its verdict. */
class FakeError extends Error {
  constructor(readonly retryable: boolean, readonly code = "FAKE") {
    super(retryable ? "connection refused" : "password authentication failed")
  }
}

/** The fake database: `down` fails every connection with `failure`; `answers` are the results of the statements run, in order. */
const fakeDatabase = () => {
  const state = {
    down: false,
    failure: new FakeError(true),
    answers: [] as Array<unknown>,
    /** Requests run while set wait in `held` until the test answers them. */
    hold: false,
    held: [] as Array<(result: unknown) => void>,
    sent: [] as Array<string>,
    connects: 0
  }
  const driver: Dialect.Driver<"pool", "connection", Request, unknown, "settings", never, OwnedPoolOptions> = {
    connections: () => ({
      connect: (callback) => {
        state.connects++
        return state.down ? callback(state.failure, undefined) : callback(undefined, "connection")
      },
      run: (_connection, { label }, callback) => {
        state.sent.push(label)
        if (state.hold) return state.held.push((result) => callback(undefined, result))
        const answer = state.answers.shift()
        return answer instanceof Error ? callback(answer, undefined) : callback(undefined, answer)
      },
      release: () => {}
    }),
    capacity: () => 2,
    poolProblem: () => undefined,
    classify: (error) =>
      error instanceof FakeError
        ? { retryable: error.retryable, reason: error.message, code: error.code }
        : { retryable: true, reason: String(error) },
    fromUrl: () => Either.right("settings"),
    fromClient: Effect.succeed("settings"),
    ownPool: (settings) => Either.right(settings),
    openPool: () => "pool",
    endPool: (_pool, done) => done()
  }
  return { state, driver }
}

/** Statements whose answers are passed on as they are: the test's queued results are the decoded rows. */
const statement = <Row>(label: string): Dialect.Statement<Request, unknown, Row> => ({
  request: { label },
  decode: (result) => result as Row
})

const statements: Dialect.Statements<Request, unknown> = {
  identifier: (_field, name) => Either.right(`"${name}"`),
  ddl: {
    leases: (t) => `leases ${t}`,
    upgrade: (t) => `upgrade ${t}`,
    slots: (t) => `slots ${t}`,
    candidates: (t) => `candidates ${t}`
  },
  script: (label) => ({ label }),
  // The queued answer is the DDL still to run: none by default.
  upgrade: ({ name, quoted, schema }) => ({
    request: { label: `upgrade? ${quoted} (${schema ?? "connection's"}.${name})` },
    decode: (result) => (result as ReadonlyArray<Request> | undefined) ?? []
  }),
  alreadyThere: (error) => error.code === "THERE",
  leases: () => ({
    acquire: (...args) => statement(`acquire ${JSON.stringify(args.slice(0, 2).concat(args.slice(4)))}`),
    renew: () => statement("renew"),
    renewAll: (renewals) => statement(`renewAll ${renewals.map((renewal) => renewal.name).join(",")}`),
    release: () => ({ label: "release" }),
    inspect: () => statement("inspect"),
    inspectAll: (names) => statement(`inspectAll ${names.join(",")}`),
    list: statement("list"),
    advertise: () => statement("advertise"),
    withdraw: () => ({ label: "withdraw" }),
    candidates: statement("candidates")
  }),
  slots: () => ({
    claim: () => statement("claim"),
    complete: () => statement("complete"),
    last: () => statement("last")
  })
}

const lease: Lease = {
  name: "jobs",
  holder: "a",
  fence: 3n,
  payload: null,
  acquiredAt: new Date(0),
  renewedAt: new Date(0),
  expiresAt: new Date(15_000),
  now: new Date(0)
}

const setup = () => {
  const database = fakeDatabase()
  const store = Engine.constructors(database.driver, statements)
  return { ...database, store }
}

describe("the SQL store engine", () => {
  it.effect("a guarded write that matched no row lost the lease; an election without a row has no lease", () =>
    Effect.gen(function*() {
      const { state, store } = setup()
      const sql = yield* store.makeFromPool("pool")
      state.answers.push(undefined, lease)
      expect(yield* Effect.flip(sql.renew("jobs", "a", 3n, Duration.seconds(15), null))).toEqual(
        new LeaseLost({ name: "jobs", identity: "a", fence: 3n })
      )
      expect(yield* sql.renew("jobs", "a", 3n, Duration.seconds(15), null)).toBe(lease)
      state.answers.push(undefined, lease)
      expect(yield* Effect.flip(sql.inspect("jobs"))).toEqual(new NoLease({ name: "jobs" }))
      expect(yield* sql.inspect("jobs")).toBe(lease)
      const slots = sql.slots!
      const now = new Date(1_000)
      state.answers.push(undefined, { claimed: true, slot: undefined, now }, undefined, now)
      const at = new Date(0)
      expect(yield* Effect.flip(slots.claim("jobs", "a", 3n, "report", at, false))).toBeInstanceOf(LeaseLost)
      expect(yield* slots.claim("jobs", "a", 3n, "report", at, false)).toEqual({ claimed: true, slot: undefined, now })
      expect(yield* Effect.flip(slots.complete("jobs", "a", 3n, "report", at))).toEqual(
        new LeaseLost({ name: "jobs", identity: "a", fence: 3n })
      )
      expect(yield* slots.complete("jobs", "a", 3n, "report", at)).toBe(now)
      expect(state.sent).toEqual(["renew", "renew", "inspect", "inspect", "claim", "claim", "complete", "complete"])
    }))

  it.effect("renewals that meet one in flight go as one request, each answered its own; each keeps the operation timeout", () =>
    Effect.gen(function*() {
      const { state, store } = setup()
      const sql = yield* store.makeFromPool("pool")
      state.hold = true
      const renew = (name: string) => Effect.fork(Effect.either(sql.renew(name, "a", 3n, Duration.seconds(15), null)))
      const first = yield* renew("jobs")
      const others = [yield* renew("e2"), yield* renew("e1")]
      yield* Effect.yieldNow()
      expect(state.sent).toEqual(["renew"])
      state.held.shift()!(lease)
      expect(yield* Fiber.join(first)).toEqual(Either.right(lease))
      expect(state.sent).toEqual(["renew", "renewAll e1,e2"])
      state.held.shift()!([undefined, lease])
      expect(yield* Fiber.join(others[1]!)).toEqual(
        Either.left(new LeaseLost({ name: "e1", identity: "a", fence: 3n }))
      )
      expect(yield* Fiber.join(others[0]!)).toEqual(Either.right(lease))
      // A request that never answers: its renewal and the one queued behind
      // it each fail at their own operation timeout.
      const hung = yield* renew("jobs")
      yield* TestClock.adjust(Duration.seconds(1))
      const queued = yield* renew("e1")
      yield* TestClock.adjust(Duration.seconds(2))
      const timedOut = (yield* Fiber.join(hung)).pipe(Either.flip, Either.getOrThrow)
      expect(timedOut).toMatchObject({ _tag: "StoreError", operation: "renew", retryable: true })
      expect(timedOut.message).toMatch(/within 3s/)
      expect(yield* Fiber.poll(queued)).toEqual(Option.none())
      yield* TestClock.adjust(Duration.seconds(1))
      expect((yield* Fiber.join(queued)).pipe(Either.flip, Either.getOrThrow).message).toMatch(/within 3s/)
    }))

  it.effect("polls that meet one in flight go as one request, each answered its own row or NoLease", () =>
    Effect.gen(function*() {
      const { state, store } = setup()
      const sql = yield* store.makeFromPool("pool")
      state.hold = true
      const inspect = (name: string) => Effect.fork(Effect.either(sql.inspect(name)))
      const first = yield* inspect("jobs")
      const others = [yield* inspect("e2"), yield* inspect("e1")]
      yield* Effect.yieldNow()
      expect(state.sent).toEqual(["inspect"])
      state.held.shift()!(lease)
      expect(yield* Fiber.join(first)).toEqual(Either.right(lease))
      expect(state.sent).toEqual(["inspect", "inspectAll e1,e2"])
      state.held.shift()!([undefined, lease])
      expect(yield* Fiber.join(others[1]!)).toEqual(Either.left(new NoLease({ name: "e1" })))
      expect(yield* Fiber.join(others[0]!)).toEqual(Either.right(lease))
    }))

  it.effect("the other answers pass as the statements decode them; a release or withdrawal carries nothing", () =>
    Effect.gen(function*() {
      const { state, store } = setup()
      const sql = yield* store.makeFromPool("pool")
      const last = { now: new Date(0), slot: undefined }
      state.answers.push(lease, "anything", [lease], [], "anything", [], last)
      expect(yield* sql.acquire("jobs", "a", Duration.seconds(15), null)).toBe(lease)
      expect(yield* sql.release("jobs", "a", 3n)).toBeUndefined()
      expect(yield* sql.list).toEqual([lease])
      expect(yield* sql.advertise("jobs", "a", { priority: 1, version: null }, Duration.seconds(15))).toEqual([])
      expect(yield* sql.withdraw("jobs", "a")).toBeUndefined()
      expect(yield* sql.candidates).toEqual([])
      expect(yield* sql.slots!.last("jobs", "report")).toBe(last)
      expect(sql.answersWithin).toEqual(Duration.seconds(3))
    }))

  it.effect("the stores keep incarnations: acquire passes the caller's on", () =>
    Effect.gen(function*() {
      const { state, store } = setup()
      const sql = yield* store.makeFromPool("pool")
      expect(sql.incarnations).toBe(true)
      state.answers.push(lease, lease)
      yield* sql.acquire("jobs", "a", Duration.seconds(15), null, "i-1")
      yield* sql.acquire("jobs", "a", Duration.seconds(15), null)
      expect(state.sent).toEqual([`acquire ["jobs","a","i-1"]`, `acquire ["jobs","a",null]`])
    }))

  it.effect("ensureSchema upgrades the lease table it created: the DDL the check answers, in order, what is there already passed", () =>
    Effect.gen(function*() {
      const { state, store } = setup()
      const sql = yield* store.makeFromPool("pool", { schema: "ops", table: "jobs" })
      state.answers.push(undefined, [{ label: "add a" }, { label: "add b" }], new FakeError(false, "THERE"))
      yield* sql.ensureSchema
      expect(state.sent).toEqual([
        `leases "ops"."jobs"`,
        `upgrade? "ops"."jobs" (ops.jobs)`,
        "add a",
        "add b",
        `candidates "ops"."jobs_candidates"`,
        `slots "ops"."jobs_slots"`
      ])
      // Any other error fails it, and nothing runs after it.
      state.sent.length = 0
      state.answers.push(undefined, [{ label: "add a" }, { label: "add b" }], new FakeError(false))
      expect(yield* Effect.flip(sql.ensureSchema)).toMatchObject({ operation: "ensureSchema", retryable: false })
      expect(state.sent).toEqual([`leases "ops"."jobs"`, `upgrade? "ops"."jobs" (ops.jobs)`, "add a"])
      expect(store.schemaUpgrade("ops", "jobs")).toEqual(Either.right(`upgrade "ops"."jobs"`))
    }))

  it.effect("a driver's error is a StoreError of the operation, with the dialect's verdict and the cause", () =>
    Effect.gen(function*() {
      const { state, store } = setup()
      const sql = yield* store.makeFromPool("pool")
      const cause = new FakeError(false)
      state.answers.push(cause)
      const error = yield* Effect.flip(sql.renew("jobs", "a", 3n, Duration.seconds(15), null))
      expect(error).toEqual(
        new StoreError({ operation: "renew", retryable: false, reason: cause.message, code: "FAKE", cause })
      )
    }))

  it.effect("ensureSchema: true waits for a database that cannot be reached, and says so once a minute", () =>
    Effect.gen(function*() {
      const lines = yield* logLines(LogLevel.Info)
      const { state, store } = setup()
      state.down = true
      const building = yield* Effect.fork(store.makeFromPool("pool", { ensureSchema: true }))
      yield* TestClock.adjust(Duration.seconds(59))
      expect(building.unsafePoll()).toBeNull()
      expect(lines).toEqual([
        "WARN ensureSchema: not done yet (1 failed attempt, the last: " +
        "ensureSchema failed (retryable) [FAKE]: connection refused); retrying"
      ])
      // The backoff is at most a few seconds: the next minute's first failure is reported.
      yield* TestClock.adjust(Duration.seconds(8))
      expect(lines).toHaveLength(2)
      const failures = Number(/\((\d+) failed attempts/.exec(lines[1]!)![1])
      expect(failures).toBeGreaterThan(10)
      state.down = false
      yield* TestClock.adjust(Duration.seconds(8))
      const sql = yield* Fiber.join(building)
      expect(sql.table).toBe(`"leader_election"`)
      expect(lines).toHaveLength(3)
      expect(lines[2]).toMatch(/^INFO ensureSchema: done, after \d+ failed attempts?$/)
      // The three tables, once the database answered.
      expect(state.sent).toEqual([
        `leases "leader_election"`,
        `upgrade? "leader_election" (connection's.leader_election)`,
        `candidates "leader_election_candidates"`,
        `slots "leader_election_slots"`
      ])
    }).pipe(Effect.scoped))

  it.effect("a fatal error fails ensureSchema at once, with the database's reason", () =>
    Effect.gen(function*() {
      const { state, store } = setup()
      state.down = true
      state.failure = new FakeError(false)
      const error = yield* Effect.flip(store.makeFromPool("pool", { ensureSchema: true }))
      expect(error).toMatchObject({ _tag: "StoreError", operation: "ensureSchema", retryable: false })
      expect(error.message).toBe("ensureSchema failed (fatal) [FAKE]: password authentication failed")
      expect(state.connects).toBe(1)
    }))

  it.effect("ensureSchemaTimeout bounds the wait; the store then fails with the last error", () =>
    Effect.gen(function*() {
      const { state, store } = setup()
      state.down = true
      const building = yield* Effect.fork(
        Effect.scoped(store.makeFromUrl("url", { ensureSchema: true, ensureSchemaTimeout: "20 seconds" }))
      )
      yield* TestClock.adjust(Duration.seconds(19))
      expect(building.unsafePoll()).toBeNull()
      yield* TestClock.adjust(Duration.seconds(10))
      const error = yield* Effect.flip(Fiber.join(building))
      expect(error).toMatchObject({ _tag: "StoreError", operation: "ensureSchema", retryable: true })
      const refused = yield* Effect.flip(store.makeFromPool("pool", { ensureSchemaTimeout: Duration.infinity }))
      expect(refused).toMatchObject({ _tag: "InvalidConfig", field: "ensureSchemaTimeout" })
    }))
})
