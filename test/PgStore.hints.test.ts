import { afterAll, describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Fiber, LogLevel, Metric } from "effect"
import * as net from "node:net"
import pg from "pg"
import { inject } from "vitest"
import * as Elector from "../src/Elector.js"
import * as Metrics from "../src/Metrics.js"
import * as Store from "../src/Store.js"
import * as PgStore from "../src/stores/PgStore.js"
import { directUrl, uniqueTable } from "./support/databases.js"
import { logLines } from "./support/logLines.js"
import { dropPgTables } from "./support/tables.js"

const poolerUrl = inject("pgbouncerUrl")
const tables: Array<string> = []
afterAll(() => dropPgTables(...tables))

const table = (label: string) => {
  const name = uniqueTable(label)
  tables.push(name)
  return name
}

/** The hints of election `name` that reached this process, counted. */
const counting = (store: Store.StoreShape, name: string) =>
  Effect.gen(function*() {
    const hints = { count: 0 }
    yield* store.wakeUps!.subscribe(name, () => hints.count++)
    return hints
  })

/** Waits (real time) until `done` holds; the test's own timeout bounds it. */
const until = (done: () => boolean): Effect.Effect<void> =>
  Effect.suspend(() => done() ? Effect.void : Effect.zipRight(Effect.sleep(Duration.millis(2)), until(done)))

const terminate = (statement: string) =>
  Effect.promise(async () => {
    const client = new pg.Client({ connectionString: directUrl })
    await client.connect()
    try {
      return (await client.query(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = $1 AND pid <> pg_backend_pid()",
        [statement]
      )).rowCount
    } finally {
      await client.end()
    }
  })

