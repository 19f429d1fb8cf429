/**
 * The SQL store engine: what `PgStore` and `MysqlStore` share, written once.
 * A {@link Dialect} supplies only what differs between the databases: SQL
 * text, row decoding, error classification, identifier rules and the
 * driver's connect / run / release. The engine holds the rest: option
 * resolution and validation, the connections' gate (`gate.ts`,
 * `admission.ts`) and the grace of abandoned calls (`rules.ts`), pool
 * ownership (a pool the store opened is ended with its scope; the app's pool
 * never is), `ensureSchema`, and the four constructor shapes with their
 * layers: from the app's driver pool, from a URL, from `Config`, from the
 * app's `@effect/sql` client.
 *
 * Each store runs its statements on a driver pool, its own or the caller's,
 * never through an `@effect/sql` client: an interrupted `@effect/sql` query
 * keeps its connection (see FINDINGS), while the stores keep a connection
 * whose call timed out or was interrupted out of the pool until its statement
 * answers, and destroy it if it stays silent or its socket failed, which also
 * bounds every call by the operation timeout.
 *
 * @internal
 */
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import type * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import { InvalidConfig } from "../../ElectorError.js"
import * as limits from "../../internal/config/limits.js"
import type { Lease } from "../../Lease.js"
import {
  type Candidate,
  type Operation,
  type SlotStore,
  Store,
  type StoreError,
  type StoreShape,
  type WakeUps
} from "../../Store.js"
import * as Gate from "./call.js"
import * as Admission from "./gate.js"
import * as Rules from "./rules.js"

/**
 * The table the store uses unless told otherwise.
 *
 * @since 0.1.0
 * @category constants
 * @example
 * ```ts
 * import * as PgStore from "effect-leaderelection/stores/PgStore"
 *
 * PgStore.defaultTable // "leader_election"
 * ```
 */
export const defaultTable = "leader_election"

/**
 * What the name of the candidates' table adds to the table's by default:
 * `leader_election_candidates`. Set `candidatesTable` when the table's name
 * leaves no room for it within the database's identifier limit (PostgreSQL:
 * 63 bytes, MySQL: 64 characters).
 *
 * @since 0.2.0
 * @category schema
 */
export const candidatesSuffix = "_candidates"

/** What the slot table's name adds to the table's by default. */
const slotsSuffix = "_slots"

/** The operation timeout when none is given: the elector's default. */
const defaultOperationTimeout = Duration.seconds(3)

/** The size of a pool the store owns when none is given. */
const defaultMaxConnections = 4

/** The options every SQL store constructor takes. */
export interface Options {
  /**
   * Schema (PostgreSQL) or database (MySQL) of the tables. Defaults to the
   * connection's (PostgreSQL: the name resolves through `search_path`).
   */
  readonly schema?: string | undefined
  /** Defaults to `leader_election`. */
  readonly table?: string | undefined
  /** The table of scheduled job slots (`Elector.schedule`). Defaults to the table's name + `_slots`. */
  readonly slotTable?: string | undefined
  /**
   * The candidates' table (see `Store.advertise`), in the same schema.
   * Defaults to the table's name + `_candidates`.
   */
  readonly candidatesTable?: string | undefined
  /**
   * Bounds every call, waiting for a connection included. On expiry the call
   * fails with a retryable `StoreError` (an `OperationTimeout`, whose note
   * says what becomes of its connection). Defaults to 3 seconds, the
   * elector's default operation timeout.
   */
  readonly operationTimeout?: Duration.DurationInput | undefined
  /** Run the store's `ensureSchema` when it is built. Defaults to false. */
  readonly ensureSchema?: boolean | undefined
}

/** The options of a store that owns its pool. */
export interface OwnedPoolOptions extends Options {
  /** Connections in the store's own pool. Defaults to 4. */
  readonly maxConnections?: number | undefined
}

/** What a store's `layerConfig` reads: its options plus the URL, as `Redacted`. */
export type UrlConfig<Options> = Options & {
  /** The connection URL, password included: read it with `Config.redacted`. */
  readonly url: Redacted.Redacted<string>
}

