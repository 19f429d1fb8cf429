/**
 * The persistence contract an elector needs, and the errors it speaks.
 *
 * A store keeps one row per election. Every method derives all of its
 * timestamps, including the returned `Lease.now`, from the database server
 * within one statement, and none relies on session state (advisory locks,
 * LISTEN, SET, temporary tables, named prepared statements), so every store
 * works unchanged behind a transaction-pooling proxy such as PgBouncer. (A
 * statement may send a `pg_notify` hint: it is delivered when the statement
 * commits and leaves nothing on the connection. Listening for hints takes a
 * direct connection of its own, see {@link WakeUps}.)
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import type * as Duration from "effect/Duration"
import type * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import type * as Scope from "effect/Scope"
import type { InvalidConfig } from "./ElectorError.js"
import * as limits from "./internal/config/limits.js"
import type { Lease } from "./Lease.js"

/**
 * The store operation an error came from.
 *
 * @since 0.1.0
 * @category models
 */
export type Operation =
  | "acquire"
  | "renew"
  | "release"
  | "inspect"
  | "advertise"
  | "withdraw"
  | "ensureSchema"
  | SlotOperation

/**
 * The operations of {@link SlotStore}, the record of scheduled job slots.
 *
 * @since 0.1.0
 * @category models
 */
export type SlotOperation = "claimSlot" | "completeSlot" | "lastSlot"

/**
 * A renewal's guard (name, holder, fence, not yet expired on the database
 * clock) matched no row: the caller is not the leader any more and must stop
 * acting as one before doing anything else.
 *
 * @since 0.1.0
 * @category errors
 * @example
 * ```ts
 * import { Store } from "effect-leaderelection"
 *
 * const error = new Store.LeaseLost({ name: "jobs", identity: "a", fence: 3n })
 * console.log(error.message)
 * ```
 */
export class LeaseLost extends Data.TaggedError("LeaseLost")<{
  readonly name: string
  readonly identity: string
  readonly fence: bigint
}> {
  override get message(): string {
    return `lease "${this.name}" is no longer held by ${this.identity} under fence ${this.fence}`
  }
}

/**
 * `inspect` found no record for the election. It means nobody has ever led
 * here, not that the lease is free, although both are claimable.
 *
 * @since 0.1.0
 * @category errors
 * @example
 * ```ts
 * import { Store } from "effect-leaderelection"
 *
 * new Store.NoLease({ name: "jobs" }).message // 'no lease record for "jobs"'
 * ```
 */
export class NoLease extends Data.TaggedError("NoLease")<{
  readonly name: string
}> {
  override get message(): string {
    return `no lease record for "${this.name}"`
  }
}

/**
 * A store call failed, or its outcome is unknown. `retryable` says whether the
 * condition can fix itself (connection reset, timeout, read-only replica,
 * lock timeout) or needs an operator (missing table, no privilege, bad
 * credentials). Both stop the election until they clear.
 *
 * @since 0.1.0
 * @category errors
 * @example
 * ```ts
 * import { Store } from "effect-leaderelection"
 *
 * const error = new Store.StoreError({
 *   operation: "renew",
 *   retryable: true,
 *   reason: "connection reset",
 *   cause: undefined
 * })
 * Store.isRetryable(error) // true
 * ```
 */
export class StoreError extends Data.TaggedError("StoreError")<{
  readonly operation: Operation
  readonly retryable: boolean
  readonly reason: string
  readonly code?: string | undefined
  readonly cause: unknown
}> {
  override get message(): string {
    const code = this.code === undefined ? "" : ` [${this.code}]`
    const kind = this.retryable ? "retryable" : "fatal"
    return `${this.operation} failed (${kind})${code}: ${this.reason}`
  }
}

