/**
 * Renewals of many elections in one request: group commit. A member leading
 * thousands of elections would otherwise pay a round trip per election per
 * renewal interval. Here a renewal that finds no request of renewals in
 * flight is sent at once, alone: one election renewing waits for nothing.
 * The renewals that arrive while a request is in flight queue, and go
 * together as the next request the moment it answers (at most
 * {@link Options.limit} per request). So batches form only under load, as
 * large as the load makes them, with no timer and no window.
 *
 * Why it is as safe as renewing each election alone (docs/design.md,
 * "Batched renewals"):
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

/**
 * Renews every lease of `renewals` in one request: for each, in order, the
 * renewed lease, or `undefined` when its guard matched no row.
 */
export type RenewAll<E> = (renewals: ReadonlyArray<Renewal>) => Effect.Effect<ReadonlyArray<Lease | undefined>, E>

export interface Options<E> {
  /** The most renewals one request carries. */
  readonly limit: number
  /** How long a caller waits for its answer, queued and sent together. */
  readonly timeout: Duration.Duration
  /** The error of a caller whose {@link timeout} passed. */
  readonly timedOut: () => E
  /**
   * Optional: a renewal alone, run as the caller's own call. When given, a
   * renewal that finds no request in flight runs through it on the caller's
   * fiber, with the caller's own deadline and abandonment, as every renewal
   * did before batching: a store that answers in time makes each loop's
   * calls on that loop's fiber, and a fiber per request would undo that for
   * the member that renews one election at a time. Only renewals that meet
   * a request in flight pay for a request's fiber, shared by the batch.
   */
  readonly alone?: ((renewal: Renewal) => Effect.Effect<Lease, Store.LeaseLost | E>) | undefined
}

/** The context of a request's call: it is nobody's loop's, and nobody joining. */
const apart: Store.CallContextShape = { joining: false, caller: undefined }

const Queued = 0
const Sent = 1
const Done = 2
type State = typeof Queued | typeof Sent | typeof Done

/** One caller's renewal, from its call until its answer (or until it stops waiting). */
class Waiting<E> implements Store.InFlight {
  state: State = Queued
  private timer: Deadlines.Entry | undefined = undefined
  private readonly context: Store.CallContextShape | undefined

  constructor(
    readonly renewal: Renewal,
    /** Until it is sent: the request it goes in runs with this fiber's clock, scheduler and services. */
    public fiber: Fiber.RuntimeFiber<unknown, unknown> | undefined,
    private resume: ((effect: Effect.Effect<Lease, Store.LeaseLost | E>) => void) | undefined
  ) {
    this.context = Runtime.serviceOf(fiber!, Store.CallContext)
  }

  /** Keeps the caller's deadline; what the caller's interruption runs, unless its loop ends the call itself. */
  wait(clock: Clock.Clock, scheduler: Scheduler.Scheduler, options: Options<E>): Effect.Effect<void> | undefined {
    const at = clock.unsafeCurrentTimeNanos() + Duration.unsafeToNanos(options.timeout)
    this.timer = Deadlines.add(clock, scheduler, at, () => this.answer(Effect.fail(options.timedOut())))
    const caller = this.context?.caller
    if (caller === undefined) return Effect.sync(() => this.abandon())
    caller.calling(this)
    return undefined
  }

  /** Its answer, once; nothing when the caller stopped waiting. */
  answer(effect: Effect.Effect<Lease, Store.LeaseLost | E>): void {
    const { resume } = this
    this.abandon()
    resume?.(effect)
  }

  /** The caller stopped waiting: a queued renewal is never sent, a sent one's answer goes nowhere. */
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

const byName = <E>(a: Waiting<E>, b: Waiting<E>): number =>
  a.renewal.name < b.renewal.name ? -1 : a.renewal.name > b.renewal.name ? 1 : 0

/**
 * `Store.renew` over `renewAll`, renewals coalesced as the module's note
 * says. One per store: its renewals share one queue.
 */
export const renewals = <E>(
  renewAll: RenewAll<E>,
  options: Options<E>
): (
  name: string,
  identity: string,
  fence: bigint,
  ttl: Duration.Duration,
  payload: Uint8Array | null
) => Effect.Effect<Lease, Store.LeaseLost | E> => {
  let queue: Array<Waiting<E>> = []
  let sending = false

  /** Sends what is queued, unless a request is in flight: its answer sends the rest. */
  const send = (): void => {
    const live = queue.filter((waiting) => waiting.state === Queued)
    const batch = live.slice(0, options.limit).sort(byName)
    queue = live.slice(options.limit)
    const first = batch[0]
    if (first === undefined) return
    sending = true
    const runtime = Runtime.runtimeOf(first.fiber!, Store.CallContext, apart)
    for (const waiting of batch) {
      waiting.state = Sent
      waiting.fiber = undefined
    }
    const request = Runtime.forkOn(runtime, renewAll(batch.map((waiting) => waiting.renewal)))
    Runtime.observe(request, (exit) => {
      sending = false
      if (Exit.isSuccess(exit)) {
        batch.forEach((waiting, i) => {
          const lease = exit.value[i]
          const { name, identity, fence } = waiting.renewal
          waiting.answer(
            lease === undefined ? Effect.fail(new Store.LeaseLost({ name, identity, fence })) : Effect.succeed(lease)
          )
        })
      } else {
        for (const waiting of batch) waiting.answer(Effect.failCause(exit.cause))
      }
      send()
    })
  }

  const { alone } = options
  const queued = (renewal: Renewal): Effect.Effect<Lease, Store.LeaseLost | E> =>
    Effect.withFiberRuntime((fiber) =>
      Effect.async<Lease, Store.LeaseLost | E>((resume) => {
        const waiting = new Waiting<E>(renewal, fiber, resume)
        queue.push(waiting)
        const interrupt = waiting.wait(Runtime.clockOf(fiber), Runtime.schedulerOf(fiber), options)
        if (!sending) send()
        return waiting.state === Done ? undefined : interrupt
      })
    )
  return (name, identity, fence, ttl, payload) =>
    Effect.suspend((): Effect.Effect<Lease, Store.LeaseLost | E> => {
      const renewal = { name, identity, fence, ttl, payload }
      if (alone === undefined || sending) return queued(renewal)
      // In flight until it ends, however it ends: the renewals that meet it
      // queue, and go together the moment it does.
      sending = true
      return Effect.onExit(alone(renewal), () =>
        Effect.sync(() => {
          sending = false
          send()
        }))
    })
}
