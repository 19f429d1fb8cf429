/**
 * The spread oracle on made-up events: what each of its checks reports.
 */
import { describe, expect, it } from "vitest"
import type * as Lease from "../../src/Lease.js"
import { movesAllowed, SpreadOracle } from "../../src/testing/internal/SpreadOracle.js"

const at = (millis: number) => new Date(Date.UTC(2026, 0, 1) + millis)
const lease = (holder: string, fence: bigint): Lease.Lease => ({
  name: "e2",
  holder,
  fence,
  payload: null,
  acquiredAt: at(0),
  renewedAt: at(0),
  expiresAt: at(3_000),
  now: at(0)
})

describe("spread oracle", () => {
  it("judges every election as the fleet's oracle does, naming it", () => {
    const oracle = new SpreadOracle(["e0", "e1", "e2"])
    oracle.onStart("e0", "a", 1n, 0)
    oracle.onStart("e1", "b", 1n, 0)
    oracle.onStart("e0", "b", 2n, 10)
    oracle.onStop("e1", "b", 1n, 20)
    oracle.onStart("e1", "a", 1n, 30)
    oracle.sample(40, "e2", [{ process: "a", identity: "a", isLeader: true, fence: 1n }], lease("b", 2n))
    expect(oracle.violations.map(({ check, name }) => [name, check])).toEqual([
      ["e0", "work-overlap"],
      ["e1", "fence-reused"],
      ["e2", "leader-not-in-db"]
    ])
    expect(oracle.violations[0]!.message).toMatch(/^e0: b started work under fence 2/)
  })

  it("holds a join, stop or crash that found the group settled to the rules' bound, and no other change", () => {
    const oracle = new SpreadOracle(["e0", "e1", "e2", "e3"])
    oracle.change({ kind: "join", slot: 1 }, 100, 1, true)
    oracle.onStart("e0", "b", 1n, 150)
    oracle.onStart("e1", "b", 1n, 180)
    oracle.change({ kind: "stop", slot: 0 }, 200, 0, false)
    oracle.onStart("e2", "b", 1n, 250)
    oracle.change({ kind: "partition", slot: 1, millis: 100 }, 300, 0, true)
    oracle.onStart("e3", "b", 1n, 350)
    oracle.finish(400, ["b"], new Map([["e0", "b"], ["e1", "b"], ["e2", "b"], ["e3", "b"]]))
    expect(oracle.moves.map(({ bound, moves, settledIn }) => [moves, bound, settledIn])).toEqual([
      [0, 4, 0],
      [2, 1, 80],
      [1, 0, 50],
      [1, 0, 50]
    ])
    expect(oracle.violations).toEqual([
      { check: "too-many-moves", at: 200, name: undefined, message: "join(1) moved 2 elections, the rules 1" }
    ])
  })

  it("once settled: every election led by a live member, each within its share", () => {
    const oracle = new SpreadOracle(["e0", "e1", "e2", "e3", "e4", "e5"])
    const shares = oracle.finish(
      1_000,
      ["a", "b"],
      new Map([["e0", "a"], ["e1", "a"], ["e2", "a"], ["e3", "gone"], ["e4", undefined], ["e5", "a"]])
    )
    expect(shares).toEqual([4, 0])
    expect(oracle.violations.map(({ check, message }) => [check, message])).toEqual([
      ["held-after-leaving", "e3: held by gone, no longer a member"],
      ["unled-after-settling", "e4: nobody leads it after settling"],
      ["unbalanced", "a leads 4, not 3..3"],
      ["unbalanced", "b leads 0, not 3..3"]
    ])
  })

  it("allows a joiner its share, a leaver's share, a cut-off member its share twice, a no-op nothing", () => {
    const join = { kind: "join", slot: 0 } as const
    const partition = { kind: "partition", slot: 0, millis: 100 } as const
    expect(movesAllowed(join, 10, 2, false)).toBe(4)
    expect(movesAllowed(join, 10, 0, false)).toBe(10)
    expect(movesAllowed(join, 10, 2, true)).toBe(0)
    expect(movesAllowed({ kind: "crash", slot: 0 }, 10, 3, true)).toBe(4)
    expect(movesAllowed({ kind: "stop", slot: 0 }, 10, 1, true)).toBe(10)
    expect(movesAllowed(partition, 10, 3, true)).toBe(8)
    expect(movesAllowed(partition, 10, 3, false)).toBe(0)
  })
})
