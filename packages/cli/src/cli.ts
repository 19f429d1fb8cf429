/**
 * The `leaderelection` command line: `status`, `watch` and `schema`. The bin
 * entry (src/bin/cli.ts) only runs {@link main} on Node; everything it does is
 * here, where it is tested in-process.
 *
 * @internal
 */
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as ValidationError from "@effect/cli/ValidationError"
import type { InvalidConfig } from "effect-leaderelection/ElectorError"
import { isHeldBack, type Lease } from "effect-leaderelection/Lease"
import type { Candidate, StoreError } from "effect-leaderelection/Store"
import * as MysqlStore from "effect-leaderelection/stores/MysqlStore"
import * as PgStore from "effect-leaderelection/stores/PgStore"
import * as Clock from "effect/Clock"
import * as Config from "effect/Config"
import * as Console from "effect/Console"
import * as Data from "effect/Data"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"

/** Something the command cannot do; `reason` is the one line it prints. */
export class CliError extends Data.TaggedError("CliError")<{ readonly reason: string }> {
  override get message(): string {
    return this.reason
  }
}

type Dialect = "pg" | "mysql"

const dialectOf = (url: string): Either.Either<Dialect, CliError> => {
  if (!URL.canParse(url)) return Either.left(new CliError({ reason: "--url is not a URL" }))
  const scheme = new URL(url).protocol
  if (scheme === "postgres:" || scheme === "postgresql:") return Either.right("pg")
  if (scheme === "mysql:" || scheme === "mariadb:") return Either.right("mysql")
  return Either.left(
    new CliError({
      reason: `unsupported URL scheme ${scheme} (use postgres://, postgresql://, mysql:// or mariadb://)`
    })
  )
}

const oneLine = (text: string): string => text.replace(/\s*\n\s*/g, " ")

const missingTable = new Set(["42P01", "1146"])
const noPrivilege = new Set(["42501", "1142", "1044"])

/** Says what went wrong in terms of what the operator asked for. */
export const explain = (error: StoreError, table: string): CliError => {
  const code = error.code ?? ""
  const reason = missingTable.has(code)
    ? `table ${table} does not exist: create it with the DDL of \`leaderelection schema\`, or run an elector with ensureSchema (${error.message})`
    : noPrivilege.has(code)
    ? `no privilege to read ${table}: grant SELECT on it to this user (${error.message})`
    : error.message
  return new CliError({ reason: oneLine(reason) })
}

interface Target {
  readonly url: string
  readonly schema: string
  readonly table: string
}

/** A live candidate (see `Elector.ElectorConfig.priority`) of one election. */
export type ElectionCandidate = Candidate & { readonly name: string }

interface Listing {
  readonly table: string
  readonly list: Effect.Effect<ReadonlyArray<Lease>, CliError>
  /** None when the candidates' table does not exist: no participant has been given a priority. */
  readonly candidates: Effect.Effect<ReadonlyArray<ElectionCandidate>, CliError>
}

/** Opens the store for the scope; its `list` is what `status` and `watch` show. */
const open = (target: Target): Effect.Effect<Listing, CliError, Scope.Scope> =>
  Effect.gen(function*() {
    const dialect = yield* dialectOf(target.url)
    const options = { schema: target.schema, table: target.table }
    const opening: Effect.Effect<
      PgStore.PgStore | MysqlStore.MysqlStore,
      InvalidConfig | StoreError,
      Scope.Scope
    > = dialect === "pg" ? PgStore.makeFromUrl(target.url, options) : MysqlStore.makeFromUrl(target.url, options)
    const store = yield* Effect.mapError(opening, (error) =>
      error._tag === "StoreError" ? explain(error, target.table) : new CliError({ reason: oneLine(error.message) }))
    return {
      table: store.table,
      list: Effect.mapError(store.list, (error) =>
        explain(error, store.table)),
      candidates: store.candidates.pipe(
        Effect.catchIf((error) =>
          missingTable.has(error.code ?? ""), () => Effect.succeed([])),
        Effect.mapError((error) => explain(error, `${store.table} (candidates)`))
      )
    }
  })

