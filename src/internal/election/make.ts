/**
 * Making an elector, for the life of a scope: its configuration resolved, its
 * (name, identity) claimed in this process, its incarnation drawn, its metric
 * series joined, its one finalizer added, and its wake-up subscription. The
 * election itself is participant.ts.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Scope from "effect/Scope"
import type { ElectorConfig } from "../../Elector.js"
import { DuplicateIdentity, type IdentityError, type InvalidConfig } from "../../ElectorError.js"
import * as Store from "../../Store.js"
import { resolve } from "../config/config.js"
import * as Instrumentation from "../metrics/instrumentation.js"
import * as Runtime from "../runtime/runtime.js"
import type { Seat } from "../spread/share.js"
import { standingOf } from "./candidacy.js"
import { draw } from "./incarnation.js"
import { Participant } from "./participant.js"
import type { Elector } from "./published.js"

/** The (name, identity) pairs of the electors alive in this process. */
const alive = Runtime.shared("electors", () => new Set<string>())

/**
 * The stores keeping no incarnations that an elector has warned of: once per
 * store, not per elector, or `joinAll` over a thousand elections logs the
 * same WARN a thousand times.
 */
const warned = Runtime.shared("storesWithoutIncarnations", () => new WeakSet<Store.StoreShape>())

/** @internal */
export type { Elector } from "./published.js"

/** @internal */
export const make = (
  input: ElectorConfig
): Effect.Effect<Elector, InvalidConfig | IdentityError | DuplicateIdentity, Store.Store | Scope.Scope> =>
  seated(input, undefined)

/**
 * `make`, for an elector with a seat in a spread group (see
 * spread/share.ts). Its own function rather than a second parameter of
 * `make`: `make` is passed as a callback (`Effect.forEach(configs, make)`),
 * which would hand it an index as its seat.
 *
 * @internal
 */
export const seated = (
  input: ElectorConfig,
  seat: Seat | undefined
): Effect.Effect<Elector, InvalidConfig | IdentityError | DuplicateIdentity, Store.Store | Scope.Scope> =>
  Effect.gen(function*() {
    const config = yield* resolve(input)
    const { identity, name } = config
    const store = yield* Store.Store
    const standing = yield* standingOf(input, config.candidacy, store)
    const clock = yield* Effect.clock
    const scope = yield* Effect.scope
    const tags = yield* Instrumentation.infoTags(name, identity)
    const incarnation = yield* draw
    // Claims (name, identity) in this process, joins the election's metric
    // series and adds the elector's one finalizer, in one step that nothing
    // interrupts. One finalizer, straight on the scope (`Effect.addFinalizer`
    // would keep a copy of the fiber's references for it, and a process may run
    // thousands of electors), built when it runs: it stops the elector, then
    // leaves the series and gives the claim back.
    const key = JSON.stringify([name, identity])
    const { elector, initial } = yield* Effect.uninterruptible(Effect.suspend(() => {
      if (alive.has(key)) return Effect.fail(new DuplicateIdentity({ name, identity }))
      alive.add(key)
      const { initial, instrumentation, leave } = Instrumentation.join(name, identity, tags)
      const elector = new Participant(input, config, store, standing, clock, instrumentation, incarnation, seat)
      const release = Effect.suspend(() =>
        Effect.ensuring(
          elector.shutdown(),
          Effect.sync(() => {
            leave()
            alive.delete(key)
          })
        )
      )
      return Effect.as(Scope.addFinalizer(scope, release), { elector, initial })
    }))
    yield* initial
    // A store written to the 0.1 contract still elects, as 0.1 did: refusing
    // it would break a working deployment for a hazard it may not have.
    if (store.incarnations !== true && !warned.has(store)) {
      warned.add(store)
      yield* Effect.annotateLogs(
        Effect.logWarning(
          "the store does not keep incarnations (StoreShape.incarnations, Store contract 0.2): " +
            "two processes given one identity are not told apart, and may lead together; " +
            "give every process an identity of its own, or use a store that keeps them"
        ),
        { election: name, identity }
      )
    }
    // For the elector's life: a hint wakes it only while it follows.
    if (store.wakeUps !== undefined) yield* Scope.extend(store.wakeUps.subscribe(name, () => elector.hint()), scope)
    return elector
  })
