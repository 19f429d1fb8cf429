/**
 * A live fleet: four participants in one process elect a leader, the leader
 * crashes (no release: the lease must expire), a successor takes over, then
 * hands over cleanly (release: the next poll wins). Each failover is measured
 * on the local monotonic clock, from the moment the leader crashed or began
 * shutting down to the moment its successor's `onStartedLeading` ran.
 *
 *   npm run demo                                        # in memory, no server
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npm run demo
 *   DATABASE_URL=mysql://root@127.0.0.1:3306/test npm run demo
 *
 * With a database, each participant gets a store layer (and a pool) of its
 * own: they are separate participants that share nothing but the table.
 * DEMO_TABLE picks the table (default leader_election), DEMO_PAUSE_MS how long
 * to watch the fleet between events (default 5000).
 */
import { NodeRuntime } from "@effect/platform-node"
import {
  Clock,
  Console,
  Context,
  Duration,
  Effect,
  Exit,
  Fiber,
  Layer,
  Logger,
  LogLevel,
  Option,
  Queue,
  Scope
} from "effect"
import { randomBytes } from "node:crypto"
import { Elector, MemoryStore, Store } from "../src/index.js"
import * as MysqlStore from "../src/stores/MysqlStore.js"
import * as PgStore from "../src/stores/PgStore.js"

const election = "demo"
const fleetSize = 4
const leaseDuration = Duration.seconds(3)
const env = (key: string): string | undefined => {
  const value = process.env[key]
  return value === undefined || value === "" ? undefined : value
}
const pause = Duration.millis(Number(env("DEMO_PAUSE_MS") ?? 5000))
const table = env("DEMO_TABLE") ?? "leader_election"
const url = env("DATABASE_URL")

/** How each participant gets its store: one shared memory store, or a pool of its own per participant. */
const storeFor = (
  url: string | undefined
): Effect.Effect<{ readonly label: string; readonly layer: () => Layer.Layer<Store.Store, unknown> }> =>
  Effect.gen(function*() {
    if (url === undefined) {
      const shared = yield* MemoryStore.make()
      return { label: "an in-memory store (no server)", layer: () => Layer.succeed(Store.Store, shared) }
    }
    const scheme = URL.canParse(url) ? new URL(url).protocol : ""
    const mysql = scheme === "mysql:" || scheme === "mariadb:"
    const redacted = url.replace(/\/\/[^@/]*@/, "//…@")
    return mysql
      ? {
        label: `MySQL/MariaDB at ${redacted}`,
        layer: () => MysqlStore.layerFromUrl(url, { table, ensureSchema: true })
      }
      : { label: `PostgreSQL at ${redacted}`, layer: () => PgStore.layerFromUrl(url, { table, ensureSchema: true }) }
  })

interface Event {
  readonly identity: string
  readonly fence: bigint
  readonly at: bigint
}

interface Participant {
  readonly identity: string
  readonly elector: Elector.ElectorShape
  readonly fiber: Fiber.RuntimeFiber<never, unknown>
  readonly scope: Scope.CloseableScope
  /** Cuts the participant off from the store: nothing it sends arrives any more. */
  readonly crash: Effect.Effect<void>
  /** Why it left the fleet, once it has. */
  readonly gone: () => string | undefined
}

