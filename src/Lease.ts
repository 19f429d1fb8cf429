/**
 * The state of one leader-election record, exactly as the database reported it.
 *
 * Every timestamp in a `Lease` comes from the database server, captured by the
 * same statement that produced the record. Participants whose clocks disagree
 * can therefore only use durations derived from a single lease (see
 * {@link ttl}), never the absolute instants themselves.
 *
 * @since 0.1.0
 */
import * as Duration from "effect/Duration"

/**
 * @since 0.1.0
 * @category models
 * @example
 * ```ts
 * import { Lease } from "effect-leaderelection"
 *
 * declare const lease: Lease.Lease
 * console.log(lease.holder, lease.fence, Lease.ttl(lease))
 * ```
 */
export interface Lease {
  /** The election this record belongs to. */
  readonly name: string
  /** Identity of the participant holding the lease. */
  readonly holder: string
  /**
   * Strictly increasing per term: it advances whenever a missing or expired
   * lease is claimed, even by its previous holder, and never otherwise.
   */
  readonly fence: bigint
  /** Opaque data published by the holder, e.g. the address it serves on. */
  readonly payload: Uint8Array | null
  /** When the current term began, on the database clock. */
  readonly acquiredAt: Date
  /** When the holder last extended the lease, on the database clock. */
  readonly renewedAt: Date
  /** When the lease becomes claimable by others, on the database clock. */
  readonly expiresAt: Date
  /** The database clock at the instant this record was read. */
  readonly now: Date
}

/**
 * How much longer the lease is valid according to the database clock, floored
 * at zero. Both ends of the subtraction come from one clock read on one server,
 * which is what makes the result usable by a client whose own clock disagrees.
 *
 * @since 0.1.0
 * @category getters
 * @example
 * ```ts
 * import { Duration } from "effect"
 * import { Lease } from "effect-leaderelection"
 *
 * declare const lease: Lease.Lease
 * Duration.toMillis(Lease.ttl(lease))
 * ```
 */
export const ttl = (lease: Lease): Duration.Duration =>
  Duration.millis(Math.max(0, lease.expiresAt.getTime() - lease.now.getTime()))

/**
 * Whether the lease was already claimable at the instant it was read.
 *
 * @since 0.1.0
 * @category predicates
 * @example
 * ```ts
 * import { Lease } from "effect-leaderelection"
 *
 * declare const lease: Lease.Lease
 * if (Lease.isExpired(lease)) console.log("claimable")
 * ```
 */
export const isExpired = (lease: Lease): boolean => lease.expiresAt.getTime() <= lease.now.getTime()

/**
 * Whether `identity` holds this lease and the lease is still valid.
 *
 * @since 0.1.0
 * @category predicates
 * @example
 * ```ts
 * import { Lease } from "effect-leaderelection"
 *
 * declare const lease: Lease.Lease
 * Lease.isHeldBy(lease, "api-7f9c-1234-ab12")
 * ```
 */
export const isHeldBy = (lease: Lease, identity: string): boolean =>
  lease.holder === identity && !isExpired(lease)