/**
 * Whether `u` is a {@link StoreError} that can fix itself.
 *
 * @since 0.1.0
 * @category refinements
 * @example
 * ```ts
 * import { Store } from "effect-leaderelection"
 *
 * const error: unknown = new Store.StoreError({
 *   operation: "inspect",
 *   retryable: true,
 *   reason: "timed out",
 *   cause: undefined
 * })
 * if (Store.isRetryable(error)) console.log("will retry") // a timeout or a dropped connection fixes itself
 * ```
 */
export const isRetryable = (u: unknown): u is StoreError => isStoreError(u) && u.retryable

/**
 * Whether `u` is a {@link StoreError} that needs an operator: alert on it.
 *
 * @since 0.1.0
 * @category refinements
 * @example
 * ```ts
 * import { Store } from "effect-leaderelection"
 *
 * const error: unknown = new Store.StoreError({
 *   operation: "acquire",
 *   retryable: false,
 *   reason: "no privilege",
 *   cause: undefined
 * })
 * if (Store.isFatal(error)) console.error("page someone") // a missing table or privilege needs an operator
 * ```
 */
export const isFatal = (u: unknown): u is StoreError => isStoreError(u) && !u.retryable

/**
 * Whether `u` is a `StoreError`.
 *
 * @since 0.1.0
 * @category refinements
 */
export const isStoreError = (u: unknown): u is StoreError => Predicate.isTagged(u, "StoreError")

/**
 * What a participant standing as a candidate declares: its `priority` (an
 * integer, higher preferred; at most `Lease`'s 32-bit range) and its
 * `version` (at most {@link maxVersionBytes} bytes of UTF-8, or null).
 *
 * @since 0.1.0
 * @category models
 */
export interface Candidacy {
  readonly priority: number
  readonly version: string | null
}

/**
 * The longest `version` a candidacy may carry, in bytes of UTF-8.
 *
 * @since 0.1.0
 * @category models
 */
export const maxVersionBytes = limits.maxVersionBytes

/**
 * A live candidate of an election, as one store statement saw it. Both
 * durations were derived by the database within that statement: they are
 * safe to compare with durations, never with a local clock's instants.
 *
 * @since 0.1.0
 * @category models
 */
export interface Candidate extends Candidacy {
  readonly identity: string
  /** How long the candidate has advertised itself without a lapse (its row never expired meanwhile). */
  readonly aliveFor: Duration.Duration
  /** How long its advertisement stays valid unless renewed. */
  readonly ttl: Duration.Duration
}

/**
 * The operations of a lease store.
 *
 * @since 0.1.0
 * @category models
 */
