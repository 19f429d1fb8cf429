/**
 * What a term holds from its start: its scope (the user's finalizers), the
 * scope of its work, the signal that it must end and the signal that it has,
 * and the leadership handed to the user.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import * as Scope from "effect/Scope"
import type { ResolvedConfig } from "../../Elector.js"
import type { LeadershipShape } from "../../Leadership.js"
import type * as Metrics from "../../Metrics.js"
import * as Loop from "../runtime/loop.js"
import type { Advisory } from "./advisory.js"
import type { Published, StepDown, Term } from "./published.js"

export type { Term } from "./published.js"

/**
 * A term just opened, and how to fork the term's work into it.
 *
 * @internal
 */
export interface Opened {
  readonly term: Term
  readonly fork: <A, E, R>(
    callback: Metrics.Callback,
    effect: Effect.Effect<A, E, R>
  ) => Effect.Effect<Fiber.RuntimeFiber<A, E>, never, R>
}

/**
 * Opens a term of the elector of `config` under `fence`, to end by
 * `deadline`: its leadership reads whether it still leads from `published`,
 * and what its work does wrong is reported by `advice`.
 *
 * @internal
 */
export const open = (
  published: Published,
  advice: Advisory,
  config: Pick<ResolvedConfig, "name" | "identity" | "onWorkFailure">,
  fence: bigint,
  deadline: bigint
): Effect.Effect<Opened> =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const work = yield* Scope.make()
    const stop = yield* Deferred.make<StepDown>()
    const ended = yield* Deferred.make<void>()
    // Work that fails or dies ends the term (unless told to keep
    // leading): a leader whose work is dead would otherwise hold the
    // lease while doing nothing. Interruption is how a term ends, not a
    // failure.
    const fork = <A, E, R>(callback: Metrics.Callback, effect: Effect.Effect<A, E, R>) =>
      Effect.forkIn(
        // The work's store calls are its own, not those of the loop that leads.
        Loop.detached(Effect.interruptible(effect)).pipe(
          Effect.onExit((exit) =>
            Exit.isSuccess(exit) || Cause.isInterruptedOnly(exit.cause)
              ? Effect.void
              : Effect.zipRight(
                advice.reported(callback, exit.cause),
                config.onWorkFailure === "stepDown" ? Deferred.succeed(stop, "failed") : Effect.void
              )
          )
        ),
        work
      )
    const leadership: LeadershipShape = {
      name: config.name,
      identity: config.identity,
      fence,
      scope,
      isLeader: Effect.sync(() => published.leading()?.fence === fence),
      fork: (effect) => fork("work", effect)
    }
    const term: Term = { fence, deadline, leadership, scope, work, stop, ended }
    return { term, fork }
  })
