/**
 * The elector for callers that do not use Effect: Promises, an AbortSignal
 * per term, and plain values instead of `Option`.
 *
 * A Promise elector is a small state machine, `stopped → starting → running
 * → stopping → stopped`, plus `failed`. `start()` and `stop()` may be called
 * any number of times, in any order, without awaiting each other: the last
 * call wins, and one elector at most takes part at a time. Every user
 * callback is contained: a throw or a rejection is logged, never thrown at
 * the caller nor left as an unhandled rejection, and waiting for a callback
 * to settle is bounded by `leaseDuration`. Logs go to the console as logfmt
 * lines, or to the app's own logger (`logger`: pino, winston, `console`).
 *
 * @since 0.1.0
 */
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import type * as LogLevel from "effect/LogLevel"
import * as Option from "effect/Option"
import * as EffectRuntime from "effect/Runtime"
import * as Scope from "effect/Scope"
import * as Elector from "./Elector.js"
import type { LastError } from "./ElectorError.js"
import * as jobs from "./internal/election/job.js"
import * as internal from "./internal/election/make.js"
import * as Callbacks from "./internal/promise/callbacks.js"
import * as Lifecycle from "./internal/promise/lifecycle.js"
import * as Spreading from "./internal/spread/spread.js"
import type * as Job from "./Job.js"
import * as Leadership from "./Leadership.js"
import * as Metrics from "./Metrics.js"
import { Store, type StoreShape } from "./Store.js"

/**
 * What `createElector` takes: every `ElectorConfig` field, the store, and
 * the callbacks and jobs in their Promise form.
 *
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
   * Runs for each term. `signal` is aborted when the term ends, whether or
   * not the callback has returned by then: stop promptly, and tie anything
   * that outlives the call (timers, sockets) to the signal. The lease is not
   * released until the returned promise settles, or until `leaseDuration`
   * after the abort, whichever comes first. A rejection is logged and ends
   * the term's work.
   */
  readonly onStartedLeading?: ((signal: AbortSignal, fence: bigint) => void | Promise<void>) | undefined
  /**
   * Runs after each term, once `onStartedLeading` has settled. Waited for
   * at most `leaseDuration`.
   */
  readonly onStoppedLeading?: (() => void | Promise<void>) | undefined
  /**
   * A new term was observed. Advisory: never decide leadership on it. Called
   * off the election's path: a returned promise is not waited for.
   */
  readonly onNewLeader?: ((identity: string, fence: bigint) => void) | undefined
  /**
   * Leader-only scheduled jobs: each runs on the leader at the slots of its
   * schedule, each slot at most once across failovers (see
   * `Elector.schedule` and `Job`).
   */
  readonly jobs?: ReadonlyArray<PromiseJob> | undefined
  /**
   * Called each time the elector enters `failed`: when `start()` fails, and
   * when the election loop ends by itself while running. Not called for
   * failures the elector handles (store errors, lost leases: see
   * `status().lastError`).
   */
  readonly onError?: ((error: unknown) => void) | undefined
  /**
   * The least severe level logged: `"All"`, `"Trace"`, `"Debug"`, `"Info"`
   * (default), `"Warning"`, `"Error"`, `"Fatal"` or `"None"`.
   */
  readonly logLevel?: LogLevel.Literal | undefined
  /**
   * Where the elector's logs go: the app's pino, winston or `console` (see
   * {@link PromiseLogger}). By default, Effect's logger prints logfmt lines
   * on the console.
   */
  readonly logger?: PromiseLogger | undefined
}

/**
 * The fields of a log record: always the election and the identity; where
 * the record concerns them, the term's fence, the error (its tag, whether it
 * is retryable) and its cause. Values are strings (a fence in decimal) or
 * booleans, so that any JSON logger writes them.
 *
 * @since 0.1.0
 * @category models
 */
export interface PromiseLogFields {
  readonly election?: string
  readonly identity?: string
  /** The term's fence token, in decimal. */
  readonly fence?: string
  /** The tag of the error the record reports (e.g. `StoreError`, `LeaseLost`). */
  readonly error?: string
  /** Whether that error can fix itself (a connection reset) or needs an operator (bad credentials). */
  readonly retryable?: boolean
  /** The full cause, pretty-printed, stack traces included. */
  readonly cause?: string
  /** Other annotations: the wake-up hint listener's `channel`, for one. */
  readonly [key: string]: unknown
}

