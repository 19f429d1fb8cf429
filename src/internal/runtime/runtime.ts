/**
 * The one place the library reaches into Effect's runtime: the fiber
 * lifecycle outside `Effect.fork` (fibers started, observed, interrupted
 * from plain functions), a fiber's scheduler, services, settings and
 * FiberRefs, and registries shared by every copy of the library in a
 * process. Everything else in `src/` goes through here, so that a port to
 * another Effect line rewrites this module, not the election.
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
import type * as MetricLabel from "effect/MetricLabel"
import * as Option from "effect/Option"
import * as Runtime from "effect/Runtime"
import type * as Scheduler from "effect/Scheduler"
import type * as Tracer from "effect/Tracer"

// Fiber lifecycle: starting a fiber outside the caller's stack of effects,
// watching it end, and interrupting it without waiting. Each is public
// `RuntimeFiber` API in Effect 3; they are reached through here so that the
// few places that need them (store calls run apart, loops' releases, the
// deadline timer, the advisory fiber) name what they do, and a port to
// another Effect line finds them in one module.

/**
 * Starts `effect` on a fiber of its own, on `runtime` (its clock, tracer,
 * span, log annotations and context), a child of no fiber. It runs on the
 * current stack up to its first asynchronous step.
 *
 * @internal
 */
export const forkOn = <R, A, E>(
  runtime: Runtime.Runtime<R>,
  effect: Effect.Effect<A, E, R>
): Fiber.RuntimeFiber<A, E> => Runtime.runFork(runtime)(effect)

/**
 * What `fiber` runs with (its clock, scheduler, services, FiberRefs), with
 * `tag` set to `service`: for work started apart from the fiber, on its
 * behalf, that must not see what the fiber's context says of it.
 *
 * @internal
 */
export const runtimeOf = <I, S>(
  fiber: Fiber.RuntimeFiber<unknown, unknown>,
  tag: Context.Tag<I, S>,
  service: S
): Runtime.Runtime<never> =>
  Runtime.make({
    context: Context.add(fiber.currentContext, tag, service) as Context.Context<never>,
    fiberRefs: fiber.getFiberRefs(),
    runtimeFlags: Runtime.defaultRuntimeFlags
  })

/**
 * Starts `effect` on a fiber of its own on `scheduler`, not on the current
 * stack: it takes its first step when the scheduler runs it.
 *
 * @internal
 */
export const forkLater = <A, E>(
  effect: Effect.Effect<A, E>,
  scheduler: Scheduler.Scheduler
): Fiber.RuntimeFiber<A, E> => Effect.runFork(effect, { scheduler, immediate: false })

/**
 * Calls `f` with `fiber`'s exit once it has ended (at once if it has).
 *
 * @internal
 */
export const observe = <A, E>(fiber: Fiber.RuntimeFiber<A, E>, f: (exit: Exit.Exit<A, E>) => void): void =>
  fiber.addObserver(f)

/**
 * Interrupts `fiber` without waiting for it to end.
 *
 * @internal
 */
export const interruptNow = (fiber: Fiber.RuntimeFiber<unknown, unknown>): void =>
  fiber.unsafeInterruptAsFork(FiberId.none)

/**
 * Whether `fiber` has not ended yet.
 *
 * @internal
 */
export const isRunning = (fiber: Fiber.RuntimeFiber<unknown, unknown>): boolean => fiber.unsafePoll() === null

/**
 * The metric labels of the running fiber (`Metric.taggedWithLabels` and the
 * like), which `Metric.update` adds to an update's own.
 *
 * @internal
 */
export const metricLabels: Effect.Effect<ReadonlyArray<MetricLabel.MetricLabel>> = FiberRef.get(
  FiberRef.currentMetricLabels
)

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
 * The service `tag` in the context of `fiber`, if any, read where a call
 * starts without an effect of its own to ask for it.
 *
 * @internal
 */
export const serviceOf = <I, S>(fiber: Fiber.RuntimeFiber<unknown, unknown>, tag: Context.Tag<I, S>): S | undefined =>
  Option.getOrUndefined(Context.getOption(fiber.currentContext, tag))

/**
 * The tracer of `fiber`, read once when a loop starts (see instrumentation.ts).
 *
 * @internal
 */
export const tracerOf = (fiber: Fiber.RuntimeFiber<unknown, unknown>): Tracer.Tracer => fiber.currentTracer

/**
 * A fiber's default services (its clock among them), log annotations and
 * context.
 *
 * @internal
 */
export interface Settings {
  readonly services: Context.Context<DefaultServices.DefaultServices>
  readonly annotations: HashMap.HashMap<string, unknown>
  readonly context: Context.Context<never>
}

/**
 * The settings `fiber` runs with.
 *
 * @internal
 */
export const settingsOf = (fiber: Fiber.RuntimeFiber<unknown, unknown>): Settings => ({
  services: fiber.getFiberRef(DefaultServices.currentServices),
  annotations: fiber.getFiberRef(FiberRef.currentLogAnnotations),
  context: fiber.currentContext
})

/**
 * Sets the running fiber's settings, for a loop that runs for the fiber's
 * life and puts the old ones back when it stops. `Effect.withClock`,
 * `Effect.annotateLogs` and `Effect.provideService` would do the same but
 * keep frames on the fiber's stack for as long as the loop runs, for every
 * elector.
 *
 * @internal
 */
export const set = (settings: Settings): Effect.Effect<void> =>
  Effect.zipRight(
    Effect.zipRight(
      FiberRef.set(DefaultServices.currentServices, settings.services),
      FiberRef.set(FiberRef.currentLogAnnotations, settings.annotations)
    ),
    FiberRef.set(FiberRef.currentContext, settings.context)
  )

/**
 * `settings` with `clock`, the log `annotations` and `service` (under
 * `tag`) added. The fiber's own services are kept when they hold `clock`
 * already (as an elector's do unless its clock was provided to `make`
 * alone): a copy per loop would be a map of its own.
 *
 * @internal
 */
export const within = <I, S>(
  settings: Settings,
  clock: Clock.Clock,
  annotations: Readonly<Record<string, string>>,
  tag: Context.Tag<I, S>,
  service: S
): Settings => {
  const { services } = settings
  let annotated = settings.annotations
  for (const key in annotations) annotated = HashMap.set(annotated, key, annotations[key])
  return {
    services: Context.get(services, Clock.Clock) === clock ? services : Context.add(services, Clock.Clock, clock),
    annotations: annotated,
    context: Context.add(settings.context, tag, service) as Context.Context<never>
  }
}

/**
 * Adds `service` (under `tag`) to the running fiber's context for the rest
 * of its life, without a frame on its stack: for a fiber that is forked for
 * it.
 *
 * @internal
 */
export const provideOnFiber = <I, S>(tag: Context.Tag<I, S>, service: S): Effect.Effect<void> =>
  FiberRef.update(FiberRef.currentContext, (context) => Context.add(context, tag, service) as Context.Context<never>)
