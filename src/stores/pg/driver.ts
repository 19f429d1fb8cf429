/**
 * PostgreSQL's driver for the SQL store engine (`internal/sqlStore.ts`):
 * node-postgres, an optional peer dependency loaded when PgStore is imported
 * (see `internal/driver.ts`), its pools and their settings.
 *
 * A call's connection is checked out of a `pg.Pool` and given back through
 * `release(error)`, which makes pg-pool drop it and pg destroy its socket when
 * the call failed at the transport level or never answered: a wedged
 * connection is never handed out again. (`@effect/sql-pg` would answer an
 * interruption with `pg_cancel_backend` on another connection, wait up to
 * 5 s, then hand the same connection back to the pool, where the next query
 * queues behind the one that hung; behind PgBouncer the pid it cancels is not
 * even a backend.) Every operation is one statement: no transaction spans
 * two requests.
 *
 * @internal
 */
import type * as PgClient from "@effect/sql-pg/PgClient"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { constVoid } from "effect/Function"
import * as Redacted from "effect/Redacted"
import type { Pool, PoolClient, PoolConfig } from "pg"
import { InvalidConfig } from "../../ElectorError.js"
import * as limits from "../../internal/config/limits.js"
import * as WakeUps from "../../internal/runtime/wakeUps.js"
import * as Dialect from "../internal/dialect.js"
import { load } from "../internal/driver.js"
import * as Rules from "../internal/rules.js"
import type { PgStoreUrlOptions } from "../PgStore.js"
import { classify } from "./classify.js"
import { validateUrl } from "./config.js"
import * as Hints from "./hints.js"
import type { Request, Result, Row } from "./statements.js"

const Pg = await load("PgStore", ["pg"], () => import("pg"))

// PgStore never loads `@effect/sql-pg` at run time (only `pg`). Its
// declarations do name `PgClient`'s types, so a PgStore app installs
// `@effect/sql-pg` for its type-check (README, Install).
const client = Context.GenericTag<PgClient.PgClient>("@effect/sql-pg/PgClient")

/** The PostgreSQL driver. */
export const driver: Dialect.Driver<
  Pool,
  PoolClient,
  Request,
  Result,
  PoolConfig,
  PgClient.PgClient,
  PgStoreUrlOptions
> = {
  connections: (pool) => ({
    connect: (callback) => pool.connect((error, client) => callback(error ?? undefined, client)),
    run: (client, { text, values }, callback) => {
      // pg also reports socket failures to the active query's callback, which
      // is where they are handled; without a listener they would crash the process.
      client.on("error", constVoid)
      client.query<Row>({ text, values }, (error, result) => {
        client.off("error", constVoid)
        callback(error ?? undefined, result)
      })
    },
    // An answer, even a server-reported error, leaves the connection in sync
    // and reusable; anything else (a dead socket, no answer) means it must go.
    release: (client, error) => client.release(error instanceof Pg.DatabaseError ? undefined : error)
  }),
  // pg-pool fills in its default size (10) when none was given.
  capacity: (pool) => pool.options.max ?? 10,
  poolProblem: () => undefined,
  classify,
  fromUrl: (url) => Either.map(validateUrl(url), (connectionString) => ({ connectionString })),
  fromClient: Effect.map(client, ({ config }) =>
    Dialect.definedOnly({
      connectionString: Dialect.revealOptional(config.url),
      host: config.host,
      port: config.port,
      database: config.database,
      user: config.username,
      password: Dialect.revealOptional(config.password),
      ssl: config.ssl,
      stream: config.stream
    })),
  ownPool: (settings, options, max, timeout) =>
    Either.all([
      limits.duration("idleTimeout", options.idleTimeout ?? Duration.seconds(30)),
      limits.duration("maxLifetime", options.maxLifetime ?? Duration.minutes(5))
    ]).pipe(Either.map(([idle, lifetime]) => ({
      ...settings,
      max,
      idleTimeoutMillis: Duration.toMillis(idle),
      maxLifetimeSeconds: Duration.toSeconds(lifetime),
      // A connection attempt the store gave up on is abandoned by the pool when its grace ends.
      connectionTimeoutMillis: Duration.toMillis(Rules.grace(timeout)),
      keepAlive: true,
      application_name: "effect-leaderelection"
    }))),
  openPool: (settings) => new Pg.Pool(settings).on("error", constVoid),
  endPool: (pool, done) => void pool.end().then(done, done),
  listen: (settings, { listen }, table, timeout) =>
    Effect.gen(function*() {
      if (listen === undefined || listen === false) return undefined
      const direct: PoolConfig = listen === true ? settings : {
        connectionString: yield* Either.mapLeft(
          validateUrl(Redacted.isRedacted(listen.url) ? Redacted.value(listen.url) : listen.url),
          ({ reason }) => new InvalidConfig({ field: "listen.url", reason })
        )
      }
      const hints = WakeUps.make()
      yield* Hints.listen((config) => new Pg.Client(config), direct, Hints.channelOf(table), hints, timeout)
      return { subscribe: hints.subscribe }
    })
}
