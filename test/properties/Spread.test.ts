/**
 * The share rules of a spread group (src/internal/spread/rules.ts).
 */
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import { target } from "../../src/internal/spread/rules.js"

/** A fleet: distinct member identities, how many elections each leads, and N. */
const fleet = fc
  .uniqueArray(fc.string({ minLength: 1, maxLength: 3 }), { minLength: 1, maxLength: 7 })
  .chain((members) =>
    fc.tuple(
      fc.constant(members),
      fc.array(fc.nat({ max: 40 }), { minLength: members.length, maxLength: members.length }),
      fc.nat({ max: 60 })
    )
  )
  .map(([members, led, extra]) => {
    const counts = new Map(members.map((m, i) => [m, led[i]!]))
    // N covers every election led, and maybe some that nobody leads.
    const n = led.reduce((a, b) => a + b, 0) + extra
    return { members, counts, n }
  })

const targets = (n: number, members: ReadonlyArray<string>, counts: ReadonlyMap<string, number>) =>
  new Map(members.map((m) => [m, target(n, members, (id) => counts.get(id) ?? 0, m)]))

/** The elections that must move for `counts` to meet `goal`: each member's surplus. */
const moves = (counts: ReadonlyMap<string, number>, goal: ReadonlyMap<string, number>) =>
  [...counts].reduce((sum, [m, c]) => sum + Math.max(0, c - goal.get(m)!), 0)

/** Every way to give r of the members the extra election. */
const choices = (members: ReadonlyArray<string>, r: number): Array<ReadonlyArray<string>> =>
  r === 0
    ? [[]]
    : members.flatMap((m, i) => choices(members.slice(i + 1), r - 1).map((rest) => [m, ...rest]))

describe("spread share rules", () => {
  it("the targets share out every election, each within floor(N/M)..ceil(N/M)", () =>
    fc.assert(
      fc.property(fleet, ({ counts, members, n }) => {
        const goal = targets(n, members, counts)
        const floor = Math.floor(n / members.length)
        expect([...goal.values()].reduce((a, b) => a + b, 0)).toBe(n)
        for (const t of goal.values()) expect(t === floor || t === Math.ceil(n / members.length)).toBe(true)
      }),
      { numRuns: 3000 }
    ))

  it("a balanced fleet is at its targets: nothing moves", () =>
    fc.assert(
      fc.property(fleet, ({ members, n }) => {
        const m = members.length
        const floor = Math.floor(n / m)
        // Rebalance the drawn fleet by hand: the first n mod m get one more.
        const balanced = new Map(members.map((id, i) => [id, floor + (i < n % m ? 1 : 0)]))
        expect(targets(n, members, balanced)).toEqual(balanced)
      }),
      { numRuns: 2000 }
    ))

  it("the targets move the fewest elections of any balanced share", () =>
    fc.assert(
      fc.property(fleet, ({ counts, members, n }) => {
        const m = members.length
        const floor = Math.floor(n / m)
        const fewest = Math.min(
          ...choices(members, n % m).map((extra) =>
            moves(counts, new Map(members.map((id) => [id, floor + (extra.includes(id) ? 1 : 0)])))
          )
        )
        expect(moves(counts, targets(n, members, counts))).toBe(fewest)
      }),
      { numRuns: 3000 }
    ))

  it("a member that joins a balanced fleet moves at most ceil(N/(M+1)) elections, all to itself", () =>
    fc.assert(
      fc.property(fleet, ({ members, n }) => {
        const m = members.length
        const balanced = new Map(members.map((id, i) => [id, Math.floor(n / m) + (i < n % m ? 1 : 0)]))
        const joiner = "\u{10FFFF}joiner"
        const grown = [...members, joiner]
        const goal = targets(n, grown, new Map([...balanced, [joiner, 0]]))
        const moved = moves(balanced, goal)
        expect(moved).toBe(goal.get(joiner))
        expect(moved).toBeLessThanOrEqual(Math.ceil(n / (m + 1)))
      }),
      { numRuns: 2000 }
    ))
})
