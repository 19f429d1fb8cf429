import { describe, it } from "vitest"
import { Simulation } from "../../src/testing.js"
import { check } from "./ci.js"

describe("fleet simulation (3s lease)", () => {
  it(
    "stays safe and elects again under generated fault schedules",
    () => check(Simulation.shortConfig, 400, 50),
    300_000
  )
})
