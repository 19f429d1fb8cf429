/**
 * Real-time settings and a condition wait for the tests of the Promise API
 * (test/promise*.test.ts): these tests wait for conditions, never for fixed
 * delays.
 */

/**
 * Quick polls and renewals, but a lease and store-call timeout long enough
 * that a loaded machine does not make a leader step down on its own.
 */
export const fast = {
  leaseDuration: "5 seconds",
  renewInterval: "200 millis",
  retryPeriod: "100 millis",
  operationTimeout: "1 second",
  safetyMargin: "1 second"
} as const

/** Polls `condition` every 10 ms; fails naming `what` after 10 s. */
export const eventually = async (condition: () => boolean, what: string): Promise<void> => {
  const deadline = performance.now() + 10_000
  while (!condition()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}
