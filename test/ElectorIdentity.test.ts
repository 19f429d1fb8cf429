import { Effect } from "effect"
import { expect, it, vi } from "vitest"

// The randomness source failing must fail identity generation: there is no
// fallback to a predictable value.
vi.mock("node:crypto", () => ({
  randomBytes: () => {
    throw new Error("entropy source unavailable")
  }
}))

it("fails with IdentityError when the randomness source fails", async () => {
  const Elector = await import("../src/Elector.js")
  const error = Effect.runSync(Effect.flip(Elector.generateIdentity))
  expect(error._tag).toBe("IdentityError")
  expect(error.message).toBe("cannot generate an identity: Error: entropy source unavailable")
  const refused = Effect.runSync(Effect.flip(Elector.validate({ name: "jobs" })))
  expect(refused._tag).toBe("IdentityError")
})
