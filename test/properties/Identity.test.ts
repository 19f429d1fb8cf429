import { Effect } from "effect"
import * as fc from "fast-check"
import { hostname } from "node:os"
import { describe, expect, it } from "vitest"
import * as Elector from "../../src/Elector.js"

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

describe("identity format", () => {
  it("is hostname-pid-12hex and never repeats", () =>
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 200 }), (n) => {
        const ids = Effect.runSync(Effect.replicateEffect(Elector.generateIdentity, n))
        const format = new RegExp(`^${escape(hostname())}-${process.pid}-[0-9a-f]{12}$`)
        for (const id of ids) expect(id).toMatch(format)
        expect(new Set(ids).size).toBe(n)
      }),
      { numRuns: 50 }
    ))
})
