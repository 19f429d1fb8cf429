/**
 * A store decorator that injects faults per operation: calls that hang, fail,
 * die, or are applied while their reply is lost. Tests and the simulation use
 * it to break the path between a participant and the shared record.
 */
import { Duration, Effect } from "effect"
import * as Store from "../../Store.js"
import * as Batch from "../../stores/internal/batch.js"
import { callsPerRequest } from "../../stores/internal/rules.js"

/**
 * What one operation does while the fault is set: the one vocabulary of
 * FaultyStore and of the simulation's schedules. Plain data (times in
 * milliseconds), so that a schedule holding faults is JSON.
 */
export type Fault =
  | { readonly _tag: "Pass" }
  | { readonly _tag: "Hang" }
  | { readonly _tag: "Fail"; readonly retryable: boolean }
  | { readonly _tag: "Die" }
  /** The request reaches the database and is applied; the answer never arrives. */
  | { readonly _tag: "LostReply" }
  /** The request waits `millis` before it reaches the database. */
  | { readonly _tag: "Delay"; readonly millis: number }
  /** The request is applied at once; its answer takes `millis` to come back. */
  | { readonly _tag: "SlowReply"; readonly millis: number }
  /** The call never answers, and cancelling it takes `millis` (a driver that waits on the server to cancel). */
  | { readonly _tag: "SlowCancel"; readonly millis: number }

const millis = (d: Duration.DurationInput): number => Duration.toMillis(Duration.decode(d))

export const pass: Fault = { _tag: "Pass" }
export const hang: Fault = { _tag: "Hang" }
export const fail: Fault = { _tag: "Fail", retryable: true }
export const fatal: Fault = { _tag: "Fail", retryable: false }
export const die: Fault = { _tag: "Die" }
export const lostReply: Fault = { _tag: "LostReply" }
export const delay = (d: Duration.DurationInput): Fault => ({ _tag: "Delay", millis: millis(d) })
export const slowReply = (d: Duration.DurationInput): Fault => ({ _tag: "SlowReply", millis: millis(d) })
export const slowCancel = (d: Duration.DurationInput): Fault => ({ _tag: "SlowCancel", millis: millis(d) })

export interface FaultyStore extends Store.StoreShape {
  /** Sets the fault for one operation, or for all of them. */
  readonly set: (fault: Fault, operation?: Store.Operation) => void
  /** How many calls each operation received (with {@link Batched}: a request of renewals is one). */
  readonly calls: Record<Store.Operation, number>
}

/** A FaultyStore that counts its requests of renewals (see {@link Batched}). */
export interface Counted extends FaultyStore {
  /** With {@link Batched}: the requests of several renewals answered, and those partly renewed. */
  readonly batches: { several: number; partly: number }
}

/**
 * Renewals coalesced as a SQL store's are (`stores/internal/batch.ts`), over
 * `renewAll` (a MemoryStore's, from `makeWithContents`). Each request goes
 * through the faults of `renew` as one call: a fault fails, loses or hangs
 * every renewal in it, and a `Delay` lets some of its leases run out before
 * it lands, so that it is partly renewed. A request is bounded by `timeout`,
 * as a SQL store's call is; so is each caller.
 */
export interface Batched {
  readonly renewAll: Batch.RenewAll<never>
  readonly timeout: Duration.Duration
}

const everyOperation = [
  "acquire",
  "renew",
  "release",
  "inspect",
  "advertise",
  "withdraw",
  "claimSlot",
  "completeSlot",
  "lastSlot"
] as const

const timedOut = () =>
  new Store.StoreError({ operation: "renew", retryable: true, reason: "injected timeout", cause: undefined })

export const make = (inner: Store.StoreShape, batched?: Batched): Counted => {
  const faults = new Map<Store.Operation, Fault>()
  const calls: Record<Store.Operation, number> = {
    acquire: 0,
    renew: 0,
    release: 0,
    inspect: 0,
    advertise: 0,
    withdraw: 0,
    ensureSchema: 0,
    claimSlot: 0,
    completeSlot: 0,
    lastSlot: 0
  }
  const wrap = <A, E>(
    operation: Store.Operation,
    effect: Effect.Effect<A, E>
  ): Effect.Effect<A, E | Store.StoreError> =>
    Effect.suspend((): Effect.Effect<A, E | Store.StoreError> => {
      calls[operation]++
      const fault = faults.get(operation) ?? pass
      switch (fault._tag) {
        case "Pass":
          return effect
        case "Hang":
          return Effect.never
        case "Fail":
          return Effect.fail(
            new Store.StoreError({ operation, retryable: fault.retryable, reason: "injected", cause: undefined })
          )
        case "Die":
          return Effect.die(new Error("injected defect"))
        case "LostReply":
          return Effect.zipRight(Effect.ignore(effect), Effect.never)
        case "Delay":
          return Effect.zipRight(Effect.sleep(Duration.millis(fault.millis)), effect)
        case "SlowReply":
          return Effect.zipLeft(effect, Effect.sleep(Duration.millis(fault.millis)))
        case "SlowCancel":
          return Effect.onInterrupt(Effect.never, () => Effect.sleep(Duration.millis(fault.millis)))
      }
    })
  const batches = { several: 0, partly: 0 }
  const renew: Store.StoreShape["renew"] = batched === undefined
    ? (...args) => wrap("renew", inner.renew(...args))
    : Batch.renewals((renewals) =>
      wrap("renew", batched.renewAll(renewals)).pipe(
        Effect.timeoutFail({ duration: batched.timeout, onTimeout: timedOut }),
        Effect.tap((leases) => {
          if (leases.length < 2) return
          batches.several++
          if (leases.includes(undefined) && leases.some((lease) => lease !== undefined)) batches.partly++
        })
      ), { limit: callsPerRequest, timeout: batched.timeout, timedOut })
  const slots = inner.slots
  const { advertise, withdraw } = inner
  return {
    set: (fault, operation) => {
      if (operation === undefined) {
        for (const op of everyOperation) faults.set(op, fault)
      } else {
        faults.set(operation, fault)
      }
    },
    calls,
    batches,
    // Faults break the path, not what the store keeps: an acquire that gets
    // through records its incarnation as the store would. (`answersWithin`
    // is not kept: a hang breaks that promise.)
    incarnations: inner.incarnations,
    acquire: (...args) => wrap("acquire", inner.acquire(...args)),
    renew,
    release: (...args) => wrap("release", inner.release(...args)),
    inspect: (...args) => wrap("inspect", inner.inspect(...args)),
    ...(slots === undefined ? {} : {
      slots: {
        claim: (...args) => wrap("claimSlot", slots.claim(...args)),
        complete: (...args) => wrap("completeSlot", slots.complete(...args)),
        last: (...args) => wrap("lastSlot", slots.last(...args))
      }
    }),
    ...(advertise === undefined || withdraw === undefined ? {} : {
      advertise: (...args) => wrap("advertise", advertise(...args)),
      withdraw: (...args) => wrap("withdraw", withdraw(...args))
    })
  }
}
