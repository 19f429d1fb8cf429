/**
 * Calls of many elections in one request: group commit, for the two calls a
 * process of thousands of elections makes most. A member leading them would
 * otherwise pay a round trip per election per renewal interval, and its
 * followers one per election per retry period: at ten thousand elections,
 * their polls alone would fill the pool and starve the renewals. Here a call
 * that finds no request of its kind in flight is sent at once, alone: one
 * election calling waits for nothing. The calls that arrive while a request
 * is in flight queue, and go together as the next request the moment it
 * answers (at most {@link Options.limit} per request). So batches form only
 * under load, as large as the load makes them, with no timer and no window,
 * and each kind keeps at most one request in flight per store: however many
 * elections poll, they hold one of its connections.
 *
 * Polls (`inspect`) read: a batch of them reads each row as a poll alone
 * would, with the database's now of one statement, and a reply that comes
 * later than it would have alone only makes its follower claim later.
 *
 * Why renewals batched are as safe as renewing each election alone
 * (docs/design.md, "Batched renewals and polls"):
 *
 * - The participant anchors its lease deadline on its monotonic clock
 *   before it calls `renew`, so before its renewal queues here: earlier than
 *   the request that carries it is sent, which can only shorten the term it
 *   counts (the anchor must never be later than the send).
 * - The request renews each row under that row's own guard (name, holder,
 *   fence, not yet expired on the database clock), sets each expiry from the
 *   database's now plus that renewal's own TTL, and answers each row apart:
 *   one renewal's guard matching nothing is that caller's `LeaseLost` alone.
 * - A request that fails, or whose answer is lost, fails every renewal in it,
 *   exactly as if each had failed on its own: every caller is uncertain, and
 *   stops leading unless a later renewal succeeds in time. The watchdog
 *   never waits on any of this.
 *
 * Each caller keeps its own deadline (the store's operation timeout, from
 * the instant it called), so a renewal queued behind a slow request still
 * answers within the store's promise (`answersWithin`). A caller that stops
 * waiting, queued or sent, only drops its answer: a queued renewal is never
 * sent, a sent one answers nobody, and nobody else waits on it. The request
 * runs on a fiber of its own, whose call names no caller, so no caller's
 * interruption or loop ends it for the others.
 *
 * The renewals of one request are sorted by election. MySQL/MariaDB's
 * `UPDATE` locks the row it looks up even when the guard then fails (a
 * member renewing a lease another member took over), so two members'
 * requests can meet on rows: in one order, they cannot deadlock.
 * PostgreSQL locks only the rows whose guard matches, its holder's own.
 *
 * @internal
 */
import type * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import type * as Scheduler from "effect/Scheduler"
import * as Deadlines from "../../internal/runtime/deadlines.js"
import * as Runtime from "../../internal/runtime/runtime.js"
import type { Lease } from "../../Lease.js"
import * as Store from "../../Store.js"

/** One renewal: the arguments of `Store.renew`. */
export interface Renewal {
  readonly name: string
  readonly identity: string
  readonly fence: bigint
  readonly ttl: Duration.Duration
  readonly payload: Uint8Array | null
}

/** What one caller's call is about: at least the election it is for. */
export interface Keyed {
  readonly name: string
}

/**
 * Makes the calls of `inputs` in one request: for each, in order, its row,
 * or `undefined` when the call matched none.
 */
export type All<In, Out, E> = (inputs: ReadonlyArray<In>) => Effect.Effect<ReadonlyArray<Out | undefined>, E>

/**
 * Renews every lease of `renewals` in one request: for each, in order, the
 * renewed lease, or `undefined` when its guard matched no row.
 */
export type RenewAll<E> = All<Renewal, Lease, E>

export interface Options<In, Out, E> {
  /** The most calls one request carries. */
  readonly limit: number
  /** How long a caller waits for its answer, queued and sent together. */
  readonly timeout: Duration.Duration
  /** The error of a caller whose {@link timeout} passed. */
  readonly timedOut: () => E
  /**
   * Optional: a call alone, run as the caller's own call. When given, a
   * call that finds no request in flight runs through it on the caller's
   * fiber, with the caller's own deadline and abandonment, as every call
   * did before batching: a store that answers in time makes each loop's
   * calls on that loop's fiber, and a fiber per request would undo that for
   * the member that calls for one election at a time. Only calls that meet
   * a request in flight pay for a request's fiber, shared by the batch.
   */
  readonly alone?: ((input: In) => Effect.Effect<Out | undefined, E>) | undefined
}

const Queued = 0
const Sent = 1
const Done = 2
type State = typeof Queued | typeof Sent | typeof Done

/** One caller's call, from its call until its answer (or until it stops waiting). */
class Waiting<In, Out, E> implements Store.InFlight {
  state: State = Queued
  private timer: Deadlines.Entry | undefined = undefined
  private readonly context: Store.CallContextShape | undefined

  constructor(
    readonly input: In,
    /** Until it is sent: the request it goes in runs with this fiber's clock, scheduler and services. */
    public fiber: Fiber.RuntimeFiber<unknown, unknown> | undefined,
    private resume: ((effect: Effect.Effect<Out | undefined, E>) => void) | undefined
  ) {
    this.context = Runtime.serviceOf(fiber!, Store.CallContext)
  }

