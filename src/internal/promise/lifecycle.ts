/**
 * A Promise elector's life, as a state machine whose states are the public
 * `ElectorState`:
 *
 * - `stopped` → `starting` on `start()`;
 * - `starting` → `running` once the run runs, `stopping` on `stop()`,
 *   `failed` if the run ends;
 * - `running` → `stopping` on `stop()`, `failed` if the run ends by itself;
 * - `stopping` → `stopped` once the run has ended (and on to `starting` if a
 *   `start()` came meanwhile);
 * - `failed` → `starting` on `start()`, `stopped` on `stop()`.
 *
 * `start()` and `stop()` only record what was asked for last (`wanted`) and
 * move one step towards it; the run's end moves on from `stopping`. So every
 * interleaving is safe: a start during a stop waits for the run to end
 * before it launches another (one run at most at a time), a stop during a
 * start interrupts it, a second start joins the first, and a start after a
 * failure starts afresh. A call settles once the machine rests where it
 * asked, or once a later call has asked otherwise.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import type { ElectorState } from "../../promise.js"
import * as Runtime from "../runtime/runtime.js"

/**
 * What the machine runs and whom it tells.
 *
 * @internal
 */
export interface Runner<E> {
  /** Starts a run (one store, one elector, its loop) in a fiber; it calls `started` once it runs. */
  readonly launch: (started: (elector: E) => void) => Fiber.RuntimeFiber<never, unknown>
  /** The run ended by itself, while starting or running: the machine is `failed` now. */
  readonly failed: (error: unknown, cause: Cause.Cause<unknown>, during: "starting" | "running") => void
  /** The run stopped, with a failure (not an interruption alone) on the way. */
  readonly stoppedWith: (cause: Cause.Cause<unknown>) => void
}

/** The error that failed the machine. */
interface Failure {
  readonly error: unknown
}

interface Settler {
  readonly resolve: () => void
  readonly reject: (error: unknown) => void
}

interface Waiter extends Settler {
  /** A `start()` call, which a failure rejects; a `stop()` call resolves whatever the outcome. */
  readonly start: boolean
}

/** One run: its fiber, and its elector once it runs. */
interface Run<E> {
  fiber: Fiber.RuntimeFiber<never, unknown> | undefined
  elector: E | undefined
}

/** @internal */
export class Lifecycle<E> {
  private current: ElectorState = "stopped"
  private wanted: "running" | "stopped" = "stopped"
  private run: Run<E> | undefined
  private failure: Failure | undefined
  // start() and stop() calls waiting for the machine to rest, and done() calls waiting for the run to end.
  private waiting: Array<Waiter> = []
  private ending: Array<Settler> = []

  constructor(private readonly runner: Runner<E>) {}

  get state(): ElectorState {
    return this.current
  }

  /** While `failed`: what failed it. */
  get failed(): Failure | undefined {
    return this.failure
  }

  /** The running elector, if any. */
  get elector(): E | undefined {
    return this.run?.elector
  }

  start(): Promise<void> {
    return this.request(true)
  }

  stop(): Promise<void> {
    return this.request(false)
  }

  done(): Promise<void> {
    if (this.current === "stopped") return Promise.resolve()
    const failure = this.failure
    if (failure !== undefined) return Promise.reject(failure.error)
    return new Promise((resolve, reject) => {
      this.ending.push({ resolve, reject })
    })
  }

  private request(start: boolean): Promise<void> {
    return new Promise((resolve, reject) => {
      this.wanted = start ? "running" : "stopped"
      this.waiting.push({ start, resolve, reject })
      this.advance()
    })
  }

  // Moves one step towards what was last asked for; the run's end moves on from `stopping`.
  private advance(): void {
    const state = this.current
    if (state === "stopping") return
    if (this.wanted === "running") {
      if (state === "stopped" || state === "failed") return this.launch()
      if (state === "running") this.settle()
      return
    }
    const fiber = this.run?.fiber
    if (fiber !== undefined) {
      this.current = "stopping"
      return Runtime.interruptNow(fiber)
    }
    this.current = "stopped"
    this.failure = undefined
    this.settle()
  }

  private launch(): void {
    this.current = "starting"
    this.failure = undefined
    const run: Run<E> = { fiber: undefined, elector: undefined }
    this.run = run
    run.fiber = this.runner.launch((elector) => this.started(run, elector))
    Runtime.observe(run.fiber, (exit) => this.exited(exit))
  }

  private started(run: Run<E>, elector: E): void {
    run.elector = elector
    // Not if a stop() came in meanwhile: the run is stopping already.
    if (this.current === "starting") {
      this.current = "running"
      this.settle()
    }
  }

  private exited(exit: Exit.Exit<never, unknown>): void {
    const cause = Exit.isFailure(exit) ? exit.cause : Cause.empty
    const during = this.current
    this.run = undefined
    if (during === "stopping") {
      this.current = "stopped"
      this.end(undefined)
      if (!Cause.isInterruptedOnly(cause)) this.runner.stoppedWith(cause)
      return this.advance()
    }
    // It ended by itself, while starting or running: stay down until start() is called again.
    const failure = { error: Cause.squash(cause) }
    this.current = "failed"
    this.failure = failure
    this.wanted = "stopped"
    this.end(failure)
    this.settle()
    this.runner.failed(failure.error, cause, during === "starting" ? "starting" : "running")
  }

  private settle(): void {
    const waiters = this.waiting
    this.waiting = []
    const failure = this.failure
    for (const waiter of waiters) {
      if (waiter.start && failure !== undefined) waiter.reject(failure.error)
      else waiter.resolve()
    }
  }

  private end(failure: Failure | undefined): void {
    const waiters = this.ending
    this.ending = []
    for (const waiter of waiters) {
      if (failure === undefined) waiter.resolve()
      else waiter.reject(failure.error)
    }
  }
}
