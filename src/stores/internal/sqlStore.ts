/**
 * The SQL store engine: what `PgStore` and `MysqlStore` share, written once.
 * A dialect (`dialect.ts`) supplies only what differs between the databases:
 * its driver (pools, connections, the verdict on errors) and its statements
 * (SQL text and the decoding of answers). The engine holds the rest: what an
 * answer means for the Store contract (a guard that matched no row is
 * `LeaseLost`, an election without a row `NoLease`), option resolution and
 * validation, the connections' gate (`call.ts`, `gate.ts`) and the grace of
 * abandoned calls (`rules.ts`), pool ownership (a pool the store opened is
 * ended with its scope; the app's pool never is), `ensureSchema` and its
 * patience with a database that is not up yet, and the four constructor
 * shapes with their layers: from the app's driver pool, from a URL, from
 * `Config`, from the app's `@effect/sql` client.
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
import * as Clock from "effect/Clock"
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import { InvalidConfig } from "../../ElectorError.js"
import * as limits from "../../internal/config/limits.js"
import { stackless } from "../../internal/runtime/stackless.js"
import type { Lease } from "../../Lease.js"
import { enforceLimits, LeaseLost, NoLease, type Operation, type SlotStore, Store, StoreError } from "../../Store.js"
import {
  candidatesSuffix,
  type Classification,
  defaultTable,
  type Options,
  type OwnedPoolOptions,
  type SqlStore,
  type UrlConfig
} from "../SqlStore.js"
import { OperationTimeout } from "../SqlStoreError.js"
import * as Batch from "./batch.js"
import * as Call from "./call.js"
import type { Driver, LeaseTable, Statement, Statements, Tables } from "./dialect.js"
import * as Gate from "./gate.js"
import * as Rules from "./rules.js"

/** What the slot table's name adds to the table's by default. */
const slotsSuffix = "_slots"

/** The operation timeout when none is given: the elector's default. */
const defaultOperationTimeout = Duration.seconds(3)

/** The size of a pool the store owns when none is given. */
const defaultMaxConnections = 4

/** A store's checked options. */
interface Resolved extends Tables {
  readonly upgrade: LeaseTable
  readonly slots: Option.Option<string>
  readonly timeout: Duration.Duration
  /** How long `ensureSchema` waits for a database that cannot be reached; none: until it can. */
  readonly patience: Option.Option<Duration.Duration>
}

/** Every failure of a store call, as the Store contract reports it: a `StoreError` with the dialect's verdict. */
export const toStoreError =
  (classify: (error: unknown) => Classification) => (operation: Operation, error: unknown): StoreError =>
    stackless(() => new StoreError({ operation, ...classify(error), cause: error }))

/** One request through the store's gate, its result decoded by `answer` where the call ends. */
type Run<R, A> = <B, E = never>(
  operation: Operation,
  request: R,
  answer: (result: A) => Effect.Effect<B, E | StoreError>
) => Effect.Effect<B, E | StoreError>

/** A store's operations: everything of a {@link SqlStore} but its tables and DDL. */
type Operations = Omit<SqlStore, "table" | "slotTable" | "ensureSchema" | "slots"> & {
  readonly slots: (slotTable: string) => SlotStore
}

/**
 * The Store contract over a dialect's statements: what each answer means,
 * decided here once for every database. A guarded write (renew, a slot's
 * claim or completion) whose statement matched no row lost the lease; an
 * `inspect` that found none reports `NoLease`.
 */