export interface StoreShape {
  /**
   * Starts or continues a term for `identity`, the lease expiring `ttl` after
   * the database's now. It takes over when the record is missing or expired
   * (the fence moves on by one), and continues the term when the record is
   * already held by `identity` under `incarnation` (the same fence: an
   * acquire whose reply was lost, retried); otherwise the record is left
   * untouched. Either way it returns the resulting record: losing is not an
   * error.
   *
   * `incarnation` tells processes apart when users give two of them one
   * identity: an elector draws one at random when it is made and passes it
   * to every acquire. A store that keeps it ({@link incarnations}) records it
   * with the lease, reports it in `Lease.incarnation`, and treats a lease
   * held by the same identity under another incarnation as anybody else's.
   * A call without one (a tool, an older release) is the identity's alone.
   * A store that wraps another's `acquire` passes every argument on
   * (`(...args) => inner.acquire(...args)`): one that drops `incarnation`
   * while keeping `incarnations: true` writes leases no incarnation owns,
   * and its elector, taking each for another process's, never leads.
   *
   * A store over a database that can fail over to a copy that missed the
   * last writes (every SQL store) also records with each lease the server
   * that wrote it, and a claim on a record written by another server (a
   * promoted standby, a restarted server) starts no term: when the record
   * has expired, or is the claimant's own, it holds the lease back instead,
   * held by nobody (`holder` empty) for `ttl`, its fence moved on by
   * `Lease.fenceJump`, so that no term the old server handed out and the
   * new one forgot can overlap a new term or share its fence. A record
   * another participant still holds is left to it: its renewals continue.
   */
  readonly acquire: (
    name: string,
    identity: string,
    ttl: Duration.Duration,
    payload: Uint8Array | null,
    incarnation?: string
  ) => Effect.Effect<Lease, StoreError>
  /**
   * Extends a lease the caller believes it holds, guarded by name, holder and
   * fence together, and only while it has not expired on the database clock.
   * The fence alone names the term (only `acquire` begins one, and it never
   * gives one fence to two incarnations), so the guard needs no incarnation.
   * A store that records the server a lease was written on records the
   * current one: the leader whose lease survived a failover keeps leading.
   */
  readonly renew: (
    name: string,
    identity: string,
    fence: bigint,
    ttl: Duration.Duration,
    payload: Uint8Array | null
  ) => Effect.Effect<Lease, LeaseLost | StoreError>
  /**
   * Ends a term early so a successor need not wait for expiry, guarded by
   * holder and fence. The record is kept, expired, so its fence keeps counting,
   * with `renewedAt` and `expiresAt` set to the same instant: a released lease
   * has `expiresAt <= renewedAt`, one that ran out a whole TTL between them.
   * Releasing a lease the caller no longer holds succeeds.
   */
  readonly release: (name: string, identity: string, fence: bigint) => Effect.Effect<void, StoreError>
  /** Reads the record without changing it. */
  readonly inspect: (name: string) => Effect.Effect<Lease, NoLease | StoreError>
  /**
   * Optional (the built-in stores have it): what a participant with a
   * `priority` needs, refused at construction by an elector over a store
   * without it.
   *
   * Advertises `identity` as a candidate of the election for `ttl` on the
   * database clock (one row per participant and election, apart from the
   * lease), and returns every live candidate, the caller included. A
   * candidate whose advertisement had expired starts a new `aliveFor` from
   * zero. Advertisements that expired more than `ttl` ago may be deleted.
   */
  readonly advertise?: (
    name: string,
    identity: string,
    candidacy: Candidacy,
    ttl: Duration.Duration
  ) => Effect.Effect<ReadonlyArray<Candidate>, StoreError>
  /** Removes the candidate's advertisement at once. Idempotent. Present with `advertise`. */
  readonly withdraw?: (name: string, identity: string) => Effect.Effect<void, StoreError>
  /**
   * The record of scheduled job slots (`Elector.schedule`). Optional: a store
   * without it elects as well, and refuses scheduled jobs.
   */
  readonly slots?: SlotStore | undefined
  /**
   * Optional (the SQL stores set it to their `operationTimeout`): the store's
   * promise that every call answers, with its result or an error of its own,
   * within this time of being started, and gives control back at once when
   * interrupted. An elector whose `operationTimeout` is at least this runs the
   * calls on its own fibers; it runs any other store's calls each in a fiber
   * of its own beside a deadline, which costs a fiber per call.
   *
   * A spread of the store (`{ ...store }`) keeps the promise. A store that
   * wraps another's calls in ways that may break it (delays, retries) must
   * not: it leaves the field out, or sets it to `undefined`.
   *
   * Either way, each call an elector makes sees a {@link CallContext}: who is
   * calling, which a store that keeps this promise can use to give control
   * back without a canceller of its own.
   *
   * @since 0.1.0
   */
  readonly answersWithin?: Duration.Duration | undefined
  /**
   * Optional, and what makes a store safe when two processes are given one
   * identity: `true` when the store keeps the `incarnation` of `acquire` as
   * that method says. An elector over a store without it (one written to
   * the contract of 0.1) tells processes apart by identity alone, as 0.1
   * did, and says so once per store, at WARN.
   *
   * @since 0.2.0
   */
  readonly incarnations?: boolean | undefined
  /**
   * Optional: wake-up hints. A store that has them tells the electors of
   * this process when a lease of an election may have just been given up
   * (the MemoryStore on every release; the PostgreSQL store with `listen`
   * set, from the `pg_notify` its release statements send), so that a
   * follower claims at once instead of at its next poll. A store without
   * them (MySQL/MariaDB, most stores of your own) is polled as usual.
   *
   * @since 0.1.0
   */
  readonly wakeUps?: WakeUps | undefined
}

