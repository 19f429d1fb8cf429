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
import type { LeadershipShape } from "../../Leadership.js"
import type * as Metrics from "../../Metrics.js"
import type { Advising } from "./advisory.js"
import type { StepDown, Term } from "./published.js"

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
 * Opens the term of `self` under `fence`, to end by `deadline`.
 *
 * @internal
 */
export const open = (self: Advising, fence: bigint, deadline: bigint): Effect.Effect<Opened> =>
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
        Effect.interruptible(effect).pipe(
          Effect.onExit((exit) =>
            Exit.isSuccess(exit) || Cause.isInterruptedOnly(exit.cause)
              ? Effect.void
              : Effect.zipRight(
                self.reported(callback, exit.cause),
                self.config.onWorkFailure === "stepDown" ? Deferred.succeed(stop, "failed") : Effect.void
              )
          )
        ),
        work
      )
    const leadership: LeadershipShape = {
      name: self.name,
      identity: self.identity,
      fence,
      scope,
      isLeader: Effect.sync(() => self.leading()?.fence === fence),
      fork: (effect) => fork("work", effect)
    }
    const term: Term = { fence, deadline, leadership, scope, work, stop, ended }
    return { term, fork }
  })
