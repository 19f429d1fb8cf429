/**
 * Telling the operator that another process runs under this participant's
 * identity (a reused pod name, a hostname under host networking). The
 * election needs none of this: a lease held under the identity by another
 * incarnation is anybody else's, followed and never taken (see
 * `Participant.mine`). What is left is to say so, loudly enough to be fixed.
 *
 * Such a lease may be this process's own previous run's, left behind by a
 * crash or `disableRelease`: nobody renews it, and it was acquired before
 * this elector's first answer. So a lease counts as another live process's
 * only once its renewal instant has moved on between two reads, or when it
 * was acquired after this elector's first answer. Both compare instants the
 * database reported with each other, never with the local clock.
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Lease from "../../Lease.js"
import type { Instrumentation } from "../metrics/instrumentation.js"

/** At most one ERROR a minute: the collision lasts until an operator fixes it. */
const logEvery = Duration.unsafeToNanos(Duration.minutes(1))

/** @internal */
export class Collisions {
  /** Database milliseconds of the first answer; -Infinity when it showed no record: any record seen later is newer. */
  private firstAnswer: number | undefined = undefined
  /** The fence and renewal instant (database milliseconds) of the last lease of another process seen. */
  private lastFence: bigint | undefined = undefined
  private lastRenewedAt = 0
  /** Local monotonic nanoseconds of the last ERROR. */
  private loggedAt: bigint | undefined = undefined

  constructor(
    private readonly name: string,
    private readonly identity: string,
    private readonly instrumentation: Instrumentation
  ) {}

  /**
   * Records a store answer showing `lease` (or no record). `foreign`: the
   * lease is valid and held under the identity by another incarnation.
   * Returns the report to make when it shows another live process (the
   * metric, and the ERROR when one is due at `now`), undefined otherwise.
   */
  seen(lease: Lease.Lease | undefined, foreign: boolean, now: bigint): Effect.Effect<void> | undefined {
    const first = this.firstAnswer ??= lease === undefined ? -Infinity : lease.now.getTime()
    if (lease === undefined || !foreign) return undefined
    const renewedAt = lease.renewedAt.getTime()
    const live = lease.acquiredAt.getTime() > first ||
      (lease.fence === this.lastFence && renewedAt > this.lastRenewedAt)
    this.lastFence = lease.fence
    this.lastRenewedAt = renewedAt
    if (!live) return undefined
    const { instrumentation } = this
    if (this.loggedAt !== undefined && now - this.loggedAt < logEvery) return instrumentation.identityCollision
    this.loggedAt = now
    return Effect.zipRight(
      instrumentation.identityCollision,
      Effect.annotateLogs(
        Effect.logError(
          `identity "${this.identity}" is in use by another process (election "${this.name}"): ` +
            `give every process an identity of its own`
        ),
        "fence",
        String(lease.fence)
      )
    )
  }
}
