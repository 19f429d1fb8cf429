/**
 * The in-memory reference store. It elects among fibers of one process, so it
 * is no substitute for a real database across processes; it exists to test
 * applications and the elector itself, and to pin down the store contract
 * that every real store is held to by the same acceptance suite.
 *
 * Its "database clock" is a {@link DatabaseClock}: by default it follows
 * Effect's `Clock` (so `TestClock` drives it) and it can be offset, run at
 * another rate and stepped backwards, the way a real server's clock can
 * disagree with its clients'.
 *
 * @since 0.1.0
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { stackless } from "../internal/runtime/stackless.js"
import * as WakeUps from "../internal/runtime/wakeUps.js"
import { fenceJump, type Lease } from "../Lease.js"
import {
  type Candidacy,
  type Candidate,
  enforceLimits,
  LeaseLost,
  NoLease,
  type SlotRecord,
  Store,
  type StoreShape
} from "../Store.js"
import type * as Batch from "./internal/batch.js"

/**
 * The clock a {@link make | MemoryStore} stamps its records with.
 *
 * @since 0.1.0
 * @category models
 */
export interface DatabaseClock {
  /** The database's current time. */
  readonly now: Effect.Effect<Date>
  /** Steps the clock backwards, as an NTP correction might. */
  readonly stepBack: (amount: Duration.DurationInput) => Effect.Effect<void>
}

/**
 * What `makeClock` takes: the simulated database clock's offset from the
 * local one and its rate.
 *
 * @since 0.1.0
 * @category models
 */
export interface DatabaseClockOptions {
  /** How far the database clock is ahead of the local one (negative: behind). */
  readonly offset?: Duration.DurationInput | undefined
  /** Database seconds per local second. Defaults to 1. */
  readonly rate?: number | undefined
}

/**
 * Builds a database clock from the `Clock` in the environment at the time it
 * is made. The clock is captured once, so callers that run with other clocks
 * (say, at other rates) all see the same database time.
 *
 * @since 0.1.0
 * @category constructors
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { MemoryStore } from "effect-leaderelection"
 *
 * const program = Effect.gen(function* () {
 *   const clock = yield* MemoryStore.makeClock({ offset: "3 days" })
 *   const store = yield* MemoryStore.make({ clock })
 *   return store
 * })
 * ```
 */
export const makeClock = (options: DatabaseClockOptions = {}): Effect.Effect<DatabaseClock> =>
  Effect.gen(function*() {
    const local = yield* Effect.clock
    const origin = yield* local.currentTimeMillis
    const offset = Duration.toMillis(options.offset ?? Duration.zero)
    const rate = options.rate ?? 1
    let steppedBack = 0
    return {
      now: Effect.map(local.currentTimeMillis, (millis) =>
        new Date(Math.floor(origin + offset + (millis - origin) * rate - steppedBack))),
      stepBack: (amount) =>
        Effect.sync(() => {
          steppedBack += Duration.toMillis(amount)
        })
    }
  })

/**
 * What `make` and `layer` take: the store's database clock.
 *
 * @since 0.1.0
 * @category models
 */
export interface MemoryStoreOptions {
  /** The database clock. Defaults to `makeClock()` on the ambient `Clock`. */
  readonly clock?: DatabaseClock | undefined
}

interface Row {
  readonly holder: string
  readonly incarnation: string | undefined
  readonly fence: bigint
  readonly payload: Uint8Array | null
  readonly acquiredAt: number
  readonly renewedAt: number
  readonly expiresAt: number
  /** The generation of the store's "server" that wrote the row (see `makeWithContents`). */
  readonly server: number
}

interface Advertisement extends Candidacy {
  readonly since: number
  readonly expiresAt: number
}

const toLease = (name: string, row: Row, now: number): Lease => ({
  name,
  holder: row.holder,
  // Only when there is one: a lease without reads as a 0.1 store's did.
  ...(row.incarnation === undefined ? {} : { incarnation: row.incarnation }),
  fence: row.fence,
  payload: row.payload,
  acquiredAt: new Date(row.acquiredAt),
  renewedAt: new Date(row.renewedAt),
  expiresAt: new Date(row.expiresAt),
  now: new Date(now)
})

/**
 * Builds an in-memory store. Every operation is atomic and linearizable: it
 * reads the database clock and applies its change under one lock. A release
 * that gives a lease up wakes the election's followers in the process
 * (`wakeUps`), as the PostgreSQL store's listener does: a clean handover
 * takes one claim, not a poll's wait. It keeps incarnations
 * (`StoreShape.incarnations`).
 *
 * @since 0.1.0
 * @category constructors
 * @example
 * ```ts
 * import { Duration, Effect } from "effect"
 * import { MemoryStore } from "effect-leaderelection"
 *
 * const lease = MemoryStore.make().pipe(
 *   Effect.flatMap((store) => store.acquire("jobs", "a", Duration.seconds(15), null))
 * )
 * ```
 */
