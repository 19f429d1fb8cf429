/**
 * Testing toolkit for applications built on effect-leaderelection and for
 * authors of stores: the store acceptance suite, the fleet simulation for
 * your own leader work, and a fault-injecting store wrapper.
 *
 * Needs `vitest`, `@effect/vitest` (for `StoreSuite.run`) and `fast-check`
 * as dev dependencies of your project.
 *
 * @since 0.1.0
 */

/**
 * @since 0.1.0
 */
export * as FaultyStore from "./testing/FaultyStore.js"

/**
 * @since 0.1.0
 */
export * as Simulation from "./testing/Simulation.js"

/**
 * @since 0.1.0
 */
export * as StoreSuite from "./testing/StoreSuite.js"
