/**
 * The elector for callers that do not use Effect: Promises, an AbortSignal
 * per term, and plain values instead of `Option`.
 *
 * @since 0.1.0
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import { constVoid } from "effect/Function"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import * as Elector from "./Elector.js"
import type { LastError } from "./ElectorError.js"
import { Store, type StoreShape } from "./Store.js"

/**
 * @since 0.1.0
 * @category models
 */
export interface PromiseElectorOptions
  extends Omit<Elector.ElectorConfig, "onStartedLeading" | "onStoppedLeading" | "onNewLeader">
{
  /**
   * The store: a layer (e.g. `PgStore.layerFromUrl(url)`), built when the
   * elector starts and torn down when it stops, or a store built already
   * (e.g. one `MemoryStore` shared by several in-process electors).
   */
  readonly store: Layer.Layer<Store, unknown> | StoreShape
  /**
   * Runs for each term. `signal` is aborted the instant leadership becomes
   * uncertain: stop promptly. This participant cannot lead again, nor release
   * its lease, until the returned promise settles.
   */
  readonly onStartedLeading?: ((signal: AbortSignal, fence: bigint) => void | Promise<void>) | undefined
  /** Runs after each term, once `onStartedLeading` has settled. */
  readonly onStoppedLeading?: (() => void | Promise<void>) | undefined
  /** A new term was observed. Advisory: never decide leadership on it. */
  readonly onNewLeader?: ((identity: string, fence: bigint) => void) | undefined
}

/**
 * `Elector.Status` with plain values.
 *
 * @since 0.1.0
 * @category models
 */
export interface PromiseStatus {
  readonly isLeader: boolean
  readonly fence: bigint | undefined
  readonly identity: string
  readonly leader: string | undefined
  readonly leaderFence: bigint | undefined
  readonly leaderPayload: Uint8Array | undefined
  readonly observedAt: Date | undefined
  readonly validUntil: Date | undefined
  readonly lastError: LastError | undefined
}

/**
 * @since 0.1.0
 * @category models
 */
export interface PromiseElector {
  readonly identity: string
  /** Starts taking part in the election; resolves once running, not once leading. */
  readonly start: () => Promise<void>
  /**
   * Stops: the term's signal is aborted and awaited, `onStoppedLeading` has
   * run and the lease is released (unless `disableRelease`) when it resolves.
   */
  readonly stop: () => Promise<void>
  /** Whether this participant may act as leader right now; re-checks the deadline. */
  readonly isLeader: () => boolean
  /** The current term's fence token, while leading. */
  readonly fence: () => bigint | undefined
  readonly status: () => PromiseStatus
}

const unsettled = (promise: Promise<void>) => Effect.promise(() => promise.then(constVoid, constVoid))

/** Runs an async callback as an effect that, when interrupted, aborts it and waits for it to settle. */
const term = (f: (signal: AbortSignal, fence: bigint) => void | Promise<void>, fence: bigint) =>
  Effect.suspend(() => {
    const controller = new AbortController()
    const settled = Promise.resolve().then(() => f(controller.signal, fence))
    return Effect.promise(() => settled).pipe(
      Effect.onInterrupt(() => Effect.zipRight(Effect.sync(() => controller.abort()), unsettled(settled)))
    )
  })

const callback = (name: string, f: () => void | Promise<void>) =>
  Effect.tryPromise(async () => f()).pipe(
    Effect.catchAll((error) => Effect.logError(`${name} failed`, error.error))
  )

/**
 * Builds an elector for Promise callers. An invalid configuration throws a
 * `ElectorError.InvalidConfig` here, naming the field, before anything runs.
 *
 * @since 0.1.0
 * @category constructors
 * @example
 * ```ts
 * import { createElector } from "effect-leaderelection/promise"
 * import * as PgStore from "effect-leaderelection/stores/PgStore"
 *
 * const elector = createElector({
 *   store: PgStore.layerFromUrl(process.env.DATABASE_URL!, { ensureSchema: true }),
 *   name: "invoice-reconciler",
 *   onStartedLeading: async (signal, fence) => {
 *     while (!signal.aborted) await reconcileOnce(fence)
 *   }
 * })
 * await elector.start()
 * process.on("SIGTERM", () => elector.stop())
 * declare function reconcileOnce(fence: bigint): Promise<void>
 * ```
 */
export const createElector = (options: PromiseElectorOptions): PromiseElector => {
  const { onNewLeader, onStartedLeading, onStoppedLeading, store, ...config } = options
  const validated = Effect.runSyncExit(Elector.validate(config))
  if (Exit.isFailure(validated)) throw Cause.squash(validated.cause)
  const { identity } = validated.value
  const layer: Layer.Layer<Store, unknown> = "acquire" in store ? Layer.succeed(Store, store) : store

  let running:
    | {
      readonly runtime: ManagedRuntime.ManagedRuntime<Store, unknown>
      readonly scope: Scope.CloseableScope
      readonly elector: Elector.ElectorShape
      readonly fiber: Fiber.RuntimeFiber<never, unknown>
    }
    | undefined

  const current = <A>(f: (elector: Elector.ElectorShape) => Effect.Effect<A>, otherwise: A): A =>
    running === undefined ? otherwise : Effect.runSync(f(running.elector))

  const snapshot = (status: Elector.Status): PromiseStatus => ({
    isLeader: status.isLeader,
    fence: Option.getOrUndefined(status.fence),
    identity: status.identity,
    leader: Option.getOrUndefined(status.leader),
    leaderFence: Option.getOrUndefined(status.leaderFence),
    leaderPayload: Option.getOrUndefined(status.leaderPayload),
    observedAt: Option.getOrUndefined(status.observedAt),
    validUntil: Option.getOrUndefined(status.validUntil),
    lastError: Option.getOrUndefined(status.lastError)
  })

  return {
    identity,
    start: async () => {
      if (running !== undefined) return
      const runtime = ManagedRuntime.make(layer)
      const scope = Effect.runSync(Scope.make())
      const elector = await runtime.runPromise(
        Elector.make({
          ...config,
          identity,
          onStartedLeading: onStartedLeading === undefined ? undefined : (fence) => term(onStartedLeading, fence),
          onStoppedLeading: onStoppedLeading === undefined ? undefined : callback("onStoppedLeading", onStoppedLeading),
          onNewLeader: onNewLeader === undefined
            ? undefined
            : (leader, fence) => callback("onNewLeader", () => onNewLeader(leader, fence))
        }).pipe(Scope.extend(scope))
      )
      running = { runtime, scope, elector, fiber: runtime.runFork(elector.run) }
    },
    stop: async () => {
      if (running === undefined) return
      const { fiber, runtime, scope } = running
      running = undefined
      await runtime.runPromise(Effect.zipRight(Fiber.interrupt(fiber), Scope.close(scope, Exit.void)))
      await runtime.dispose()
    },
    isLeader: () => current((elector) => elector.isLeader, false),
    fence: () => current((elector) => Effect.map(elector.fence, Option.getOrUndefined), undefined),
    status: () =>
      current(
        (elector) => Effect.map(elector.status, snapshot),
        snapshot({
          isLeader: false,
          fence: Option.none(),
          identity,
          leader: Option.none(),
          leaderFence: Option.none(),
          leaderPayload: Option.none(),
          observedAt: Option.none(),
          validUntil: Option.none(),
          lastError: Option.none()
        })
      )
  }
}
