/**
 * The errors an elector reports. None of them ever fails `Elector.run`:
 * store failures and lost leases are reported through `Status.lastError` and
 * handled by giving up leadership, not by giving up.
 *
 * @since 0.1.0
 */
import * as Data from "effect/Data"
import type { LeaseLost, StoreError } from "./Store.js"

/**
 * A configuration, option or argument was refused before anything ran: an
 * elector config, a store option or URL, or a name, identity or payload
 * outside the limits of `Lease` (`maxNameBytes`, `maxIdentityBytes`,
 * `maxPayloadBytes`, `minDuration`, `maxDuration`, `minRetryPeriod`). `field`
 * names the field to change, `reason` says what is wrong, numbers included,
 * and for timing fields that do not fit together, values that would (each
 * `{ field: "value" }` proposed is accepted as it is; numbers are
 * milliseconds, and a number under a second is pointed out). The elector
 * and every store use this one error.
 *
 * @since 0.1.0
 * @category errors
 * @example
 * ```ts
 * import { ElectorError } from "effect-leaderelection"
 *
 * new ElectorError.InvalidConfig({ field: "name", reason: "must not be empty" }).message
 * // 'invalid config: name: must not be empty'
 * ```
 */
export class InvalidConfig extends Data.TaggedError("InvalidConfig")<{
  readonly field: string
  readonly reason: string
}> {
  override get message(): string {
    return `invalid config: ${this.field}: ${this.reason}`
  }
}

/**
 * A leader stepped down because it could not confirm its lease in time.
 *
 * It does not mean the lease was taken away: nobody may have taken it, and the
 * database may be healthy on the far side of a broken path. It means this
 * process ran out of evidence that it was still the leader.
 *
 * @since 0.1.0
 * @category errors
 * @example
 * ```ts
 * import { ElectorError } from "effect-leaderelection"
 *
 * new ElectorError.LeaseExpiredLocally({ name: "jobs", fence: 4n }).message
 * ```
 */
export class LeaseExpiredLocally extends Data.TaggedError("LeaseExpiredLocally")<{
  readonly name: string
  readonly fence: bigint
}> {
  override get message(): string {
    return `lease "${this.name}" (fence ${this.fence}) expired locally before it could be renewed`
  }
}

/**
 * `run` was called on an elector that is already running: one elector drives
 * one participant, once.
 *
 * @since 0.1.0
 * @category errors
 * @example
 * ```ts
 * import { ElectorError } from "effect-leaderelection"
 *
 * new ElectorError.AlreadyRunning({ name: "jobs", identity: "a" }).message
 * ```
 */
export class AlreadyRunning extends Data.TaggedError("AlreadyRunning")<{
  readonly name: string
  readonly identity: string
}> {
  override get message(): string {
    return `elector "${this.name}" for ${this.identity} is already running`
  }
}

/**
 * Another elector with the same election `name` and `identity` is already
 * running in this process. Two participants sharing an identity would both
 * pass for the holder of one lease: each would renew the other's term, take
 * turns with fresh fences, and neither could tell. Each participant needs an
 * identity of its own; the pair is free again once the first elector's scope
 * closes. Duplicates in different processes cannot be detected this way.
 *
 * @since 0.1.0
 * @category errors
 * @example
 * ```ts
 * import { ElectorError } from "effect-leaderelection"
 *
 * new ElectorError.DuplicateIdentity({ name: "jobs", identity: "a" }).message
 * ```
 */
export class DuplicateIdentity extends Data.TaggedError("DuplicateIdentity")<{
  readonly name: string
  readonly identity: string
}> {
  override get message(): string {
    return `an elector for "${this.name}" with identity ${this.identity} is already running in this process: ` +
      `every participant needs an identity of its own`
  }
}

/**
 * The system's randomness source failed while generating an identity. There
 * is deliberately no fallback to a predictable value: a restarted process that
 * reused its predecessor's identity could renew a lease that predecessor
 * still believes it holds.
 *
 * @since 0.1.0
 * @category errors
 * @example
 * ```ts
 * import { ElectorError } from "effect-leaderelection"
 *
 * new ElectorError.IdentityError({ cause: new Error("no entropy") }).message
 * ```
 */
export class IdentityError extends Data.TaggedError("IdentityError")<{
  readonly cause: unknown
}> {
  override get message(): string {
    return `cannot generate an identity: ${String(this.cause)}`
  }
}

/**
 * What `Status.lastError` can hold.
 *
 * @since 0.1.0
 * @category models
 */
export type LastError = StoreError | LeaseLost | LeaseExpiredLocally
