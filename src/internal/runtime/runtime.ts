/**
 * The one place the library reaches past Effect's public API: the fiber's
 * scheduler and services, its settings, and registries shared by every copy
 * of the library in a process. Everything else in `src/` goes through here,
 * so that a port to another Effect line rewrites this module, not the
 * election.
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as DefaultServices from "effect/DefaultServices"
import * as Effect from "effect/Effect"
import type * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import * as FiberId from "effect/FiberId"
import * as FiberRef from "effect/FiberRef"
import * as FiberRefs from "effect/FiberRefs"
import * as HashMap from "effect/HashMap"
import type * as Runtime from "effect/Runtime"
import type * as Scheduler from "effect/Scheduler"
import type * as Tracer from "effect/Tracer"

/**
 * The value kept under `key` for the whole process, made by the first copy
 * of this library that asks: two copies (say, one bundled by a dependency)
 * must agree on one elector registry, one deadline timer per clock, one
 * metric series per election.
 *
 * @internal
 */
export const shared = <A>(key: string, make: () => A): A => {
  const registry = globalThis as Record<symbol, A | undefined>
  const symbol = Symbol.for(`effect-leaderelection/${key}`)
  const found = registry[symbol]
  if (found !== undefined) return found
  const made = make()
  registry[symbol] = made
  return made
}

// A timer or a wait resumes fibers from outside Effect's run loop: it must
// run on the scheduler of the fiber that set it, so that a simulation's
// virtual scheduler, which goes with its virtual clock, drives it too.

/**
 * The scheduler `fiber` runs on.
 *
 * @internal
 */
export const schedulerOf = (fiber: Fiber.RuntimeFiber<unknown, unknown>): Scheduler.Scheduler => fiber.currentScheduler

/**
 * The scheduler of the running fiber.
 *
 * @internal
 */
export const scheduler: Effect.Effect<Scheduler.Scheduler> = FiberRef.get(FiberRef.currentScheduler)

/**
 * The scheduler fibers started on `runtime` run on.
 *
 * @internal
 */
export const schedulerOfRuntime = (runtime: Runtime.Runtime<never>): Scheduler.Scheduler =>
  FiberRefs.getOrDefault(runtime.fiberRefs, FiberRef.currentScheduler)

/**
 * The clock of `fiber`, read where a call starts without an effect of its own
 * to ask for it.
 *
 * @internal
 */
export const clockOf = (fiber: Fiber.RuntimeFiber<unknown, unknown>): Clock.Clock =>
  Context.get(fiber.currentDefaultServices, Clock.Clock)

/**
 * The tracer of `fiber`, read once when a loop starts (see instrumentation.ts).
 *
 * @internal
 */
export const tracerOf = (fiber: Fiber.RuntimeFiber<unknown, unknown>): Tracer.Tracer => fiber.currentTracer

/**
 * A fiber's default services (its clock among them) and log annotations.
 *
 * @internal
 */
export interface Settings {
  readonly services: Context.Context<DefaultServices.DefaultServices>
  readonly annotations: HashMap.HashMap<string, unknown>
}

/**
 * The settings `fiber` runs with.
 *
 * @internal
 */
export const settingsOf = (fiber: Fiber.RuntimeFiber<unknown, unknown>): Settings => ({
  services: fiber.getFiberRef(DefaultServices.currentServices),
  annotations: fiber.getFiberRef(FiberRef.currentLogAnnotations)
})

/**
 * Sets the running fiber's settings, for a loop that runs for the fiber's
 * life and puts the old ones back when it stops. `Effect.withClock` and
 * `Effect.annotateLogs` would do the same but keep frames on the fiber's
 * stack for as long as the loop runs, for every elector.
 *
 * @internal
 */
export const set = (settings: Settings): Effect.Effect<void> =>
  Effect.zipRight(
    FiberRef.set(DefaultServices.currentServices, settings.services),
    FiberRef.set(FiberRef.currentLogAnnotations, settings.annotations)
  )

/**
 * `settings` with `clock` and the log `annotations` added. The fiber's own
 * services are kept when they hold `clock` already (as an elector's do
 * unless its clock was provided to `make` alone): a copy per loop would be
 * a map of its own.
 *
 * @internal
 */
export const within = (
  settings: Settings,
  clock: Clock.Clock,
  annotations: Readonly<Record<string, string>>
): Settings => {
  const { services } = settings
  let annotated = settings.annotations
  for (const key in annotations) annotated = HashMap.set(annotated, key, annotations[key])
  return {
    services: Context.get(services, Clock.Clock) === clock ? services : Context.add(services, Clock.Clock, clock),
    annotations: annotated
  }
}

/**
 * Calls `f` with `fiber`'s exit when it ends (at once if it has), outside
 * any fiber.
 *
 * @internal
 */
export const observe = <A, E>(fiber: Fiber.RuntimeFiber<A, E>, f: (exit: Exit.Exit<A, E>) => void): void =>
  fiber.addObserver(f)

/**
 * Interrupts `fiber` from outside any fiber, without waiting for it to end.
 *
 * @internal
 */
export const interruptNow = (fiber: Fiber.RuntimeFiber<unknown, unknown>): void =>
  fiber.unsafeInterruptAsFork(FiberId.none)