/** A SQL store: the `Store` operations, plus its tables, DDL and operators' reads. */
export interface SqlStore extends StoreShape {
  /** The quoted, possibly schema-qualified table name the statements use. */
  readonly table: string
  /**
   * The quoted, possibly schema-qualified table of job slots; `undefined`
   * when the default name (the table's + `_slots`) is too long for an
   * identifier and no `slotTable` was given: then the store records no slots.
   */
  readonly slotTable: string | undefined
  /**
   * Creates the tables (leases, candidates, job slots) if they do not exist.
   * Idempotent, and safe when many replicas run it at once. The schema
   * itself must exist.
   */
  readonly ensureSchema: Effect.Effect<void, StoreError>
  /**
   * Every election in the table, by name, each read with the same
   * statement's clock: who leads what, for operators. Read-only; its errors
   * report the `inspect` operation.
   */
  readonly list: Effect.Effect<ReadonlyArray<Lease>, StoreError>
  /**
   * Every live candidate of every election (see `Store.advertise`), by
   * election, highest priority first: for operators. Read-only; its errors
   * report the `inspect` operation.
   */
  readonly candidates: Effect.Effect<ReadonlyArray<Candidate & { readonly name: string }>, StoreError>
  readonly advertise: NonNullable<StoreShape["advertise"]>
  readonly withdraw: NonNullable<StoreShape["withdraw"]>
}

/** A dialect's operations on the tables: everything of a {@link SqlStore} but its tables and DDL. */
export type Operations = Omit<SqlStore, "table" | "slotTable" | "ensureSchema" | "slots"> & {
  readonly slots: (slotTable: string) => SlotStore
}

/** One request through the store's gate, its result decoded by `answer` where the call ends. */
export type Run<R, A> = <B, E = never>(
  operation: Operation,
  request: R,
  answer: (result: A) => Effect.Effect<B, E | StoreError>
) => Effect.Effect<B, E | StoreError>

/** The quoted tables of a store. */
export interface Tables {
  readonly leases: string
  readonly candidates: string
}

/** A store's checked options. */
interface Resolved extends Tables {
  readonly slots: Option.Option<string>
  readonly timeout: Duration.Duration
}

/**
 * What differs between the databases. `P` is the driver's pool, `C` one of
 * its connections, `R` a request, `A` its result, `S` the connection settings
 * a pool is opened with, `Client` the app's `@effect/sql` client and `O` the
 * options of a pool the store owns.
 */
export interface Dialect<P, C, R, A, S, Client, O extends OwnedPoolOptions> {
  /** Checks `name` as an identifier and quotes it; a refusal names `field`. */
  readonly identifier: (field: string, name: string) => Either.Either<string, InvalidConfig>
  /** The DDL of each table, for an already quoted name. */
  readonly ddl: {
    readonly leases: (table: string) => string
    readonly slots: (table: string) => string
    readonly candidates: (table: string) => string
  }
  /** A request that runs one statement without parameters (the DDL). */
  readonly statement: (sql: string) => R
  /** Errors of a `CREATE TABLE IF NOT EXISTS` racing another replica's: the table is there. */
  readonly lostCreateRace?: (error: StoreError) => boolean
  readonly toStoreError: (operation: Operation, error: unknown) => StoreError
  /** The operations, every call bounded by `timeout`. */
  readonly operations: (run: Run<R, A>, tables: Tables, timeout: Duration.Duration) => Operations
  /** The pool's size, which bounds the store's calls in flight. */
  readonly capacity: (pool: P) => number
  readonly driver: (pool: P) => Gate.Driver<C, R, A>
  /** Why the store cannot run on the app's `pool`, or `undefined` when it can. */
  readonly poolProblem: (pool: P) => string | undefined
  /** The connection settings of a URL; a refusal never echoes it. */
  readonly parseUrl: (url: string) => Either.Either<S, InvalidConfig>
  /** The app's client, found by its key (the store never loads its package), and its connection settings. */
  readonly client: Context.Tag<Client, Client>
  readonly clientSettings: (client: Client) => Either.Either<S, InvalidConfig>
  /** The settings of a pool the store owns: `settings` with the dialect's options and the store's bounds. */
  readonly ownPool: (
    settings: S,
    options: Partial<O>,
    maxConnections: number,
    timeout: Duration.Duration
  ) => Either.Either<S, InvalidConfig>
  readonly openPool: (settings: S) => P
  /** Ends `pool`, calling `done` once every connection is closed. */
  readonly endPool: (pool: P, done: () => void) => void
  /**
   * Optional: the wake-up hints of a store that owns its pool, heard for the
   * scope on a connection of their own, when its `options` ask for them.
   */
  readonly listen?: (
    settings: S,
    options: Partial<O>,
    table: string,
    timeout: Duration.Duration
  ) => Effect.Effect<WakeUps | undefined, InvalidConfig, Scope.Scope>
}