  /** Whether its caller is joining its election (`Store.CallContext`): a request carrying it is a joiner's too. */
  get joining(): boolean {
    return this.context?.joining === true
  }

  /** Keeps the caller's deadline; what the caller's interruption runs, unless its loop ends the call itself. */
  wait(
    clock: Clock.Clock,
    scheduler: Scheduler.Scheduler,
    options: Options<In, Out, E>
  ): Effect.Effect<void> | undefined {
    const at = clock.unsafeCurrentTimeNanos() + Duration.unsafeToNanos(options.timeout)
    this.timer = Deadlines.add(clock, scheduler, at, () => this.answer(Effect.fail(options.timedOut())))
    const caller = this.context?.caller
    if (caller === undefined) return Effect.sync(() => this.abandon())
    caller.calling(this)
    return undefined
  }

  /** Its answer, once; nothing when the caller stopped waiting. */
  answer(effect: Effect.Effect<Out | undefined, E>): void {
    const { resume } = this
    this.abandon()
    resume?.(effect)
  }

  /** The caller stopped waiting: a queued call is never sent, a sent one's answer goes nowhere. */
  abandon(): void {
    if (this.state === Done) return
    this.state = Done
    this.resume = undefined
    this.fiber = undefined
    if (this.timer !== undefined) Deadlines.cancel(this.timer)
    this.timer = undefined
    this.context?.caller?.done(this)
  }
}

const byName = (a: { readonly input: Keyed }, b: { readonly input: Keyed }): number =>
  a.input.name < b.input.name ? -1 : a.input.name > b.input.name ? 1 : 0

/**
 * One kind of call over `all`, coalesced as the module's note says: each
 * caller's row, or `undefined` when its call matched none. One per store
 * and kind: its calls share one queue.
 */
export const coalesce = <In extends Keyed, Out, E>(
  all: All<In, Out, E>,
  options: Options<In, Out, E>
): (input: In) => Effect.Effect<Out | undefined, E> => {
  const { alone } = options
  let queue: Array<Waiting<In, Out, E>> = []
  let sending = false

  /** Sends what is queued, unless a request is in flight: its answer sends the rest. */
  const send = (): void => {
    const live = queue.filter((waiting) => waiting.state === Queued)
    const batch = live.slice(0, options.limit).sort(byName)
    queue = live.slice(options.limit)
    const first = batch[0]
    if (first === undefined) return
    sending = true
    // It names no caller (see above); a joiner among its callers keeps it
    // from being shed, as the joiner's own poll would be kept (gate.ts).
    const context: Store.CallContextShape = { joining: batch.some((waiting) => waiting.joining), caller: undefined }
    const runtime = Runtime.runtimeOf(first.fiber!, Store.CallContext, context)
    for (const waiting of batch) {
      waiting.state = Sent
      waiting.fiber = undefined
    }
    // A request of one is a call alone, when there is one: the cheaper plan.
    const request = Runtime.forkOn(
      runtime,
      batch.length === 1 && alone !== undefined
        ? Effect.map(alone(first.input), (row) => [row])
        : all(batch.map((waiting) => waiting.input))
    )
    Runtime.observe(request, (exit) => {
      sending = false
      if (Exit.isSuccess(exit)) {
        batch.forEach((waiting, i) => waiting.answer(Effect.succeed(exit.value[i])))
      } else {
        for (const waiting of batch) waiting.answer(Effect.failCause(exit.cause))
      }
      send()
    })
  }

  const queued = (input: In): Effect.Effect<Out | undefined, E> =>
    Effect.withFiberRuntime((fiber) =>
      Effect.async<Out | undefined, E>((resume) => {
        const waiting = new Waiting<In, Out, E>(input, fiber, resume)
        queue.push(waiting)
        const interrupt = waiting.wait(Runtime.clockOf(fiber), Runtime.schedulerOf(fiber), options)
        if (!sending) send()
        return waiting.state === Done ? undefined : interrupt
      })
    )
  return (input) =>
    Effect.suspend((): Effect.Effect<Out | undefined, E> => {
      if (alone === undefined || sending) return queued(input)
      // In flight until it ends, however it ends: the calls that meet it
      // queue, and go together the moment it does.
      sending = true
      return Effect.onExit(alone(input), () =>
        Effect.sync(() => {
          sending = false
          send()
        }))
    })
}

/**
 * `Store.renew` over `renewAll`, renewals coalesced: a renewal whose guard
 * matched no row lost its lease.
 */
export const renewals = <E>(
  renewAll: RenewAll<E>,
  options: Options<Renewal, Lease, E>
): (
  name: string,
  identity: string,
  fence: bigint,
  ttl: Duration.Duration,
  payload: Uint8Array | null
) => Effect.Effect<Lease, Store.LeaseLost | E> => {
  const renew = coalesce(renewAll, options)
  return (name, identity, fence, ttl, payload) =>
    Effect.flatMap(
      renew({ name, identity, fence, ttl, payload }),
      (lease): Effect.Effect<Lease, Store.LeaseLost> =>
        lease === undefined ? Effect.fail(new Store.LeaseLost({ name, identity, fence })) : Effect.succeed(lease)
    )
}