/**
 * A logger for the `logger` option: pino, winston, `console`, or any object
 * with these four methods (and `fatal`, used where there is one; Trace
 * records go to `debug`). Each record is one call:
 *
 * - `logger.info(fields, message)`, pino's (and bunyan's) order, for a
 *   logger without a `log` method;
 * - `logger.info(message, fields)` for a logger that has a `log` method of
 *   its own (winston, `console`, consola), which is how those take metadata.
 *
 * A logger that throws does not stop the elector: that record goes to
 * Effect's default logger, with the throw.
 *
 * @since 0.1.0
 * @category models
 * @example
 * ```ts
 * import { createElector, type PromiseLogger } from "effect-leaderelection/promise"
 * import * as MemoryStore from "effect-leaderelection/stores/MemoryStore"
 *
 * // pino(), a winston logger, or console all fit; this one writes JSON lines.
 * const logger: PromiseLogger = {
 *   debug: () => {},
 *   info: (fields, message) => console.log(JSON.stringify({ level: "info", message, ...fields })),
 *   warn: (fields, message) => console.log(JSON.stringify({ level: "warn", message, ...fields })),
 *   error: (fields, message) => console.log(JSON.stringify({ level: "error", message, ...fields }))
 * }
 *
 * const elector = createElector({ store: MemoryStore.layer(), name: "reports", logger })
 * ```
 */
export interface PromiseLogger {
  /** DEBUG and TRACE records. */
  debug(fields: PromiseLogFields, message: string): unknown
  /** INFO records: a term started or ended, a new leader observed. */
  info(fields: PromiseLogFields, message: string): unknown
  /** WARNING records: a store call that failed and will be tried again, a lease lost. */
  warn(fields: PromiseLogFields, message: string): unknown
  /** ERROR records: fatal store errors, a callback or a term's work that failed. */
  error(fields: PromiseLogFields, message: string): unknown
  /** FATAL records, where the logger has the method; `error` takes them otherwise. */
  fatal?(fields: PromiseLogFields, message: string): unknown
}

/**
 * A leader-only scheduled job for Promise callers.
 *
 * @since 0.1.0
 * @category models
 * @example
 * ```ts
 * import type { PromiseJob } from "effect-leaderelection/promise"
 *
 * const compact: PromiseJob = {
 *   name: "compact",
 *   schedule: "0 3 * * *",
 *   run: async (signal, slot) => {
 *     if (!signal.aborted) console.log(`compacting for ${slot.at.toISOString()} under fence ${slot.fence}`)
 *   }
 * }
 * ```
 */
export interface PromiseJob {
  /** The job's name, unique within the election. */
  readonly name: string
  /** A cron expression (read in UTC), a `Cron`, or an Effect `Schedule`. */
  readonly schedule: Job.When
  /**
   * Runs one slot. `signal` is aborted when the term ends: stop promptly.
   * The run is not waited for after the abort; a rejection is logged and
   * counted as `failed`.
   */
  readonly run: (signal: AbortSignal, slot: Job.Slot) => void | Promise<void>
  /** `"atMostOnce"` (default) or `"atLeastOnce"`: see `Job.Delivery`. */
  readonly delivery?: Job.Delivery | undefined
}

/**
 * Where a Promise elector is in its life.
 *
 * - `stopped`: not taking part (initially, and once `stop()` has finished);
 * - `starting`: building the store and the elector;
 * - `running`: taking part in the election (following or leading);
 * - `stopping`: ending the term, releasing the lease, tearing the store down;
 * - `failed`: `start()` failed, or the election loop ended by itself; see
 *   `status().error`. `start()` starts afresh, `stop()` returns to `stopped`.
 *
 * @since 0.1.0
 * @category models
 */
export type ElectorState = "stopped" | "starting" | "running" | "stopping" | "failed"

/**
 * An error as JSON: its tag (or class name) and message.
 *
 * @since 0.1.0
 * @category models
 */
export interface ErrorJSON {
  readonly _tag: string
  readonly message: string
}

/**
 * {@link PromiseStatus} as JSON: `Elector.StatusJson` (bigints as decimal
 * strings, dates as ISO strings, the payload in base64, absent values as
 * `null`) with the elector's state and the error that failed it.
 *
 * @since 0.1.0
 * @category models
 */
