import { describe, it } from "vitest"
import { Simulation } from "../../src/testing.js"
import { check } from "./ci.js"

describe("fleet simulation on the SQL stores' call path (3s lease)", () => {
  it(
    "stays safe and elects again with its calls on the participants' own fibers",
    () => check(Simulation.shortConfig, 150, 50, "onCaller"),
    300_000
  )
})
