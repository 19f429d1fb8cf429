/**
 * The call path of the SQL stores, for a store that has none: each lease
 * call goes through the SQL engine's call lifecycle and admission gate
 * (`stores/internal/call.ts`, `gate.ts`), as a statement does on a pool, so
 * that the store keeps the `answersWithin` promise as they do and an
 * elector runs its calls on its own fibers. The wrapped store's effect is
 * the statement: it runs in a fiber of its own, on the caller's runtime,
 * and answers through the driver's callback; silence past the call's
 * deadline is the gate's `OperationTimeout`, and past the grace its
 * "connection" (that fiber) is destroyed.
 *
 * The fleet simulation runs its participants over it (`callPath:
 * "onCaller"`), so that its randomised checks exercise the path every SQL
 * store takes.
 *
 * @internal
 */
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import type * as EffectRuntime from "effect/Runtime"
import * as Runtime from "../../internal/runtime/runtime.js"
import { type Operation, StoreError, type StoreShape } from "../../Store.js"
import * as Call from "../../stores/internal/call.js"
import * as Gate from "../../stores/internal/gate.js"
import { grace } from "../../stores/internal/rules.js"

/** A statement: the wrapped store's call, and the runtime of the fiber that makes it. */
interface Request {
  readonly effect: Effect.Effect<unknown, unknown>
  readonly runtime: EffectRuntime.Runtime<never>
}

/** A connection: the statement it runs, if any. */
interface Connection {
  running: Fiber.RuntimeFiber<unknown, unknown> | undefined
}

const driver: Call.Driver<Connection, Request, Exit.Exit<unknown, unknown>> = {
  connect: (callback) => callback(undefined, { running: undefined }),
  run: (connection, { effect, runtime }, callback) => {
    const running = Runtime.forkOn(runtime, effect)
    connection.running = running
    Runtime.observe(running, (exit) => {
      connection.running = undefined
      callback(undefined, exit)
    })
  },
  // A statement still running when its connection goes is abandoned with it.
  release: (connection) => {
    const { running } = connection
    connection.running = undefined
    if (running !== undefined) Runtime.interruptNow(running)
  }
}

/**
 * `store`'s lease calls through a gate over `capacity` connections, each
 * bounded by `timeout`, which the store promises (`answersWithin`). Its
 * candidates' calls, job slots and wake-ups are `store`'s own.
 *
 * @internal
 */
export const onCaller = (store: StoreShape, timeout: Duration.Duration, capacity: number): StoreShape => {
  // Each call's error is its operation's (the wrapped store's, or the gate's StoreError).
  const connections: Call.Connections<Connection, Request, Exit.Exit<unknown, unknown>, unknown> = {
    gate: Gate.make(capacity),
    driver,
    timeout,
    grace: grace(timeout),
    failure: (operation, error) => new StoreError({ operation, retryable: true, reason: error.message, cause: error })
  }
  // The statement's outcome is the call's, as the wrapped store gave it.
  const through = <A, E>(operation: Operation, effect: Effect.Effect<A, E>): Effect.Effect<A, E | StoreError> =>
    Effect.flatMap(
      Effect.runtime<never>(),
      (runtime) =>
        Call.use(connections, operation, { effect, runtime }, (exit) => exit as Exit.Exit<A, unknown>) as Effect.Effect<
          A,
          E | StoreError
        >
    )
  return {
    ...store,
    answersWithin: timeout,
    acquire: (...args) => through("acquire", store.acquire(...args)),
    renew: (...args) => through("renew", store.renew(...args)),
    release: (...args) => through("release", store.release(...args)),
    inspect: (...args) => through("inspect", store.inspect(...args))
  }
}