const operations = <R, A>(
  run: Run<R, A>,
  statements: Statements<R, A>,
  tables: Tables,
  timeout: Duration.Duration,
  failure: (operation: Operation, error: unknown) => StoreError
): Operations => {
  const leases = statements.leases(tables, timeout)
  const answer = <B>(operation: Operation, { decode, request }: Statement<R, A, B>) =>
    run(operation, request, (result) => Effect.succeed(decode(result)))
  const found = <B, E>(operation: Operation, { decode, request }: Statement<R, A, B | undefined>, none: () => E) =>
    run<B, E>(operation, request, (result) => {
      const row = decode(result)
      return row === undefined ? Effect.fail(none()) : Effect.succeed(row)
    })
  const lost = (name: string, identity: string, fence: bigint) => () => new LeaseLost({ name, identity, fence })
  // Renewals and polls are coalesced (batch.ts): calls that meet while one
  // of their kind is in flight go together in the next request, each row
  // answered apart; a call alone runs `one`'s statement of one row, the
  // cheaper plan.
  const coalesced = <In extends Batch.Keyed, B>(
    operation: Operation,
    one: (input: In) => Statement<R, A, B | undefined>
  ): Batch.Options<In, B, StoreError> => ({
    limit: Rules.callsPerRequest,
    timeout,
    timedOut: () => failure(operation, stackless(() => new OperationTimeout({ timeout }))),
    alone: (input) => answer(operation, one(input))
  })
  const renew = Batch.renewals(
    (renewals) => answer("renew", leases.renewAll(renewals)),
    coalesced(
      "renew",
      ({ fence, identity, name, payload, ttl }: Batch.Renewal) => leases.renew(name, identity, fence, ttl, payload)
    )
  )
  const inspect = Batch.coalesce(
    (polls) => answer("inspect", leases.inspectAll(polls.map(({ name }) => name))),
    coalesced("inspect", ({ name }: Batch.Keyed) => leases.inspect(name))
  )
  return {
    acquire: (name, identity, ttl, payload, incarnation) =>
      answer("acquire", leases.acquire(name, identity, ttl, payload, incarnation)),
    renew,
    release: (name, identity, fence) => run("release", leases.release(name, identity, fence), () => Effect.void),
    // Stackless: an empty election answers every poll with it.
    inspect: (name) =>
      Effect.flatMap(
        inspect({ name }),
        (lease): Effect.Effect<Lease, NoLease> =>
          lease === undefined ? Effect.fail(stackless(() => new NoLease({ name }))) : Effect.succeed(lease)
      ),
    list: answer("inspect", leases.list),
    advertise: (name, identity, candidacy, ttl) =>
      answer("advertise", leases.advertise(name, identity, candidacy, ttl)),
    withdraw: (name, identity) => run("withdraw", leases.withdraw(name, identity), () => Effect.void),
    candidates: answer("inspect", leases.candidates),
    slots: (slotTable) => {
      const slots = statements.slots(tables.leases, slotTable)
      return {
        claim: (name, identity, fence, job, at, reclaim) =>
          found("claimSlot", slots.claim(name, identity, fence, job, at, reclaim), lost(name, identity, fence)),
        complete: (name, identity, fence, job, at) =>
          found("completeSlot", slots.complete(name, identity, fence, job, at), lost(name, identity, fence)),
        last: (name, job) => answer("lastSlot", slots.last(name, job))
      }
    }
  }
}

/** The first wait before `ensureSchema` tries a database that could not be reached again; it doubles up to {@link retryAtMost}. */
const retryFirst = Duration.millis(100)

/** The longest wait between two tries of `ensureSchema`. */
const retryAtMost = Duration.seconds(5)

/** An `ensureSchema` that keeps failing at boot is reported at most this often. */
const reportEvery = Duration.minutes(1)

/**
 * `ensure`, tried again while it fails with a retryable error (the database
 * is down, starting, or out of reach; the upgrade of a table found its lock
 * taken), with a jittered backoff, for
 * `patience` at most: a store started with its database waits for it rather
 * than failing the app's start, which an orchestrator would answer with a
 * restart loop. A fatal error fails at once. Waiting is logged on the first
 * failure, then at most once per {@link reportEvery}, with the count.
 */
const patiently = (
  ensure: Effect.Effect<void, StoreError>,
  patience: Option.Option<Duration.Duration>
): Effect.Effect<void, StoreError> =>
  Effect.suspend(() => {
    let failures = 0
    let reportedAt = Number.NEGATIVE_INFINITY
    const failed = () => `${failures} failed ${failures === 1 ? "attempt" : "attempts"}`
    const report = (error: StoreError) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        failures++
        if (now - reportedAt < Duration.toMillis(reportEvery)) return Effect.void
        reportedAt = now
        return Effect.logWarning(
          `ensureSchema: not done yet (${failed()}, the last: ${error.message}); retrying`
        )
      })
    const backoff = Schedule.exponential(retryFirst).pipe(
      Schedule.union(Schedule.spaced(retryAtMost)),
      Schedule.jittered
    )
    return ensure.pipe(
      Effect.tapError((error) => error.retryable ? report(error) : Effect.void),
      Effect.retry({
        schedule: Option.match(patience, { onNone: () => backoff, onSome: (bound) => Schedule.upTo(backoff, bound) }),
        while: (error) => error.retryable
      }),
      Effect.tap(() => failures === 0 ? Effect.void : Effect.logInfo(`ensureSchema: done, after ${failed()}`))
    )
  })

/** A URL for the driver's eyes only: whatever the store reports comes from the parsed URL, never this string. */
const reveal = (url: string | Redacted.Redacted<string>): string => Redacted.isRedacted(url) ? Redacted.value(url) : url

/** The checked size of a pool the store owns. */
const maxConnections = (value: number = defaultMaxConnections): Either.Either<number, InvalidConfig> =>
  Number.isSafeInteger(value) && value >= 1
    ? Either.right(value)
    : Either.left(new InvalidConfig({ field: "maxConnections", reason: `must be a positive integer, got ${value}` }))

