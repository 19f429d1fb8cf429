/**
 * Leader-only scheduled jobs: what `Elector.schedule` runs, and what it
 * promises.
 *
 * A job is a name, a schedule and an effect. The schedule names the job's
 * slots: instants on the DATABASE clock (a cron expression, evaluated in
 * UTC unless the `Cron` carries its own zone, or any Effect `Schedule`),
 * never on the local clock, which may be days off. The job runs only on the
 * current leader, inside the term (interrupted the instant the term ends),
 * and each slot runs at most once across failovers: a term claims a slot in
 * the database before running it and records its completion after, both
 * guarded by the term's fence in the same statement as the write, so a
 * deposed leader can neither start a slot nor count one as done.
 *
 * Which slots run:
 *
 * - A term starts from the job's latest slot in the database and steps the
 *   schedule forward from it, so a schedule that counts from its start
 *   (`Schedule.fixed`) carries on where the previous leader left off. The
 *   job's first term ever records the instant it starts from (as a
 *   completed slot that ran nothing), so the first slots are after it.
 * - A slot that came due while nobody could run it runs once the next term
 *   starts, unless a later slot is due too: then only the latest runs, and
 *   the earlier ones count as `missed`. The same holds when a run outlasts
 *   the next slot.
 * - A slot interrupted mid-run (the leader crashed, froze or lost its lease
 *   while the job ran) stays started and not completed. Under the default
 *   delivery, `"atMostOnce"`, nobody runs it again (`skipped`). Under
 *   `"atLeastOnce"` the next term claims it again under its own fence and
 *   re-runs it (with `rerun: true`): a job must then be idempotent, since
 *   its first run may have done part, or all, of its work.
 * - A failed or defective run is logged, counted (`failed`) and recorded as
 *   completed: it is not retried, and the term goes on.
 *
 * @since 0.1.0
 */
import type * as Cron from "effect/Cron"
import type * as Schedule from "effect/Schedule"

/**
 * What happens to a slot whose run was interrupted mid-run by the end of a
 * term: `"atMostOnce"` (default) leaves it, `"atLeastOnce"` re-runs it in
 * the next term.
 *
 * @since 0.1.0
 * @category models
 */
export type Delivery = "atMostOnce" | "atLeastOnce"

/**
 * When a job runs: a cron expression (five or six fields, UTC), a parsed
 * `Cron` (its own time zone), or an Effect `Schedule` stepped on the
 * database clock.
 *
 * @since 0.1.0
 * @category models
 */
export type When = string | Cron.Cron | Schedule.Schedule<unknown, unknown>

/**
 * The slot a run is for.
 *
 * @since 0.1.0
 * @category models
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import type { Job } from "effect-leaderelection"
 *
 * const run = (slot: Job.Slot) => Effect.log(`${slot.job} for ${slot.at.toISOString()} under fence ${slot.fence}`)
 * ```
 */
export interface Slot {
  readonly job: string
  /** The scheduled instant, on the database clock. */
  readonly at: Date
  /** The fence of the term running it: stamp the job's writes with it. */
  readonly fence: bigint
  /** An interrupted run re-run by a later term (`"atLeastOnce"`). */
  readonly rerun: boolean
}

/**
 * A job's options besides its name, schedule and effect: how its slots are
 * delivered.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** Defaults to `"atMostOnce"`. */
  readonly delivery?: Delivery | undefined
}

/**
 * What became of a slot: the value of the `outcome` tag of
 * `Metrics.jobSlots`.
 *
 * - `completed`: it ran and succeeded;
 * - `failed`: it ran and failed or died;
 * - `interrupted`: its run was interrupted by the end of the term;
 * - `skipped`: another term had started it (or completed it);
 * - `missed`: it came due while nobody could run it, and a later slot ran instead.
 *
 * @since 0.1.0
 * @category models
 */
export type Outcome = "completed" | "failed" | "interrupted" | "skipped" | "missed"
