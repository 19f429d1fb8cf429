/**
 * The soak oracle on hand-written logs: it passes clean handovers, crashes
 * and frozen leaders that wake and step down, and reports each kind of
 * violation. (The mutation check, test/soak/mutation.ts, shows it catching
 * a broken library end to end.)
 */
import { describe, expect, it } from "vitest"
import { analyse, byElection, type ParticipantEvent, type ParticipantLog, type ProcessEvent } from "./oracle.js"

const start = (f: number, t: number): ParticipantEvent => ({ e: "start", f: String(f), t })
const stop = (f: number, t: number): ParticipantEvent => ({ e: "stop", f: String(f), t })
const act = (f: number, t0: number, ok = true): ParticipantEvent => ({ e: "act", f: String(f), t0, ok, t1: t0 + 1 })
const log = (id: string, ...events: Array<ParticipantEvent>): ParticipantLog => ({ id, events })
const kinds = (logs: Array<ParticipantLog>, processEvents: Array<ProcessEvent> = [], end = 10_000) =>
  analyse(logs, processEvents, end).violations.map((v) => v.kind)

describe("soak oracle", () => {
  it("passes a clean handover and a crash", () => {
    const a = log("a", start(1, 0), act(1, 10), act(1, 100), stop(1, 150))
    const b = log("b", start(2, 200), act(2, 210), act(2, 400))
    const c = log("c", start(3, 1000), act(3, 1010))
    const analysis = analyse([a, b, c], [{ id: "b", k: "kill", t: 500 }], 2000)
    expect(analysis.violations).toEqual([])
    expect(analysis.terms.map((t) => [t.id, t.end, t.endedBy])).toEqual([
      ["a", 150, "stop"],
      ["b", 500, "kill"],
      ["c", 2000, "running"]
    ])
  })

  it("reports an older fence acting after a newer one acted", () => {
    const a = log("a", start(1, 0), act(1, 10), act(1, 300), stop(1, 301))
    const b = log("b", start(2, 200), act(2, 210))
    expect(kinds([a, b])).toContain("StaleAct")
  })

  it("reports a fence used by two participants", () => {
    const a = log("a", start(1, 0), act(1, 10), stop(1, 20))
    const b = log("b", start(1, 30), act(1, 40), stop(1, 50))
    expect(kinds([a, b])).toContain("FenceShared")
  })

  it("reports fences out of order of first act", () => {
    const a = log("a", start(2, 0), act(2, 10), stop(2, 20))
    const b = log("b", start(1, 30), act(1, 40), stop(1, 50))
    expect(kinds([a, b])).toContain("FenceOrder")
  })

  it("reports two terms believed at once, even without acts", () => {
    const a = log("a", start(1, 0), act(1, 10), stop(1, 500))
    const b = log("b", start(2, 300), act(2, 310))
    expect(kinds([a, b])).toEqual(["Overlap"])
  })

  it("excuses a frozen leader's one step after SIGCONT, and measures the window", () => {
    const a = log("a", start(1, 0), act(1, 10), act(1, 6000, false), stop(1, 6050))
    const b = log("b", start(2, 3000), act(2, 3010))
    const frozen: Array<ProcessEvent> = [{ id: "a", k: "sigstop", t: 20 }, { id: "a", k: "sigcont", t: 5990 }]
    const analysis = analyse([a, b], frozen, 10_000)
    expect(analysis.violations).toEqual([])
    expect(analysis.wakes).toEqual([{ id: "a", fence: 1n, frozenUs: 5970, windowUs: 60, steps: 1, stepsTrue: 0 }])
  })

  it("excuses the window of a leader frozen past its lease, whoever took over after SIGCONT", () => {
    const a = log("a", start(1, 0), act(1, 10), stop(1, 6050))
    const b = log("b", start(2, 6000), act(2, 6010))
    const frozen: Array<ProcessEvent> = [{ id: "a", k: "sigstop", t: 20 }, { id: "a", k: "sigcont", t: 5990 }]
    // Frozen for less than a lease, it may still lead when it wakes: both believe.
    expect(analyse([a, b], frozen, 10_000, 6000).violations.map((v) => v.kind)).toEqual(["Overlap"])
    const analysis = analyse([a, b], frozen, 10_000, 5000)
    expect(analysis.violations).toEqual([])
    expect(analysis.wakes).toEqual([{ id: "a", fence: 1n, frozenUs: 5970, windowUs: 60, steps: 0, stepsTrue: 0 }])
  })

  it("reports a frozen leader whose work goes on after SIGCONT", () => {
    const a = log("a", start(1, 0), act(1, 10), act(1, 6000, false), act(1, 6010, false), stop(1, 6050))
    const b = log("b", start(2, 3000), act(2, 3010))
    const frozen: Array<ProcessEvent> = [{ id: "a", k: "sigstop", t: 20 }, { id: "a", k: "sigcont", t: 5990 }]
    expect(kinds([a, b], frozen)).toEqual(["StepsAfterWake", "Overlap"])
  })

  it("reports a frozen leader acting on a stale belief after SIGCONT", () => {
    const a = log("a", start(1, 0), act(1, 10), act(1, 6000), stop(1, 6050))
    const b = log("b", start(2, 3000), act(2, 3010))
    const frozen: Array<ProcessEvent> = [{ id: "a", k: "sigstop", t: 20 }, { id: "a", k: "sigcont", t: 5990 }]
    expect(kinds([a, b], frozen)).toEqual(["StaleAct", "StepsAfterWake", "Overlap"])
  })

  it("reports a participant that died on its own", () => {
    expect(kinds([log("a", start(1, 0))], [{ id: "a", k: "died", t: 5 }])).toEqual(["Died"])
  })

  it("checks a spread group per election: one fence number in two elections is no violation, two terms of one are", () => {
    const named = (n: string, event: ParticipantEvent): ParticipantEvent => ({ ...event, n }) as ParticipantEvent
    const a = log("a", named("x", start(1, 0)), named("x", act(1, 10)), named("y", start(1, 5)), {
      e: "res",
      t: 6,
      heap: 1,
      rss: 1,
      handles: 1,
      sockets: 0,
      timers: 0
    })
    const b = log("b", named("y", start(2, 8)), named("x", start(2, 900)))
    const elections = byElection([a, b])
    expect([...elections.keys()].sort()).toEqual(["x", "y"])
    expect(elections.get("x")?.map((l) => [l.id, l.events.length])).toEqual([["a", 2], ["b", 1]])
    expect(analyse(elections.get("x") ?? [], [], 1000).violations.map((v) => v.kind)).toEqual(["Overlap"])
    expect(analyse(elections.get("y") ?? [], [], 1000).violations.map((v) => v.kind)).toEqual(["Overlap"])
    expect(analyse(elections.get("y") ?? [], [{ id: "a", k: "kill", t: 7 }], 1000).violations).toEqual([])
  })
})
