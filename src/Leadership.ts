/**
 * One leadership term, as seen from inside it.
 *
 * Work started by `Elector.whileLeader` runs with this service in its
 * context: the term's fence token, and the term's `Scope`. That scope closes
 * the instant leadership becomes uncertain; finalizers added to it run before
 * this participant can start another term, and before the lease is released
 * to anyone else.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type * as Fiber from "effect/Fiber"
import type * as Scope from "effect/Scope"

/**
 * What the `Leadership` service gives the work of a term: its election,
 * identity, fence and scope, and `isLeader` re-checked against its deadline.
 *
 * @since 0.1.0
 * @category models
 */
export interface LeadershipShape {
  /** The election. */
  readonly name: string
  /** This participant. */
  readonly identity: string
  /** This term's fence token: stamp external writes with it. */
  readonly fence: bigint
  /**
   * Closed when the term ends, after the term's work has been interrupted:
   * finalizers added here run before this participant can lead again and
   * before the lease is released to anyone else.
   */
  readonly scope: Scope.Scope
  /**
   * Runs `effect` as part of the term: it is interrupted the instant the
   * term ends, before the term's finalizers run. If it fails or dies, the
   * failure is logged and counted and, unless the elector was configured
   * with `onWorkFailure: "keepLeading"`, the term ends.
   */
  readonly fork: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<Fiber.RuntimeFiber<A, E>, never, R>
  /** Re-checks the term's deadline against the clock. */
  readonly isLeader: Effect.Effect<boolean>
}

/**
 * The current term, in the context of the work `Elector.whileLeader` runs.
 *
 * @since 0.1.0
 * @category tags
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Elector, Leadership } from "effect-leaderelection"
 *
 * const work = Effect.gen(function* () {
 *   const term = yield* Leadership.Leadership
 *   yield* Effect.log(`leading with fence ${term.fence}`)
 *   return yield* Effect.never
 * })
 * const program = Elector.whileLeader(work)
 * ```
 */
export class Leadership extends Context.Tag("effect-leaderelection/Leadership")<Leadership, LeadershipShape>() {}

/**
 * The current term's fence token.
 *
 * @since 0.1.0
 * @category accessors
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Leadership } from "effect-leaderelection"
 *
 * const write = Effect.flatMap(Leadership.fence, (fence) => Effect.log(`write stamped ${fence}`))
 * ```
 */
export const fence: Effect.Effect<bigint, never, Leadership> = Effect.map(Leadership, (term) => term.fence)
