/**
 * The health check ({@link Health}) as an `@effect/platform` HTTP app. It lives
 * in its own module so that the core does not load `@effect/platform`.
 *
 * @since 0.1.0
 */
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import { Health, type HealthShape } from "./Health.js"

/**
 * Answers with a check's `Report` as JSON and its HTTP status (200 leader,
 * 200 or 503 follower, 503 unhealthy). Mount it on the path you probe.
 *
 * @since 0.1.0
 * @category handlers
 * @example
 * ```ts
 * import { HttpRouter } from "@effect/platform"
 * import { Effect } from "effect"
 * import { Elector, Health } from "effect-leaderelection"
 * import * as HealthHttpApp from "effect-leaderelection/HealthHttpApp"
 *
 * const router = Effect.map(Effect.flatMap(Elector.Elector, (elector) => Health.make(elector)), (health) =>
 *   HttpRouter.empty.pipe(HttpRouter.get("/healthz", HealthHttpApp.make(health))))
 * ```
 */
export const make = (health: HealthShape): Effect.Effect<HttpServerResponse.HttpServerResponse> =>
  Effect.map(
    health.check,
    (report) =>
      HttpServerResponse.unsafeJson(report, { status: report.httpStatus, headers: { "cache-control": "no-store" } })
  )

/**
 * {@link make} for the `Health` service in context (see `Health.layer`).
 *
 * @since 0.1.0
 * @category handlers
 * @example
 * ```ts
 * import { HttpRouter } from "@effect/platform"
 * import * as HealthHttpApp from "effect-leaderelection/HealthHttpApp"
 *
 * const router = HttpRouter.empty.pipe(HttpRouter.get("/healthz", HealthHttpApp.app))
 * ```
 */
export const app: Effect.Effect<HttpServerResponse.HttpServerResponse, never, Health> = Effect.flatMap(Health, make)
