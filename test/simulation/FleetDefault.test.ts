import { describe, it } from "vitest"
import { Simulation } from "../../src/testing.js"
import { check } from "./ci.js"

describe("fleet simulation (default config)", () => {
  it(
    "stays safe and elects again under generated fault schedules",
    () => check(Simulation.defaultConfig, 200, 100),
    300_000
  )
})
