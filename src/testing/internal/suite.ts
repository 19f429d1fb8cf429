/**
 * The acceptance suite every store runs, unchanged: the in-memory reference,
 * PostgreSQL direct and through PgBouncer, MariaDB, and users' own stores
 * through `effect-leaderelection/testing`. It pins down the contract that the
 * elector's safety argument rests on, so that no store can drift into
 * dialect-specific semantics.
 *
 * The cases live by section of the contract (`suite/leases.ts`,
 * `suite/incarnations.ts`, `suite/slots.ts`, `suite/candidates.ts`, and the
 * operation-level model in `model.ts`). This runner runs each on its own
 * (`runCase`): a case passes, fails with a {@link ContractViolation} (the
 * call, the store's answer, the rule), or is skipped when the store lacks an
 * optional operation (or keeps no incarnations, or the harness cannot make a
 * record look written by another server).
 * `register.ts` makes them tests of the caller's vitest; `checkStore` runs
 * them all as one Effect, anywhere.
 */
import { Cause, Data, Duration, Effect, Exit, TestContext } from "effect"
import { ContractViolation, show, Skipped } from "./contract.js"
import { modelCase } from "./model.js"
import { candidateCases } from "./suite/candidates.js"
import { incarnationCases } from "./suite/incarnations.js"
import { bind, type Case, defaultModelRuns, type StoreHarness } from "./suite/kit.js"
import { leaseCases } from "./suite/leases.js"
import { slotCases } from "./suite/slots.js"

/**
 * How long one case may take by default. A live case sleeps through up to
 * four expiries on a real server; the model through a couple per run.
 */
export const defaultTimeout = (harness: Pick<StoreHarness, "live" | "modelRuns">, model: boolean): Duration.Duration =>
  model
    ? Duration.seconds(30 + (harness.live ? 3 : 0.2) * (harness.modelRuns ?? defaultModelRuns(harness.live)))
    : Duration.seconds(harness.live ? 30 : 10)

/** A case that ran past its timeout. */
class TimedOut extends Data.TaggedError("TimedOut")<{ readonly after: Duration.Duration }> {
  override get message(): string {
    return `the case did not finish within ${Duration.format(this.after)} (raise the \`timeout\` option)`
  }
}

/** How one case ended. */
export type CaseResult =
  | { readonly name: string; readonly status: "passed" }
  | { readonly name: string; readonly status: "failed"; readonly message: string }
  | { readonly name: string; readonly status: "skipped"; readonly reason: string }

/** Every case of the suite, section by section as `Store.ts` has them, the model last. */
export const suiteCases = (harness: StoreHarness): ReadonlyArray<Case> => [
  ...[...leaseCases, ...incarnationCases, ...slotCases, ...candidateCases].map((c) => bind(harness, c)),
  modelCase(harness)
]

/** How long `c` may take: the harness's `timeout`, or its default. */
export const caseTimeout = (harness: StoreHarness, c: Case): Duration.Duration =>
  Duration.decode(harness.timeout ?? defaultTimeout(harness, c.model))

/**
 * Runs one case on its own (on a fresh TestClock unless the store is live),
 * within its timeout.
 */
export const runCase = (harness: StoreHarness, c: Case): Effect.Effect<CaseResult> => {
  const timeout = caseTimeout(harness, c)
  const body = Effect.scoped(c.body)
  // The deadline is outside the TestClock: a case's TestClock.adjust must not trip it.
  const bounded = Effect.timeoutFail(harness.live ? body : Effect.provide(body, TestContext.TestContext), {
    duration: timeout,
    onTimeout: () => new TimedOut({ after: timeout })
  })
  // Each case is a fiber of its own: a case cut short inside its TestContext
  // must not leave the TestClock to the caller (nor to the next case).
  const isolated = Effect.promise((signal) => Effect.runPromiseExit(bounded, { signal }))
  return Effect.map(isolated, (exit): CaseResult => {
    if (Exit.isSuccess(exit)) return { name: c.name, status: "passed" }
    const error = Cause.squash(exit.cause)
    if (error instanceof Skipped) return { name: c.name, status: "skipped", reason: error.reason }
    const message = error instanceof ContractViolation || error instanceof TimedOut
      ? error.message
      : `the store's layer or the case failed: ${show(error)}`
    return { name: c.name, status: "failed", message }
  })
}

/**
 * The failure a test runner shows: the case's own message, without a stack
 * into the toolkit's compiled files (the message names the store call).
 */
export const caseError = (message: string): Error => {
  const error = new Error(message)
  error.name = "StoreContractViolation"
  error.stack = `${error.name}: ${message}`
  return error
}

/** `c` as the body of a vitest test: skipped through the test's context, failed by throwing {@link caseError}. */
export const caseTest =
  (harness: StoreHarness, c: Case) => async (context: { readonly skip: (note: string) => void }): Promise<void> => {
    const result = await Effect.runPromise(runCase(harness, c))
    if (result.status === "skipped") context.skip(result.reason)
    if (result.status === "failed") throw caseError(result.message)
  }

/**
 * Runs every case (and the model) in turn and returns how each ended.
 */
export const checkStore = (harness: StoreHarness): Effect.Effect<ReadonlyArray<CaseResult>> =>
  Effect.forEach(suiteCases(harness), (c) => runCase(harness, c))

/** The results as vitest would list them: ✓ passed, × failed (with why), ↓ skipped. */
export const summary = (name: string, results: ReadonlyArray<CaseResult>): string => {
  const lines = [`store contract: ${name}`]
  for (const r of results) {
    if (r.status === "passed") lines.push(`  ✓ ${r.name}`)
    else if (r.status === "skipped") lines.push(`  ↓ ${r.name} (skipped: ${r.reason})`)
    else lines.push(`  × ${r.name}`, ...r.message.split("\n").map((line) => `      ${line}`))
  }
  const count = (status: CaseResult["status"]) => results.filter((r) => r.status === status).length
  lines.push(`${count("failed")} failed, ${count("passed")} passed, ${count("skipped")} skipped`)
  return lines.join("\n")
}
