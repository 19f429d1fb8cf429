/**
 * One participant in one election.
 *
 * An elector polls the store as a follower, claims the lease when it is free
 * (at the instant a lease it saw expires, when that comes before its next
 * poll) and, while it leads, renews it. Each term is a `Scope`: work started in it
 * (`whileLeader`, `onStartedLeading`) is interrupted and its finalizers run
 * the instant leadership becomes uncertain. A watchdog ends the term at a
 * local deadline computed from the database's own view of the lease, counted
 * from when the request was sent, less a safety margin; nothing about
 * stepping down waits on the database.
 *
 * User code is untrusted: a failing callback or finalizer is logged and
 * counted, never the end of the elector; work that fails ends its term (see
 * `onWorkFailure`); advisory callbacks (`onNewLeader`, `onStoppedLeading`)
 * run in order on a fiber of their own, off the path that keeps the lease.
 *
 * @since 0.1.0
 */
import * as Cause from "effect/Cause"
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import type * as Option from "effect/Option"
import type * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type { AlreadyRunning, DuplicateIdentity, IdentityError, InvalidConfig, LastError } from "./ElectorError.js"
import * as config from "./internal/config/config.js"
import * as timingPresets from "./internal/config/timing.js"
import * as job from "./internal/election/job.js"
import * as internal from "./internal/election/make.js"
import * as statusJson from "./internal/metrics/status.js"
import * as spreading from "./internal/spread/spread.js"
import type * as Job from "./Job.js"
import { Leadership, type LeadershipShape } from "./Leadership.js"
import type { Candidacy, Store, StoreError, StoreShape } from "./Store.js"

/**
 * What a participant asks for. Every field but `name` has a default.
 *
 * | field | default |
 * | --- | --- |
 * | `identity` | `hostname-pid-random` |
 * | `leaseDuration` | 15 seconds |
 * | `renewInterval` | 5 seconds |
 * | `retryPeriod` | 3 seconds, jittered |
 * | `operationTimeout` | 3 seconds |
 * | `safetyMargin` | leaseDuration / 10, at least 1 second |
 * | `disableRelease` | false |
 * | `onWorkFailure` | `"stepDown"` |
 * | `workFailureBackoff` | leaseDuration |
 * | `resignHoldOff` | leaseDuration |
 * | `priority`, `version` | none: not a candidate |
 * | `versionPolicy` | `"newer"` |
 * | `preemptAfter` | 2 × leaseDuration |
 * | `failFast` | false |
 *
 * Durations are `Duration`s or what `Duration.decode` reads: a number is
 * milliseconds (`15` is 15 ms; write `"15 seconds"`). {@link timing} holds
 * named sets of the timing fields.
 *
 * Limits, checked by `validate`, `make` and `layer` (an `InvalidConfig`
 * naming the field): `name` and `identity` at most 1020 bytes of UTF-8, no
 * NUL, well-formed Unicode; `payload` a `Uint8Array` of at most 65,536
 * bytes; every duration from 1 ms to 2^31-1 ms, `retryPeriod` at least 2 ms
 * (see `Lease.maxNameBytes` and the other limits in `Lease`).
 *
 * @since 0.1.0
 * @category models
 */
