import { HttpRouter, HttpServer } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Either, Layer, Option, TestClock } from "effect"
import { createServer, type RequestListener, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import * as Elector from "../src/Elector.js"
import * as Health from "../src/Health.js"
import * as HealthHttpApp from "../src/HealthHttpApp.js"
import * as Store from "../src/Store.js"
import * as MemoryStore from "../src/stores/MemoryStore.js"
import * as Faulty from "../src/testing/FaultyStore.js"
import { steady } from "./support/steady.js"

// The database clock is three days ahead of the local one, as in every unit test.
const world = Effect.flatMap(
  MemoryStore.makeClock({ offset: Duration.days(3) }),
  (clock) => MemoryStore.make({ clock })
)

let elections = 0
const election = () => `health-${++elections}`

const timings = { leaseDuration: "15 seconds", renewInterval: "5 seconds", retryPeriod: "3 seconds" } as const

/** An elector taking part in `name` for the rest of the test's scope. */
const join = (store: Store.StoreShape, name: string, identity: string) =>
  Effect.gen(function*() {
    const elector = yield* Elector.make({ name, identity, ...timings }).pipe(Effect.provideService(Store.Store, store))
    yield* Effect.forkScoped(steady(elector.run))
    yield* TestClock.adjust(Duration.millis(1))
    return elector
  })

/** A leader for a fresh election. */
const leader = Effect.gen(function*() {
  const name = election()
  const elector = yield* join(yield* world, name, "a")
  expect(yield* elector.isLeader).toBe(true)
  return elector
})

/** A follower for a fresh election, led by another process. */
const follower = Effect.gen(function*() {
  const name = election()
  const db = yield* world
  yield* db.acquire(name, "elsewhere", Duration.seconds(15), null)
  return yield* join(db, name, "b")
})

/** Serves `listener` on an ephemeral loopback port for the rest of the scope. */
const serve = (listener: RequestListener) =>
  Effect.acquireRelease(
    Effect.async<Server>((resume) => {
      const server = createServer(listener)
      server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
    }),
    (server) =>
      Effect.async<void>((resume) => {
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      })
  ).pipe(Effect.map((server) => ({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` })))

const request = (url: string, method = "GET") =>
  Effect.promise(async () => {
    const response = await fetch(url, { method })
    return { status: response.status, headers: response.headers, text: await response.text() }
  })

describe("Health.check", () => {
  it.scoped("a leader is healthy: 200, state leader, the status as JSON", () =>
    Effect.gen(function*() {
      const elector = yield* leader
      const health = yield* Health.make(elector)
      const report = yield* health.check
      expect(report).toEqual({
        state: "leader",
        httpStatus: 200,
        election: elector.config.name,
        reason: null,
        status: Elector.statusToJson(yield* elector.status)
      })
      expect(report.status.fence).toBe("1")
    }))

  it.scoped("a follower is healthy and answers 200, or 503 with leaderOnly", () =>
    Effect.gen(function*() {
      const elector = yield* follower
      const report = yield* Effect.flatMap(Health.make(elector), (h) => h.check)
      expect([report.state, report.httpStatus, report.reason]).toEqual(["follower", 200, null])
      expect(report.status.leader).toBe("elsewhere")
      const routed = yield* Effect.flatMap(Health.make(elector, { leaderOnly: true }), (h) => h.check)
      expect([routed.state, routed.httpStatus]).toEqual(["follower", 503])
      const leads = yield* leader
      const routedLeader = yield* Effect.flatMap(Health.make(leads, { leaderOnly: true }), (h) => h.check)
      expect([routedLeader.state, routedLeader.httpStatus]).toEqual(["leader", 200])
    }))

  it.scoped("unhealthy after maxSilence (default 2 x leaseDuration) without a successful store call, healthy again after one", () =>
    Effect.gen(function*() {
      const name = election()
      const store = Faulty.make(yield* world)
      const elector = yield* join(store, name, "a")
      const health = yield* Health.make(elector)
      store.set(Faulty.fail)
      // The leader steps down within a lease; silence is not yet too long.
      yield* TestClock.adjust(Duration.seconds(20))
      const quiet = yield* health.check
      expect([quiet.state, quiet.httpStatus]).toEqual(["follower", 200])
      expect(quiet.status.lastError?._tag).toBe("StoreError")
      yield* TestClock.adjust(Duration.seconds(11))
      const silent = yield* health.check
      expect([silent.state, silent.httpStatus]).toEqual(["unhealthy", 503])
      expect(silent.reason).toBe("no successful store call for 31s (maxSilence 30s)")
      store.set(Faulty.pass)
      // After a run of failed polls the follower polls every 4 x retryPeriod at most.
      yield* TestClock.adjust(Duration.seconds(12))
      const back = yield* health.check
      expect([back.state, back.httpStatus, back.reason]).toEqual(["leader", 200, null])
    }))

  it.scoped("counts silence from when the check was made if nothing was observed yet, and honours maxSilence", () =>
    Effect.gen(function*() {
      const name = election()
      // Made, never run: nothing ever observed.
      const elector = yield* Elector.make({ name, identity: "idle" }).pipe(
        Effect.provideService(Store.Store, yield* world)
      )
      yield* TestClock.adjust(Duration.hours(1))
      const health = yield* Health.make(elector, { maxSilence: "10 seconds" })
      expect((yield* health.check).state).toBe("follower")
      yield* TestClock.adjust(Duration.seconds(10))
      expect((yield* health.check).state).toBe("follower")
      yield* TestClock.adjust(Duration.millis(1))
      const report = yield* health.check
      expect(report.state).toBe("unhealthy")
      expect(report.reason).toBe("no successful store call for 10.001s (maxSilence 10s)")
    }))

  it.scoped("a fatal store error is unhealthy at once, naming the error", () =>
    Effect.gen(function*() {
      const store = Faulty.make(yield* world)
      store.set(Faulty.fatal)
      const elector = yield* join(store, election(), "a")
      const report = yield* Effect.flatMap(Health.make(elector), (h) => h.check)
      expect([report.state, report.httpStatus]).toEqual(["unhealthy", 503])
      const error = Option.getOrThrow((yield* elector.status).lastError)
      expect(Store.isFatal(error)).toBe(true)
      expect(report.reason).toBe(`fatal store error: ${error.message}`)
    }))

  it.scoped("refuses a maxSilence that is not a positive duration", () =>
    Effect.gen(function*() {
      const elector = yield* follower
      const refused = yield* Effect.either(Health.make(elector, { maxSilence: "0 seconds" }))
      expect(Either.isLeft(refused)).toBe(true)
      if (Either.isLeft(refused)) {
        expect(refused.left.field).toBe("maxSilence")
        expect(refused.left.message).toContain("must be positive")
      }
    }))

  it.scoped("Health.layer builds the check of the Elector in context", () =>
    Effect.gen(function*() {
      const elector = yield* leader
      const report = yield* Effect.flatMap(Health.Health, (h) => h.check).pipe(
        Effect.provide(Health.layer({ leaderOnly: true })),
        Effect.provideService(Elector.Elector, elector)
      )
      expect([report.state, report.httpStatus, report.election]).toEqual(["leader", 200, elector.config.name])
    }))
})

describe("Health.toNodeListener over real HTTP", () => {
  it.scoped("answers GET with the report as JSON, HEAD with headers only", () =>
    Effect.gen(function*() {
      const elector = yield* leader
      const health = yield* Health.make(elector)
      const { url } = yield* serve(Health.toNodeListener(health))
      const got = yield* request(`${url}/healthz`)
      expect(got.status).toBe(200)
      expect(got.headers.get("content-type")).toBe("application/json")
      expect(got.headers.get("cache-control")).toBe("no-store")
      expect(JSON.parse(got.text)).toEqual(yield* health.check)
      const head = yield* request(url, "HEAD")
      expect([head.status, head.text]).toEqual([200, ""])
    }))

  it.scoped("answers 503 for a follower with leaderOnly, and for an unhealthy participant", () =>
    Effect.gen(function*() {
      const elector = yield* follower
      const routed = yield* serve(Health.toNodeListener(yield* Health.make(elector, { leaderOnly: true })))
      const got = yield* request(routed.url)
      expect(got.status).toBe(503)
      expect(JSON.parse(got.text)).toMatchObject({ state: "follower", httpStatus: 503, reason: null })
      const store = Faulty.make(yield* world)
      store.set(Faulty.fatal)
      const broken = yield* serve(Health.toNodeListener(yield* Health.make(yield* join(store, election(), "c"))))
      const sick = yield* request(broken.url)
      expect(sick.status).toBe(503)
      expect(JSON.parse(sick.text)).toMatchObject({
        state: "unhealthy",
        reason: expect.stringMatching(/^fatal store error: /)
      })
    }))

  it.scoped("answers 500 when the check itself dies", () =>
    Effect.gen(function*() {
      const { url } = yield* serve(Health.toNodeListener({ check: Effect.die(new Error("boom")) }))
      const got = yield* request(url)
      expect(got.status).toBe(500)
      expect(JSON.parse(got.text)).toEqual({ state: "unhealthy", reason: "health check failed: Error: boom" })
    }))
})

describe("HealthHttpApp over a real @effect/platform server", () => {
  /** Serves `app` at /healthz with @effect/platform-node on an ephemeral port. */
  const platform = <E, R>(router: HttpRouter.HttpRouter<E, R>) =>
    Effect.gen(function*() {
      const context = yield* Layer.build(
        HttpServer.serve(router).pipe(
          Layer.provideMerge(NodeHttpServer.layer(() => createServer(), { port: 0, host: "127.0.0.1" }))
        )
      )
      const server = yield* Effect.provide(HttpServer.HttpServer, context)
      const address = server.address
      if (address._tag !== "TcpAddress") throw new Error("expected a TCP address")
      return `http://127.0.0.1:${address.port}`
    })

  it.scoped("HealthHttpApp.make answers with the report and its status code", () =>
    Effect.gen(function*() {
      const elector = yield* leader
      const health = yield* Health.make(elector)
      const url = yield* platform(HttpRouter.empty.pipe(HttpRouter.get("/healthz", HealthHttpApp.make(health))))
      const got = yield* request(`${url}/healthz`)
      expect(got.status).toBe(200)
      expect(got.headers.get("content-type")).toBe("application/json")
      expect(got.headers.get("cache-control")).toBe("no-store")
      expect(JSON.parse(got.text)).toEqual(yield* health.check)
      expect((yield* request(`${url}/elsewhere`)).status).toBe(404)
    }))

  it.scoped("HealthHttpApp.app reads the Health service: 503 for an unhealthy participant", () =>
    Effect.gen(function*() {
      const store = Faulty.make(yield* world)
      store.set(Faulty.fatal)
      const elector = yield* join(store, election(), "d")
      const router = HttpRouter.empty.pipe(HttpRouter.get("/healthz", HealthHttpApp.app))
      const url = yield* platform(router).pipe(
        Effect.provide(Health.layer()),
        Effect.provideService(Elector.Elector, elector)
      )
      const got = yield* request(`${url}/healthz`)
      expect(got.status).toBe(503)
      expect(JSON.parse(got.text)).toMatchObject({ state: "unhealthy", election: elector.config.name })
    }))
})