export const make = (options: MemoryStoreOptions = {}): Effect.Effect<StoreShape> =>
  Effect.map(makeWithContents(options), ({ store }) => store)

/**
 * What a MemoryStore holds (its leases, job slots and candidates), copied.
 *
 * @internal
 */
export interface Contents {
  readonly rows: ReadonlyMap<string, Row>
  readonly slots: ReadonlyMap<string, ReadonlyMap<number, SlotRecord>>
  readonly candidates: ReadonlyMap<string, ReadonlyMap<string, Advertisement>>
}

/** Every table of `from` into `to`, replacing what `to` held (rows are never changed in place, only replaced). */
const copyInto = (
  from: Contents,
  to: {
    readonly rows: Map<string, Row>
    readonly slots: Map<string, Map<number, SlotRecord>>
    readonly candidates: Map<string, Map<string, Advertisement>>
  }
): void => {
  to.rows.clear()
  to.slots.clear()
  to.candidates.clear()
  for (const [name, row] of from.rows) to.rows.set(name, row)
  for (const [key, all] of from.slots) to.slots.set(key, new Map(all))
  for (const [name, election] of from.candidates) to.candidates.set(name, new Map(election))
}

/**
 * A MemoryStore with its contents in reach, for tests only: the fleet
 * simulation copies them and later puts a copy back, as a promoted
 * asynchronous standby that missed the last writes serves an older copy of
 * the database. Both run under the store's lock, between operations; the
 * database clock is not part of the contents.
 *
 * `restore` also stands for the change of server: the store numbers its
 * servers (generations), every row records the one that wrote it, and
 * `restore` moves on to the next, so that what it put back reads as written
 * elsewhere and the store's claims hold it back, as a SQL store's do after a
 * failover.
 *
 * @internal
 */
