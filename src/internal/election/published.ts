/**
 * What an elector shows of itself: its state, held in a plain field so that
 * reading it takes no fiber (`isLeader`, `fence` and `status` compare the
 * term's deadline with the clock at every read), the `changes` subscribers
 * each change is handed to, and its readiness. The participant
 * (participant.ts) owns one and is the only writer of its state.
 *
 * @internal
 */
import type * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberId from "effect/FiberId"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type { ElectorShape, Status } from "../../Elector.js"
import type { LastError } from "../../ElectorError.js"
import type { LeadershipShape } from "../../Leadership.js"
import type { Operation, StoreError } from "../../Store.js"

/** @internal */
export interface Term {
  readonly fence: bigint
  /** Local monotonic nanoseconds by which the term must have ended. */
  readonly deadline: bigint
  readonly leadership: LeadershipShape
  /** Finalizers of the term. */
  readonly scope: Scope.CloseableScope
  /** The term's work; closed first, so work has stopped when finalizers run. */
  readonly work: Scope.CloseableScope
  /** Completed with the reason the term must end, by whichever notices first. */
  readonly stop: Deferred.Deferred<StepDown>
  /** Completed once the term has fully ended: work stopped, finalizers run, lease released. */
  readonly ended: Deferred.Deferred<void>
}

/** @internal */
export interface Observed {
  readonly holder: string
  readonly fence: bigint
  readonly payload: Uint8Array | null
}

/** @internal */
export interface State {
  readonly term: Option.Option<Term>
  readonly leader: Option.Option<Observed>
  /** Local wall-clock milliseconds. */
  readonly observedAt: Option.Option<number>
  readonly lastError: Option.Option<LastError>
  /** Local wall-clock milliseconds when an answer last showed the identity held by another live process. */
  readonly identityCollision: Option.Option<number>
}

/**
 * Why a term ended, other than shutdown.
 *
 * @internal
 */
export type StepDown = "expired" | "lost" | "failed" | "resigned" | "preempted" | "handedOver"

const initial: State = {
  term: Option.none(),
  leader: Option.none(),
  observedAt: Option.none(),
  lastError: Option.none(),
  identityCollision: Option.none()
}

/**
 * An elector with synchronous reads, for callers outside Effect (the Promise
 * API): they compare the live term's deadline with the clock, as `isLeader`
 * and `fence` do, without running an effect.
 *
 * @internal
 */
export interface Elector extends ElectorShape {
  readonly unsafeIsLeader: () => boolean
  readonly unsafeFence: () => bigint | undefined
}

/** The term in progress in `s`, if its deadline has not passed at `now`. */
const live = (s: State, now: bigint): Term | undefined => {
  const term = Option.getOrUndefined(s.term)
  return term !== undefined && now < term.deadline ? term : undefined
}

/**
 * The published state of one elector (see the module's note). Its public
 * getters are the read half of the elector's surface, which the participant
 * hands on as they are.
 *
 * @internal
 */
export class Published {
  // `commit` alone changes the state, and hands the new state to each
  // `changes` subscriber in the same synchronous step: in order, none lost,
  // one per change.
  private state: State = initial
  /** The queues of `changes` subscribers; made for the first. */
  private subscribers: Set<Queue.Enqueue<State>> | undefined = undefined
  // Settled by the first answer of the store: failed with a fatal error
  // under failFast, succeeded otherwise. Kept as an Exit, with a Deferred
  // only for a wait that starts before it is settled: few callers wait at
  // all.
  private readiness: Exit.Exit<void, StoreError> | undefined = undefined
  private readyWaiter: Deferred.Deferred<void, StoreError> | undefined = undefined

  constructor(private readonly identity: string, readonly clock: Clock.Clock) {}