export interface ElectorConfig {
  /** The election. Participants contending for one leadership share it. */
  readonly name: string
  /**
   * Distinguishes this participant: what `Lease.holder`, `onNewLeader`, the
   * status and the logs show. Give every process an identity of its own.
   * Two electors with one identity in one process are refused
   * (`DuplicateIdentity`). Across processes a store that keeps incarnations
   * (`StoreShape.incarnations`) tells them apart by the one each elector
   * draws at random when it is made: at most one of them leads, the other
   * follows and reports the collision (`Status.identityCollision`). A store
   * without them tells processes apart by identity alone, and cannot.
   */
  readonly identity?: string | undefined
  /** Published with the lease, readable by followers (e.g. the leader's address). */
  readonly payload?: Uint8Array | null | undefined
  /** How long a lease stays valid; the worst-case failover after a crash. */
  readonly leaseDuration?: Duration.DurationInput | undefined
  /**
   * How often the leader extends its lease: never less often; jittered earlier, so that leaders elected
   * together spread out.
   */
  readonly renewInterval?: Duration.DurationInput | undefined
  /**
   * How often a follower polls; each delay is drawn from [period/2, period). A
   * lease it saw is claimed the instant it expires. After polls or claims
   * that failed in a row with retryable errors (an overloaded store sheds or
   * times them out) the period doubles with each, up to 4 times or
   * leaseDuration, whichever is less; the first answer restores it.
   */
  readonly retryPeriod?: Duration.DurationInput | undefined
  /** Bounds every store call. */
  readonly operationTimeout?: Duration.DurationInput | undefined
  /** How early before the lease's local expiry the leader steps down. */
  readonly safetyMargin?: Duration.DurationInput | undefined
  /** Keep the lease on shutdown instead of releasing it. */
  readonly disableRelease?: boolean | undefined
  /**
   * What a term does when its work fails or dies: the effect returned by
   * `onStartedLeading`, or any effect forked with `Leadership.fork` (so the
   * work of `whileLeader`). Interruption is not a failure.
   *
   * - `"stepDown"` (default): the failure is logged and counted, the term
   *   ends (step-down reason `failed`), the lease is released so that a
   *   healthy participant can take over, and this participant waits
   *   `workFailureBackoff` before it claims again. A leader whose work has
   *   died would otherwise hold the lease while doing nothing.
   * - `"keepLeading"`: the failure is logged and counted; the term goes on.
   */
  readonly onWorkFailure?: "stepDown" | "keepLeading" | undefined
  /** After a term ended because its work failed, how long to wait before claiming again. */
  readonly workFailureBackoff?: Duration.DurationInput | undefined
  /**
   * After `resign`, how long this participant stays out of the election:
   * it neither claims nor, with a `priority`, stands as a candidate, so that
   * another participant takes over.
   */
  readonly resignHoldOff?: Duration.DurationInput | undefined
  /**
   * Opt-in preferred leaders. With a `priority` (an integer, higher
   * preferred; default 0 when only `version` is set) or a `version`, this
   * participant stands as a candidate: it advertises itself in the store
   * (one row per participant and election, valid for `candidateTtl` on the
   * database clock, renewed at every poll). A leader that sees a candidate
   * it prefers, alive without a lapse for `preemptAfter`, hands over as
   * `resign` does (step-down reason `preempted`), and a follower leaves a
   * free lease to a live candidate it prefers for up to `candidateTtl`, so
   * that the handover goes where it should. When the preferred participant
   * is down, its advertisement lapses and anyone leads. Every participant of
   * the election should declare one, with one `versionPolicy`. Needs a store
   * with the candidate operations (the built-in ones have them).
   */
  readonly priority?: number | undefined
  /** This participant's version (at most 255 bytes), compared by `versionPolicy` before `priority`. */
  readonly version?: string | undefined
  /**
   * During a rolling upgrade, where leadership goes: `"newer"` (default)
   * prefers the highest version, `"older"` the lowest. Versions compare
   * segment by segment (`1.10.0` after `1.9.2`); no version counts as the
   * oldest.
   */
  readonly versionPolicy?: "newer" | "older" | undefined
  /**
   * The hysteresis of preferred leaders: how long a preferred candidate must
   * have advertised itself without a lapse (a duration the database derives)
   * before the leader hands over to it.
   */
  readonly preemptAfter?: Duration.DurationInput | undefined
  /**
   * When the first store call fails with a fatal `StoreError` (bad
   * credentials, missing table, no privilege), fail `ready`, and with it the
   * build of `Elector.layer`, instead of only reporting it and retrying.
   */
  readonly failFast?: boolean | undefined
  /**
   * Runs for each term, as a fiber in the term's scope, interrupted the
   * instant leadership becomes uncertain. A failure or defect (a synchronous
   * throw included) is logged and counted, and handled as `onWorkFailure`
   * says.
   */
  readonly onStartedLeading?: ((fence: bigint) => Effect.Effect<unknown, unknown>) | undefined
  /**
   * Advisory. Runs after each term, once its work has been interrupted, its
   * finalizers have run and the lease has been released (or the release
   * given up), on the advisory callback fiber (see `onNewLeader`).
   */
  readonly onStoppedLeading?: Effect.Effect<unknown> | undefined
  /**
   * Runs when a new term is observed (a different holder, or a new fence),
   * possibly this participant's own. Advisory: never decide leadership on it.
   *
   * Advisory callbacks (`onNewLeader`, `onStoppedLeading`) run one at a time,
   * in the order of the events, on a fiber of their own: never on the path
   * that claims, renews or releases the lease, so a slow one delays nothing
   * but the advisory callbacks after it. At most 64 wait; further ones are
   * dropped and counted (`Metrics.callbacksDropped`). Their failures are
   * logged and counted (`Metrics.callbackFailures`). At shutdown the waiting
   * ones get at most `operationTimeout` to finish.
   */
  readonly onNewLeader?: ((identity: string, fence: bigint) => Effect.Effect<unknown>) | undefined
}

