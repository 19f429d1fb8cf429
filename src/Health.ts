/**
 * A health check for an elector, for an orchestrator's probe or a load
 * balancer: is this participant the leader, a follower, or unhealthy?
 *
 * Unhealthy means the participant can no longer take part in the election
 * and needs attention: no store call has succeeded within `maxSilence`
 * (default twice the lease duration: the database is unreachable, the
 * elector is wedged or no longer running), or the last store call failed
 * with an error no retry can fix (missing table, no privilege, bad
 * credentials). A leader or a follower whose store calls land is healthy.
 *
 * | state | HTTP | when |
 * | --- | --- | --- |
 * | `leader` | 200 | this participant leads (re-checked against its deadline) |
 * | `follower` | 200, or 503 with `leaderOnly` | it follows and its store calls land |
 * | `unhealthy` | 503 | silence longer than `maxSilence`, or a fatal store error |
 *
 * A follower is healthy by default, so that a liveness or readiness probe
 * does not restart or unroute the standbys. `leaderOnly: true` makes a
 * follower answer 503, for a load balancer that must route to the leader only.
 *
 * The HTTP handlers answer every request with the {@link Report} as JSON;
 * mount them on the path you probe. `toNodeListener` is for plain
 * `node:http`; `HealthHttpApp` (its own module, so that the core does not
 * load `@effect/platform`) is for `@effect/platform` HTTP servers.
 *
 * @since 0.1.0
 */
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { Elector, type ElectorShape, type StatusJson, statusToJson } from "./Elector.js"
import type { InvalidConfig } from "./ElectorError.js"
import { duration, formatDuration } from "./internal/config/limits.js"
import { isFatal } from "./Store.js"

/**
 * What a check found: `leader` and `follower` are healthy; `unhealthy` is a
 * participant that can no longer take part.
 *
 * @since 0.1.0
 * @category models
 */
export type State = "leader" | "follower" | "unhealthy"

/**
 * What `make` takes: when a participant counts as unhealthy, and whether a
 * follower answers 503.
 *
 * @since 0.1.0
 * @category models
 */
export interface HealthOptions {
  /**
   * How long without a successful store call before the participant is
   * unhealthy. Default: twice the lease duration. Counted from the last
   * success, or from when the check was made if there was none yet (a grace
   * period at startup).
   */
  readonly maxSilence?: Duration.DurationInput | undefined
  /**
   * Answer 503 for a follower too, for a load balancer that must route to the
   * leader only. Default false: a follower answers 200.
   */
  readonly leaderOnly?: boolean | undefined
}

/**
 * The answer of a check, JSON-serialisable as it is: the HTTP handlers send it
 * as their body.
 *
 * @since 0.1.0
 * @category models
 */
export interface Report {
  readonly state: State
  /** 200 or 503, as described in the module's table. */
  readonly httpStatus: 200 | 503
  readonly election: string
  /** Why the participant is unhealthy; `null` when it is not. */
  readonly reason: string | null
  readonly status: StatusJson
}

/**
 * A health check as `make` builds it: `check` evaluates the elector's
health now.
 *
 * @since 0.1.0
 * @category models
 */
export interface HealthShape {
  /** Evaluates the elector's health now. */
  readonly check: Effect.Effect<Report>
}

/**
 * The health check service, for `HealthHttpApp.app` or your own routes.
 *
 * @since 0.1.0
 * @category tags
 */
export class Health extends Context.Tag("effect-leaderelection/Health")<Health, HealthShape>() {}

/**
 * A health check for `elector`. Like the elector, it uses the `Clock` in
 * scope when it is made. Refuses a `maxSilence` that is not a positive
 * duration with an `InvalidConfig`.
 *
 * @since 0.1.0
 * @category constructors
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Elector, Health } from "effect-leaderelection"
 *
 * const program = Effect.gen(function* () {
 *   const elector = yield* Elector.Elector
 *   const health = yield* Health.make(elector, { maxSilence: "30 seconds" })
 *   const report = yield* health.check
 *   yield* Effect.log(`${report.state} (${report.httpStatus})`)
 * })
 * ```
 */