  // Getters on the prototype, each building an effect that calls a method
  // when it is read, rather than effects and closures kept on every elector
  // (a process may run thousands).
  get isLeader(): Effect.Effect<boolean> {
    return Effect.sync(() => this.unsafeIsLeader())
  }
  get fence(): Effect.Effect<Option.Option<bigint>> {
    return Effect.sync(() => Option.fromNullable(this.unsafeFence()))
  }
  get status(): Effect.Effect<Status> {
    return Effect.sync(() => this.snapshot(this.state))
  }
  get changes(): Stream.Stream<Status> {
    return Stream.map(this.states(), (s) => this.snapshot(s))
  }
  get ready(): Effect.Effect<void, StoreError> {
    return Effect.suspend(() => {
      if (this.readiness !== undefined) return this.readiness
      this.readyWaiter ??= Deferred.unsafeMake<void, StoreError>(FiberId.none)
      return Deferred.await(this.readyWaiter)
    })
  }
  // changes starts with the current state, so a term in progress is returned at once.
  get leadership(): Effect.Effect<LeadershipShape> {
    return Effect.suspend(() =>
      this.states().pipe(
        Stream.filterMap((s) => Option.map(s.term, (term) => term.leadership)),
        Stream.runHead,
        Effect.flatten,
        Effect.orDie
      )
    )
  }
  unsafeIsLeader(): boolean {
    return this.leading() !== undefined
  }
  unsafeFence(): bigint | undefined {
    return this.leading()?.fence
  }

  /** The state as last committed. */
  get current(): State {
    return this.state
  }

  // "Has had an answer": any call whose answer showed the record (a poll,
  // a claim, a renewal) sets `observedAt`. The election backs off, and
  // tells the store it is joining, by this one test.
  /** Whether any store call of this elector has shown it the record. */
  observed(): boolean {
    return Option.isSome(this.state.observedAt)
  }

  /** The local monotonic clock: inside a running effect, what `clock.currentTimeNanos` would give. */
  nanos(): bigint {
    return this.clock.unsafeCurrentTimeNanos()
  }

  commit(next: State): void {
    this.state = next
    if (this.subscribers === undefined) return
    for (const subscriber of this.subscribers) subscriber.unsafeOffer(next)
  }

  update(f: (s: State) => State): Effect.Effect<void> {
    return Effect.sync(() => this.commit(f(this.state)))
  }

  // Called at every answer, as it comes, so it changes the state only when
  // an error clears: only a success of the operation that failed clears its
  // error; a lost or expired lease is cleared by a lease the elector holds.
  answered(operation: Operation): void {
    const { state } = this
    const clears = Option.exists(state.lastError, (error) =>
      error._tag === "StoreError"
        ? error.operation === operation
        : operation === "renew" || operation === "acquire")
    if (clears) this.commit({ ...state, lastError: Option.none() })
    this.settleReady(Exit.void)
  }

  /** Whether readiness is settled (the store has answered once, or `run` has stopped). */
  readinessSettled(): boolean {
    return this.readiness !== undefined
  }

  settleReady(exit: Exit.Exit<void, StoreError>): void {
    if (this.readiness !== undefined) return
    this.readiness = exit
    if (this.readyWaiter !== undefined) Deferred.unsafeDone(this.readyWaiter, exit)
    this.readyWaiter = undefined
  }

  /** The term in progress, if its deadline has not passed. */
  leading(): Term | undefined {
    return live(this.state, this.nanos())
  }

  // Built for each subscription: few electors are ever subscribed to, and a
  // stream is a tree of objects.
  private states(): Stream.Stream<State> {
    return Stream.unwrapScoped(Effect.map(
      Effect.acquireRelease(
        Effect.flatMap(Queue.unbounded<State>(), (queue) =>
          Effect.sync(() => {
            ;(this.subscribers ??= new Set()).add(queue)
            queue.unsafeOffer(this.state)
            return queue
          })),
        (queue) => Effect.zipRight(Effect.sync(() => this.subscribers?.delete(queue)), Queue.shutdown(queue))
      ),
      (queue) => Stream.fromQueue(queue)
    ))
  }

  private snapshot(s: State): Status {
    const now = this.nanos()
    const wall = this.clock.unsafeCurrentTimeMillis()
    const term = Option.fromNullable(live(s, now))
    return {
      isLeader: Option.isSome(term),
      fence: Option.map(term, (t) => t.fence),
      identity: this.identity,
      leader: Option.map(s.leader, (o) => o.holder),
      leaderFence: Option.map(s.leader, (o) => o.fence),
      leaderPayload: Option.flatMap(s.leader, (o) => Option.fromNullable(o.payload)),
      observedAt: Option.map(s.observedAt, (ms) => new Date(ms)),
      validUntil: Option.map(term, (t) => new Date(wall + Number((t.deadline - now) / 1_000_000n))),
      lastError: s.lastError,
      identityCollision: Option.map(s.identityCollision, (ms) => new Date(ms))
    }
  }
}
