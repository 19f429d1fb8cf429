/**
 * The acceptance suite as tests of the calling vitest file. vitest refuses
 * to be imported outside a vitest run ("failed to access its internal
 * state"), and the rest of the toolkit (`StoreSuite.check`, `Simulation`,
 * `FaultyStore`) runs anywhere: vitest is loaded only inside a run.
 */
import { Duration, Effect } from "effect"
import { caseTimeout, runCase, type StoreHarness, suiteCases } from "./suite.js"

const vitest = process.env["VITEST"] === undefined ? undefined : await import("vitest").catch(() => undefined)

/**
 * The failure vitest shows: the case's own message, without a stack into
 * the toolkit's compiled files (the message names the store call).
 */
const contractError = (message: string): Error => {
  const error = new Error(message)
  error.name = "StoreContractViolation"
  error.stack = `${error.name}: ${message}`
  return error
}

/** vitest's own deadline stays behind the case's, so that the case's says what happened. */
const vitestMargin = Duration.seconds(10)

export const storeSuite = (harness: StoreHarness): void => {
  if (vitest === undefined) {
    throw new Error(
      "StoreSuite.run registers vitest tests: call it in a test file vitest runs (StoreSuite.check runs anywhere)"
    )
  }
  vitest.describe(`store contract: ${harness.name}`, () => {
    for (const c of suiteCases(harness)) {
      vitest.it(c.name, async (context) => {
        const result = await Effect.runPromise(runCase(harness, c))
        if (result.status === "skipped") context.skip(result.reason)
        if (result.status === "failed") throw contractError(result.message)
      }, Duration.toMillis(Duration.sum(caseTimeout(harness, c), vitestMargin)))
    }
  })
}
