/**
 * The acceptance suite as tests of the calling vitest file. vitest refuses
 * to be imported outside a vitest run ("failed to access its internal
 * state"), and the rest of the toolkit (`StoreSuite.check`, `Simulation`,
 * `FaultyStore`) runs anywhere: vitest is loaded only inside a run.
 */
import { Duration } from "effect"
import { caseTest, caseTimeout, suiteCases } from "./suite.js"
import type { StoreHarness } from "./suite/kit.js"

const vitest = process.env["VITEST"] === undefined ? undefined : await import("vitest").catch(() => undefined)

const outsideVitest =
  "StoreSuite.run registers vitest tests: call it in a test file vitest runs (StoreSuite.check runs anywhere)"

/** vitest's own deadline stays behind the case's, so that the case's says what happened. */
const vitestMargin = Duration.seconds(10)

export const storeSuite = (harness: StoreHarness): void => {
  if (vitest === undefined) throw new Error(outsideVitest)
  vitest.describe(`store contract: ${harness.name}`, () => {
    for (const c of suiteCases(harness)) {
      vitest.it(c.name, caseTest(harness, c), Duration.toMillis(Duration.sum(caseTimeout(harness, c), vitestMargin)))
    }
  })
}
