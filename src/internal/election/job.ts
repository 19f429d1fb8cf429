/**
 * The machinery of `Elector.schedule`: one term of one job. See `Job.ts`
 * for what it promises.
 *
 * Time. The schedule is stepped with instants on the database clock: the
 * `now` of the latest store answer plus the local monotonic time elapsed
 * since that answer arrived (never the local wall clock). Anchoring at the
 * arrival, not at the send, can only make the estimate late, so a slot
 * never starts before its instant on the database clock.
 *
 * @internal
 */
import * as Cron from "effect/Cron"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as ScheduleDecision from "effect/ScheduleDecision"
import * as Intervals from "effect/ScheduleIntervals"
import type { ResolvedConfig } from "../../Elector.js"
import { InvalidConfig } from "../../ElectorError.js"
import type * as Job from "../../Job.js"
import type { LeadershipShape } from "../../Leadership.js"
import * as Metrics from "../../Metrics.js"
import { type LeaseLost, type SlotOperation, type SlotStore, StoreError, type StoreShape } from "../../Store.js"
import { formatDuration } from "../config/config.js"
import * as limits from "../config/limits.js"

/** A job checked at construction. */
export interface Spec<E, R> {
  readonly job: string
  readonly schedule: Schedule.Schedule<unknown, unknown>
  readonly run: (slot: Job.Slot) => Effect.Effect<unknown, E, R>
  readonly delivery: Job.Delivery
  readonly slots: SlotStore
}

const invalid = (field: string, reason: string) => new InvalidConfig({ field, reason })

/** The schedule of `when`: a cron expression is read in UTC, so that every participant names the same slots. */
const toSchedule = (when: Job.When): Either.Either<Schedule.Schedule<unknown, unknown>, InvalidConfig> =>
  typeof when === "string"
    ? Either.map(
      Either.mapLeft(Cron.parse(when, "UTC"), (error) => invalid("schedule", error.message)),
      (cron) => Schedule.cron(cron)
    )
    : Cron.isCron(when)
    ? Either.right(Schedule.cron(when))
    : Either.right(when)

/** Checks a job's name, schedule and delivery. */
export const check = (
  job: string,
  when: Job.When,
  options: Job.Options
): Either.Either<Omit<Spec<never, never>, "run" | "slots">, InvalidConfig> =>
  Either.gen(function*() {
    yield* limits.job(job)
    const schedule = yield* toSchedule(when)
    const delivery = options.delivery ?? "atMostOnce"
    if (delivery !== "atMostOnce" && delivery !== "atLeastOnce") {
      return yield* Either.left(
        invalid("delivery", `must be "atMostOnce" or "atLeastOnce", got ${limits.kind(delivery)}`)
      )
    }
    return { job, schedule, delivery }
  })

/** Checks a job and its store. */
export const spec = <E, R>(
  store: StoreShape,
  job: string,
  when: Job.When,
  run: (slot: Job.Slot) => Effect.Effect<unknown, E, R>,
  options: Job.Options
): Either.Either<Spec<E, R>, InvalidConfig> =>
  Either.flatMap(
    check(job, when, options),
    (checked) => Either.map(slotStore(store), (slots) => ({ ...checked, run, slots }))
  )

/** The store's record of job slots, which scheduled jobs need. */
export const slotStore = (store: StoreShape): Either.Either<SlotStore, InvalidConfig> =>
  store.slots === undefined
    ? Either.left(invalid("store", "does not record job slots (Store.SlotStore): scheduled jobs need one"))
    : Either.right(store.slots)

/**
 * Runs the job's due slots for one term, until the term ends (it is
 * interrupted), the lease turns out lost, or the schedule is done. Never fails.
 */
