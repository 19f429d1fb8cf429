import { describe, it } from "vitest"
import { check } from "./ci.js"
import { Simulation } from "../../src/testing.js"

describe("fleet simulation (default config)", () => {
  it("stays safe and elects again under generated fault schedules", () => check(Simulation.defaultConfig, 200, 100), 300_000)
})