/**
 * A validated configuration with every default filled in.
 *
 * @since 0.1.0
 * @category models
 */
export interface ResolvedConfig {
  readonly name: string
  readonly identity: string
  readonly payload: Uint8Array | null
  readonly leaseDuration: Duration.Duration
  readonly renewInterval: Duration.Duration
  readonly retryPeriod: Duration.Duration
  readonly operationTimeout: Duration.Duration
  readonly safetyMargin: Duration.Duration
  /** max(renewInterval / 4, 50ms): the pause before retrying a failed renewal. */
  readonly retryDelay: Duration.Duration
  readonly disableRelease: boolean
  readonly onWorkFailure: "stepDown" | "keepLeading"
  readonly workFailureBackoff: Duration.Duration
  readonly resignHoldOff: Duration.Duration
  /** What this participant advertises, or null when it is no candidate. */
  readonly candidacy: Candidacy | null
  readonly versionPolicy: "newer" | "older"
  readonly preemptAfter: Duration.Duration
  /** 2 × (retryPeriod + operationTimeout): how long an advertisement stays valid. */
  readonly candidateTtl: Duration.Duration
  readonly failFast: boolean
}

/**
 * A snapshot of what an elector believes. Only `isLeader` carries a safety
 * guarantee, evaluated when the snapshot is taken; the rest is advisory.
 *
 * @since 0.1.0
 * @category models
 */
export interface Status {
  readonly isLeader: boolean
  /** The current term's fence, while leading. */
  readonly fence: Option.Option<bigint>
  readonly identity: string
  /** The holder of the last valid lease observed; may have expired since. */
  readonly leader: Option.Option<string>
  readonly leaderFence: Option.Option<bigint>
  readonly leaderPayload: Option.Option<Uint8Array>
  /** Local time of the last successful store call. */
  readonly observedAt: Option.Option<Date>
  /** Local instant by which this participant stops leading unless it renews. */
  readonly validUntil: Option.Option<Date>
  /**
   * The latest failure, cleared by the next success of the same store
   * operation (a lost or locally expired lease: by the next lease held), so
   * it stays set for as long as that operation keeps failing.
   */
  readonly lastError: Option.Option<LastError>
  /**
   * Local time this participant last saw its identity held by another live
   * process: two processes given one identity. It follows that process and
   * never takes its lease, and logs the collision at ERROR (at most once a
   * minute, counted in `Metrics.identityCollisions`); give every process an
   * identity of its own. None if it never has, and always with a store
   * that does not keep incarnations (`StoreShape.incarnations`), which
   * cannot tell the two apart.
   *
   * @since 0.2.0
   */
  readonly identityCollision: Option.Option<Date>
}

/**
 * One participant, as `make` builds it and the `Elector` service holds it:
 * run it, read its status and its changes, wait for its leadership, resign.
 *
 * @since 0.1.0
 * @category models
 */
export interface ElectorShape {
  readonly config: ResolvedConfig
  /** The store it elects through. */
  readonly store: StoreShape
  /** Whether this participant may act as leader right now; re-checks the deadline. */
  readonly isLeader: Effect.Effect<boolean>
  /** The current term's fence token, while leading. */
  readonly fence: Effect.Effect<Option.Option<bigint>>
  readonly status: Effect.Effect<Status>
  /** The status each time it changes. */
  readonly changes: Stream.Stream<Status>
  /**
   * Takes part in the election until interrupted. Neither store errors nor
   * user callbacks ever fail it. When it stops, leadership is fully
   * relinquished: the term's work was interrupted, its finalizers ran and the
   * lease was released (unless `disableRelease`); `onStoppedLeading` is
   * queued on the advisory fiber, and closing the elector's scope gives the
   * queued advisory callbacks at most `operationTimeout` to finish.
   */
  readonly run: Effect.Effect<never, AlreadyRunning>
  /**
   * Completes once `run`'s first store call has answered (a success or an
   * error, a timeout included). With `failFast`, fails with that answer when
   * it is a fatal `StoreError`. Should `run` ever stop on anything but
   * interruption (it is built never to), fails with that cause.
   */
  readonly ready: Effect.Effect<void, StoreError>
  /** Waits for a term (the current one, if leading) and returns it. */
  readonly leadership: Effect.Effect<LeadershipShape>
  /**
   * Hands leadership over, as an operator does before draining a node: ends
   * the current term now (step-down reason `resigned`) and keeps this
   * participant out of the election for `resignHoldOff`, so that another one
   * takes over. Completes once the term has ended: its work interrupted, its
   * finalizers run, the lease released (or the release given up after
   * `operationTimeout`). Not leading, it only starts the hold-off; a claim in
   * flight that wins meanwhile is given up at once, never led under.
   */
  readonly resign: Effect.Effect<void>
}

