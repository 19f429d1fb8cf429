/**
 * A loop of store calls and waits (an elector's follow loop, a term's
 * renewals, a candidate's checks), started together with its release: the
 * release stops the loop's caller (its call in flight is abandoned, see
 * caller.ts) and takes back its wait's deadline (see `Deadlines.Waits`), and
 * it is registered as the loop starts, so that no loop can be started without
 * it. Left out, an interrupted loop's queued call (an `acquire`) would still
 * run later, and its wait would keep the deadline timer, and the process,
 * alive until it fell.
 *
 * The loop's fiber carries the loop's `Store.CallContext` for the loop's
 * life: every store call the loop makes sees it, set once rather than
 * provided call by call (which would copy the fiber's references twice a
 * call). A fiber forked from the loop is not the loop: whoever forks one
 * that may call a store takes the context away from it ({@link detached}).
 *
 * @internal
 */
import type * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type * as Fiber from "effect/Fiber"
import * as Store from "../../Store.js"
import * as Caller from "./caller.js"
import * as Deadlines from "./deadlines.js"
import * as Runtime from "./runtime.js"

/**
 * What a loop asks of its participant: whether any store call has shown it
 * the record (it has joined the election).
 *
 * @internal
 */
export interface Participant {
  readonly observed: () => boolean
}

/**
 * A running loop: the context of its store calls (its caller, and whether
 * its participant is joining), its waits, and the release of both.
 *
 * @internal
 */
export class Handle implements Store.CallContextShape {
  private active: Caller.Caller | undefined = new Caller.Caller()
  readonly waits: Deadlines.Waits
  constructor(
    clock: Clock.Clock,
    fiber: Fiber.RuntimeFiber<unknown, unknown>,
    private readonly participant: Participant
  ) {
    this.waits = Deadlines.waits(clock, Runtime.schedulerOf(fiber))
  }
  /** The loop's caller while the loop runs; none once released, so that calls after it keep their cancellers. */
  get caller(): Store.Caller | undefined {
    return this.active
  }
  get joining(): boolean {
    return !this.participant.observed()
  }
  // An arrow, so that it is the fiber's observer as it is.
  readonly release = (): void => {
    const caller = this.active
    this.active = undefined
    caller?.stop()
    this.waits.cancel()
  }
}

/**
 * Runs `body` as a loop on the running fiber, with `clock`, the log
 * `annotations` and the loop's call context set on the fiber (see
 * `Runtime.set`); when it ends, however it ends, the loop is released, then
 * `after` runs (it is built then, not kept on the fiber while the loop runs)
 * and the fiber's settings are put back. All of that is one finalizer, the
 * loop's only frame on the fiber. Run it uninterruptibly, `body`
 * interruptible within.
 *
 * @internal
 */
export const run = <A, E, R>(
  clock: Clock.Clock,
  annotations: Readonly<Record<string, string>>,
  participant: Participant,
  body: (loop: Handle) => Effect.Effect<A, E, R>,
  after: () => Effect.Effect<void>
): Effect.Effect<A, E, R> =>
  Effect.withFiberRuntime<A, E, R>((fiber) => {
    const handle = new Handle(clock, fiber, participant)
    const settings = Runtime.settingsOf(fiber)
    return Effect.zipRight(
      Runtime.set(Runtime.within(settings, clock, annotations, Store.CallContext, handle)),
      Effect.ensuring(
        body(handle),
        Effect.suspend(() => {
          handle.release()
          return Effect.zipRight(after(), Runtime.set(settings))
        })
      )
    )
  })

/**
 * Forks `body` as a loop, a child of the running fiber, with the loop's
 * call context; the loop is released when its fiber ends, by an observer of
 * the fiber rather than a finalizer, which would keep its frames on the
 * fiber for the loop's whole life.
 *
 * @internal
 */
export const fork = <A, E, R>(
  clock: Clock.Clock,
  participant: Participant,
  body: (loop: Handle) => Effect.Effect<A, E, R>
): Effect.Effect<Fiber.RuntimeFiber<A, E>, never, R> =>
  Effect.fork(Effect.withFiberRuntime<A, E, R>((fiber) => {
    const handle = new Handle(clock, fiber, participant)
    Runtime.observe(fiber, handle.release)
    return Effect.zipRight(Runtime.provideOnFiber(Store.CallContext, handle), body(handle))
  }))

/**
 * `effect` without the call context of the loop it is forked from: for a
 * fiber the loop forks whose store calls are not the loop's (the term's
 * work, the advisory callbacks).
 *
 * @internal
 */
export const detached = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.mapInputContext(
    effect,
    (context: Context.Context<R>) => Context.omit(Store.CallContext)(context) as Context.Context<R>
  )
