import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import * as WakeUps from "../src/internal/wakeUps.js"

describe("wake-up hints", () => {
  it.effect("a subscription ends with its scope", () =>
    Effect.gen(function*() {
      const hints = WakeUps.make()
      let woken = 0
      const wake = () => woken++
      const scope = yield* Scope.make()
      yield* Scope.extend(hints.subscribe("jobs", wake), scope)
      hints.wake("jobs")
      yield* Scope.close(scope, Exit.void)
      hints.wake("jobs")
      expect(woken).toBe(1)
    }))
})
