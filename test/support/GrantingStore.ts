/**
 * The cheapest store that lets one participant lead forever: every acquire
 * and renewal is granted for the full duration asked, under fence 1. The
 * memory test and benchmark use it so that what they measure is the elector,
 * not a database model.
 */
import { Duration, Effect } from "effect"
import type * as Lease from "../../src/Lease.js"
import * as Store from "../../src/Store.js"

export interface GrantingStore extends Store.StoreShape {
  /** Renewals granted so far. */
  readonly renewals: () => number
}

export const make = (): GrantingStore => {
  let renewals = 0
  const grant = (name: string, holder: string, ttl: Duration.Duration, payload: Uint8Array | null): Lease.Lease => {
    const epoch = new Date(0)
    return {
      name,
      holder,
      fence: 1n,
      payload,
      acquiredAt: epoch,
      renewedAt: epoch,
      expiresAt: new Date(Duration.toMillis(ttl)),
      now: epoch
    }
  }
  return {
    renewals: () => renewals,
    acquire: (name, identity, ttl, payload) => Effect.sync(() => grant(name, identity, ttl, payload)),
    renew: (name, identity, _fence, ttl, payload) =>
      Effect.sync(() => {
        renewals++
        return grant(name, identity, ttl, payload)
      }),
    release: () => Effect.void,
    inspect: (name) => Effect.fail(new Store.NoLease({ name }))
  }
}
