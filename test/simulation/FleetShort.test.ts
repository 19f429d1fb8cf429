import { describe, it } from "vitest"
import { check } from "./ci.js"
import { shortConfig } from "./Schedule.js"

describe("fleet simulation (3s lease)", () => {
  it("stays safe and elects again under generated fault schedules", () => check(shortConfig, 800, 50), 300_000)
})