/** A signed duration, short: `850ms`, `12.3s`, `-4m05s`, `2h10m`, `3d04h`. */
export const formatMillis = (ms: number): string => {
  const sign = ms < 0 ? "-" : ""
  const abs = Math.abs(ms)
  const pad = (n: number) => String(Math.floor(n)).padStart(2, "0")
  if (abs < 1000) return `${sign}${abs}ms`
  if (abs < 60_000) return `${sign}${(abs / 1000).toFixed(1)}s`
  if (abs < 3_600_000) return `${sign}${Math.floor(abs / 60_000)}m${pad((abs % 60_000) / 1000)}s`
  if (abs < 86_400_000) return `${sign}${Math.floor(abs / 3_600_000)}h${pad((abs % 3_600_000) / 60_000)}m`
  return `${sign}${Math.floor(abs / 86_400_000)}d${pad((abs % 86_400_000) / 3_600_000)}h`
}

/**
 * What a row says about its election. A vacant row was either released (its
 * holder gave the lease up: the store wrote the expiry with the same clock
 * read as the last write, see `Store.release`) or it expired (the holder
 * stopped renewing: the expiry is a whole TTL after the last renewal). A row
 * held back (`Lease.isHeldBack`: the database changed under the store, a
 * failover or a restart) is held by nobody until it expires.
 */
export type State = "leading" | "heldBack" | "released" | "expired"

export const stateOf = (lease: Lease): State =>
  isHeldBack(lease)
    ? "heldBack"
    : lease.expiresAt.getTime() > lease.now.getTime()
    ? "leading"
    : lease.expiresAt.getTime() <= lease.renewedAt.getTime()
    ? "released"
    : "expired"

/** What the STATE column says of a row that nobody holds. */
const vacancy = (state: Exclude<State, "leading">, lease: Lease): string =>
  state === "heldBack"
    ? "held back (nobody leads: the database changed)"
    : `${state} ${formatMillis(lease.now.getTime() - lease.expiresAt.getTime())} ago (nobody leads)`

/**
 * One line per election. Every duration is a difference of instants the
 * database reported in one statement, so no local clock is involved. A
 * vacant row has no remaining lease and no term: it says how long ago it was
 * released or expired. A held-back row has no holder and no term; its
 * remaining lease is how long until it can be claimed.
 */
export const render = (
  table: string,
  leases: ReadonlyArray<Lease>,
  candidates: ReadonlyArray<ElectionCandidate> = []
): string => {
  if (leases.length === 0 && candidates.length === 0) return `no elections in ${table}`
  const rows = leases.map((lease) => {
    const state = stateOf(lease)
    const now = lease.now.getTime()
    const leading = state === "leading"
    return [
      lease.name,
      lease.holder === "" ? "-" : lease.holder,
      lease.fence.toString(),
      leading || state === "heldBack" ? formatMillis(lease.expiresAt.getTime() - now) : "-",
      leading ? formatMillis(now - lease.acquiredAt.getTime()) : "-",
      leading ? state : vacancy(state, lease)
    ]
  })
  const leading = new Set(
    leases.filter((lease) => stateOf(lease) === "leading").map((lease) => JSON.stringify([lease.name, lease.holder]))
  )
  const standing = candidates.map((c) => [
    c.name,
    c.identity,
    String(c.priority),
    c.version ?? "-",
    formatMillis(Duration.toMillis(c.aliveFor)),
    leading.has(JSON.stringify([c.name, c.identity])) ? "leading" : "standing"
  ])
  return [
    columns(["ELECTION", "HOLDER", "FENCE", "REMAINING", "TERM AGE", "STATE"], rows),
    ...(standing.length === 0
      ? []
      : ["", columns(["ELECTION", "CANDIDATE", "PRIORITY", "VERSION", "ALIVE FOR", "STATE"], standing)])
  ].join("\n")
}

const columns = (header: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>): string => {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]?.length ?? 0)))
  return [header, ...rows].map((row) => row.map((cell, i) => cell.padEnd(widths[i] ?? 0)).join("  ").trimEnd())
    .join("\n")
}

