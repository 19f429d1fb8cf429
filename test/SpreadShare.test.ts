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

  it.effect("once viewed, claims a lease handed to it at once, up to its share; any other a retry period later", () =>
    Effect.gen(function*() {
      const share = new Share("a", yield* Effect.clock, Duration.seconds(2), () => {})
      const [one, two, three] = [share.seat("one"), share.seat("two"), share.seat("three")]
      // `one` was held by b, then seen free: handed over, or lost by b.
      one!.seen("b")
      one!.seen(undefined)
      two!.seen(undefined)
      three!.seen(undefined)
      share.view(["a", "b", "c"])
      // Its first view may show too few members: those started with it
      // advertise a moment later.
      expect(two!.mayClaim()).toBe(false)
      expect(one!.mayClaim()).toBe(true)
      yield* TestClock.adjust(Duration.seconds(2))
      // Trusted now, and within its share of one: no more.
      expect(two!.mayClaim()).toBe(false)
      share.view(["a"])
      expect(two!.mayClaim()).toBe(true)
      expect(three!.mayClaim()).toBe(true)
    }))
})