/**
 * The elector service.
 *
 * @since 0.1.0
 * @category tags
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Elector } from "effect-leaderelection"
 *
 * const report = Effect.gen(function* () {
 *   const elector = yield* Elector.Elector
 *   const status = yield* elector.status
 *   yield* Effect.log(status.isLeader ? "leading" : "following")
 * })
 * ```
 */
export class Elector extends Context.Tag("effect-leaderelection/Elector")<Elector, ElectorShape>() {}

/**
 * Validates a configuration and fills in its defaults, generating an identity
 * when none is given.
 *
 * @since 0.1.0
 * @category constructors
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Elector } from "effect-leaderelection"
 *
 * const refused = Elector.validate({
 *   name: "too-tight",
 *   leaseDuration: "10 seconds",
 *   renewInterval: "5 seconds",
 *   operationTimeout: "3 seconds",
 *   safetyMargin: "1 second"
 * }).pipe(Effect.flip, Effect.runSync)
 * console.log(refused.message)
 * // invalid config: renewInterval: renewInterval 5s + 2 × operationTimeout 3s + retryDelay 1.25s = 12.25s
 * // must fit in leaseDuration 10s - safetyMargin 1s = 9s, so that a leader can lose one renewal and retry it
 * // before it steps down; any one of these fits: { renewInterval: "2400 millis" },
 * // { operationTimeout: "1300 millis" }, { leaseDuration: "14 seconds" }
 * ```
 */
export const validate: (config: ElectorConfig) => Effect.Effect<ResolvedConfig, InvalidConfig | IdentityError> =
  config.resolve

/**
 * `hostname-pid-random`, the default identity.
 *
 * @since 0.1.0
 * @category constructors
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Elector } from "effect-leaderelection"
 *
 * Effect.runSync(Elector.generateIdentity) // e.g. "api-1-12345-9f2c4e1a7b3d"
 * ```
 */
export const generateIdentity: Effect.Effect<string, IdentityError> = config.generateIdentity

/**
 * Builds an elector without starting it; `run` takes part in the election.
 * The elector captures the `Clock` in scope when it is made and uses it for
 * every deadline, so `TestClock` drives it in tests. Fails with
 * `DuplicateIdentity` while another elector with the same name and identity
 * lives in this process (until its scope closes).
 *
 * @since 0.1.0
 * @category constructors
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Elector, MemoryStore } from "effect-leaderelection"
 *
 * const program = Effect.gen(function* () {
 *   const elector = yield* Elector.make({ name: "jobs" })
 *   yield* Effect.fork(elector.run)
 * }).pipe(Effect.scoped, Effect.provide(MemoryStore.layer()))
 * ```
 */
export const make: (
  config: ElectorConfig
) => Effect.Effect<ElectorShape, InvalidConfig | IdentityError | DuplicateIdentity, Store | Scope.Scope> = internal.make

/**
 * An elector that takes part in the election for as long as the layer lives,
 * and relinquishes leadership when it is torn down. With `failFast`, the
 * layer is built once the first store call has answered, and its build fails
 * when that answer is a fatal `StoreError`.
 *
 * @since 0.1.0
 * @category layers
 * @example
 * ```ts
 * import { Effect, Layer } from "effect"
 * import { Elector, Leadership, MemoryStore } from "effect-leaderelection"
 *
 * const ElectorLive = Elector.layer({ name: "invoice-reconciler" }).pipe(
 *   Layer.provide(MemoryStore.layer())
 * )
 * const reconcile = Effect.flatMap(Leadership.fence, (fence) => Effect.log(`reconciling under ${fence}`))
 * // A whole program: run it with NodeRuntime.runMain, which releases the lease on SIGTERM.
 * const program = Elector.whileLeader(reconcile).pipe(Effect.provide(ElectorLive))
 * ```
 */
export const layer = (
  config: ElectorConfig
): Layer.Layer<Elector, InvalidConfig | IdentityError | DuplicateIdentity | StoreError, Store> =>
  Layer.scoped(Elector, Effect.tap(make(config), takePart))

/** Runs the elector for the scope; under `failFast`, once its first store call has answered. */
const takePart = (elector: ElectorShape): Effect.Effect<void, StoreError, Scope.Scope> =>
  Effect.zipRight(Effect.forkScoped(elector.run), elector.config.failFast ? elector.ready : Effect.void)