export const make = (elector: ElectorShape, options: HealthOptions = {}): Effect.Effect<HealthShape, InvalidConfig> =>
  Effect.gen(function*() {
    const maxSilence = yield* duration(
      "maxSilence",
      options.maxSilence ?? Duration.times(elector.config.leaseDuration, 2)
    )
    const clock = yield* Effect.clock
    const madeAt = yield* clock.currentTimeMillis
    const check = Effect.gen(function*() {
      const status = yield* elector.status
      const now = yield* clock.currentTimeMillis
      const lastSuccess = Option.match(status.observedAt, {
        onNone: () => madeAt,
        onSome: (at) => Math.max(at.getTime(), madeAt)
      })
      const silence = Duration.millis(Math.max(0, now - lastSuccess))
      const fatal = Option.filter(status.lastError, isFatal)
      const reason = Option.isSome(fatal)
        ? `fatal store error: ${fatal.value.message}`
        : Duration.greaterThan(silence, maxSilence)
        ? `no successful store call for ${formatDuration(silence)} (maxSilence ${formatDuration(maxSilence)})`
        : null
      const state: State = reason !== null ? "unhealthy" : status.isLeader ? "leader" : "follower"
      const healthy = state === "leader" || (state === "follower" && options.leaderOnly !== true)
      return {
        state,
        httpStatus: healthy ? 200 : 503,
        election: elector.config.name,
        reason,
        status: statusToJson(status)
      } satisfies Report
    })
    return { check }
  })

/**
 * The health check of the {@link Elector} in context.
 *
 * @since 0.1.0
 * @category layers
 * @example
 * ```ts
 * import { Layer } from "effect"
 * import { Elector, Health, MemoryStore } from "effect-leaderelection"
 *
 * const ElectorLive = Elector.layer({ name: "jobs" }).pipe(Layer.provide(MemoryStore.layer()))
 * const HealthLive = Health.layer().pipe(Layer.provideMerge(ElectorLive))
 * ```
 */
export const layer = (options?: HealthOptions): Layer.Layer<Health, InvalidConfig, Elector> =>
  Layer.effect(Health, Effect.flatMap(Elector, (elector) => make(elector, options)))

/**
 * The part of a `node:http` request the listener reads.
 *
 * @since 0.1.0
 * @category models
 */
export interface NodeRequest {
  readonly method?: string | undefined
}

/**
 * The part of a `node:http` response the listener writes.
 *
 * @since 0.1.0
 * @category models
 */
export interface NodeResponse {
  writeHead(statusCode: number, headers: Record<string, string>): unknown
  end(body?: string): unknown
}

/**
 * A `node:http` request listener answering every request with a check's
 * {@link Report} as JSON (no body for HEAD). If the check itself dies, it
 * answers 500.
 *
 * @since 0.1.0
 * @category handlers
 * @example
 * ```ts
 * import { createServer } from "node:http"
 * import { Effect } from "effect"
 * import { Elector, Health } from "effect-leaderelection"
 *
 * const serve = Effect.gen(function* () {
 *   const health = yield* Health.make(yield* Elector.Elector)
 *   const listener = Health.toNodeListener(health)
 *   createServer((req, res) => req.url === "/healthz" ? listener(req, res) : res.writeHead(404).end()).listen(8080)
 * })
 * ```
 */
export const toNodeListener = (health: HealthShape) => (request: NodeRequest, response: NodeResponse): void => {
  const send = (statusCode: number, body: unknown) => {
    response.writeHead(statusCode, { "content-type": "application/json", "cache-control": "no-store" })
    response.end(request.method === "HEAD" ? undefined : JSON.stringify(body))
  }
  Effect.runFork(
    health.check.pipe(
      Effect.map((report) => send(report.httpStatus, report)),
      Effect.catchAllCause((cause) =>
        Effect.sync(() =>
          send(500, { state: "unhealthy", reason: `health check failed: ${String(Cause.squash(cause))}` })
        )
      )
    )
  )
}