export const makeWithContents = (options: MemoryStoreOptions = {}): Effect.Effect<{
  readonly store: StoreShape
  /** Several renewals at one instant, as a SQL store's request of them (`stores/internal/batch.ts`). */
  readonly renewAll: Batch.RenewAll<never>
  readonly copy: Effect.Effect<Contents>
  readonly restore: (contents: Contents) => Effect.Effect<void>
}> =>
  Effect.gen(function*() {
    const clock = options.clock ?? (yield* makeClock())
    const rows = new Map<string, Row>()
    // Slots by election and job, each job's by instant.
    const slots = new Map<string, Map<number, SlotRecord>>()
    const slotsOf = (name: string, job: string) => {
      const key = JSON.stringify([name, job])
      const found = slots.get(key) ?? new Map<number, SlotRecord>()
      slots.set(key, found)
      return found
    }
    const holds = (name: string, identity: string, fence: bigint, now: number): boolean => {
      const row = rows.get(name)
      return row !== undefined && row.holder === identity && row.fence === fence && row.expiresAt > now
    }
    // Per election, per identity.
    const candidates = new Map<string, Map<string, Advertisement>>()
    let server = 0
    const lock = yield* Effect.makeSemaphore(1)
    const wakeUps = WakeUps.make()
    const atomically = <A, E>(f: (now: number) => Effect.Effect<A, E>): Effect.Effect<A, E> =>
      lock.withPermits(1)(Effect.flatMap(clock.now, (now) => f(now.getTime())))

    /** The renewed lease, or none when the guard matches no row. */
    const renewRow = (now: number, { fence, identity, name, payload, ttl }: Batch.Renewal): Lease | undefined => {
      const row = rows.get(name)
      if (row === undefined || row.holder !== identity || row.fence !== fence || row.expiresAt <= now) return undefined
      // Restamped: the leader whose lease survived a change of server keeps leading.
      const next: Row = { ...row, payload, renewedAt: now, expiresAt: now + Duration.toMillis(ttl), server }
      rows.set(name, next)
      return toLease(name, next, now)
    }

    const tables = { rows, slots, candidates }
    const store = enforceLimits({
      wakeUps: { subscribe: wakeUps.subscribe },
      incarnations: true,
      acquire: (name, identity, ttl, payload, incarnation) =>
        atomically((now) =>
          Effect.sync(() => {
            const row = rows.get(name)
            const expiresAt = now + Duration.toMillis(ttl)
            const begun = { acquiredAt: now, renewedAt: now, expiresAt, server }
            const write = (next: Row) => {
              rows.set(name, next)
              return toLease(name, next, now)
            }
            if (row === undefined) return write({ holder: identity, incarnation, fence: 1n, payload, ...begun })
            const expired = row.expiresAt <= now
            const same = row.holder === identity && row.incarnation === incarnation
            if (row.server !== server) {
              // Written by another server, which may have handed out terms this one never saw.
              return expired || same
                ? write({ holder: "", incarnation: undefined, fence: row.fence + fenceJump, payload: null, ...begun })
                : toLease(name, row, now)
            }
            if (expired) return write({ holder: identity, incarnation, fence: row.fence + 1n, payload, ...begun })
            return same ? write({ ...row, payload, renewedAt: now, expiresAt }) : toLease(name, row, now)
          })
        ),
      renew: (name, identity, fence, ttl, payload) =>
        atomically((now) => {
          const lease = renewRow(now, { name, identity, fence, ttl, payload })
          return lease === undefined ? Effect.fail(new LeaseLost({ name, identity, fence })) : Effect.succeed(lease)
        }),
      release: (name, identity, fence) =>
        atomically((now) =>
          Effect.sync(() => {
            const row = rows.get(name)
            if (row !== undefined && row.holder === identity && row.fence === fence && row.expiresAt > now) {
              rows.set(name, { ...row, renewedAt: now, expiresAt: now })
              // Woken followers resume after this call: their claims see the release.
              wakeUps.wake(name)
            }
          })
        ),
      inspect: (name) =>
        atomically((now) => {
          const row = rows.get(name)
          // Stackless: an empty election answers every poll with it, and a
          // stack would keep the fiber that made it alive with the error.
          return row === undefined
            ? Effect.fail(stackless(() => new NoLease({ name })))
            : Effect.succeed(toLease(name, row, now))
        }),
      slots: {
        claim: (name, identity, fence, job, at, reclaim) =>
          atomically((now) => {
            if (!holds(name, identity, fence, now)) return Effect.fail(new LeaseLost({ name, identity, fence }))
            const all = slotsOf(name, job)
            const found = all.get(at.getTime())
            const claimed = found === undefined ||
              (found.completedAt === null && (found.fence === fence || (reclaim && found.fence < fence)))
            const slot: SlotRecord = claimed
              ? { job, at: new Date(at.getTime()), fence, startedAt: new Date(now), completedAt: null }
              : found
            all.set(at.getTime(), slot)
            return Effect.succeed({ claimed, slot, now: new Date(now) })
          }),
        complete: (name, identity, fence, job, at) =>
          atomically((now) => {
            const all = slotsOf(name, job)
            const found = all.get(at.getTime())
            if (!holds(name, identity, fence, now) || found === undefined || found.fence !== fence) {
              return Effect.fail(new LeaseLost({ name, identity, fence }))
            }
            all.set(at.getTime(), { ...found, completedAt: found.completedAt ?? new Date(now) })
            return Effect.succeed(new Date(now))
          }),
        last: (name, job) =>
          atomically((now) =>
            Effect.sync(() => {
              const all = [...slotsOf(name, job).values()]
              const slot = all.reduce<SlotRecord | undefined>(
                (latest, s) => latest === undefined || s.at > latest.at ? s : latest,
                undefined
              )
              return { now: new Date(now), slot }
            })
          )
      },
      advertise: (name, identity, { priority, version }, ttl) =>
        atomically((now) =>
          Effect.sync(() => {
            const ttlMillis = Duration.toMillis(ttl)
            const election = candidates.get(name) ?? new Map<string, Advertisement>()
            candidates.set(name, election)
            const before = election.get(identity)
            const since = before !== undefined && before.expiresAt > now ? before.since : now
            election.set(identity, { priority, version, since, expiresAt: now + ttlMillis })
            const live: Array<Candidate> = []
            for (const [who, ad] of election) {
              if (ad.expiresAt <= now - ttlMillis) election.delete(who)
              else if (ad.expiresAt > now) {
                live.push({
                  identity: who,
                  priority: ad.priority,
                  version: ad.version,
                  aliveFor: Duration.millis(now - ad.since),
                  ttl: Duration.millis(ad.expiresAt - now)
                })
              }
            }
            return live
          })
        ),
      withdraw: (name, identity) =>
        atomically(() =>
          Effect.sync(() => {
            candidates.get(name)?.delete(identity)
          })
        )
    })
    return {
      store,
      renewAll: (renewals) => atomically((now) => Effect.sync(() => renewals.map((renewal) => renewRow(now, renewal)))),
      copy: atomically(() =>
        Effect.sync(() => {
          const contents = { rows: new Map(), slots: new Map(), candidates: new Map() }
          copyInto(tables, contents)
          return contents
        })
      ),
      restore: (contents: Contents) =>
        atomically(() =>
          Effect.sync(() => {
            copyInto(contents, tables)
            server++
          })
        )
    }
  })

/**
 * The in-memory store as a layer. Every participant that should take part in
 * the same elections must be given the same layer value (layers are shared
 * by reference), or the same `StoreShape` from {@link make}.
 *
 * @since 0.1.0
 * @category layers
 * @example
 * ```ts
 * import { Layer } from "effect"
 * import { Elector, MemoryStore } from "effect-leaderelection"
 *
 * const ElectorLive = Elector.layer({ name: "jobs" }).pipe(
 *   Layer.provide(MemoryStore.layer())
 * )
 * ```
 */
export const layer = (options: MemoryStoreOptions = {}): Layer.Layer<Store> => Layer.effect(Store, make(options))