export const term = <E, R>(config: ResolvedConfig, job: Spec<E, R>, leadership: LeadershipShape) =>
  Effect.gen(function*() {
    const { fence, identity, name } = leadership
    const { delivery, schedule, slots } = job
    const clock = yield* Effect.clock
    const count = (outcome: Job.Outcome) =>
      Metric.increment(
        Metric.tagged(
          Metric.tagged(Metric.tagged(Metrics.jobSlots, "election", name), "job", job.job),
          "outcome",
          outcome
        )
      )

    // The database clock: its last reading, and the local monotonic time it arrived at.
    let readAt = 0n
    let readDb = 0
    const read = (db: Date) =>
      Effect.map(clock.currentTimeNanos, (local) => {
        readAt = local
        readDb = db.getTime()
      })
    const dbNow = Effect.map(clock.currentTimeNanos, (local) => readDb + Number((local - readAt) / 1_000_000n))

    // A store call returns at operationTimeout, whatever the store does with
    // the interruption, and is retried until it answers: `None` when the
    // guard found the lease lost, which ends the term's job.
    const call = <A>(operation: SlotOperation, effect: Effect.Effect<A, LeaseLost | StoreError>) =>
      effect.pipe(
        Effect.catchAllDefect((defect) =>
          Effect.fail(
            new StoreError({ operation, retryable: false, reason: `store defect: ${String(defect)}`, cause: defect })
          )
        ),
        Effect.disconnect,
        Effect.timeoutFail({
          duration: config.operationTimeout,
          onTimeout: () =>
            new StoreError({
              operation,
              retryable: true,
              reason: `no answer within ${formatDuration(config.operationTimeout)}`,
              cause: undefined
            })
        }),
        Effect.map(Option.some),
        Effect.catchTag("LeaseLost", () => Effect.succeed(Option.none<A>())),
        Effect.tapError((error) => Effect.logWarning(`job ${job.job}: ${error.message}`)),
        Effect.retry(Schedule.spaced(config.retryDelay)),
        Effect.orDie
      )

    // The schedule's next slot after `from`: strictly later, or none when it is done.
    let state: unknown = schedule.initial
    const step = (from: number) =>
      Effect.gen(function*() {
        const [next, , decision] = yield* schedule.step(from, undefined, state)
        state = next
        if (ScheduleDecision.isDone(decision)) return undefined
        const at = Intervals.start(decision.intervals)
        if (at > from) return at
        yield* Effect.logError(
          `job ${job.job}: its schedule does not move past ${new Date(from).toISOString()}; stopped`
        )
        return undefined
      })

    // Claims the slot, runs it if it is ours, records its end. false: the lease is lost.
    const runSlot = (at: number, rerun: boolean) =>
      Effect.gen(function*() {
        const slot: Job.Slot = { job: job.job, at: new Date(at), fence, rerun }
        const claim = yield* call(
          "claimSlot",
          slots.claim(name, identity, fence, job.job, slot.at, delivery === "atLeastOnce")
        )
        if (Option.isNone(claim)) return false
        yield* read(claim.value.now)
        if (!claim.value.claimed) {
          yield* Effect.logInfo(`job ${job.job}: slot ${slot.at.toISOString()} was started by another term; skipped`)
          yield* count("skipped")
          return true
        }
        const exit = yield* Effect.exit(Effect.suspend(() => job.run(slot))).pipe(
          Effect.onInterrupt(() => count("interrupted"))
        )
        if (Exit.isFailure(exit)) {
          yield* Effect.logError(`job ${job.job}: slot ${slot.at.toISOString()} failed`, exit.cause)
        }
        yield* count(Exit.isSuccess(exit) ? "completed" : "failed")
        const done = yield* call("completeSlot", slots.complete(name, identity, fence, job.job, slot.at))
        if (Option.isNone(done)) return false
        yield* read(done.value)
        return true
      })

    const latest = Option.getOrThrow(yield* call("lastSlot", slots.last(name, job.job)))
    yield* read(latest.now)
    const previous = latest.slot
    let next: number | undefined
    if (previous === undefined) {
      // The job's first term ever: it records the instant the schedule starts
      // from, as a completed slot of no run, so that a successor steps the
      // schedule from the same origin and runs a slot this term never started.
      const origin = new Date(yield* dbNow)
      const marked = yield* call("claimSlot", slots.claim(name, identity, fence, job.job, origin, false))
      if (Option.isNone(marked)) return
      if (Option.isNone(yield* call("completeSlot", slots.complete(name, identity, fence, job.job, origin)))) return
      next = yield* step(origin.getTime())
    } else {
      if (previous.completedAt === null && previous.fence < fence) {
        if (delivery === "atLeastOnce") {
          if (!(yield* runSlot(previous.at.getTime(), true))) return
        } else {
          yield* Effect.logWarning(
            `job ${job.job}: slot ${previous.at.toISOString()} was interrupted under fence ${previous.fence}; ` +
              "not run again (atMostOnce)"
          )
          yield* count("skipped")
        }
      }
      next = yield* step(previous.at.getTime())
    }
    while (next !== undefined) {
      const now = yield* dbNow
      if (next > now) {
        yield* clock.sleep(Duration.millis(next - now))
        continue
      }
      // Due: only the latest slot that is due runs.
      let due = next
      next = yield* step(due)
      while (next !== undefined && next <= now) {
        yield* count("missed")
        due = next
        next = yield* step(due)
      }
      if (!(yield* runSlot(due, false))) return
    }
  })
