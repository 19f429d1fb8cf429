import { Effect, Schedule } from "effect"
import { describe, expect, it } from "vitest"
import type * as Job from "../src/Job.js"
import { createElector } from "../src/promise.js"
import * as MemoryStore from "../src/stores/MemoryStore.js"
import { eventually, fast } from "./support/promiseTiming.js"

let elections = 0
const unique = () => `promise-jobs-${process.pid}-${++elections}`

describe("createElector jobs (Promise wrapper)", () => {
  it("runs a job's slots on the leader, goes on after a rejection, and aborts a run at stop", async () => {
    const store = await Effect.runPromise(MemoryStore.make())
    const slots: Array<Job.Slot> = []
    let aborted: AbortSignal | undefined
    const elector = createElector({
      ...fast,
      store,
      name: unique(),
      jobs: [{
        name: "tick",
        schedule: Schedule.fixed("100 millis"),
        run: async (signal, slot) => {
          slots.push(slot)
          if (slots.length === 1) throw new Error("first run fails")
          if (slots.length === 3) {
            aborted = signal
            await new Promise(() => {})
          }
        }
      }]
    })
    await elector.start()
    await eventually(() => slots.length === 3, "three runs")
    expect(slots.map((slot) => slot.fence)).toEqual([1n, 1n, 1n])
    expect(slots[1]!.at.getTime() - slots[0]!.at.getTime()).toBe(100)
    expect(aborted?.aborted).toBe(false)
    await elector.stop()
    expect(aborted?.aborted).toBe(true)
  })

  it("refuses a bad job at construction, and a store without slots at start", async () => {
    const store = await Effect.runPromise(MemoryStore.make())
    const run = () => {}
    expect(() => createElector({ ...fast, store, name: unique(), jobs: [{ name: "j", schedule: "not cron", run }] }))
      .toThrow(expect.objectContaining({ _tag: "InvalidConfig", field: "schedule" }))
    const { slots: _, ...bare } = store
    const elector = createElector({
      ...fast,
      store: bare,
      name: unique(),
      jobs: [{ name: "j", schedule: "* * * * *", run }]
    })
    await expect(elector.start()).rejects.toMatchObject({ _tag: "InvalidConfig", field: "store" })
    await elector.stop()
  })
})
