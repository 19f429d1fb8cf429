/**
 * A store wrapper that misbehaves on demand, per operation: calls that hang,
 * fail, die, lose their reply after being applied, or are slow on the way
 * in or out. Wrap the store your leader code uses to test it against a
 * broken database path on `TestClock`.
 *
 * @example
 * ```ts
 * import { Effect, Layer } from "effect"
 * import { Store } from "effect-leaderelection"
 * import * as MemoryStore from "effect-leaderelection/stores/MemoryStore"
 * import { FaultyStore } from "effect-leaderelection/testing"
 *
 * const program = Effect.gen(function*() {
 *   const faulty = FaultyStore.make(yield* MemoryStore.make())
 *   faulty.set(FaultyStore.hang, "renew") // renewals never answer from now on (acquire still does)
 *   // ... provide Layer.succeed(Store.Store, faulty) to the code under test
 * })
 * ```
 *
 * @since 0.1.0
 */
import type * as Duration from "effect/Duration"
import type * as Store from "../Store.js"
import * as internal from "./internal/FaultyStore.js"

/**
 * What one operation does while the fault is set.
 *
 * @since 0.1.0
 * @category models
 */
export type Fault = internal.Fault

/**
 * A store that injects the faults set on it, and counts the calls of each
 * operation.
 *
 * @since 0.1.0
 * @category models
 */
export type FaultyStore = internal.FaultyStore

/**
 * Wraps a store. Every operation passes until a fault is `set` on it. The
 * wrapper keeps the store's `incarnations` (what gets through is recorded as
 * the store records it), not its `answersWithin` (a hang breaks that).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: (inner: Store.StoreShape) => FaultyStore = internal.make

/**
 * The call goes through untouched.
 *
 * @since 0.1.0
 * @category faults
 */
export const pass: Fault = internal.pass

/**
 * The call never answers (until a timeout interrupts it).
 *
 * @since 0.1.0
 * @category faults
 */
export const hang: Fault = internal.hang

/**
 * The call fails at once with a retryable `StoreError`.
 *
 * @since 0.1.0
 * @category faults
 */
export const fail: Fault = internal.fail

/**
 * The call fails at once with a fatal (non-retryable) `StoreError`.
 *
 * @since 0.1.0
 * @category faults
 */
export const fatal: Fault = internal.fatal

/**
 * The call dies with a defect.
 *
 * @since 0.1.0
 * @category faults
 */
export const die: Fault = internal.die

/**
 * The request reaches the database and is applied; its answer never arrives.
 *
 * @since 0.1.0
 * @category faults
 */
export const lostReply: Fault = internal.lostReply

/**
 * The request waits `duration` before it reaches the database.
 *
 * @since 0.1.0
 * @category faults
 */
export const delay: (duration: Duration.DurationInput) => Fault = internal.delay

/**
 * The request is applied at once; its answer takes `duration` to come back.
 *
 * @since 0.1.0
 * @category faults
 */
export const slowReply: (duration: Duration.DurationInput) => Fault = internal.slowReply

/**
 * The call never answers, and cancelling it (when a timeout interrupts it)
 * takes `duration`: a driver that waits on the server to cancel.
 *
 * @since 0.1.0
 * @category faults
 */
export const slowCancel: (duration: Duration.DurationInput) => Fault = internal.slowCancel
