/**
 * One call of a SQL store on a driver's pool, through the store's admission
 * gate (`gate.ts`), as the call's context (`Store.CallContext`) asks: a
 * joiner's poll is not shed, and a call whose caller ends it itself gets no
 * canceller. It reads the context, never writes it. The caller gets control back at once when it gives
 * up (interrupted, timed out); the connection stays out of the pool while
 * its statement runs on, for its grace at most (`grace` in `rules.ts`): an answer within
 * it returns the connection to the pool (unless the driver says the answer
 * left it unusable), silence past it destroys the connection. A wedged
 * connection is never handed out again.
 *
 * A call's life, as the states of {@link Call}:
 *
 * | state      | caller  | slot      | connection                 | timer    |
 * | ---------- | ------- | --------- | -------------------------- | -------- |
 * | Queued     | waits   | none yet  | none                       | deadline |
 * | Connecting | waits   | held      | being checked out          | deadline |
 * | Running    | waits   | held      | runs the request           | deadline |
 * | Leaving    | gone    | held      | being checked out          | grace    |
 * | Grace      | gone    | held      | runs the request           | grace    |
 * | Done       | answered or gone | freed, or never held | back or destroyed | none |
 *
 * - Queued -> Connecting when admitted; Connecting -> Running when the pool
 *   hands over a connection; Running -> Done when the request answers (the
 *   caller gets the answer decoded, or the error classified).
 * - The caller gives up (its deadline, or its interruption): Queued -> Done
 *   (withdrawn from the gate), Connecting -> Leaving, Running -> Grace.
 * - Leaving -> Done when the connection comes (it is healthy: released); when
 *   the grace ends first, the slot is freed then, and the connection is
 *   released whenever it comes. Grace -> Done when the request answers
 *   (released) or the grace ends (destroyed).
 * - No connection (the pool failed): Connecting or Leaving -> Done. A poll
 *   shed by the gate: Queued -> Done at once.
 *
 * @internal
 */
import type * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Fiber from "effect/Fiber"
import type * as Scheduler from "effect/Scheduler"
import * as Deadlines from "../../internal/runtime/deadlines.js"
import * as Runtime from "../../internal/runtime/runtime.js"
import { stackless } from "../../internal/runtime/stackless.js"
import * as Store from "../../Store.js"
import type { Operation } from "../../Store.js"
import { OperationTimeout } from "../SqlStoreError.js"
import type * as Admission from "./gate.js"

/** What {@link use} needs from a driver's pool and connections. */
export interface Driver<C, R, A> {
  /** Checks a connection out of the pool. */
  readonly connect: (callback: (error: Error | undefined, connection: C | undefined) => void) => void
  /** Runs a call's `request` on `connection`. */
  readonly run: (connection: C, request: R, callback: (error: Error | undefined, result: A) => void) => void
  /**
   * Puts `connection` back in the pool after its request ended with `error`
   * (`undefined` if it worked), or destroys it when that error leaves it
   * unusable. An error of the gate's own means the request never answered.
   */
  readonly release: (connection: C, error: Error | undefined) => void
}

/**
 * A store's connections as {@link use} runs calls on them, one for the
 * store's life: its gate, its driver over the pool, the bounds of every call,
 * and what an error of the gate or the driver becomes (classified), applied
 * where the call ends, so that the caller's fiber runs no further step to map
 * it.
 */
export interface Connections<C, R, A, E> {
  readonly gate: Admission.Gate
  readonly driver: Driver<C, R, A>
  /** Bounds every call, waiting for a slot and a connection included. */
  readonly timeout: Duration.Duration
  /** How long a statement whose caller gave up may still answer before its connection is destroyed. */
  readonly grace: Duration.Duration
  readonly failure: (operation: Operation, error: Error) => E
}

// The states of a call (see the module's table). Numbers on one field, not
// an object per state: a call allocates nothing as it moves.
const Queued = 0
const Connecting = 1
const Running = 2
const Leaving = 3
const Grace = 4
const Done = 5
type State = typeof Queued | typeof Connecting | typeof Running | typeof Leaving | typeof Grace | typeof Done

/**
 * One call in flight. Everything the call needs is a field, and every
 * callback it hands out is built in a method, so that it holds the call and
 * nothing else; each field is dropped when the states that need it end.
 * Whatever keeps a callback after the call (Effect's handler for the
 * caller's interruption, a driver's request, a timer entry, all of them kept
 * for a while by objects the young generation's collections do not free)
 * keeps this object alone, not the call's work.
 */
class Call<C, R, A, B, E> implements Admission.Waiter, Store.InFlight {
  private state: State = Queued
  /** Running and Grace. */
  private connection: C | undefined = undefined
  /** The deadline while the caller waits, then the grace; none once Done. */
  private timer: Deadlines.Entry | undefined = undefined
  private readonly clock: Clock.Clock
  private readonly scheduler: Scheduler.Scheduler
  /**
   * The call's context, as the caller's fiber holds it: whether its caller is
   * joining, and the loop that ends this call if it stops waiting (see
   * `Store.CallContext`); no caller: Effect's canceller does.
   */
  private readonly context: Store.CallContextShape | undefined