/**
 * One election's status, in the merged stream of {@link Electors}.
 *
 * @since 0.1.0
 * @category models
 */
export interface ElectionStatus {
  /** The election (`ElectorConfig.name`). */
  readonly name: string
  readonly status: Status
}

/**
 * The electors {@link joinAll} started, all over one store.
 *
 * @since 0.1.0
 * @category models
 */
export interface Electors {
  /** In the order of the configurations. */
  readonly electors: ReadonlyArray<ElectorShape>
  /** Every elector's status each time it changes, merged; starts with each one's current status. */
  readonly changes: Stream.Stream<ElectionStatus>
}

/**
 * Takes part in many elections at once, over the one `Store` in context (so
 * over one connection pool), for as long as the scope lives: like one
 * {@link layer} per configuration, without a context per elector. Every
 * configuration is validated before any elector starts, so one bad
 * configuration fails the call (`InvalidConfig`, naming the field) with
 * nothing started. Each elector is an ordinary one: its own identity (given
 * or generated), its own loop, its own terms.
 *
 * Size the store's pool for all of them: see "Many elections in one
 * process" in the README.
 *
 * @since 0.1.0
 * @category constructors
 * @example
 * ```ts
 * import { Effect, Stream } from "effect"
 * import { Elector } from "effect-leaderelection"
 * import * as PgStore from "effect-leaderelection/stores/PgStore"
 *
 * const tenants = ["acme", "globex", "initech"]
 * const program = Effect.gen(function* () {
 *   const { changes } = yield* Elector.joinAll(tenants.map((tenant) => ({ name: `billing-${tenant}` })))
 *   yield* Stream.runForEach(changes, ({ name, status }) =>
 *     Effect.log(`${name}: ${status.isLeader ? "leading" : "following"}`))
 * }).pipe(Effect.scoped, Effect.provide(PgStore.layerFromUrl("postgres://app@db:5432/app", { maxConnections: 4 })))
 * ```
 */
export const joinAll = (
  configs: Iterable<ElectorConfig>
): Effect.Effect<Electors, InvalidConfig | IdentityError | DuplicateIdentity | StoreError, Store | Scope.Scope> =>
  Effect.gen(function*() {
    // The generated identity is kept, so that make() does not draw another.
    const checked = yield* Effect.forEach(
      configs,
      (config) => Effect.map(validate(config), ({ identity }) => ({ ...config, identity }))
    )
    const electors = yield* Effect.forEach(checked, make)
    // All at once: a SQL store queues the first polls of participants that
    // are joining rather than shedding them (stores/internal/admission.ts),
    // so the burst is answered as fast as the pool goes; a poll still queued
    // at operationTimeout is withdrawn, and tried again a retry period after
    // it started, not after it timed out (elector.ts, `repoll`).
    // Every run is forked from this one fiber: a fiber stays reachable from
    // the fibers it forked for as long as they run, so a fiber per elector
    // (forEach with concurrency) would be kept, ended, by each run.
    yield* Effect.forEach(electors, (elector) => Effect.forkScoped(elector.run), { discard: true })
    yield* Effect.forEach(
      electors.filter((elector) => elector.config.failFast),
      (elector) => elector.ready,
      { concurrency: "unbounded", discard: true }
    )
    // Built when it is run: a merged stream holds objects per elector.
    const changes = Stream.suspend(() =>
      Stream.mergeAll(
        electors.map((elector) => Stream.map(elector.changes, (status) => ({ name: elector.config.name, status }))),
        { concurrency: "unbounded" }
      )
    )
    return { electors, changes }
  })

/**
 * What {@link spread} takes: the group, its elections, and the electors'
 * options, shared by every election of the group (no `name`: each
 * election's is its own; no preferred leaders, nor per-term callbacks: the
 * work and the statuses stand for them).
 *
 * @since 0.2.0
 * @category models
 */
export interface SpreadConfig extends
  Omit<
    ElectorConfig,
    | "name"
    | "priority"
    | "version"
    | "versionPolicy"
    | "preemptAfter"
    | "onStartedLeading"
    | "onStoppedLeading"
    | "onNewLeader"
  >
{
  /**
   * The group: every process spreading the same elections names the same
   * group. Its members advertise themselves in the store's candidates table
   * under this name, so it must be no election's name (of this group or any
   * other election with candidates).
   */
  readonly group: string
  /** The elections to spread over the group's live members; more may be added while it runs. */
  readonly names: Iterable<string>
  /**
   * This member's identity, the holder of every lease it leads: one per
   * process, stable across restarts, as for `ElectorConfig.identity`.
   */
  readonly identity?: string | undefined
}

