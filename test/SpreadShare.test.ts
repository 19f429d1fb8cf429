/**
 * One member's view of its spread group (src/internal/spread/share.ts).
 */
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, TestClock } from "effect"
import { Share } from "../src/internal/spread/share.js"

describe("a spread member's share", () => {
  it.effect("before the membership's first view, claims only a lease free past the grace", () =>
    Effect.gen(function*() {
      const share = new Share("a", yield* Effect.clock, Duration.seconds(2), () => {})
      const seat = share.seat("job")
      seat.seen(undefined)
      // Alone as far as it knows, its rules would give it every election.
      expect(seat.mayClaim()).toBe(false)
      yield* TestClock.adjust(Duration.seconds(4))
      expect(seat.mayClaim()).toBe(true)
    }))

  it.effect("once viewed, claims what its share allows at once", () =>
    Effect.gen(function*() {
      const share = new Share("a", yield* Effect.clock, Duration.seconds(2), () => {})
      const seats = [share.seat("one"), share.seat("two")]
      for (const seat of seats) seat.seen(undefined)
      share.view(["a", "b"])
      expect(seats[0]!.mayClaim()).toBe(true)
      expect(seats[1]!.mayClaim()).toBe(false)
    }))
})