/**
 * What an elector tells a store about its calls: the {@link CallContext}
 * service of the fiber each loop of the elector (following, renewing)
 * makes its calls on, for the loop's life. A store may read it
 * (`Effect.serviceOption(Store.CallContext)`) and never needs to: a call
 * made outside an elector's loops has none, and neither do the fibers an
 * elector forks (a term's work, its advisory callbacks). The SQL stores read
 * it to admit calls under load. It is read, never written.
 *
 * @since 0.1.0
 * @category models
 */
export interface CallContextShape {
  /**
   * No call of this participant has been answered yet: it is joining the
   * election. A store that sheds polls when overloaded should not shed a
   * joiner's: a participant that starts with the fleet would wait a whole
   * retry period more, its election maybe leaderless meanwhile, while
   * others that happened to get in first lead theirs. The elector decides
   * it from its own state when it is read.
   */
  readonly joining: boolean
  /**
   * The loop making the call, when it runs the call on its own fiber (the
   * store keeps its {@link StoreShape.answersWithin} promise) and ends the
   * call itself when it stops waiting: a store may then hand it the call in
   * flight (`caller.calling(call)`, `caller.done(call)` once it ended)
   * instead of giving Effect a canceller for it, which costs every call an
   * uninterruptible region that outlives it. `undefined` for a call that
   * must keep its canceller.
   */
  readonly caller: Caller | undefined
}

/**
 * A loop of an elector that makes store calls one after another (see
 * {@link CallContextShape.caller}). It waits for one call at a time: a call
 * handed over while another is recorded abandons that one (its caller gave
 * up on it), as does the loop when it stops.
 *
 * @since 0.1.0
 * @category models
 */
export interface Caller {
  /** Records `call` as the one in flight. */
  readonly calling: (call: InFlight) => void
  /** `call` has its answer, or was abandoned. */
  readonly done: (call: InFlight) => void
}

/**
 * A store call in flight, as its caller holds it.
 *
 * @since 0.1.0
 * @category models
 */
export interface InFlight {
  /** The caller stopped waiting for it: what its canceller would have done. It must return at once. */
  readonly abandon: () => void
}

/**
 * The context of a store call an elector makes (see {@link CallContextShape}).
 *
 * @since 0.1.0
 * @category tags
 * @example
 * ```ts
 * import { Effect, Option } from "effect"
 * import { Store } from "effect-leaderelection"
 *
 * // In a store of your own: whether the participant calling is joining.
 * const joining = Effect.map(Effect.serviceOption(Store.CallContext), Option.exists((call) => call.joining))
 * ```
 */
export class CallContext extends Context.Tag("effect-leaderelection/Store/CallContext")<
  CallContext,
  CallContextShape
>() {}

/**
 * Wake-up hints for the followers of one election (see
 * {@link StoreShape.wakeUps}). A hint is never a fact: it only moves a
 * follower's next step earlier, and the claim is the store's usual
 * `acquire`, decided by the database. A lost, late, repeated or forged hint
 * costs at most one store call, never safety: polling goes on underneath.
 *
 * @since 0.1.0
 * @category models
 */
export interface WakeUps {
  /**
   * Calls `wake` on each hint for election `name` until the scope closes.
   * `wake` must return at once; it may be called from outside any fiber.
   */
  readonly subscribe: (name: string, wake: () => void) => Effect.Effect<void, never, Scope.Scope>
}

