/**
 * What the two SQL stores share: the options every constructor takes and how
 * they are checked, the deadline every call runs under, and the plumbing of
 * the constructor shapes both offer (from a URL, from `Config`, from the
 * app's driver pool, from the app's `@effect/sql` client).
 *
 * Each store runs its statements on a driver pool, its own or the caller's,
 * never through an `@effect/sql` client: an interrupted `@effect/sql` query
 * keeps its connection (see FINDINGS), while the stores keep a connection
 * whose call timed out or was interrupted out of the pool until its statement
 * answers, and destroy it if it stays silent or its socket failed (see
 * `gate.ts`), which also bounds every call by the operation timeout.
 *
 * @internal
 */
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import { InvalidConfig } from "../../ElectorError.js"
import * as limits from "../../internal/limits.js"
import { Store, type StoreError, type StoreShape } from "../../Store.js"

/** The options every SQL store constructor takes. */
export interface SqlStoreOptions {
  /** Schema (PostgreSQL) or database (MySQL) of the table. Defaults to the connection's. */
  readonly schema?: string | undefined
  /** The table. Defaults to `leader_election`. */
  readonly table?: string | undefined
  /**
   * Bounds every call, waiting for a connection included. On expiry the call
   * fails with a retryable `StoreError`; its connection goes back to the pool
   * if the statement answers within twice this more, else it is destroyed.
   * Defaults to 3 seconds, the elector's default operation timeout.
   */
  readonly operationTimeout?: Duration.DurationInput | undefined
  /** Create the table, if missing, when the store is built. Defaults to false. */
  readonly ensureSchema?: boolean | undefined
}

/**
 * The quoted table of job slots: the `slotTable` option, checked (a bad one
 * fails the store's construction), or by default the lease table's name +
 * `_slots`. A default too long to be an identifier gives none: the store then
 * records no slots (scheduled jobs refuse it) rather than refusing a lease
 * table name it always accepted.
 */
export const slotTable = (
  option: string | undefined,
  table: string,
  quote: (name: string) => Either.Either<string, InvalidConfig>
): Either.Either<Option.Option<string>, InvalidConfig> =>
  option === undefined
    ? Either.right(Either.getRight(quote(`${table}_slots`)))
    : Either.mapBoth(quote(option), {
      onLeft: (error) => new InvalidConfig({ field: "slotTable", reason: error.reason }),
      onRight: Option.some
    })

/** The operation timeout when none is given: the elector's default. */
export const defaultOperationTimeout = Duration.seconds(3)

/** The size of a pool the store owns when none is given. */
export const defaultMaxConnections = 4

/** The checked operation timeout of `options`. */
export const operationTimeout = (options: SqlStoreOptions): Either.Either<Duration.Duration, InvalidConfig> =>
  limits.duration("operationTimeout", options.operationTimeout ?? defaultOperationTimeout)

/** The checked size of a pool the store owns. */
export const maxConnections = (value: number = defaultMaxConnections): Either.Either<number, InvalidConfig> =>
  Number.isSafeInteger(value) && value >= 1
    ? Either.right(value)
    : Either.left(new InvalidConfig({ field: "maxConnections", reason: `must be a positive integer, got ${value}` }))

/**
 * A URL for the driver's eyes only. Whatever the store reports (errors, logs)
 * is derived from the parsed URL's scheme and shape, never from this string.
 */
export const reveal = (url: string | Redacted.Redacted<string>): string =>
  Redacted.isRedacted(url) ? Redacted.value(url) : url

/** A `Redacted` value's text, or `undefined`. */
export const revealOptional = (value: Redacted.Redacted | undefined): string | undefined =>
  value === undefined ? undefined : Redacted.value(value)

/** Runs the store's `ensureSchema` when the options ask for it. */
export const withSchema =
  (options: SqlStoreOptions) =>
  <S extends { readonly ensureSchema: Effect.Effect<void, StoreError> }, E, R>(
    store: Effect.Effect<S, E, R>
  ): Effect.Effect<S, E | StoreError, R> =>
    options.ensureSchema === true ? Effect.tap(store, (built) => built.ensureSchema) : store

/** What a store's `layerConfig` reads: its options plus the URL, as `Redacted`. */
export type UrlConfig<Options> = Options & {
  /** The connection URL, password included: read it with `Config.redacted`. */
  readonly url: Redacted.Redacted<string>
}

/** A store constructor as the constructor of a `Store` layer, scoped to the layer's lifetime. */
export const toLayer = <Args extends ReadonlyArray<unknown>, E, R>(
  make: (...args: Args) => Effect.Effect<StoreShape, E, R>
) =>
(...args: Args): Layer.Layer<Store, E, Exclude<R, Scope.Scope>> => Layer.scoped(Store, make(...args))

/** The `layerConfig` of a store: reads `config`, then builds the store from its URL. */
export const layerConfig = <Options, E, R>(
  fromUrl: (url: Redacted.Redacted<string>, options?: Options) => Effect.Effect<StoreShape, E, R>
) =>
(
  config: Config.Config.Wrap<UrlConfig<Options>>
): Layer.Layer<Store, E | ConfigError.ConfigError, Exclude<R, Scope.Scope>> =>
  Layer.scoped(Store, Effect.flatMap(Config.unwrap(config), (read) => fromUrl(read.url, read)))

/** exactOptionalPropertyTypes: driver options are optional, never `undefined`. */
export const definedOnly = <A extends Record<string, unknown>>(
  record: A
): { [K in keyof A]?: Exclude<A[K], undefined> } =>
  Object.fromEntries(Object.entries(record).filter(([, value]) => value !== undefined)) as {
    [K in keyof A]?: Exclude<A[K], undefined>
  }