/**
 * One member of a spread group, as {@link spread} returns it.
 *
 * @since 0.2.0
 * @category models
 */
export interface Spread {
  /** The group's name (`SpreadConfig.group`). */
  readonly group: string
  /** This member's identity: the holder of the leases it leads. */
  readonly identity: string
  /** The elections this member takes part in. */
  readonly names: Effect.Effect<ReadonlyArray<string>>
  /** The elections this member leads right now (each re-checks its deadline). */
  readonly leading: Effect.Effect<ReadonlyArray<string>>
  /** The elector of one election of the group, to read its status or `resign` it. */
  readonly elector: (name: string) => Effect.Effect<Option.Option<ElectorShape>>
  /** The group's live members, as this member last saw them (advisory). */
  readonly members: Effect.Effect<ReadonlyArray<string>>
  /** How many elections this member should lead, from its view (advisory). */
  readonly target: Effect.Effect<number>
  /**
   * Takes part in one more election, at once; nothing if it already does.
   * Fails (`InvalidConfig`) when the name is refused or is the group's.
   */
  readonly add: (name: string) => Effect.Effect<void, InvalidConfig | IdentityError | DuplicateIdentity>
  /**
   * Stops taking part in an election: its work is interrupted, and the
   * lease, if led, released with a wake-up hint. Nothing if it does not.
   */
  readonly remove: (name: string) => Effect.Effect<void>
  /**
   * Every election's status each time it changes, merged, elections added
   * later included; starts with each one's current status.
   */
  readonly changes: Stream.Stream<ElectionStatus>
}

/**
 * Spreads many elections evenly over the live processes of a group, for as
 * long as the scope lives, and runs `work(name)` under the term's
 * {@link Leadership} in every term this process leads, as
 * {@link whileLeader} does for one election (a failure is handled as
 * `onWorkFailure` says; the work starts again in the next term).
 *
 * With N elections and M live members, each member leads between
 * floor(N/M) and ceil(N/M) once things settle. Membership goes through the
 * store's candidates table: each member advertises itself under the group's
 * name every `retryPeriod`, valid for `candidateTtl` on the database clock.
 * A member below its share claims free leases; one above it hands its
 * surplus over a few at a time (a release with a wake-up hint: a
 * handover, not a lease expiry; step-down reason `handedOver`). A member that joins
 * takes its share from those above theirs and nothing else moves; one that
 * stops withdraws from the group, then releases what it leads; one that
 * crashes loses its elections at lease expiry to the survivors below their
 * shares. A lease free for two retry periods is claimed whatever the shares
 * say, so that no election waits on views agreeing.
 *
 * Spreading decides only who claims when: each election is an ordinary
 * elector (its claim the usual acquire, its fence the usual fence, its
 * watchdog its own), so a member that miscounts costs moves, never an
 * overlap. `resign` on one election's elector keeps its meaning. Needs a
 * store with the candidate operations (the built-in ones have them);
 * validated as {@link joinAll} does, with nothing started on a refusal.
 * See "Spreading work over the fleet" in docs/operations.md.
 *
 * @since 0.2.0
 * @category constructors
 * @example
 * ```ts
 * import { Effect, Stream } from "effect"
 * import { Elector, Leadership } from "effect-leaderelection"
 * import * as PgStore from "effect-leaderelection/stores/PgStore"
 *
 * const tenants = Array.from({ length: 500 }, (_, i) => `tenant-${i}`)
 * const bill = (tenant: string) =>
 *   Effect.flatMap(Leadership.fence, (fence) => Effect.log(`billing ${tenant} under fence ${fence}`))
 * const program = Effect.gen(function* () {
 *   const group = yield* Elector.spread({ group: "billing", names: tenants }, bill)
 *   yield* group.add("tenant-500")
 *   yield* Stream.runForEach(group.changes, ({ name, status }) =>
 *     Effect.log(`${name}: ${status.isLeader ? "leading" : "following"}`))
 * }).pipe(Effect.scoped, Effect.provide(PgStore.layerFromUrl("postgres://app@db:5432/app", { maxConnections: 8 })))
 * ```
 */
export const spread: <E, R>(
  options: SpreadConfig,
  work: (name: string) => Effect.Effect<unknown, E, R>
) => Effect.Effect<
  Spread,
  InvalidConfig | IdentityError | DuplicateIdentity,
  Store | Scope.Scope | Exclude<R, Leadership>
> = spreading.make