/**
 * One slot of a scheduled job as the database holds it: the slot's instant
 * (computed by the job's schedule on the database clock), the fence of the
 * term that started it, and when it was started and completed on the
 * database clock.
 *
 * @since 0.1.0
 * @category models
 */
export interface SlotRecord {
  readonly job: string
  /** The scheduled instant: the slot's identity, whole milliseconds. */
  readonly at: Date
  /** The fence of the term that (last) started it. */
  readonly fence: bigint
  readonly startedAt: Date
  /** `null` while it has not completed: running, or interrupted mid-run. */
  readonly completedAt: Date | null
}

/**
 * What a claim found.
 *
 * @since 0.1.0
 * @category models
 */
export interface SlotClaim {
  /** The slot is the caller's to run now, under its fence. */
  readonly claimed: boolean
  /** The slot's row after the claim; `undefined` when a concurrent claim hid it. */
  readonly slot: SlotRecord | undefined
  /** The database clock when the claim was decided. */
  readonly now: Date
}

/**
 * The record of scheduled job slots, beside the leases. Every operation is
 * one statement (or one short transaction) guarded by the caller's term:
 * the lease row must still be held by `identity` under `fence` and be
 * unexpired on the database clock, or it fails with `LeaseLost` and changes
 * nothing. That is what keeps a deposed leader's late claim or completion
 * from counting.
 *
 * @since 0.1.0
 * @category models
 */
export interface SlotStore {
  /**
   * Starts slot `at` of `job` under the caller's term. It is claimed when no
   * term has started it yet; or when this term already claimed it and has
   * not completed it (a retry whose first reply was lost); or, with
   * `reclaim`, when an older term started it and never completed it (an
   * interrupted run, re-run at least once). Otherwise it is left untouched
   * and reported as found.
   */
  readonly claim: (
    name: string,
    identity: string,
    fence: bigint,
    job: string,
    at: Date,
    reclaim: boolean
  ) => Effect.Effect<SlotClaim, LeaseLost | StoreError>
  /**
   * Records that the caller's run of the slot has ended, guarded by the
   * caller's term and by the slot's fence being the caller's. Returns the
   * database clock.
   */
  readonly complete: (
    name: string,
    identity: string,
    fence: bigint,
    job: string,
    at: Date
  ) => Effect.Effect<Date, LeaseLost | StoreError>
  /** The job's latest slot (by instant), if any, with the database clock. */
  readonly last: (
    name: string,
    job: string
  ) => Effect.Effect<{ readonly now: Date; readonly slot: SlotRecord | undefined }, StoreError>
}

/**
 * The lease store service.
 *
 * @since 0.1.0
 * @category tags
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Store } from "effect-leaderelection"
 *
 * const whoLeads = Effect.flatMap(Store.Store, (store) => store.inspect("jobs"))
 * ```
 */
export class Store extends Context.Tag("effect-leaderelection/Store")<Store, StoreShape>() {}

/**
 * Holds a store of your own to the documented limits (`Lease.maxNameBytes`,
 * `Lease.maxIdentityBytes`, `Lease.maxPayloadBytes`, no NUL, well-formed
 * Unicode): a call outside them fails with a fatal `StoreError` whose cause
 * is the `InvalidConfig`, before it reaches your store. The built-in stores
 * do the same, and the acceptance suite (`effect-leaderelection/testing`)
 * checks it.
 *
 * @since 0.1.0
 * @category constructors
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { MemoryStore, Store } from "effect-leaderelection"
 *
 * // A stand-in for a store of your own: any StoreShape.
 * const mine = Effect.map(MemoryStore.make(), (store: Store.StoreShape) => Store.enforceLimits(store))
 * ```
 */
export const enforceLimits = <S extends StoreShape>(store: S): S => limits.enforce(store, refused)

const refused = (operation: Operation, invalid: InvalidConfig): StoreError =>
  new StoreError({ operation, retryable: false, reason: `${invalid.field}: ${invalid.reason}`, cause: invalid })
