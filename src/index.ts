/**
 * @since 0.1.0
 */
export * as Elector from "./Elector.js"
/**
 * @since 0.1.0
 */
export * as ElectorError from "./ElectorError.js"
/**
 * @since 0.1.0
 */
export * as Health from "./Health.js"
/**
 * @since 0.1.0
 */
export * as Job from "./Job.js"
/**
 * @since 0.1.0
 */
export * as Leadership from "./Leadership.js"
/**
 * @since 0.1.0
 */
export * as Lease from "./Lease.js"
/**
 * @since 0.1.0
 */
export * as MemoryStore from "./stores/MemoryStore.js"
/**
 * @since 0.1.0
 */
export * as Metrics from "./Metrics.js"
/**
 * @since 0.1.0
 */
export * as Store from "./Store.js"