/**
 * {@link layer}, its configuration read from effect's `Config` (environment
 * variables by default), like `PgClient.layerConfig` of `@effect/sql-pg`.
 * Give a `Config` per field (durations as `Config.duration`), or one
 * `Config<ElectorConfig>`. A missing or malformed variable fails the layer
 * with effect's `ConfigError`; a value outside the limits, with
 * `InvalidConfig` naming the field.
 *
 * @since 0.1.0
 * @category layers
 * @example
 * ```ts
 * import { Config, Layer } from "effect"
 * import { Elector, MemoryStore } from "effect-leaderelection"
 *
 * // ELECTION_NAME=jobs LEASE_DURATION="20 seconds"
 * const ElectorLive = Elector.layerConfig({
 *   name: Config.string("ELECTION_NAME"),
 *   leaseDuration: Config.duration("LEASE_DURATION").pipe(Config.withDefault(undefined))
 * }).pipe(Layer.provide(MemoryStore.layer()))
 * ```
 */
export const layerConfig = (
  config: Config.Config.Wrap<ElectorConfig>
): Layer.Layer<
  Elector,
  ConfigError.ConfigError | InvalidConfig | IdentityError | DuplicateIdentity | StoreError,
  Store
> => Layer.unwrapEffect(Effect.map(Config.unwrap(config), layer))

/**
 * Runs `effect` in every term this participant leads, with the term's
 * {@link Leadership} (fence token and scope) in its context. It is
 * interrupted the instant leadership becomes uncertain and started again in
 * the next term. If it completes, it waits for the next term. If it fails or
 * dies, `whileLeader` fails with its error and, by default
 * (`onWorkFailure: "stepDown"`), the term ends too: the lease is released so
 * that a healthy participant takes over, and this one waits
 * `workFailureBackoff` before claiming again. With
 * `onWorkFailure: "keepLeading"` the term goes on without the work.
 *
 * @since 0.1.0
 * @category combinators
 * @example
 * ```ts
 * import { Effect, Schedule } from "effect"
 * import { Elector, Leadership } from "effect-leaderelection"
 *
 * const tick = Effect.flatMap(Leadership.fence, (fence) => Effect.log(`tick under fence ${fence}`))
 * const program = Elector.whileLeader(Effect.repeat(tick, Schedule.spaced("1 second")))
 * ```
 */
export const whileLeader = <A, E, R>(
  effect: Effect.Effect<A, E, R>
): Effect.Effect<never, E, Elector | Exclude<R, Leadership>> =>
  Effect.flatMap(Elector, (elector) =>
    Effect.forever(
      Effect.flatMap(elector.leadership, (term) =>
        Effect.gen(function*() {
          const fiber = yield* term.fork(Effect.provideService(effect, Leadership, term))
          const exit = yield* Fiber.await(fiber).pipe(Effect.onInterrupt(() => Fiber.interrupt(fiber)))
          if (Exit.isFailure(exit) && !Cause.isInterruptedOnly(exit.cause)) {
            return yield* Effect.failCause(exit.cause)
          }
          // Whatever the work did, the next term is not this one.
          const ended = yield* Deferred.make<void>()
          yield* Scope.addFinalizer(term.scope, Deferred.succeed(ended, undefined))
          yield* Deferred.await(ended)
        }))
    ))

/**
 * Runs `run` on the leader at each slot of `when` (see `Job` for what is
 * promised): a cron expression (UTC), a `Cron`, or an Effect `Schedule`,
 * stepped on the database clock. Each slot runs at most once across
 * failovers, inside the term that claimed it, with the term's
 * {@link Leadership} in its context; with `delivery: "atLeastOnce"` a run
 * interrupted by the end of its term is run again by the next term. A
 * failing run is logged and counted, and does not end the term. Fails with
 * `InvalidConfig` when the job name, the cron expression or the delivery is
 * invalid, or the store records no slots.
 *
 * @since 0.1.0
 * @category combinators
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Elector } from "effect-leaderelection"
 *
 * const nightly = Elector.schedule("compact", "0 3 * * *", (slot) =>
 *   Effect.log(`compacting for ${slot.at.toISOString()} under fence ${slot.fence}`))
 * ```
 */
export const schedule = <E, R>(
  name: string,
  when: Job.When,
  run: (slot: Job.Slot) => Effect.Effect<unknown, E, R>,
  options: Job.Options = {}
): Effect.Effect<never, InvalidConfig, Elector | Exclude<R, Leadership>> =>
  Effect.flatMap(Elector, (elector) =>
    Effect.flatMap(
      job.spec(elector.store, name, when, run, options),
      (spec) => whileLeader(Effect.flatMap(Leadership, (term) => job.term(elector.config, spec, term)))
    ))