/** A URL for the driver's eyes only: whatever the store reports comes from the parsed URL, never this string. */
const reveal = (url: string | Redacted.Redacted<string>): string => Redacted.isRedacted(url) ? Redacted.value(url) : url

/** A `Redacted` value's text, or `undefined`. */
export const revealOptional = (value: Redacted.Redacted | undefined): string | undefined =>
  value === undefined ? undefined : Redacted.value(value)

/** exactOptionalPropertyTypes: driver options are optional, never `undefined`. */
export const definedOnly = <A extends Record<string, unknown>>(
  record: A
): { [K in keyof A]?: Exclude<A[K], undefined> } =>
  Object.fromEntries(Object.entries(record).filter(([, value]) => value !== undefined)) as {
    [K in keyof A]?: Exclude<A[K], undefined>
  }

/** A TTL in whole microseconds, as text: the unit both databases' interval arithmetic takes. */
export const microseconds = (ttl: Duration.Duration): string => (Duration.unsafeToNanos(ttl) / 1000n).toString()

/** A payload as the drivers send bytes, without a copy. */
export const bytes = (payload: Uint8Array | null): Buffer | null =>
  payload === null ? null : Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength)

/** The checked size of a pool the store owns. */
const maxConnections = (value: number = defaultMaxConnections): Either.Either<number, InvalidConfig> =>
  Number.isSafeInteger(value) && value >= 1
    ? Either.right(value)
    : Either.left(new InvalidConfig({ field: "maxConnections", reason: `must be a positive integer, got ${value}` }))

