/**
 * A fleet of real electors in one process, each with its own PgStore (its
 * own pg pool) connecting through its own FaultProxy, wired to the
 * IntervalOracle. Scenarios and the failover benchmark both build on it.
 */
import { Clock, Duration, Effect, Exit, Fiber, Layer, Logger, Scope } from "effect"
import * as Elector from "../../src/Elector.js"
import type * as Store from "../../src/Store.js"
import * as PgStore from "../../src/stores/PgStore.js"
import { type Interval, IntervalOracle } from "./harness/IntervalOracle.js"
import { sleep } from "./harness/process.js"
import type { Topology } from "./harness/Topology.js"

/** The short lease every chaos participant runs with. */
export const timing = {
  leaseDuration: Duration.seconds(3),
  // 1s does not validate: renewInterval + 2 * operationTimeout + retryDelay
  // (1 + 1 + 0.25) must fit in leaseDuration - safetyMargin (3 - 1).
  renewInterval: Duration.millis(750),
  retryPeriod: Duration.millis(500),
  operationTimeout: Duration.millis(500)
} as const

/** Once faults end: a lease left behind expires, then a follower's poll claims it. */
export const livenessBoundMs = Duration.toMillis(timing.leaseDuration) + 7_000

/** How the participants reach the database: straight through their proxies, or on through one PgBouncer. */
export type Path = "direct" | "pooled"

export const table = "chaos_election"

/** Creates the election table on the throwaway database, once, before any fleet starts. */
export const ensureSchema = (url: string): Promise<void> =>
  Effect.runPromise(
    Effect.scoped(Layer.build(PgStore.layerFromUrl(url, { table, ensureSchema: true }))).pipe(
      Effect.asVoid
    )
  )

/** The store a chaos participant uses unless told otherwise. */
export const pgStore = (url: string): Layer.Layer<Store.Store, unknown> =>
  PgStore.layerFromUrl(url, { table, operationTimeout: timing.operationTimeout, maxConnections: 2 })

/** A clock `offset` away from the live one, in wall time and in monotonic time. */
export const offsetClock = (offset: Duration.Duration): Clock.Clock => {
  const live = Clock.make()
  const millis = Duration.toMillis(offset)
  const nanos = Duration.unsafeToNanos(offset)
  return {
    [Clock.ClockTypeId]: Clock.ClockTypeId,
    unsafeCurrentTimeMillis: () => live.unsafeCurrentTimeMillis() + millis,
    currentTimeMillis: Effect.map(live.currentTimeMillis, (ms) => ms + millis),
    unsafeCurrentTimeNanos: () => live.unsafeCurrentTimeNanos() + nanos,
    currentTimeNanos: Effect.map(live.currentTimeNanos, (ns) => ns + nanos),
    sleep: (duration) => live.sleep(duration)
  }
}

export interface FleetOptions {
  readonly participants?: ReadonlyArray<string>
  /** Keep the lease on shutdown: stopping a participant is then a crash. */
  readonly disableRelease?: boolean
  /** Runs a participant's elector under a clock this far off. */
  readonly clockOffsets?: Readonly<Record<string, Duration.Duration>>
  /** More configuration for a participant (say, its priority and version). */
  readonly configure?: ((id: string) => Partial<Elector.ElectorConfig>) | undefined
  /** The store each participant reaches its URL with (default: a PgStore with two connections). */
  readonly store?: ((url: string) => Layer.Layer<Store.Store, unknown>) | undefined
}

interface Member {
  readonly scope: Scope.CloseableScope
  readonly fiber: Fiber.RuntimeFiber<unknown, unknown>
  readonly elector: Elector.ElectorShape
}

export interface Fleet {
  readonly name: string
  readonly ids: ReadonlyArray<string>
  readonly oracle: IntervalOracle
  /** Timestamped elector logs, on the oracle's clock. */
  readonly logs: Array<string>
  /** Whoever believes it leads now, per the oracle. */
  leader(): string | undefined
  isLeading(id: string): boolean
  /** Resolves with a running term (of anyone but `not`) as soon as there is one. */
  leaderWithin(timeoutMs: number, not?: string): Promise<Interval>
  /**
   * Resolves with a term that has run, uninterrupted, for `holdMs` from the
   * moment it was first seen here; fails if none has by `timeoutMs + holdMs`.
   */
  stableLeaderWithin(timeoutMs: number, holdMs: number): Promise<Interval>
  /** Resolves with the first term (of anyone but `not`) started at or after `since`, on the oracle's clock. */
  nextTerm(since: number, timeoutMs: number, not?: string): Promise<Interval>
  /** Resolves once `id` no longer leads. */
  steppedDown(id: string, timeoutMs: number): Promise<number>
  start(id: string): Promise<void>
  /** `id` resigns; resolves once its term (if any) has ended. */
  resign(id: string): Promise<void>
  /** Interrupts `id`'s run (releasing unless disableRelease) and closes its pool. */
  stop(id: string): Promise<void>
  destroy(): Promise<void>
}

