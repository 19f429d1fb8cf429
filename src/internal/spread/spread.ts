/**
 * A spread group, from one member's side: its membership (membership.ts),
 * its view and the seats it hands out (share.ts), and one ordinary
 * participant per election, each with its seat, each running the user's
 * work in every term it leads. Elections are added and removed while it
 * runs; closing the scope withdraws the membership first, then stops every
 * participant (each releasing what it leads, with a wake-up hint).
 *
 * @internal
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as ExecutionStrategy from "effect/ExecutionStrategy"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as PubSub from "effect/PubSub"
import * as Queue from "effect/Queue"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type {
  ElectionStatus,
  ElectorConfig,
  ElectorShape,
  ResolvedConfig,
  Spread,
  SpreadConfig
} from "../../Elector.js"
import { type DuplicateIdentity, type IdentityError, InvalidConfig } from "../../ElectorError.js"
import { Leadership } from "../../Leadership.js"
import * as Store from "../../Store.js"
import { resolve } from "../config/config.js"
import * as internal from "../election/make.js"
import * as Membership from "./membership.js"
import { Share } from "./share.js"

/** One election of the group, while this member takes part in it. */
interface Entry {
  readonly name: string
  readonly elector: ElectorShape
  readonly scope: Scope.CloseableScope
  /** Completed when the election is removed: its statuses end. */
  readonly removed: Deferred.Deferred<void>
}

/** Options an elector of a spread group may not take: spreading decides who leads. */
const refused = ["priority", "version"] as const

/**
 * A spread's options, checked: the member's configuration, and each
 * election's.
 *
 * @internal
 */
export interface Checked {
  readonly group: string
  /** The group's name stands for the member's electors' configuration: its identity (given or generated) is theirs. */
  readonly member: ResolvedConfig
  readonly names: ReadonlyArray<string>
  readonly electorConfig: (name: string) => ElectorConfig
}

/**
 * Checks a spread's options and every election's configuration, before
 * anything starts.
 *
 * @internal
 */
export const check = (options: SpreadConfig): Effect.Effect<Checked, InvalidConfig | IdentityError> =>
  Effect.gen(function*() {
    const { group, names, ...rest } = options
    for (const field of refused) {
      if (rest[field as keyof typeof rest] !== undefined) {
        return yield* new InvalidConfig({ field, reason: "spreading decides who leads: no preferred leaders" })
      }
    }
    const member = yield* resolve({ ...rest, name: group })
    const electorConfig = (name: string): ElectorConfig => ({ ...rest, name, identity: member.identity })
    const checked: Checked = { group, member, names: [...new Set(names)], electorConfig }
    yield* Effect.forEach(checked.names, (name) => checkName(checked, name), { discard: true })
    return checked
  })

/**
 * Checks one election's name and configuration.
 *
 * @internal
 */
export const checkName = (
  { electorConfig, group }: Checked,
  name: string
): Effect.Effect<void, InvalidConfig | IdentityError> =>
  name === group
    ? new InvalidConfig({ field: "names", reason: `the group's own name (${group}) names its membership` })
    : Effect.asVoid(resolve(electorConfig(name)))

/**
 * Makes this member's side of the group `options.group` for the life of the
 * scope, running `work` in each term of each election it leads.
 *
 * @internal
 */
export const make = <E, R>(
  options: SpreadConfig,
  work: (name: string) => Effect.Effect<unknown, E, R>
): Effect.Effect<
  Spread,
  InvalidConfig | IdentityError | DuplicateIdentity,
  Store.Store | Scope.Scope | Exclude<R, Leadership>
