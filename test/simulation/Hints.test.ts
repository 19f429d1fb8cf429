import { Duration, Effect } from "effect"
import { afterEach, describe, expect, it } from "vitest"
import * as Elector from "../../src/Elector.js"
import * as Store from "../../src/Store.js"
import * as MemoryStore from "../../src/stores/MemoryStore.js"
import { Simulation } from "../../src/testing.js"

// Wake-up hints lost, repeated, late, and forged while someone leads: a
// hint decides nothing, so none of it may cost safety.
const hints: Simulation.Schedule = {
  config: Simulation.shortConfig,
  rates: [10_000, 9_700, 10_300, 10_000].map(Simulation.rate),
  window: 12_000,
  events: [
    { at: 500, event: { _tag: "Hints", slot: 1, hints: { _tag: "Lost" } } },
    { at: 600, event: { _tag: "Hints", slot: 2, hints: { _tag: "Duplicated" } } },
    { at: 700, event: { _tag: "Hints", slot: 3, hints: { _tag: "Delayed", millis: 2_500 } } },
    { at: 2_000, event: { _tag: "Forge" } },
    { at: 3_000, event: { _tag: "Restart", slot: "leader" } },
    { at: 4_100, event: { _tag: "Forge" } },
    { at: 6_000, event: { _tag: "Resign", slot: "leader" } },
    { at: 6_050, event: { _tag: "Forge" } },
    { at: 8_000, event: { _tag: "Heal", slot: 3 } },
    { at: 9_000, event: { _tag: "Forge" } },
    { at: 10_000, event: { _tag: "Restart", slot: "leader" } }
  ]
}

interface Mutable {
  hint: () => void
  claim: () => Generator<unknown, unknown, unknown>
}

/** The prototype of the elector class, reached through an elector. */
const electorPrototype = (): Mutable =>
  Effect.runSync(Effect.scoped(Effect.gen(function*() {
    const store = yield* MemoryStore.make()
    const elector = yield* Elector.make({ name: "prototype" }).pipe(Effect.provideService(Store.Store, store))
    return Object.getPrototypeOf(elector) as Mutable
  })))

/**
 * The mutant: a follower that trusts a hint as the lease. Woken by a hint, it
 * leads at once under the next fence it has not used, without the claim
 * statement that would have asked the database.
 */
const installTrustingMutant = (): () => void => {
  const prototype = electorPrototype()
  const original = { hint: prototype.hint, claim: prototype.claim }
  prototype.hint = function(this: Mutable & { trusted?: boolean; active: unknown }) {
    if (this.active === undefined) this.trusted = true
    original.hint.call(this)
  }
  prototype.claim = function*(
    this: Mutable & {
      trusted?: boolean
      ledUnder: bigint
      config: { leaseDuration: Duration.Duration; safetyMargin: Duration.Duration }
      nanos: () => bigint
      lead: (fence: bigint, sentAt: bigint, deadline: bigint) => Effect.Effect<unknown>
    }
  ) {
    if (this.trusted !== true) return yield* original.claim.call(this)
    this.trusted = false
    const sentAt = this.nanos()
    const { leaseDuration, safetyMargin } = this.config
    const deadline = sentAt + Duration.unsafeToNanos(Duration.subtract(leaseDuration, safetyMargin))
    yield* this.lead(this.ledUnder < 1n ? 1n : this.ledUnder + 1n, sentAt, deadline)
    return { step: "poll", wait: undefined }
  }
  return () => {
    prototype.hint = original.hint
    prototype.claim = original.claim
  }
}

let uninstall: (() => void) | undefined
afterEach(() => {
  uninstall?.()
  uninstall = undefined
})

describe("wake-up hints in the fleet simulation", () => {
  it("lost, duplicated, delayed and forged hints leave the election safe and live", () => {
    for (const seed of [1, 2, 3]) {
      const result = Simulation.run(hints, { step: 25, seed })
      expect(result.violation).toBeUndefined()
      expect(result.terms).toBeGreaterThanOrEqual(3)
    }
  })

  it("the oracle catches a mutant that trusts a hint as the lease (leads without the claim statement)", () => {
    uninstall = installTrustingMutant()
    const result = Simulation.run(hints, { step: 25, seed: 1 })
    // A safety check, not liveness: a leader the database never chose.
    expect(["two-leaders", "fence-reused", "work-overlap", "leader-not-in-db"]).toContain(result.violation?.check)
  })
})