/** The constructors of the store over a dialect's `driver` and `statements`; its public module exports each with its docs. */
export const constructors = <P, C, R, A, S, Client, O extends OwnedPoolOptions>(
  driver: Driver<P, C, R, A, S, Client, O>,
  statements: Statements<R, A>
) => {
  const failure = toStoreError(driver.classify)
  const qualified = (
    schema: string | undefined,
    table: string,
    field: "table" | "candidatesTable" = "table"
  ): Either.Either<string, InvalidConfig> =>
    schema === undefined || schema === ""
      ? statements.identifier(field, table)
      : Either.zipWith(
        statements.identifier("schema", schema),
        statements.identifier(field, table),
        (s, t) => `${s}.${t}`
      )
  const schemaOf =
    (ddl: (table: string) => string, field: "table" | "candidatesTable" = "table") =>
    (schemaName: string, table: string): Either.Either<string, InvalidConfig> =>
      Either.map(qualified(schemaName, table, field), ddl)

  /**
   * The checked options: the quoted tables and the timeouts. The slot table
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
      const patience = options.ensureSchemaTimeout === undefined
        ? Option.none()
        : Option.some(yield* limits.duration("ensureSchemaTimeout", options.ensureSchemaTimeout))
      const upgrade = { quoted: leases, schema: options.schema === "" ? undefined : options.schema, name }
      return { leases, upgrade, slots, candidates, timeout, patience }
    })

  /** The store on `pool`: its calls all go through one gate, which answers by the timeout (`answersWithin`). */
  const build = (pool: P, options: Options, resolved: Resolved): Effect.Effect<SqlStore, StoreError> => {
    const { candidates, leases, patience, slots, timeout, upgrade } = resolved
    const connections: Call.Connections<C, R, A, StoreError> = {
      gate: Gate.make(driver.capacity(pool)),
      driver: driver.connections(pool),
      timeout,
      grace: Rules.grace(timeout),
      failure
    }
    const run: Run<R, A> = (operation, request, answer) => Call.use(connections, operation, request, answer)
    const { alreadyThere } = statements
    const ddl = (request: R): Effect.Effect<void, StoreError> => {
      const done = run("ensureSchema", request, () => Effect.void)
      return alreadyThere === undefined ? done : Effect.catchIf(done, alreadyThere, () => Effect.void)
    }
    const create = (text: string) => ddl(statements.script(text))
    const { decode, request } = statements.upgrade(upgrade)
    const upgraded = Effect.flatMap(
      run("ensureSchema", request, (result) => Effect.succeed(decode(result))),
      (requests) => Effect.forEach(requests, ddl, { discard: true })
    )
    const { slots: slotStore, ...rest } = operations(run, statements, { leases, candidates }, timeout, failure)
    const store = enforceLimits<SqlStore>({
      table: leases,
      slotTable: Option.getOrUndefined(slots),
      ensureSchema: Effect.all([
        create(statements.ddl.leases(leases)),
        upgraded,
        create(statements.ddl.candidates(candidates)),
        Option.match(slots, { onNone: () => Effect.void, onSome: (name) => create(statements.ddl.slots(name)) })
      ], { discard: true }),
      ...Option.match(slots, { onNone: () => ({}), onSome: (name) => ({ slots: slotStore(name) }) }),
      ...rest,
      answersWithin: timeout,
      incarnations: true
    })
    return options.ensureSchema === true
      ? Effect.as(
        Effect.annotateLogs(patiently(store.ensureSchema, patience), "table", leases),
        store
      )
      : Effect.succeed(store)
  }

  const makeFromPool = (pool: P, options: Options = {}): Effect.Effect<SqlStore, InvalidConfig | StoreError> => {
    const problem = driver.poolProblem(pool)
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
      const owned = yield* driver.ownPool(settings, options, max, resolved.timeout)
      const pool = yield* Effect.acquireRelease(
        Effect.sync(() => driver.openPool(owned)),
        // A pool ends once each connection said goodbye, and one whose server
        // stopped answering never does: the store stops waiting at the
        // timeout, and that connection is destroyed when its grace ends.
        (pool) =>
          Effect.async<void>((resume) => driver.endPool(pool, () => resume(Effect.void))).pipe(
            Effect.interruptible,
            Effect.timeoutOption(resolved.timeout)
          )
      )
      const store = yield* build(pool, options, resolved)
      const wakeUps = driver.listen === undefined
        ? undefined
        : yield* driver.listen(settings, options, store.table, resolved.timeout)
      return wakeUps === undefined ? store : { ...store, wakeUps }
    })

  const makeFromUrl = (
    url: string | Redacted.Redacted<string>,
    options?: O
  ): Effect.Effect<SqlStore, InvalidConfig | StoreError, Scope.Scope> =>
    Effect.flatMap(driver.fromUrl(reveal(url)), (settings) => makeOwningPool(settings, options ?? {}))

  const make = (options?: O): Effect.Effect<SqlStore, InvalidConfig | StoreError, Client | Scope.Scope> =>
    Effect.flatMap(driver.fromClient, (settings) => makeOwningPool(settings, options ?? {}))

  return {
    schema: schemaOf(statements.ddl.leases),
    schemaUpgrade: schemaOf(statements.ddl.upgrade),
    slotSchema: schemaOf(statements.ddl.slots),
    candidatesSchema: schemaOf(statements.ddl.candidates, "candidatesTable"),
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