describe("PgStore wake-up hints", () => {
  it.scopedLive(
    "a release sent through PgBouncer reaches the listener on a direct connection",
    () =>
      Effect.gen(function*() {
        const store = yield* PgStore.makeFromUrl(poolerUrl, {
          table: table("hints_pooled"),
          ensureSchema: true,
          listen: { url: directUrl }
        })
        const hints = yield* counting(store, "jobs")
        const other = yield* counting(store, "other")
        const lease = yield* store.acquire("jobs", "a", Duration.seconds(15), null)
        // A release that gives nothing up (a stale fence) sends nothing; hints
        // arrive in commit order, so the one after it shows it sent none.
        yield* store.release("jobs", "a", lease.fence + 1n)
        yield* store.release("jobs", "a", lease.fence)
        yield* until(() => hints.count === 1)
        yield* store.release("jobs", "a", lease.fence)
        yield* store.acquire("other", "a", Duration.seconds(15), null).pipe(
          Effect.flatMap((l) => store.release("other", "a", l.fence))
        )
        yield* until(() => other.count === 1)
        expect(hints.count).toBe(1)
      }),
    20_000
  )

  it.scopedLive(
    "listen: true listens on the store's own (direct) URL; without it the store has no hints",
    () =>
      Effect.gen(function*() {
        const name = table("hints_direct")
        const plain = yield* PgStore.makeFromUrl(directUrl, { table: name, ensureSchema: true })
        expect(plain.wakeUps).toBeUndefined()
        const store = yield* PgStore.makeFromUrl(directUrl, { table: name, listen: true })
        const hints = yield* counting(store, "jobs")
        // The plain store's release sends the hint too: the listener hears every writer of the table.
        const lease = yield* plain.acquire("jobs", "a", Duration.seconds(15), null)
        yield* plain.release("jobs", "a", lease.fence)
        yield* until(() => hints.count === 1)
      }),
    20_000
  )

  it.scopedLive(
    "a follower woken by the hint leads one round trip after a clean shutdown",
    () =>
      Effect.gen(function*() {
        const store = yield* PgStore.makeFromUrl(poolerUrl, {
          table: table("hints_elect"),
          ensureSchema: true,
          listen: { url: directUrl }
        })
        const config = { name: "jobs", retryPeriod: "10 seconds", leaseDuration: "60 seconds" } as const
        const a = yield* Elector.make({ ...config, identity: "a" }).pipe(Effect.provideService(Store.Store, store))
        const b = yield* Elector.make({ ...config, identity: "b" }).pipe(Effect.provideService(Store.Store, store))
        const runA = yield* Effect.fork(a.run)
        yield* until(() => Effect.runSync(a.isLeader))
        yield* Effect.fork(b.run)
        yield* b.ready
        yield* Fiber.interrupt(runA)
        // Far sooner than b's next poll (10 s), which the test's timeout does not reach.
        yield* until(() => Effect.runSync(b.isLeader))
      }),
    8_000
  )

  it.scopedLive(
    "a lost listening connection is counted and comes back; the store goes on meanwhile",
    () =>
      Effect.gen(function*() {
        const name = table("hints_lost")
        const store = yield* PgStore.makeFromUrl(directUrl, { table: name, ensureSchema: true, listen: true })
        const hints = yield* counting(store, "jobs")
        const before = (yield* Metric.value(Metrics.hintListenerLosses)).count
        const listen = `LISTEN ${PgStore.hintChannel(store.table)}`
        // The store is built once its listener listens.
        expect(yield* terminate(listen)).toBe(1)
        const lease = yield* store.acquire("jobs", "a", Duration.seconds(15), null)
        yield* until(() => Effect.runSync(Metric.value(Metrics.hintListenerLosses)).count > before)
        // Listening again: a release is heard.
        const released = Effect.zipRight(
          store.release("jobs", "a", lease.fence),
          Effect.flatMap(
            store.acquire("jobs", "a", Duration.seconds(15), null),
            (l) => store.release("jobs", "a", l.fence)
          )
        )
        yield* Effect.repeat(Effect.zipRight(released, Effect.sleep("20 millis")), { until: () => hints.count > 0 })
      }),
    20_000
  )

  it.scopedLive(
    "a listening URL that does not answer is a loss too, and a refused one is refused up front",
    () =>
      Effect.gen(function*() {
        // Accepts connections and never says a word.
        const silent = yield* Effect.acquireRelease(
          Effect.async<net.Server>((resume) => {
            const server = net.createServer(() => {})
            server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
          }),
          (server) => Effect.sync(() => server.close())
        )
        const { port } = silent.address() as net.AddressInfo
        const before = (yield* Metric.value(Metrics.hintListenerLosses)).count
        const store = yield* PgStore.makeFromUrl(directUrl, {
          table: table("hints_silent"),
          ensureSchema: true,
          operationTimeout: "200 millis",
          listen: { url: `postgres://127.0.0.1:${port}/test` }
        })
        yield* until(() => Effect.runSync(Metric.value(Metrics.hintListenerLosses)).count > before)
        // The store itself answers.
        yield* store.acquire("jobs", "a", Duration.seconds(15), null)
        const refused = yield* Effect.flip(PgStore.makeFromUrl(directUrl, { listen: { url: "mysql://db/app" } }))
        expect(refused).toMatchObject({ _tag: "InvalidConfig", field: "listen.url" })
      }),
    20_000
  )

  it.scopedLive(
    "a lost listening connection is logged with the driver's own error",
    () =>
      Effect.gen(function*() {
        const warnings = yield* logLines(LogLevel.Warning)
        // A port nothing listens on: the connection is refused.
        const port = yield* Effect.async<number>((resume) => {
          const server = net.createServer().listen(0, "127.0.0.1", () => {
            const { port } = server.address() as net.AddressInfo
            server.close(() => resume(Effect.succeed(port)))
          })
        })
        yield* PgStore.makeFromUrl(directUrl, {
          table: table("hints_refused"),
          listen: { url: `postgres://127.0.0.1:${port}/test` }
        })
        yield* until(() => warnings.length > 0)
        expect(warnings[0]).toContain(`connect ECONNREFUSED 127.0.0.1:${port}`)
        expect(warnings[0]).not.toContain("UnknownException")
      }),
    20_000
  )
})