let elections = 0

const poll = async <A>(what: string, timeoutMs: number, check: () => A | undefined): Promise<A> => {
  const deadline = performance.now() + timeoutMs
  for (;;) {
    const found = check()
    if (found !== undefined) return found
    if (performance.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await sleep(5)
  }
}

export const startFleet = async (
  topology: Pick<Topology, "participants" | "url">,
  options: FleetOptions = {}
): Promise<Fleet> => {
  const ids = options.participants ?? topology.participants
  const name = `chaos-${process.pid}-${++elections}`
  const oracle = new IntervalOracle({ strictFences: true })
  const t0 = performance.now()
  const logs: Array<string> = []
  const members = new Map<string, Member>()

  const logger = (id: string) =>
    Logger.replace(
      Logger.defaultLogger,
      Logger.make(({ logLevel, message }) => {
        const text = Array.isArray(message) ? message.map(String).join(" ") : String(message)
        logs.push(`${(performance.now() - t0).toFixed(0).padStart(6)} ${id} ${logLevel.label} ${text}`)
      })
    )

  const onStartedLeading = (id: string) => (fence: bigint) =>
    // acquireUseRelease: the stop is recorded if and only if the start was.
    Effect.acquireUseRelease(
      Effect.sync(() => oracle.started(id, fence)),
      () => Effect.never,
      () => Effect.sync(() => oracle.stopped(id))
    )

  const start = async (id: string): Promise<void> => {
    if (members.has(id)) throw new Error(`${id} is already running`)
    const scope = Effect.runSync(Scope.make())
    const offset = options.clockOffsets?.[id]
    const make = Elector.make({
      name,
      identity: `${id}-${Math.random().toString(36).slice(2, 8)}`,
      ...timing,
      disableRelease: options.disableRelease ?? false,
      ...options.configure?.(id),
      onStartedLeading: onStartedLeading(id)
    })
    const program = Effect.gen(function*() {
      const context = yield* Layer.buildWithScope((options.store ?? pgStore)(topology.url(id)), scope)
      const elector = yield* (offset === undefined ? make : Effect.withClock(make, offsetClock(offset))).pipe(
        Scope.extend(scope),
        Effect.provide(context)
      )
      return elector
    })
    const elector = await Effect.runPromise(program.pipe(Effect.provide(logger(id))))
    const fiber = Effect.runFork(elector.run.pipe(Effect.provide(logger(id))))
    members.set(id, { scope, fiber, elector })
  }

  const stop = async (id: string): Promise<void> => {
    const member = members.get(id)
    if (member === undefined) return
    members.delete(id)
    await Effect.runPromise(Fiber.interrupt(member.fiber))
    await Effect.runPromise(Scope.close(member.scope, Exit.void))
  }

  const isLeading = (id: string): boolean => oracle.leaders().some((i) => i.id === id)

  const fleet: Fleet = {
    name,
    ids,
    oracle,
    logs,
    leader: () => oracle.leaders()[0]?.id,
    isLeading,
    leaderWithin: (timeoutMs, not) =>
      poll(
        `a leader${not === undefined ? "" : ` other than ${not}`}`,
        timeoutMs,
        () => oracle.leaders().find((i) => i.id !== not)
      ),
    stableLeaderWithin: (timeoutMs, holdMs) => {
      let candidate: { readonly interval: Interval; readonly seenAt: number } | undefined
      return poll(`a leader that keeps leading for ${holdMs} ms`, timeoutMs + holdMs, () => {
        const current = oracle.leaders()[0]
        const now = performance.now()
        if (current === undefined) candidate = undefined
        else if (candidate?.interval !== current) candidate = { interval: current, seenAt: now }
        return candidate !== undefined && now - candidate.seenAt >= holdMs ? candidate.interval : undefined
      })
    },
    nextTerm: (since, timeoutMs, not) =>
      poll(
        `a new term${not === undefined ? "" : ` of someone other than ${not}`}`,
        timeoutMs,
        () => oracle.intervals().find((i) => i.start >= since && i.id !== not)
      ),
    steppedDown: (id, timeoutMs) =>
      poll(`${id} to step down`, timeoutMs, () => isLeading(id) ? undefined : performance.now()),
    start,
    resign: async (id) => {
      const member = members.get(id)
      if (member !== undefined) await Effect.runPromise(member.elector.resign)
    },
    stop,
    destroy: async () => {
      await Promise.all([...members.keys()].map(stop))
    }
  }
  try {
    for (const id of ids) await start(id)
  } catch (error) {
    await fleet.destroy()
    throw error
  }
  return fleet
}