export interface PromiseStatusJSON extends Elector.StatusJson {
  readonly state: ElectorState
  readonly error: ErrorJSON | null
}

/**
 * `Elector.Status` with plain values, the elector's state, and the error
 * that failed it. `JSON.stringify(status)` works: see {@link PromiseStatusJSON}.
 *
 * @since 0.1.0
 * @category models
 */
export interface PromiseStatus {
  readonly state: ElectorState
  readonly isLeader: boolean
  readonly fence: bigint | undefined
  readonly identity: string
  readonly leader: string | undefined
  readonly leaderFence: bigint | undefined
  readonly leaderPayload: Uint8Array | undefined
  readonly observedAt: Date | undefined
  readonly validUntil: Date | undefined
  /** The latest store failure or lost lease; the elector handles these itself. */
  readonly lastError: LastError | undefined
  /**
   * When this elector last saw its identity held by another live process
   * (`Elector.Status.identityCollision`; since 0.2.0).
   */
  readonly identityCollision: Date | undefined
  /** While `failed`: what failed it. */
  readonly error: unknown
  readonly toJSON: () => PromiseStatusJSON
}

/**
 * An elector for code that does not use Effect, as `createElector` returns
 * it: start and stop it, read its state, hand leadership over.
 *
 * @since 0.1.0
 * @category models
 */
export interface PromiseElector {
  readonly identity: string
  /**
   * Asks for the elector to run. Resolves once it runs (not once it leads),
   * or once a later `stop()` has taken over; rejects with the error (e.g. a
   * `StoreError` from building the store) if starting fails.
   */
  readonly start: () => Promise<void>
  /**
   * Asks for the elector to stop. Resolves once it has stopped (the term's
   * signal aborted, `onStartedLeading` and `onStoppedLeading` settled or
   * given up on after `leaseDuration` each, the lease released unless
   * `disableRelease`, the store torn down), or once a later `start()` has
   * taken over. Called while starting, it cancels the start. Never rejects.
   */
  readonly stop: () => Promise<void>
  /**
   * Settles when the elector leaves `running`: resolves when `stop()` has
   * stopped it, rejects with the error when it fails. Resolved at once while
   * `stopped`, rejected at once while `failed`.
   */
  readonly done: () => Promise<void>
  /**
   * Hands leadership over, as before draining a node: ends the current term
   * now (its signal aborted, `onStartedLeading` settled or given up on, the
   * lease released) and keeps this participant out of the election for
   * `resignHoldOff`, so that another one takes over. Resolves once the term
   * has ended; at once when not running. Never rejects.
   */
  readonly resign: () => Promise<void>
  /** Whether this participant may act as leader right now; re-checks the deadline. */
  readonly isLeader: () => boolean
  /** The current term's fence token, while leading. */
  readonly fence: () => bigint | undefined
  readonly status: () => PromiseStatus
  /**
   * This elector's metrics (see the `Metrics` module) in the Prometheus text
   * exposition format, ready to serve on a `/metrics` endpoint.
   */
  readonly metrics: () => string
}