/** One election as `--json` prints it: instants in ISO 8601, the fence as a string, the payload in base64. */
export interface ElectionJson {
  readonly name: string
  /** Empty while held back. */
  readonly holder: string
  /** Which process of the holder's identity holds it (`Lease.incarnation`), when the store records one. */
  readonly incarnation: string | null
  readonly fence: string
  readonly state: State
  /** Lease left, while leading; while held back, until it can be claimed. */
  readonly remainingMs: number | null
  /** Age of the current term, while leading. */
  readonly termAgeMs: number | null
  /** Since the lease was released or expired, while vacant (not while held back). */
  readonly vacantForMs: number | null
  readonly payload: string | null
  readonly acquiredAt: string
  readonly renewedAt: string
  readonly expiresAt: string
  /** The database clock when the row was read. */
  readonly now: string
}

export const toJson = (lease: Lease): ElectionJson => {
  const state = stateOf(lease)
  const now = lease.now.getTime()
  const leading = state === "leading"
  const heldBack = state === "heldBack"
  return {
    name: lease.name,
    holder: lease.holder,
    incarnation: lease.incarnation ?? null,
    fence: lease.fence.toString(),
    state,
    remainingMs: leading || heldBack ? lease.expiresAt.getTime() - now : null,
    termAgeMs: leading ? now - lease.acquiredAt.getTime() : null,
    vacantForMs: leading || heldBack ? null : now - lease.expiresAt.getTime(),
    payload: lease.payload === null ? null : Buffer.from(lease.payload).toString("base64"),
    acquiredAt: lease.acquiredAt.toISOString(),
    renewedAt: lease.renewedAt.toISOString(),
    expiresAt: lease.expiresAt.toISOString(),
    now: lease.now.toISOString()
  }
}

/** One snapshot on one line: `at` is the local time it was taken, `table` the quoted table name. */
export const snapshotJson = (
  at: string,
  table: string,
  leases: ReadonlyArray<Lease>,
  candidates: ReadonlyArray<ElectionCandidate> = []
): string =>
  JSON.stringify({
    at,
    table,
    elections: leases.map(toJson),
    candidates: candidates.map((c) => ({
      name: c.name,
      identity: c.identity,
      priority: c.priority,
      version: c.version,
      aliveForMs: Duration.toMillis(c.aliveFor),
      ttlMs: Duration.toMillis(c.ttl)
    }))
  })

const url = Options.text("url").pipe(
  Options.withFallbackConfig(Config.string("DATABASE_URL")),
  Options.withDescription("postgres://, postgresql://, mysql:// or mariadb:// URL (default: $DATABASE_URL)")
)
const schemaName = Options.text("schema").pipe(
  Options.withDefault(""),
  Options.withDescription("schema (PostgreSQL) or database (MySQL) of the table; default: the connection's")
)
const table = Options.text("table").pipe(Options.withDefault(PgStore.defaultTable), Options.withDescription("table"))

const json = Options.boolean("json").pipe(
  Options.withDescription("print JSON: one object per snapshot, on one line")
)

const localTime = Effect.map(Clock.currentTimeMillis, (millis) => new Date(millis).toISOString())

const status = Command.make(
  "status",
  { url, schema: schemaName, table, json },
  (options) =>
    Effect.scoped(Effect.gen(function*() {
      const store = yield* open(options)
      const leases = yield* store.list
      const candidates = yield* store.candidates
      yield* Console.log(
        options.json
          ? snapshotJson(yield* localTime, store.table, leases, candidates)
          : render(store.table, leases, candidates)
      )
    }))
).pipe(
  Command.withDescription(
    "who leads each election in the table: fence, remaining lease, term age; and its candidates with their priorities"
  )
)

const interval = Options.integer("interval").pipe(
  Options.withDefault(2),
  Options.withDescription("seconds between refreshes")
)