/**
 * {@link Status} as JSON: what `JSON.stringify` can write and a probe, a log
 * line or a dashboard can read. Absent values are `null`, fences are decimal
 * strings (a bigint has no JSON form), instants are ISO 8601 strings, the
 * payload is base64 and `lastError` keeps its `_tag` and `message`.
 *
 * @since 0.1.0
 * @category models
 */
export interface StatusJson {
  readonly isLeader: boolean
  readonly fence: string | null
  readonly identity: string
  readonly leader: string | null
  readonly leaderFence: string | null
  /** Base64. */
  readonly leaderPayload: string | null
  readonly observedAt: string | null
  readonly validUntil: string | null
  readonly lastError: { readonly _tag: LastError["_tag"]; readonly message: string } | null
  /** `Status.identityCollision`, as an ISO 8601 string (since 0.2.0). */
  readonly identityCollision: string | null
}

/**
 * A {@link Status} read back from JSON. It is the status it was written from,
 * except that `lastError` is a summary rather than the error itself.
 *
 * @since 0.1.0
 * @category models
 */
export interface DecodedStatus extends Omit<Status, "lastError"> {
  readonly lastError: Option.Option<{ readonly _tag: LastError["_tag"]; readonly message: string }>
}

/**
 * The schema between a status and its JSON form ({@link StatusJson}).
 *
 * @since 0.1.0
 * @category schemas
 * @example
 * ```ts
 * import { Schema } from "effect"
 * import { Elector } from "effect-leaderelection"
 *
 * // e.g. the `status` field of a health check's answer
 * const body = `{"isLeader":false,"fence":null,"identity":"api-2-77-b1","leader":"api-1-42-9f","leaderFence":"3",
 *   "leaderPayload":null,"observedAt":"2026-01-01T10:00:12.000Z","validUntil":null,"lastError":null,
 *   "identityCollision":null}`
 * const status = Schema.decodeUnknownSync(Elector.StatusFromJson)(JSON.parse(body))
 * status.leaderFence // Option.some(3n)
 * ```
 */
export const StatusFromJson: Schema.Schema<DecodedStatus, StatusJson> = statusJson.StatusFromJson

/**
 * Encodes a status as JSON-serialisable data ({@link StatusJson}).
 *
 * @since 0.1.0
 * @category conversions
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Elector } from "effect-leaderelection"
 *
 * const log = Effect.gen(function* () {
 *   const elector = yield* Elector.Elector
 *   console.log(JSON.stringify(Elector.statusToJson(yield* elector.status)))
 * })
 * ```
 */
export const statusToJson: (status: Status) => StatusJson = statusJson.toJson

/**
 * The timing fields of an {@link ElectorConfig}, all set: what a preset of
 * {@link timing} holds.
 *
 * @since 0.1.0
 * @category models
 */
export interface Timing {
  readonly leaseDuration: Duration.Duration
  readonly renewInterval: Duration.Duration
  readonly retryPeriod: Duration.Duration
  readonly operationTimeout: Duration.Duration
  readonly safetyMargin: Duration.Duration
}

/**
 * Named timings to spread into a config, each accepted by `validate`. A
 * crash failover (the leader stops without releasing) waits out the rest of
 * its lease, at most `leaseDuration`; a leader that cannot reach the
 * database steps down within `leaseDuration - safetyMargin` of its last
 * renewal.
 *
 * | preset | leaseDuration | renewInterval | retryPeriod | operationTimeout | safetyMargin |
 * | --- | --- | --- | --- | --- | --- |
 * | `fast` | 5 s | 1 s | 1 s | 1 s | 1 s |
 * | `default` (the defaults) | 15 s | 5 s | 3 s | 3 s | 1.5 s |
 * | `wan` (a database far away) | 30 s | 10 s | 5 s | 5 s | 3 s |
 *
 * `fast` asks for a renewal a second from every leader and a poll a second
 * from every follower: for a database close by that answers well within
 * `operationTimeout`. docs/operations.md has the measured failover of each,
 * and client-go's settings translated.
 *
 * @since 0.1.0
 * @category constructors
 * @example
 * ```ts
 * import { Layer } from "effect"
 * import { Elector, MemoryStore } from "effect-leaderelection"
 *
 * const ElectorLive = Elector.layer({ name: "jobs", ...Elector.timing.fast }).pipe(
 *   Layer.provide(MemoryStore.layer())
 * )
 * ```
 */
export const timing: {
  readonly fast: Timing
  readonly default: Timing
  readonly wan: Timing
} = timingPresets.presets
