/**
 * A spread group's membership, through the store's candidate operations:
 * each member advertises itself under the group's name, valid for a while on
 * the database clock, and what `advertise` returns (every live member) is
 * its view. A member that crashes drops out of the others' views once its
 * advertisement lapses; one that stops cleanly withdraws it first.
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Queue from "effect/Queue"
import * as Random from "effect/Random"
import type * as Scope from "effect/Scope"
import type { Candidacy, StoreShape } from "../../Store.js"
import { jittered } from "../election/timing.js"
import type { Share } from "./share.js"

/** Every member advertises the same candidacy: membership ranks nobody. */
const member: Candidacy = { priority: 0, version: null }

/**
 * What keeping a membership needs.
 *
 * @internal
 */
export interface Options {
  readonly group: string
  readonly advertise: NonNullable<StoreShape["advertise"]>
  readonly withdraw: NonNullable<StoreShape["withdraw"]>
  /** How long an advertisement stays valid on the database clock. */
  readonly ttl: Duration.Duration
  readonly retryPeriod: Duration.Duration
  readonly operationTimeout: Duration.Duration
  /** Whom the view goes to. */
  readonly share: Share
  /** Offered to, to have the view refreshed sooner than the next period. */
  readonly refreshes: Queue.Queue<void>
}

/**
 * Keeps this member in its group for the life of the scope: advertises it
 * every (jittered) retry period, sooner when asked but at most four times a
 * period, and when the scope closes stops advertising, then withdraws, so
 * that the others' shares grow before this member's elections are released.
 *
 * @internal
 */
export const keep = (options: Options): Effect.Effect<void, never, Scope.Scope> => {
  const { advertise, group, operationTimeout, refreshes, retryPeriod, share, ttl, withdraw } = options
  const { identity } = share
  const bounded = <A, E>(call: Effect.Effect<A, E>) => Effect.timeout(call, operationTimeout)
  // A failed advertisement keeps the last view: the others may drop this
  // member meanwhile, which costs moves, never safety.
  const refresh = bounded(advertise(group, identity, member, ttl)).pipe(
    Effect.matchEffect({
      onFailure: (error) => Effect.logWarning(`spread group ${group}: could not advertise membership`, error),
      onSuccess: (live) => Effect.sync(() => share.view(live.map((c) => c.identity).sort()))
    })
  )
  const least = Duration.unsafeDivide(retryPeriod, 4)
  const loop = Effect.forever(Effect.gen(function*() {
    const period = jittered(retryPeriod, yield* Random.next)
    yield* Effect.sleep(least)
    yield* Effect.timeoutOption(Queue.take(refreshes), Duration.subtract(period, least))
    yield* Queue.takeAll(refreshes)
    yield* refresh
  }))
  return Effect.gen(function*() {
    // The withdrawal runs on whichever fiber closes the scope: its timeout
    // keeps the clock the group was made with, as an elector's calls do.
    const clock = yield* Effect.clock
    yield* Effect.addFinalizer(() => Effect.withClock(Effect.ignore(bounded(withdraw(group, identity))), clock))
    // The first view at once: until it, this member's electors claim only
    // what is long free (share.ts), and the others do not see it.
    yield* refresh
    yield* Effect.forkScoped(loop)
  })
}
