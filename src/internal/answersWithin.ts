/**
 * A store's promise that every call answers (a result, or an error of its
 * own) within a known time of being started, and gives control back at once
 * when interrupted: the SQL stores, whose calls go through the gate (see
 * `stores/internal/gate.ts`), keep it.
 *
 * The elector runs the calls of a store that keeps it within the elector's
 * own operation timeout on the calling fiber; any other store's calls run in
 * a fiber of their own beside a deadline (see `call` in `elector.ts`).
 *
 * The promise is a non-enumerable property of the store, so that a store made
 * by spreading a promising one (`{ ...store, renew: ... }`), whose calls may
 * not keep it, does not inherit it.
 *
 * @internal
 */
import type * as Duration from "effect/Duration"

const key = Symbol.for("effect-leaderelection/answersWithin")

/** `store`, promising that each of its calls answers within `within`. */
export const promise = <S extends object>(store: S, within: Duration.Duration): S =>
  Object.defineProperty(store, key, { value: within, enumerable: false })

/** The time within which each call of `store` answers, when it promises one. */
export const of = (store: object): Duration.Duration | undefined =>
  (store as { readonly [key]?: Duration.Duration })[key]