/** The constructors of the store over `dialect`; its public module exports each with its docs. */
export const constructors = <P, C, R, A, S, Client, O extends OwnedPoolOptions>(
  dialect: Dialect<P, C, R, A, S, Client, O>
) => {
  const qualified = (
    schema: string | undefined,
    table: string,
    field: "table" | "candidatesTable" = "table"
  ): Either.Either<string, InvalidConfig> =>
    schema === undefined || schema === ""
      ? dialect.identifier(field, table)
      : Either.zipWith(
        dialect.identifier("schema", schema),
        dialect.identifier(field, table),
        (s, t) => `${s}.${t}`
      )
  const schemaOf =
    (ddl: (table: string) => string, field: "table" | "candidatesTable" = "table") =>
    (schemaName: string, table: string): Either.Either<string, InvalidConfig> =>
      Either.map(qualified(schemaName, table, field), ddl)

  /**
   * The checked options: the quoted tables and the timeout. The slot table
   * is the `slotTable` option, or by default the lease table's name +
   * `_slots`; a default too long to be an identifier gives none: the store
   * then records no slots (scheduled jobs refuse it) rather than refusing a
   * lease table name it always accepted.
   */
  const resolve = (options: Options): Effect.Effect<Resolved, InvalidConfig> =>
    Effect.gen(function*() {
      const name = options.table ?? defaultTable
      const leases = yield* qualified(options.schema, name)
      const slots = options.slotTable === undefined
        ? Either.getRight(qualified(options.schema, name + slotsSuffix))
        : Option.some(
          yield* Either.mapLeft(
            qualified(options.schema, options.slotTable),
            (error) => new InvalidConfig({ field: "slotTable", reason: error.reason })
          )
        )
      const candidates = yield* qualified(
        options.schema,
        options.candidatesTable ?? name + candidatesSuffix,
        "candidatesTable"
      )
      const timeout = yield* limits.duration("operationTimeout", options.operationTimeout ?? defaultOperationTimeout)
      return { leases, slots, candidates, timeout }
    })

  /** The store on `pool`: its calls all go through one gate, which answers by the timeout (`answersWithin`). */
  const build = (pool: P, options: Options, resolved: Resolved): Effect.Effect<SqlStore, StoreError> => {
    const { candidates, leases, slots, timeout } = resolved
    const connections: Gate.Connections<C, R, A, StoreError> = {
      gate: Admission.make(dialect.capacity(pool)),
      driver: dialect.driver(pool),
      timeout,
      grace: Rules.grace(timeout),
      failure: dialect.toStoreError
    }
    const run: Run<R, A> = (operation, request, answer) => Gate.use(connections, operation, request, answer)
    const { lostCreateRace } = dialect
    const create = (ddl: string): Effect.Effect<void, StoreError> => {
      const created = run("ensureSchema", dialect.statement(ddl), () => Effect.void)
      return lostCreateRace === undefined ? created : Effect.catchIf(created, lostCreateRace, () => Effect.void)
    }
    const { slots: slotStore, ...operations } = dialect.operations(run, { leases, candidates }, timeout)
    const store = limits.enforce<SqlStore>({
      table: leases,
      slotTable: Option.getOrUndefined(slots),
      ensureSchema: Effect.all([
        create(dialect.ddl.leases(leases)),
        create(dialect.ddl.candidates(candidates)),
        Option.match(slots, { onNone: () => Effect.void, onSome: (name) => create(dialect.ddl.slots(name)) })
      ], { discard: true }),
      ...Option.match(slots, { onNone: () => ({}), onSome: (name) => ({ slots: slotStore(name) }) }),
      ...operations,
      answersWithin: timeout
    })
    return options.ensureSchema === true ? Effect.as(store.ensureSchema, store) : Effect.succeed(store)
  }

  const makeFromPool = (pool: P, options: Options = {}): Effect.Effect<SqlStore, InvalidConfig | StoreError> => {
    const problem = dialect.poolProblem(pool)
    return problem === undefined
      ? Effect.flatMap(resolve(options), (resolved) => build(pool, options, resolved))
      : Effect.fail(new InvalidConfig({ field: "pool", reason: problem }))
  }

  /** The store over a small bounded pool of its own, ended when the scope closes. */
  const makeOwningPool = (
    settings: S,
    options: Partial<O>
  ): Effect.Effect<SqlStore, InvalidConfig | StoreError, Scope.Scope> =>
    Effect.gen(function*() {
      const resolved = yield* resolve(options)
      const max = yield* maxConnections(options.maxConnections)
      const owned = yield* dialect.ownPool(settings, options, max, resolved.timeout)
      const pool = yield* Effect.acquireRelease(
        Effect.sync(() => dialect.openPool(owned)),
        // A pool ends once each connection said goodbye, and one whose server
        // stopped answering never does: the store stops waiting at the
        // timeout, and that connection is destroyed when its grace ends.
        (pool) =>
          Effect.async<void>((resume) => dialect.endPool(pool, () => resume(Effect.void))).pipe(
            Effect.interruptible,
            Effect.timeoutOption(resolved.timeout)
          )
      )
      const store = yield* build(pool, options, resolved)
      const wakeUps = dialect.listen === undefined
        ? undefined
        : yield* dialect.listen(settings, options, store.table, resolved.timeout)
      return wakeUps === undefined ? store : { ...store, wakeUps }
    })

  const makeFromUrl = (
    url: string | Redacted.Redacted<string>,
    options?: O
  ): Effect.Effect<SqlStore, InvalidConfig | StoreError, Scope.Scope> =>
    Effect.flatMap(dialect.parseUrl(reveal(url)), (settings) => makeOwningPool(settings, options ?? {}))

  const make = (options?: O): Effect.Effect<SqlStore, InvalidConfig | StoreError, Client | Scope.Scope> =>
    Effect.flatMap(
      dialect.client,
      (client) => Effect.flatMap(dialect.clientSettings(client), (settings) => makeOwningPool(settings, options ?? {}))
    )

  return {
    schema: schemaOf(dialect.ddl.leases),
    slotSchema: schemaOf(dialect.ddl.slots),
    candidatesSchema: schemaOf(dialect.ddl.candidates, "candidatesTable"),
    makeFromPool,
    layerFromPool: (pool: P, options: Options = {}): Layer.Layer<Store, InvalidConfig | StoreError> =>
      Layer.effect(Store, makeFromPool(pool, options)),
    makeFromUrl,
    layerFromUrl: (
      url: string | Redacted.Redacted<string>,
      options?: O
    ): Layer.Layer<Store, InvalidConfig | StoreError> => Layer.scoped(Store, makeFromUrl(url, options)),
    layerConfig: (
      config: Config.Config.Wrap<UrlConfig<O>>
    ): Layer.Layer<Store, InvalidConfig | StoreError | ConfigError.ConfigError> =>
      Layer.scoped(Store, Effect.flatMap(Config.unwrap(config), (read) => makeFromUrl(read.url, read))),
    make,
    layer: (options?: O): Layer.Layer<Store, InvalidConfig | StoreError, Client> => Layer.scoped(Store, make(options))
  }
}