  constructor(
    private readonly connections: Connections<C, R, A, E>,
    private readonly operation: Operation,
    /** Until it is sent (Queued, Connecting). */
    private request: R | undefined,
    /** While the caller waits (Queued, Connecting, Running). */
    private answer: ((result: A) => Effect.Effect<B, E>) | undefined,
    /** While the caller waits (Queued, Connecting, Running). */
    private resume: ((effect: Effect.Effect<B, E>) => void) | undefined,
    fiber: Fiber.RuntimeFiber<unknown, unknown>
  ) {
    this.clock = Runtime.clockOf(fiber)
    this.scheduler = Runtime.schedulerOf(fiber)
    this.context = Runtime.serviceOf(fiber, Store.CallContext)
  }

  /** Enters the gate; what the caller's interruption runs, unless the call ended already. */
  start(): Effect.Effect<void> | undefined {
    const { connections, context, operation } = this
    const shed = connections.gate.enter(operation, this, context?.joining === true)
    if (shed !== undefined) {
      this.refuse(Effect.fail(connections.failure(operation, shed)))
      return undefined
    }
    // Answered already, synchronously: no deadline to keep.
    if (this.state === Done) return undefined
    this.timer = this.after(connections.timeout, () => this.expired())
    const caller = context?.caller
    if (caller === undefined) return Effect.sync(() => this.abandon())
    caller.calling(this)
    return undefined
  }

  /** Queued -> Connecting. */
  admitted(): void {
    this.state = Connecting
    this.connections.driver.connect((error, connection) => this.connected(error, connection))
  }

  private connected(error: Error | undefined, connection: C | undefined): void {
    if (connection === undefined) {
      const { resume } = this
      this.settle(undefined)
      resume?.(
        Effect.fail(this.connections.failure(this.operation, error ?? new Error("the pool returned no connection")))
      )
      return
    }
    if (this.state !== Connecting) {
      // Leaving or Done: the caller gave up while connecting; the new connection is healthy.
      this.connections.driver.release(connection, undefined)
      return this.settle(undefined)
    }
    this.state = Running
    this.connection = connection
    const request = this.request as R
    this.request = undefined
    this.connections.driver.run(connection, request, (error, result) => this.ran(error, result))
  }

  /** Running or Grace -> Done (in Done already when the grace ended first). */
  private ran(error: Error | undefined, result: A): void {
    const { answer, resume } = this
    this.settle(error)
    if (resume === undefined) return
    resume(error === undefined ? answer!(result) : Effect.fail(this.connections.failure(this.operation, error)))
  }

  /** Queued -> Done without a slot: shed. */
  private refuse(result: Effect.Effect<B, E>): void {
    const { resume } = this
    this.end()
    resume?.(result)
  }

  /** The deadline passed while the caller waits. */
  private expired(): void {
    const { resume } = this
    this.abandon()
    const { failure, timeout } = this.connections
    resume?.(Effect.fail(failure(this.operation, stackless(() => new OperationTimeout({ timeout })))))
  }

  /** The caller stopped waiting: Queued -> Done, Connecting -> Leaving, Running -> Grace. */
  abandon(): void {
    const { state } = this
    if (state === Queued) {
      this.connections.gate.withdraw(this)
      return this.end()
    }
    if (state !== Connecting && state !== Running) return
    this.state = state === Connecting ? Leaving : Grace
    this.request = undefined
    this.answer = undefined
    this.resume = undefined
    if (this.timer !== undefined) Deadlines.cancel(this.timer)
    this.context?.caller?.done(this)
    const { grace } = this.connections
    this.timer = this.after(
      grace,
      () => this.settle(new Error(`no answer ${Duration.format(grace)} after the call gave up; connection destroyed`))
    )
  }

  /** Any state holding a slot -> Done: the connection, if any, back or destroyed, and the slot freed. */
  private settle(error: Error | undefined): void {
    if (this.state === Done) return
    const { connection } = this
    this.end()
    if (connection !== undefined) this.connections.driver.release(connection, error)
    this.connections.gate.leave()
  }

  /** -> Done: every field of the call's work dropped. */
  private end(): void {
    this.state = Done
    this.request = undefined
    this.answer = undefined
    this.resume = undefined
    this.connection = undefined
    if (this.timer !== undefined) Deadlines.cancel(this.timer)
    this.timer = undefined
    this.context?.caller?.done(this)
  }

  private after(duration: Duration.Duration, expire: () => void): Deadlines.Entry {
    const { clock } = this
    return Deadlines.add(
      clock,
      this.scheduler,
      clock.unsafeCurrentTimeNanos() + Duration.unsafeToNanos(duration),
      expire
    )
  }
}

/**
 * One call for `operation` through the gate of `connections`, running
 * `request`, its result decoded by `answer` where the call ends. It is
 * bounded by the connections' timeout (waiting for a slot and a connection
 * included): on expiry the caller gets an {@link OperationTimeout} at once.
 * See the module's note.
 *
 * The deadline is kept by the process's one timer fiber (see
 * `internal/runtime/deadlines.ts`), not `Effect.timeout`, which would run the call in
 * a fiber of its own beside a fiber that sleeps, and join them.
 */
export const use = <C, R, A, B, E>(
  connections: Connections<C, R, A, E>,
  operation: Operation,
  request: R,
  answer: (result: A) => Effect.Effect<B, E>
): Effect.Effect<B, E> =>
  Effect.withFiberRuntime<B, E>((fiber) =>
    Effect.async<B, E>((resume) => new Call(connections, operation, request, answer, resume, fiber).start())
  )