const program = Effect.gen(function*() {
  const started = yield* Clock.currentTimeNanos
  const elapsed = (at: bigint) => `${(Number(at - started) / 1e9).toFixed(2).padStart(6)}s`
  const say = (line: string) =>
    Effect.flatMap(Clock.currentTimeNanos, (now) => Console.log(`[${elapsed(now)}] ${line}`))
  const leaders = yield* Queue.unbounded<Event>()
  const { label, layer } = yield* storeFor(url)
  yield* Console.log(`Leader election "${election}" among ${fleetSize} participants on ${label}.`)
  yield* Console.log(`leaseDuration ${Duration.format(leaseDuration)}, renewInterval 500ms, retryPeriod 500ms\n`)

  const join = (n: number): Effect.Effect<Participant, unknown> =>
    Effect.gen(function*() {
      const identity = `p${n}-${randomBytes(2).toString("hex")}`
      const scope = yield* Scope.make()
      const store = Context.get(yield* Layer.buildWithScope(layer(), scope), Store.Store)
      let crashed = false
      let stopped = false
      yield* Scope.addFinalizer(
        scope,
        Effect.sync(() => {
          stopped = true
        })
      )
      const cut = <A, E>(effect: Effect.Effect<A, E>): Effect.Effect<A, E> =>
        Effect.suspend(() => crashed ? Effect.never : effect)
      const reachable: Store.StoreShape = {
        acquire: (...args) => cut(store.acquire(...args)),
        renew: (...args) => cut(store.renew(...args)),
        release: (...args) => cut(store.release(...args)),
        inspect: (...args) => cut(store.inspect(...args))
      }
      const elector = yield* Elector.make({
        name: election,
        identity,
        leaseDuration,
        renewInterval: "500 millis",
        retryPeriod: "500 millis",
        operationTimeout: "500 millis",
        onStartedLeading: (fence) =>
          Effect.flatMap(Clock.currentTimeNanos, (at) => Queue.offer(leaders, { identity, fence, at }))
      }).pipe(Effect.provideService(Store.Store, reachable), Scope.extend(scope))
      const fiber = yield* Effect.forkDaemon(elector.run)
      return {
        identity,
        elector,
        fiber,
        scope,
        gone: () => crashed ? "crashed" : stopped ? "stopped" : undefined,
        crash: Effect.zipRight(
          Effect.sync(() => {
            crashed = true
          }),
          Fiber.interruptFork(fiber)
        )
      }
    })

  const fleet = yield* Effect.forEach(Array.from({ length: fleetSize }, (_, i) => i + 1), join)
  yield* Effect.addFinalizer(() => Effect.forEach(fleet, (p) => Scope.close(p.scope, Exit.void), { discard: true }))
  yield* say(`started ${fleet.map((p) => p.identity).join(", ")}`)

  const show = Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const views = yield* Effect.forEach(fleet, (p) =>
      Effect.map(p.elector.status, (s) =>
        p.gone() !== undefined
          ? `${p.identity} ${p.gone()}`
          : s.isLeader
          ? `${p.identity} LEADER (fence ${Option.getOrThrow(s.fence)}, ${
            Option.match(s.validUntil, { onNone: () => "?", onSome: (d) => `${d.getTime() - now}ms` })
          } left)`
          : `${p.identity} follows ${Option.getOrElse(s.leader, () => "nobody")}`))
    yield* say(`fleet: ${views.join(" | ")}`)
  })
  const watch = Effect.zipRight(Effect.sleep(Duration.millis(Duration.toMillis(pause) / 2)), show).pipe(
    Effect.repeatN(1)
  )

  const first = yield* Queue.take(leaders)
  yield* say(`${first.identity} leads under fence ${first.fence}`)
  yield* watch

  const failover = (kind: string, from: Participant, stop: Effect.Effect<void>) =>
    Effect.gen(function*() {
      const at = yield* Clock.currentTimeNanos
      yield* say(`${kind}: ${from.identity}`)
      yield* stop
      const next = yield* Queue.take(leaders)
      const took = Duration.nanos(next.at - at)
      yield* say(`${next.identity} leads under fence ${next.fence}`)
      yield* say(`failover after ${kind}: ${Duration.toMillis(took).toFixed(0)}ms`)
      return next
    })
  const member = (event: Event) => Effect.orDie(Effect.fromNullable(fleet.find((p) => p.identity === event.identity)))

  const crashed = yield* member(first)
  const second = yield* failover("crash (no release; the lease must expire)", crashed, crashed.crash)
  yield* watch
  const leaving = yield* member(second)
  yield* failover("clean shutdown (release)", leaving, Scope.close(leaving.scope, Exit.void))
  yield* watch
  yield* say("done")
}).pipe(
  Effect.scoped,
  Logger.withMinimumLogLevel(LogLevel.Error)
)

NodeRuntime.runMain(program)
