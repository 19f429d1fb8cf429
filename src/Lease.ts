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
 * One election's record, every instant as the database reported it.
 *
 * @since 0.1.0
 * @category models
 * @example
 * ```ts
 * import { Lease } from "effect-leaderelection"
 *
 * // As a store reports it, every instant from the database's clock.
 * const lease: Lease.Lease = {
 *   name: "jobs",
 *   holder: "api-1-4242-9f2c",
 *   fence: 3n,
 *   payload: null,
 *   acquiredAt: new Date("2026-01-01T10:00:00Z"),
 *   renewedAt: new Date("2026-01-01T10:00:06Z"),
 *   expiresAt: new Date("2026-01-01T10:00:21Z"),
 *   now: new Date("2026-01-01T10:00:12Z")
 * }
 * console.log(lease.holder, lease.fence, Lease.ttl(lease)) // api-1-4242-9f2c 3n Duration(9s)
 * ```
 */
export interface Lease {
  /** The election this record belongs to. */
  readonly name: string
  /**
   * Identity of the participant holding the lease, as its user gave it. Empty
   * while the store holds the lease back after the database changed under it
   * (see {@link isHeldBack}): no identity is empty, so nobody holds it then.
   */
  readonly holder: string
  /**
   * Which process holds it: the incarnation its elector gave `acquire`, drawn
   * at random when the elector was made, so that two processes given one
   * identity are still told apart. `undefined` from a store that does not keep
   * incarnations (`StoreShape.incarnations`), for a term begun by an older
   * release, and while the lease is held back.
   *
   * @since 0.2.0
   */
  readonly incarnation?: string | undefined
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
 * // As a store reports it, every instant from the database's clock.
 * const lease: Lease.Lease = {
 *   name: "jobs",
 *   holder: "api-1-4242-9f2c",
 *   fence: 3n,
 *   payload: null,
 *   acquiredAt: new Date("2026-01-01T10:00:00Z"),
 *   renewedAt: new Date("2026-01-01T10:00:06Z"),
 *   expiresAt: new Date("2026-01-01T10:00:21Z"),
 *   now: new Date("2026-01-01T10:00:12Z")
 * }
 * Duration.toMillis(Lease.ttl(lease)) // 9000: expiresAt - now, whatever the local clock says
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
 * // As a store reports it, every instant from the database's clock.
 * const lease: Lease.Lease = {
 *   name: "jobs",
 *   holder: "api-1-4242-9f2c",
 *   fence: 3n,
 *   payload: null,
 *   acquiredAt: new Date("2026-01-01T10:00:00Z"),
 *   renewedAt: new Date("2026-01-01T10:00:06Z"),
 *   expiresAt: new Date("2026-01-01T10:00:21Z"),
 *   now: new Date("2026-01-01T10:00:12Z")
 * }
 * Lease.isExpired(lease) // false: 9 seconds left
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
 * // As a store reports it, every instant from the database's clock.
 * const lease: Lease.Lease = {
 *   name: "jobs",
 *   holder: "api-1-4242-9f2c",
 *   fence: 3n,
 *   payload: null,
 *   acquiredAt: new Date("2026-01-01T10:00:00Z"),
 *   renewedAt: new Date("2026-01-01T10:00:06Z"),
 *   expiresAt: new Date("2026-01-01T10:00:21Z"),
 *   now: new Date("2026-01-01T10:00:12Z")
 * }
 * Lease.isHeldBy(lease, "api-1-4242-9f2c") // true
 * ```
 */
export const isHeldBy = (lease: Lease, identity: string, incarnation?: string): boolean =>
  lease.holder === identity && (incarnation === undefined || lease.incarnation === incarnation) && !isExpired(lease)

/**
 * Whether the store is holding the lease back: after the database changed
 * under it (a failover to a standby that may have missed the last writes, a
 * restart), the first claim of an expired record jumps its fence far ahead
 * and leaves it held by nobody (an empty `holder`) for one lease duration, so
 * that no term the old server handed out and the new one forgot can overlap
 * a new term or share its fence.
 *
 * @since 0.2.0
 * @category predicates
 * @example
 * ```ts
 * import { Lease } from "effect-leaderelection"
 *
 * const lease: Lease.Lease = {
 *   name: "jobs",
 *   holder: "",
 *   fence: 4294967299n,
 *   payload: null,
 *   acquiredAt: new Date("2026-01-01T10:00:00Z"),
 *   renewedAt: new Date("2026-01-01T10:00:00Z"),
 *   expiresAt: new Date("2026-01-01T10:00:15Z"),
 *   now: new Date("2026-01-01T10:00:01Z")
 * }
 * Lease.isHeldBack(lease) // true: claimable again at expiresAt
 * ```
 */
export const isHeldBack = (lease: Lease): boolean => lease.holder === "" && !isExpired(lease)

/**
 * How far the first claim after the database changed moves a fence ahead
 * (2^32): further than the terms any server can hand out between its last
 * write a standby received and its failure, so a fence is never handed out
 * twice.
 *
 * @since 0.2.0
 * @category models
 */
export const fenceJump: bigint = 2n ** 32n

/**
 * The longest incarnation a store must keep, in bytes of ASCII.
 *
 * @since 0.2.0
 * @category models
 */
export const maxIncarnationBytes = 64

/**
 * The longest election name, in bytes of UTF-8, that every store holds
 * exactly: MySQL/MariaDB keep names in a `VARBINARY(1020)` column (255
 * four-byte characters), PostgreSQL in `text`. Longer names are refused by
 * every store and by the elector's config, never truncated.
 *
 * @since 0.1.0
 * @category limits
 * @example
 * ```ts
 * import { Lease } from "effect-leaderelection"
 *
 * Buffer.byteLength("jobs", "utf8") <= Lease.maxNameBytes // true
 * ```
 */
export const maxNameBytes = 1020

/**
 * The longest identity, in bytes of UTF-8, that every store holds exactly
 * (the MySQL/MariaDB `holder` column is `VARBINARY(1020)`).
 *
 * @since 0.1.0
 * @category limits
 * @example
 * ```ts
 * import { Lease } from "effect-leaderelection"
 *
 * "🚀".repeat(255).length // 510 UTF-16 units, 1020 bytes: exactly Lease.maxIdentityBytes
 * ```
 */
export const maxIdentityBytes = 1020

/**
 * The largest payload, in bytes. The payload is written on every renewal:
 * it is meant for an address or a small descriptor, not for data.
 *
 * @since 0.1.0
 * @category limits
 * @example
 * ```ts
 * import { Lease } from "effect-leaderelection"
 *
 * new TextEncoder().encode("10.0.0.7:8080").byteLength <= Lease.maxPayloadBytes // true
 * ```
 */
export const maxPayloadBytes = 65_536

/**
 * The shortest duration an elector accepts for any of its durations.
 *
 * @since 0.1.0
 * @category limits
 * @example
 * ```ts
 * import { Duration } from "effect"
 * import { Lease } from "effect-leaderelection"
 *
 * Duration.toMillis(Lease.minDuration) // 1
 * ```
 */
export const minDuration: Duration.Duration = Duration.millis(1)

/**
 * The shortest `retryPeriod`: a follower waits a whole number of
 * milliseconds drawn from [period/2, period), which is 0 for anything
 * shorter.
 *
 * @since 0.1.0
 * @category limits
 * @example
 * ```ts
 * import { Duration } from "effect"
 * import { Lease } from "effect-leaderelection"
 *
 * Duration.toMillis(Lease.minRetryPeriod) // 2
 * ```
 */
export const minRetryPeriod: Duration.Duration = Duration.millis(2)

/**
 * The longest duration an elector accepts for any of its durations:
 * 2^31 - 1 ms (about 24.8 days), the longest timer Node.js can set. Effect's
 * clock never fires a longer sleep, so a longer lease would have no watchdog.
 *
 * @since 0.1.0
 * @category limits
 * @example
 * ```ts
 * import { Duration } from "effect"
 * import { Lease } from "effect-leaderelection"
 *
 * Duration.toMillis(Lease.maxDuration) // 2147483647
 * ```
 */
export const maxDuration: Duration.Duration = Duration.millis(2 ** 31 - 1)