> =>
  Effect.gen(function*() {
    const checked = yield* check(options)
    const { electorConfig, group, member } = checked
    const store = yield* Store.Store
    const { advertise, withdraw } = store
    if (advertise === undefined || withdraw === undefined) {
      return yield* new InvalidConfig({
        field: "group",
        reason: "needs a store with the candidate operations (advertise, withdraw)"
      })
    }
    const context = yield* Effect.context<Exclude<R, Leadership>>()
    const clock = yield* Effect.clock
    const scope = yield* Effect.scope
    // Made before the membership, so closed after it: the others' shares
    // grow before this member's elections are released.
    const electors = yield* Scope.fork(scope, ExecutionStrategy.sequential)
    const refreshes = yield* Queue.sliding<void>(1)
    const share = new Share(member.identity, clock, member.retryPeriod, () => {
      Queue.unsafeOffer(refreshes, undefined)
    })
    const entries = new Map<string, Entry>()
    const added = yield* PubSub.unbounded<Entry>()
    const lock = yield* Effect.makeSemaphore(1)

    const join = (name: string) =>
      Effect.gen(function*() {
        if (entries.has(name)) return
        yield* checkName(checked, name)
        const scope = yield* Scope.fork(electors, ExecutionStrategy.sequential)
        const seat = share.seat(name)
        const made = yield* internal.seated(electorConfig(name), seat).pipe(
          Scope.extend(scope),
          Effect.provideService(Store.Store, store),
          Effect.exit
        )
        if (Exit.isFailure(made)) {
          share.leave(name)
          yield* Scope.close(scope, Exit.void)
          return yield* Effect.failCause(made.cause)
        }
        const elector = made.value
        yield* Effect.forkIn(elector.run, scope)
        yield* Effect.forkIn(Effect.provide(terms(elector, work(name)), context), scope)
        const entry: Entry = { name, elector, scope, removed: yield* Deferred.make<void>() }
        entries.set(name, entry)
        yield* PubSub.publish(added, entry)
      })

    const leave = (name: string) =>
      Effect.gen(function*() {
        const entry = entries.get(name)
        if (entry === undefined) return
        entries.delete(name)
        yield* Deferred.succeed(entry.removed, undefined)
        yield* Scope.close(entry.scope, Exit.void)
        share.leave(name)
      })

    yield* Effect.forEach(checked.names, join, { discard: true })
    // Advertised only once each of its electors has had its first answer
    // (whatever it was: `ready` waits no longer than a poll's timeout). The
    // others start handing elections over the moment they see a member
    // below its share; one not yet polling would leave each handed over free
    // past the grace, for a third member to claim, and the move made twice.
    // Until this first view its electors claim only what is long free.
    yield* Effect.forEach(entries.values(), ({ elector }) => Effect.ignore(elector.ready), {
      concurrency: "unbounded",
      discard: true
    })
    yield* Membership.keep({
      group,
      advertise,
      withdraw,
      ttl: member.candidateTtl,
      retryPeriod: member.retryPeriod,
      operationTimeout: member.operationTimeout,
      share,
      refreshes
    })

    // Built when it is run: the elections of the moment, then each one added.
    const changes: Stream.Stream<ElectionStatus> = Stream.unwrapScoped(
      Effect.map(PubSub.subscribe(added), (later) =>
        Stream.concat(Stream.fromIterable([...entries.values()]), Stream.fromQueue(later)))
    ).pipe(
      Stream.flatMap(
        ({ elector, name, removed }) =>
          elector.changes.pipe(
            Stream.map((status) => ({ name, status })),
            Stream.interruptWhen(Deferred.await(removed))
          ),
        { concurrency: "unbounded" }
      )
    )

    const spread: Spread = {
      group,
      identity: member.identity,
      names: Effect.sync(() => [...entries.keys()]),
      leading: Effect.suspend(() =>
        Effect.filter([...entries.values()], ({ elector }) =>
          elector.isLeader).pipe(
            Effect.map((led) => led.map(({ name }) => name))
          )
      ),
      elector: (name) => Effect.sync(() => Option.map(Option.fromNullable(entries.get(name)), (e) => e.elector)),
      members: Effect.sync(() => share.live),
      target: Effect.sync(() => share.target()),
      add: (name) => lock.withPermits(1)(join(name)),
      remove: (name) => lock.withPermits(1)(leave(name)),
      changes
    }
    return spread
  })

/**
 * Runs `work` in every term `elector` leads, with the term's leadership:
 * forked into the term, so that its end interrupts it and a failure is the
 * term's to handle (`onWorkFailure`), then waits for the next term.
 */
const terms = <E, R>(
  elector: ElectorShape,
  work: Effect.Effect<unknown, E, R>
): Effect.Effect<never, never, Exclude<R, Leadership>> =>
  Effect.forever(
    Effect.flatMap(elector.leadership, (term) =>
      Effect.gen(function*() {
        yield* term.fork(Effect.provideService(work, Leadership, term))
        const ended = yield* Deferred.make<void>()
        yield* Scope.addFinalizer(term.scope, Deferred.succeed(ended, undefined))
        yield* Deferred.await(ended)
      }))
  )
