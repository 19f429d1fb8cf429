/**
 * A store's wake-up registry: the callbacks of the electors of this process,
 * by election. One map per store, one set entry per subscribed elector: a
 * process may run thousands of electors, none of which holds a fiber or a
 * timer for its subscription. A function subscribed twice to one election
 * is kept once: each elector subscribes a function of its own.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type { WakeUps } from "../../Store.js"

/** @internal */
export interface Registry extends WakeUps {
  /** Wakes every subscriber of election `name` in this process. */
  readonly wake: (name: string) => void
}

/** @internal */
export const make = (): Registry => {
  const byName = new Map<string, Set<() => void>>()
  const subscribe = (name: string, wake: () => void): Effect.Effect<void, never, Scope.Scope> =>
    Effect.acquireRelease(
      Effect.sync(() => {
        const set = byName.get(name) ?? new Set()
        byName.set(name, set)
        set.add(wake)
      }),
      () =>
        Effect.sync(() => {
          const set = byName.get(name)
          set?.delete(wake)
          if (set?.size === 0) byName.delete(name)
        })
    )
  return {
    subscribe: (name, wake) => Effect.asVoid(subscribe(name, wake)),
    wake: (name) => {
      const set = byName.get(name)
      if (set === undefined) return
      // A copy: a callback may subscribe or release while others are woken.
      for (const wake of [...set]) wake()
    }
  }
}
