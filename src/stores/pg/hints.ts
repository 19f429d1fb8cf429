/**
 * The PostgreSQL store's wake-up hints (see `Store.WakeUps`).
 *
 * Sending: the release statement calls `pg_notify(channel, name)` for the
 * row it gave up, in the same single statement; PostgreSQL delivers it when
 * that statement's implicit transaction commits, and leaves nothing on the
 * connection, so it passes through a transaction pooler such as PgBouncer.
 *
 * Listening: `LISTEN` is session state, which a transaction pooler does not
 * keep, so it runs on one dedicated connection per store, to a URL the user
 * states is direct. A notification wakes the election's followers in this
 * process, nothing more: anyone who can connect may NOTIFY any channel, and
 * a hint decides nothing. The connection's loss is logged once per outage,
 * counted, and retried with a backoff; followers poll meanwhile.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberId from "effect/FiberId"
import { identity } from "effect/Function"
import * as Metric from "effect/Metric"
import type * as Scope from "effect/Scope"
import { createHash } from "node:crypto"
import type { Client, ClientConfig } from "pg"
import type * as WakeUps from "../../internal/runtime/wakeUps.js"
import * as Metrics from "../../Metrics.js"

/** A new, unconnected client of the driver. */
export type NewClient = (config: ClientConfig) => Client

/**
 * The channel of a table (its quoted, possibly schema-qualified name):
 * deterministic, a plain lower-case identifier (no quoting in `LISTEN`), and
 * well within PostgreSQL's 63 bytes whatever the table's name.
 */
export const channelOf = (table: string): string =>
  `leaderelection_${createHash("sha256").update(table).digest("hex").slice(0, 32)}`

/**
 * A release statement (an `UPDATE` of the table) that also sends the hint,
 * once per row it gave up: a release that found nothing to give up sends none.
 */
export const notifying = (release: string, channel: string): string =>
  `WITH released AS (${release}\nRETURNING name)\nSELECT pg_notify('${channel}', name) FROM released`

/** The first wait before listening again after a loss; it doubles up to {@link retryAtMost}. */
export const retryFirst = Duration.millis(100)

/** The longest wait before listening again. */
export const retryAtMost = Duration.seconds(5)

/** How long an idle listening connection waits before TCP keepalive probes find a dead peer. */
const keepAliveAfter = Duration.seconds(10)

/**
 * Connects, listens on `channel`, and wakes `hints` on each notification,
 * until the connection fails (the effect fails with its cause). The client is
 * ended however the session ends.
 */
const session = (
  newClient: NewClient,
  config: ClientConfig,
  channel: string,
  hints: WakeUps.Registry,
  timeout: Duration.Duration,
  listening: Effect.Effect<void>
): Effect.Effect<never, unknown> =>
  Effect.acquireUseRelease(
    Effect.sync(() =>
      newClient({
        ...config,
        keepAlive: true,
        keepAliveInitialDelayMillis: Duration.toMillis(keepAliveAfter),
        connectionTimeoutMillis: Duration.toMillis(timeout),
        application_name: "effect-leaderelection hints"
      })
    ),
    (client) =>
      Effect.gen(function*() {
        const lost = yield* Deferred.make<never, unknown>()
        // Before connecting: an 'error' event with no listener would throw.
        client.on("error", (error) => Deferred.unsafeDone(lost, Exit.fail(error)))
        client.on("end", () => Deferred.unsafeDone(lost, Exit.fail(new Error("the connection ended"))))
        client.on("notification", (message) => {
          if (message.channel === channel && message.payload !== undefined) hints.wake(message.payload)
        })
        // The driver's own error, not Effect's UnknownException, is what the loss is logged with.
        yield* Effect.tryPromise({
          try: () => client.connect().then(() => client.query(`LISTEN ${channel}`)),
          catch: identity
        }).pipe(
          Effect.timeoutFail({ duration: timeout, onTimeout: () => new Error("no answer while connecting") }),
          Effect.raceFirst(Deferred.await(lost))
        )
        yield* listening
        return yield* Deferred.await(lost)
      }),
    // A server that stopped answering may never say goodbye.
    (client) => Effect.promise(() => client.end().catch(() => undefined)).pipe(Effect.timeoutOption(timeout))
  )

/**
 * Listens for the hints of `channel` on one connection of its own, for the
 * scope, on a fiber of its own; never fails, and never ends by itself. It
 * returns once the first attempt has listened or failed (within `timeout`),
 * so that a store's first releases are heard when the database is up.
 *
 * @internal
 */
export const listen = (
  newClient: NewClient,
  config: ClientConfig,
  channel: string,
  hints: WakeUps.Registry,
  timeout: Duration.Duration
): Effect.Effect<void, never, Scope.Scope> => {
  let failures = 0
  let down = false
  const started = Deferred.unsafeMake<void>(FiberId.none)
  const listening = Effect.suspend(() => {
    Deferred.unsafeDone(started, Exit.void)
    failures = 0
    if (!down) return Effect.void
    down = false
    return Effect.logInfo(`wake-up hints: listening again on ${channel}`)
  })
  const lost = (cause: Cause.Cause<unknown>) =>
    Effect.gen(function*() {
      Deferred.unsafeDone(started, Exit.void)
      yield* Metric.increment(Metrics.hintListenerLosses)
      if (!down) {
        down = true
        yield* Effect.logWarning(
          `wake-up hints: the listening connection failed (${String(Cause.squash(cause))}); ` +
            "followers poll meanwhile; retrying"
        )
      }
      const wait = Duration.times(retryFirst, 2 ** Math.min(failures++, 16))
      yield* Effect.sleep(Duration.min(wait, retryAtMost))
    })
  const loop = Effect.forever(
    Effect.catchAllCause(session(newClient, config, channel, hints, timeout, listening), lost)
  )
  return Effect.zipRight(
    Effect.forkScoped(Effect.annotateLogs(loop, "channel", channel)),
    Deferred.await(started)
  )
}