const errorJSON = (error: unknown): ErrorJSON =>
  error instanceof Error
    ? { _tag: "_tag" in error && typeof error._tag === "string" ? error._tag : error.name, message: error.message }
    : { _tag: "Unknown", message: String(error) }

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
 * const reconcileOnce = async (fence: bigint) => {
 *   console.log(`reconciling under fence ${fence}`) // stamp external writes with the fence
 *   await new Promise((resolve) => setTimeout(resolve, 1000))
 * }
 *
 * const elector = createElector({
 *   store: PgStore.layerFromUrl("postgres://app@db:5432/app", { ensureSchema: true }),
 *   name: "invoice-reconciler",
 *   onStartedLeading: async (signal, fence) => {
 *     while (!signal.aborted) await reconcileOnce(fence)
 *   },
 *   onError: (error) => {
 *     console.error("elector failed", error)
 *     process.exitCode = 1
 *   }
 * })
 *
 * export const main = async () => {
 *   await elector.start()
 *   process.on("SIGTERM", () => void elector.stop()) // releases the lease
 * }
 * ```
 */
export const createElector = (options: PromiseElectorOptions): PromiseElector => {
  const {
    jobs: scheduled = [],
    logLevel,
    logger,
    onError,
    onNewLeader,
    onStartedLeading,
    onStoppedLeading,
    store,
    ...config
  } = options
  const validated = Effect.runSyncExit(Elector.validate(config))
  if (Exit.isFailure(validated)) throw Cause.squash(validated.cause)
  for (const job of scheduled) {
    const checked = jobs.check(job.name, job.schedule, job)
    if (Either.isLeft(checked)) throw checked.left
  }
  const { identity, leaseDuration, name } = validated.value
  const layer: Layer.Layer<Store, unknown> = "acquire" in store ? Layer.succeed(Store, store) : store

  // Everything this elector runs, runs on this: its log annotations, level and logger.
  const runtime = Callbacks.runtime({ election: name, identity }, logLevel, logger)
  const log = (effect: Effect.Effect<void>) => EffectRuntime.runFork(runtime)(effect)
  const settled = (
    callback: string,
    outcome: Promise<Exit.Exit<unknown, unknown>>,
    onFailure: (cause: Cause.Cause<unknown>) => Effect.Effect<void>
  ) => Callbacks.settled(leaseDuration, callback, outcome, onFailure)
  const failed = (callback: string) => (cause: Cause.Cause<unknown>) => Effect.logError(`${callback} failed`, cause)

  // A job's run: aborted, and no longer waited for, when the term ends.
  const slot = (job: PromiseJob) => (at: Job.Slot) =>
    Effect.suspend(() => {
      const controller = new AbortController()
      return Effect.promise(() => Callbacks.invoke(() => job.run(controller.signal, at))).pipe(
        Effect.flatten,
        Effect.onInterrupt(() => Effect.sync(() => controller.abort()))
      )
    })

  const electorConfig: Elector.ElectorConfig = {
    ...config,
    identity,
    onStartedLeading: onStartedLeading === undefined
      ? undefined
      : (fence) => Callbacks.term(leaseDuration, "onStartedLeading", (signal) => onStartedLeading(signal, fence)),
    onStoppedLeading: onStoppedLeading === undefined
      ? undefined
      : Effect.suspend(() =>
        settled("onStoppedLeading", Callbacks.invoke(onStoppedLeading), failed("onStoppedLeading"))
      ),
    // Called at once, in order, and never waited for: an observer cannot hold up the election.
    onNewLeader: onNewLeader === undefined ?
      undefined :
      (leader, fence) =>
        Effect.asVoid(
          Effect.forkDaemon(
            settled("onNewLeader", Callbacks.invoke(() => onNewLeader(leader, fence)), failed("onNewLeader"))
          )
        )
  }

  // One run: the store, the elector and its loop, until the loop ends or the run is interrupted.
  const program = (started: (elector: internal.Elector) => void): Effect.Effect<never, unknown> =>
    Effect.gen(function*() {
      const elector = yield* internal.make(electorConfig)
      if (scheduled.length > 0) yield* jobs.slotStore(elector.store)
      const running = yield* Effect.fork(elector.run)
      for (const job of scheduled) {
        yield* Effect.forkScoped(
          Elector.schedule(job.name, job.schedule, slot(job), job).pipe(Effect.provideService(Elector.Elector, elector))
        )
      }
      // Under failFast, start() settles on the first store answer and rejects
      // with a fatal one; the race also fails the start if run ends first.
      if (elector.config.failFast) yield* Effect.raceFirst(elector.ready, Fiber.join(running))
      yield* Effect.sync(() => started(elector))
      return yield* Fiber.join(running)
    }).pipe(Effect.scoped, Effect.provide(layer))

  const lifecycle = new Lifecycle.Lifecycle<internal.Elector>({
    launch: (started) => EffectRuntime.runFork(runtime)(program(started)),
    failed: (error, cause, during) => {
      // A failed start is reported by start()'s rejection (and onError): not logged as well.
      if (during === "running") log(Effect.logError("the elector stopped on a failure", cause))
      if (onError !== undefined) {
        void Callbacks.invoke(() => onError(error)).then((outcome) => {
          if (Exit.isFailure(outcome)) log(failed("onError")(outcome.cause))
        })
      }
    },
    // stop() never rejects: the log is the only report.
    stoppedWith: (cause) => log(Effect.logError("the elector failed while stopping", cause))
  })

  const current = <A>(f: (elector: Elector.ElectorShape) => Effect.Effect<A>, otherwise: A): A => {
    const elector = lifecycle.elector
    return elector === undefined ? otherwise : EffectRuntime.runSync(runtime)(f(elector))
  }

  // What status() reports while no elector runs.
  const idle: Elector.Status = {
    isLeader: false,
    fence: Option.none(),
    identity,
    leader: Option.none(),
    leaderFence: Option.none(),
    leaderPayload: Option.none(),
    observedAt: Option.none(),
    validUntil: Option.none(),
    lastError: Option.none(),
    identityCollision: Option.none()
  }

  const snapshot = (status: Elector.Status): PromiseStatus => {
    const state = lifecycle.state
    const failure = lifecycle.failed
    return {
      state,
      isLeader: status.isLeader,
      fence: Option.getOrUndefined(status.fence),
      identity,
      leader: Option.getOrUndefined(status.leader),
      leaderFence: Option.getOrUndefined(status.leaderFence),
      leaderPayload: Option.getOrUndefined(status.leaderPayload),
      observedAt: Option.getOrUndefined(status.observedAt),
      validUntil: Option.getOrUndefined(status.validUntil),
      lastError: Option.getOrUndefined(status.lastError),
      identityCollision: Option.getOrUndefined(status.identityCollision),
      error: failure?.error,
      toJSON: () => ({
        state,
        ...Elector.statusToJson(status),
        error: failure === undefined ? null : errorJSON(failure.error)
      })
    }
  }

  return {
    identity,
    start: () => lifecycle.start(),
    stop: () => lifecycle.stop(),
    done: () => lifecycle.done(),
    resign: () => {
      const elector = lifecycle.elector
      return elector === undefined ? Promise.resolve() : EffectRuntime.runPromise(runtime)(elector.resign)
    },
    // Read without running an effect: these are called on hot paths, and re-check the deadline every time.
    isLeader: () => lifecycle.elector?.unsafeIsLeader() ?? false,
    fence: () => lifecycle.elector?.unsafeFence(),
    status: () => snapshot(current((elector) => elector.status, idle)),
    metrics: () => Effect.runSync(Metrics.prometheusText({ election: name, identity }))
  }
}

/**
 * A store built once and shared by many Promise electors: pass it as
 * `store` to each {@link createElector}. Stopping an elector leaves it open;
 * `close()` tears it down (the pool a `layerFromUrl` store owns is ended)
 * once the electors using it have stopped.
 *
 * @since 0.1.0
 * @category models
 */
export interface SharedStore extends StoreShape {
  /** Tears the store down. Idempotent; never rejects. */
  readonly close: () => Promise<void>
}

/**
 * Builds a store layer once, for many electors in this process: one pool
 * for all of them instead of one per elector. Rejects with the layer's
 * error (e.g. a `StoreError` from `ensureSchema`, an `InvalidConfig` URL).
 * Size the pool for every election sharing it: see "Many elections in one
 * process" in the README.
 *
 * @since 0.1.0
 * @category constructors
 * @example
 * ```ts
 * import { createElector, openStore } from "effect-leaderelection/promise"
 * import * as PgStore from "effect-leaderelection/stores/PgStore"
 *
 * const bill = async (tenant: string) => {
 *   console.log(`billing ${tenant}`)
 *   await new Promise((resolve) => setTimeout(resolve, 1000))
 * }
 *
 * export const main = async () => {
 *   const store = await openStore(
 *     PgStore.layerFromUrl("postgres://app@db:5432/app", { ensureSchema: true, maxConnections: 4 })
 *   )
 *   const electors = ["acme", "globex"].map((tenant) =>
 *     createElector({
 *       store,
 *       name: `billing-${tenant}`,
 *       onStartedLeading: async (signal) => {
 *         while (!signal.aborted) await bill(tenant)
 *       }
 *     })
 *   )
 *   await Promise.all(electors.map((elector) => elector.start()))
 *   process.on("SIGTERM", async () => {
 *     await Promise.all(electors.map((elector) => elector.stop()))
 *     await store.close()
 *   })
 * }
 * ```
 */
export const openStore = async (store: Layer.Layer<Store, unknown>): Promise<SharedStore> => {
  const scope = Effect.runSync(Scope.make())
  const built = await Effect.runPromiseExit(Layer.buildWithScope(store, scope))
  const close = () => Effect.runPromise(Scope.close(scope, Exit.void))
  if (Exit.isFailure(built)) {
    await close()
    throw Cause.squash(built.cause)
  }
  return { ...Context.get(built.value, Store), close }
}

/**
 * What `createSpread` takes: every `Elector.SpreadConfig` field, the store,
 * the work in its Promise form, and the logging and error options of
 * {@link PromiseElectorOptions}.
 *
 * @since 0.2.0
 * @category models
 */
export interface PromiseSpreadOptions extends Elector.SpreadConfig {
  /** The store: a layer, built at each start and torn down at each stop, or a store built already. */
  readonly store: Layer.Layer<Store, unknown> | StoreShape
  /**
   * Runs for each term of each election this process leads. `signal` is
   * aborted when the term ends, as for `onStartedLeading` of
   * `createElector`: stop promptly; the lease is not released until the
   * returned promise settles, or until `leaseDuration` after the abort. A
   * rejection is logged and ends the term (see `onWorkFailure`).
   */
  readonly work: (name: string, signal: AbortSignal, fence: bigint) => void | Promise<void>
  /** As for `createElector`: called each time the spread enters `failed`. */
  readonly onError?: ((error: unknown) => void) | undefined
  /** As for `createElector`: the least severe level logged. */
  readonly logLevel?: LogLevel.Literal | undefined
  /** As for `createElector`: where the logs go. */
  readonly logger?: PromiseLogger | undefined
}

/**
 * One member of a spread group for Promise callers, as `createSpread`
 * returns it: the same state machine as {@link PromiseElector}
 * (`start()`/`stop()` in any order), over every election of the group.
 *
 * @since 0.2.0
 * @category models
 */
export interface PromiseSpread {
  /** The group's name (`group` of the options). */
  readonly group: string
  /** This member's identity: the holder of the leases it leads. */
  readonly identity: string
  /** Resolves once it runs (each election joined, not led); rejects if starting fails. */
  readonly start: () => Promise<void>
  /**
   * Resolves once it has stopped: the membership withdrawn, then every term
   * ended (signals aborted, work settled or given up on) and every lease
   * released, so that the others take them over at once. Never rejects.
   */
  readonly stop: () => Promise<void>
  /** As for {@link PromiseElector}: settles when it leaves `running`. */
  readonly done: () => Promise<void>
  /** Where it is in its life: see {@link ElectorState}. */
  readonly state: () => ElectorState
  /**
   * Takes part in one more election from now on (at once while running).
   * Throws `InvalidConfig` for a name refused or the group's own; rejects
   * if the election cannot be joined.
   */
  readonly add: (name: string) => Promise<void>
  /** Stops taking part in an election: its term, if any, ends and its lease is released. */
  readonly remove: (name: string) => Promise<void>
  /** The elections this member takes part in (while stopped too). */
  readonly names: () => ReadonlyArray<string>
  /** The elections this member leads right now; each re-checks its deadline. */
  readonly leading: () => ReadonlyArray<string>
  /** Hands one election over, as `PromiseElector.resign` does. Never rejects. */
  readonly resign: (name: string) => Promise<void>
}

/**
 * Spreads many elections evenly over the live processes of a group, for
 * Promise callers: `Elector.spread` behind `start()` and `stop()`. Each
 * process leads between floor(N/M) and ceil(N/M) of the N elections once
 * things settle, and runs `work` for each term it leads. An invalid
 * configuration throws `ElectorError.InvalidConfig` here, before anything
 * runs.
 *
 * @since 0.2.0
 * @category constructors
 * @example
 * ```ts
 * import { createSpread } from "effect-leaderelection/promise"
 * import * as PgStore from "effect-leaderelection/stores/PgStore"
 *
 * const bill = async (tenant: string, fence: bigint) => {
 *   console.log(`billing ${tenant} under fence ${fence}`)
 *   await new Promise((resolve) => setTimeout(resolve, 1000))
 * }
 *
 * const spread = createSpread({
 *   store: PgStore.layerFromUrl("postgres://app@db:5432/app", { ensureSchema: true, maxConnections: 8 }),
 *   group: "billing",
 *   names: Array.from({ length: 500 }, (_, i) => `tenant-${i}`),
 *   work: async (tenant, signal, fence) => {
 *     while (!signal.aborted) await bill(tenant, fence)
 *   }
 * })
 *
 * export const main = async () => {
 *   await spread.start()
 *   await spread.add("tenant-500")
 *   process.on("SIGTERM", () => void spread.stop()) // hands everything over
 * }
 * ```
 */
export const createSpread = (options: PromiseSpreadOptions): PromiseSpread => {
  const { logLevel, logger, onError, store, work, ...config } = options
  const checked = Effect.runSyncExit(Spreading.check(config))
  if (Exit.isFailure(checked)) throw Cause.squash(checked.cause)
  const { group, member } = checked.value
  const { identity, leaseDuration } = member
  const names = new Set(checked.value.names)
  const layer: Layer.Layer<Store, unknown> = "acquire" in store ? Layer.succeed(Store, store) : store
  const runtime = Callbacks.runtime({ group, identity }, logLevel, logger)
  // Rejects with the error itself, as start() does, not wrapped in a FiberFailure.
  const run = <A, E>(effect: Effect.Effect<A, E>): Promise<A> =>
    EffectRuntime.runPromiseExit(runtime)(effect).then((exit) =>
      Exit.isSuccess(exit) ? exit.value : Promise.reject(Cause.squash(exit.cause))
    )

  const leadership = (name: string) =>
    Effect.flatMap(
      Leadership.fence,
      (fence) => Callbacks.term(leaseDuration, "work", (signal) => work(name, signal, fence))
    )

  // Joins the elections of `names`, which add() and remove() change while
  // it starts, and runs once nothing is left to do.
  const program = (started: (spread: Elector.Spread) => void): Effect.Effect<never, unknown> =>
    Effect.gen(function*() {
      const spread = yield* Elector.spread({ ...config, identity, names: [] }, leadership)
      while (true) {
        const joined = new Set(yield* spread.names)
        const missing = [...names].filter((name) => !joined.has(name))
        const gone = [...joined].filter((name) => !names.has(name))
        if (missing.length === 0 && gone.length === 0) break
        yield* Effect.forEach(missing, spread.add, { discard: true })
        yield* Effect.forEach(gone, spread.remove, { discard: true })
      }
      yield* Effect.sync(() => started(spread))
      return yield* Effect.never
    }).pipe(Effect.scoped, Effect.provide(layer))

  const lifecycle = new Lifecycle.Lifecycle<Elector.Spread>({
    launch: (started) => EffectRuntime.runFork(runtime)(program(started)),
    failed: (error) => {
      if (onError !== undefined) void Callbacks.invoke(() => onError(error))
    },
    stoppedWith: (cause) => EffectRuntime.runFork(runtime)(Effect.logError("the spread failed while stopping", cause))
  })

  const running = () => lifecycle.state === "running" ? lifecycle.elector : undefined

  return {
    group,
    identity,
    start: () => lifecycle.start(),
    stop: () => lifecycle.stop(),
    done: () => lifecycle.done(),
    state: () => lifecycle.state,
    add: (name) => {
      const valid = Effect.runSyncExit(Spreading.checkName(checked.value, name))
      if (Exit.isFailure(valid)) throw Cause.squash(valid.cause)
      names.add(name)
      // Not running: the next start joins it (a start under way catches up before it runs).
      const spread = running()
      if (spread === undefined) return Promise.resolve()
      return run(spread.add(name)).catch((error: unknown) => {
        names.delete(name)
        throw error
      })
    },
    remove: (name) => {
      names.delete(name)
      const spread = running()
      return spread === undefined ? Promise.resolve() : run(spread.remove(name))
    },
    names: () => [...names],
    leading: () => {
      const spread = lifecycle.elector
      return spread === undefined ? [] : EffectRuntime.runSync(runtime)(spread.leading)
    },
    resign: (name) => {
      const spread = lifecycle.elector
      if (spread === undefined) return Promise.resolve()
      return run(
        Effect.flatMap(spread.elector(name), Option.match({ onNone: () => Effect.void, onSome: (e) => e.resign }))
      )
    }
  }
}
