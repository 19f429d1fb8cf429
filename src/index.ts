/**
 * The core, each module as a namespace: `import { Elector, MemoryStore }
 * from "effect-leaderelection"`. Each module is also an entry of its own
 * (`effect-leaderelection/Elector`, ...); the SQL stores, the Promise API,
 * the HTTP health app and the testing toolkit are entries only, so that
 * importing the core loads no driver.
 *
 * @since 0.1.0
 */
/**
 * One participant in one election: `layer`, `make`, `joinAll`,
 * `whileLeader`, `schedule`, and its configuration.
 *
 * @since 0.1.0
 */
export * as Elector from "./Elector.js"

/**
 * The errors an elector reports, `InvalidConfig` among them.
 *
 * @since 0.1.0
 */
export * as ElectorError from "./ElectorError.js"

/**
 * A health check for an orchestrator's probe: leader, follower or unhealthy.
 *
 * @since 0.1.0
 */
export * as Health from "./Health.js"

/**
 * Leader-only scheduled jobs: what `Elector.schedule` runs, and what it
 * promises.
 *
 * @since 0.1.0
 */
export * as Job from "./Job.js"

/**
 * One term as seen from inside it: its fence and its scope.
 *
 * @since 0.1.0
 */
export * as Leadership from "./Leadership.js"

/**
 * One election's record as the database reported it, and the limits on
 * names and payloads.
 *
 * @since 0.1.0
 */
export * as Lease from "./Lease.js"

/**
 * The in-memory store, for tests and for participants in one process.
 *
 * @since 0.1.0
 */
export * as MemoryStore from "./stores/MemoryStore.js"

/**
 * The metrics every elector reports.
 *
 * @since 0.1.0
 */
export * as Metrics from "./Metrics.js"

/**
 * The contract an elector needs from a store, and the errors stores speak.
 *
 * @since 0.1.0
 */
export * as Store from "./Store.js"
