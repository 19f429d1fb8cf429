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
 * @internal
 */
import type * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import type * as Fiber from "effect/Fiber"
import * as Caller from "./caller.js"
import * as Deadlines from "./deadlines.js"
import * as Runtime from "./runtime.js"

/**
 * A running loop: its caller, which its store calls name in their context
 * (see caller.ts), and its waits; and the release of both.
 *
 * @internal
 */
export class Handle {
  readonly caller = new Caller.Caller()
  readonly waits: Deadlines.Waits
  constructor(clock: Clock.Clock, fiber: Fiber.RuntimeFiber<unknown, unknown>) {
    this.waits = Deadlines.waits(clock, Runtime.schedulerOf(fiber))
  }
  // An arrow, so that it is the fiber's observer as it is.
  readonly release = (): void => {
    this.caller.stop()
    this.waits.cancel()
  }
}

/**
 * Runs `body` as a loop on the running fiber, with `clock` and the log
 * `annotations` set on the fiber (see `Runtime.set`); when it ends, however
 * it ends, the loop is released, then `after` runs (it is built then, not
 * kept on the fiber while the loop runs) and the fiber's settings are put
 * back. All of that is one finalizer, the loop's only frame on the fiber.
 * Run it uninterruptibly, `body` interruptible within.
 *
 * @internal
 */
export const run = <A, E, R>(
  clock: Clock.Clock,
  annotations: Readonly<Record<string, string>>,
  body: (loop: Handle) => Effect.Effect<A, E, R>,
  after: () => Effect.Effect<void>
): Effect.Effect<A, E, R> =>
  Effect.withFiberRuntime<A, E, R>((fiber) => {
    const handle = new Handle(clock, fiber)
    const settings = Runtime.settingsOf(fiber)
    return Effect.zipRight(
      Runtime.set(Runtime.within(settings, clock, annotations)),
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
 * Forks `body` as a loop, a child of the running fiber; the loop is released
 * when its fiber ends, by an observer of the fiber rather than a finalizer,
 * which would keep its frames on the fiber for the loop's whole life.
 *
 * @internal
 */
export const fork = <A, E, R>(
  clock: Clock.Clock,
  body: (loop: Handle) => Effect.Effect<A, E, R>
): Effect.Effect<Fiber.RuntimeFiber<A, E>, never, R> =>
  Effect.fork(Effect.withFiberRuntime<A, E, R>((fiber) => {
    const handle = new Handle(clock, fiber)
    Runtime.observe(fiber, handle.release)
    return body(handle)
  }))
