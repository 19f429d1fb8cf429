/**
 * The public fleet simulation on its two drivers, on the same generated
 * schedules (fixed seed): the fast virtual-time scheduler (`Simulation.run`)
 * and Effect's TestClock (`Simulation.runOnTestClock`, as inside an
 * `it.effect` test). Prints schedules per second and virtual seconds per
 * real second for each, and whether both drivers found the same violations.
 *
 *   npx tsx bench/simulation-drivers.ts   (10 schedules: fast 4.4/s, TestClock 0.21/s, 20x)
 *   BENCH_SCHEDULES=40 BENCH_CONFIG=default npx tsx bench/simulation-drivers.ts
 */
import { Effect, TestContext } from "effect"
import * as fc from "effect/FastCheck"
import * as Simulation from "../src/testing/Simulation.js"

const count = Number(process.env["BENCH_SCHEDULES"] ?? 20)
const config = process.env["BENCH_CONFIG"] === "default" ? Simulation.defaultConfig : Simulation.shortConfig
const step = config === Simulation.shortConfig ? 50 : 100
const schedules = fc.sample(
  Simulation.schedules({ ...Simulation.defaultScheduleOptions, configs: [config] }),
  { numRuns: count, seed: 20_240_601 }
)

interface Tally {
  readonly seconds: number
  readonly virtualMillis: number
  readonly violations: ReadonlyArray<string>
}

const measure = async (run: (s: Simulation.Schedule, seed: number) => Promise<Simulation.Result>): Promise<Tally> => {
  const started = performance.now()
  let virtualMillis = 0
  const violations: Array<string> = []
  for (const [i, s] of schedules.entries()) {
    const result = await run(s, i)
    virtualMillis += result.virtualMillis
    if (result.violation !== undefined) violations.push(`#${i} ${result.violation.check}`)
  }
  return { seconds: (performance.now() - started) / 1000, virtualMillis, violations }
}

const report = (label: string, t: Tally): void =>
  console.log(
    `${label.padEnd(16)} ${(count / t.seconds).toFixed(2).padStart(8)} schedules/s ` +
      `${(t.virtualMillis / 1000 / t.seconds).toFixed(0).padStart(7)} virtual s per real s ` +
      `(${count} schedules in ${t.seconds.toFixed(2)}s, violations: ${t.violations.join(", ") || "none"})`
  )

const main = async (): Promise<void> => {
  console.log(`config ${config.label}, step ${step}ms, ${count} schedules`)
  const fast = await measure((s, seed) => Promise.resolve(Simulation.run(s, { seed, step })))
  report("fast scheduler", fast)
  const testClock = await measure((s, seed) =>
    Effect.runPromise(Effect.provide(Simulation.runOnTestClock(s, { seed, step }), TestContext.TestContext))
  )
  report("TestClock", testClock)
  console.log(`TestClock / fast: ${(testClock.seconds / fast.seconds).toFixed(1)}x the time`)
}

void main()
