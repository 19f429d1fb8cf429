/**
 * A custom store, the kind you would write for SQLite, DynamoDB or an
 * in-house key-value service: one record per election in a Map, timestamps
 * from Effect's Clock (standing in for the database's clock).
 *
 * `make({ bumpFence: false })` is the same store with a classic bug: taking
 * over an expired lease keeps the old fence, so two terms share a fence and
 * fenced writes can no longer tell the old leader from the new one. The
 * acceptance suite catches it (see testing.test.ts).
 */
import { Clock, Duration, Effect, Layer } from "effect"
import { type Lease, Store } from "effect-leaderelection"

interface Row {
  readonly holder: string
  readonly fence: bigint
  readonly payload: Uint8Array | null
  readonly acquiredAt: number
  readonly renewedAt: number
  readonly expiresAt: number
}

export interface MapStoreOptions {
  /** false: the bug. A takeover keeps the previous term's fence. */
  readonly bumpFence?: boolean
}

const toLease = (name: string, row: Row, now: number): Lease.Lease => ({
  name,
  holder: row.holder,
  fence: row.fence,
  payload: row.payload,
  acquiredAt: new Date(row.acquiredAt),
  renewedAt: new Date(row.renewedAt),
  expiresAt: new Date(row.expiresAt),
  now: new Date(now)
})

export const make = (options: MapStoreOptions = {}): Store.StoreShape => {
  const rows = new Map<string, Row>()
  const bump = options.bumpFence === false ? 0n : 1n
  // Every operation reads the clock and the Map in one synchronous step: atomic.
  const atomically = <A, E>(f: (now: number) => Effect.Effect<A, E>) => Effect.flatMap(Clock.currentTimeMillis, f)
  return Store.enforceLimits({
    acquire: (name, identity, ttl, payload) =>
      atomically((now) =>
        Effect.sync(() => {
          const row = rows.get(name)
          const expiresAt = now + Duration.toMillis(ttl)
          if (row === undefined || row.expiresAt <= now) {
            const fence = row === undefined ? 1n : row.fence + bump
            const next: Row = { holder: identity, fence, payload, acquiredAt: now, renewedAt: now, expiresAt }
            rows.set(name, next)
            return toLease(name, next, now)
          }
          if (row.holder !== identity) return toLease(name, row, now)
          const next: Row = { ...row, payload, renewedAt: now, expiresAt }
          rows.set(name, next)
          return toLease(name, next, now)
        })
      ),
    renew: (name, identity, fence, ttl, payload) =>
      atomically((now) => {
        const row = rows.get(name)
        if (row === undefined || row.holder !== identity || row.fence !== fence || row.expiresAt <= now) {
          return Effect.fail(new Store.LeaseLost({ name, identity, fence }))
        }
        const next: Row = { ...row, payload, renewedAt: now, expiresAt: now + Duration.toMillis(ttl) }
        rows.set(name, next)
        return Effect.succeed(toLease(name, next, now))
      }),
    release: (name, identity, fence) =>
      atomically((now) =>
        Effect.sync(() => {
          const row = rows.get(name)
          if (row !== undefined && row.holder === identity && row.fence === fence && row.expiresAt > now) {
            rows.set(name, { ...row, expiresAt: now })
          }
        })
      ),
    inspect: (name) =>
      atomically((now) => {
        const row = rows.get(name)
        return row === undefined ? Effect.fail(new Store.NoLease({ name })) : Effect.succeed(toLease(name, row, now))
      })
  })
}

export const layer = (options: MapStoreOptions = {}): Layer.Layer<Store.Store> =>
  Layer.sync(Store.Store, () => make(options))
