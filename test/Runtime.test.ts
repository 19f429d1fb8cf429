/**
 * The process-wide registries: two copies of the library ask for the same
 * key and get the one value the first of them made.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Runtime from "../src/internal/runtime/runtime.js"

describe("Runtime.shared", () => {
  it("makes a key's value once, for every copy that asks", () => {
    const key = `test-${Math.random()}`
    const first = Runtime.shared(key, () => ({ made: 1 }))
    const second = Runtime.shared(key, () => ({ made: 2 }))
    expect(second).toBe(first)
    expect(first.made).toBe(1)
  })
})
