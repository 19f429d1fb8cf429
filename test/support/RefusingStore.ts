/**
 * A store that refuses every call with one fatal error (no privilege): what
 * `failFast` turns into a failed start.
 */
import { Effect } from "effect"
import * as Store from "../../src/Store.js"

export const fatal = new Store.StoreError({
  operation: "inspect",
  retryable: false,
  reason: "no privilege",
  cause: undefined
})

export const refusing: Store.StoreShape = {
  acquire: () => Effect.fail(fatal),
  renew: () => Effect.fail(fatal),
  release: () => Effect.fail(fatal),
  inspect: () => Effect.fail(fatal)
}