const watch = Command.make(
  "watch",
  { url, schema: schemaName, table, interval, json },
  (options) =>
    Effect.scoped(Effect.gen(function*() {
      if (options.interval < 1) return yield* new CliError({ reason: "--interval must be at least 1 second" })
      const store = yield* open(options)
      const refresh = Effect.gen(function*() {
        const leases = yield* store.list
        const candidates = yield* store.candidates
        const at = yield* localTime
        yield* Console.log(
          options.json
            ? snapshotJson(at, store.table, leases, candidates)
            : `-- ${at}, every ${options.interval}s (Ctrl-C to stop)\n${render(store.table, leases, candidates)}\n`
        )
      })
      return yield* Effect.repeat(refresh, Schedule.spaced(Duration.seconds(options.interval))).pipe(
        Effect.zipRight(Effect.never)
      )
    }))
).pipe(Command.withDescription("status, refreshed every --interval seconds until interrupted"))

const dialect = Options.choice("dialect", ["pg", "mysql"]).pipe(
  Options.withDefault("pg" as const),
  Options.withDescription("SQL dialect of the DDL")
)

// The table's DDL, then what upgrades a table of 0.1 in place: both run
// harmlessly on a table that has it all already.
const schema = Command.make("schema", { dialect, schema: schemaName, table }, (options) => {
  const store = options.dialect === "pg" ? PgStore : MysqlStore
  const ddl: Either.Either<string, InvalidConfig> = Either.zipWith(
    store.schema(options.schema, options.table),
    store.schemaUpgrade(options.schema, options.table),
    (create, upgrade) => `${create.endsWith(";") ? create : `${create};`}\n${upgrade}`
  )
  return Effect.flatMap(Either.mapLeft(ddl, (error) => new CliError({ reason: error.message })), Console.log)
}).pipe(Command.withDescription("print the table's DDL and the upgrade of a table of 0.1, for migration tools"))

const root = Command.make("leaderelection").pipe(
  Command.withDescription("inspect leader elections kept by effect-leaderelection"),
  Command.withSubcommands([status, watch, schema])
)

const cli = Command.run(root, { name: "leaderelection", version: "0.2.0" })

/** Where output goes: whether each stream is a terminal that may get ANSI escapes (colours, bold). */
export interface Terminal {
  readonly stdout: boolean
  readonly stderr: boolean
}

// SGR and other CSI sequences, as @effect/cli's help and error rendering emits them.
// eslint-disable-next-line no-control-regex -- ESC starts every ANSI sequence
const ansi = /\u001b\[[0-9;?]*[A-Za-z]/g

/** `args` as text without ANSI escapes. */
export const plain = (args: ReadonlyArray<unknown>): ReadonlyArray<unknown> =>
  args.map((arg) => typeof arg === "string" ? arg.replace(ansi, "") : arg)

/** Strips ANSI escapes from what `effect` logs or reports to a stream that is not a terminal. */
const forTerminal = (terminal: Terminal) => <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.flatMap(Effect.console, (console) =>
    Effect.withConsole(effect, {
      ...console,
      log: terminal.stdout ? console.log : (...args) => console.log(...plain(args)),
      error: terminal.stderr ? console.error : (...args) => console.error(...plain(args))
    }))

/**
 * Runs the command line on `argv` (as in `process.argv`). A failure has been
 * reported on stderr, in one line, by the time it fails; @effect/cli reports
 * bad arguments itself. Output to a stream that is not a terminal carries no
 * ANSI escapes.
 */
export const main = (argv: ReadonlyArray<string>, terminal: Terminal = { stdout: false, stderr: false }) =>
  cli(argv).pipe(
    Effect.tapError((error) =>
      ValidationError.isValidationError(error) ? Effect.void : Console.error(`leaderelection: ${error.message}`)
    ),
    forTerminal(terminal)
  )

/**
 * Completes when `stream` fails with EPIPE, i.e. its reader went away
 * (`leaderelection watch | head -1`); any other error of the stream is a
 * defect. Racing the command with it ends the command cleanly. The listener
 * stays once it fired, so the EPIPE of a later write cannot crash the process
 * while finalizers run; an interruption removes it.
 */
export const untilClosed = (stream: NodeJS.EventEmitter): Effect.Effect<void> =>
  Effect.async<void>((resume) => {
    const onError = (error: NodeJS.ErrnoException) => resume(error.code === "EPIPE" ? Effect.void : Effect.die(error))
    stream.on("error", onError)
    return Effect.sync(() => void stream.off("error", onError))
  })
