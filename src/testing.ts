/**
 * Testing toolkit for applications built on effect-leaderelection and for
 * authors of stores: the store acceptance suite, the fleet simulation for
 * your own leader work, and a fault-injecting store wrapper.
 *
 * `StoreSuite.run` needs `vitest` (a dev dependency of your project); the
 * rest runs anywhere, a plain node script included. The generators are
 * `effect/FastCheck`'s (the fast-check that `effect` ships and that
 * `@effect/vitest`'s `it.prop` takes).
 *
 * @since 0.1.0
 */

/**
 * A store wrapper that misbehaves on demand, per operation.
 *
 * @since 0.1.0
 */
export * as FaultyStore from "./testing/FaultyStore.js"

/**
 * Fleets of real electors running your leader work on virtual time, under generated faults.
 *
 * @since 0.1.0
 */
export * as Simulation from "./testing/Simulation.js"

/**
 * The acceptance suite every store runs, for a store of your own.
 *
 * @since 0.1.0
 */
export * as StoreSuite from "./testing/StoreSuite.js"
