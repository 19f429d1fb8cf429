/**
 * The Promise way, for code that does not use Effect: an AbortSignal per
 * term, start/stop, isLeader. Two participants share one in-memory store.
 *
 *   npx tsx examples/promise.ts
 */
import { Effect } from "effect"
import { MemoryStore } from "../src/index.js"
import { createElector } from "../src/promise.js"

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const store = await Effect.runPromise(MemoryStore.make())

const participant = (identity: string) =>
  createElector({
    store,
    name: "shipping",
    identity,
    leaseDuration: "3 seconds",
    renewInterval: "500 millis",
    retryPeriod: "500 millis",
    operationTimeout: "500 millis",
    onStartedLeading: async (signal, fence) => {
      console.log(`${identity} leads under fence ${fence}`)
      while (!signal.aborted) await sleep(100)
      console.log(`${identity} stopped leading`)
    }
  })

const a = participant("a")
const b = participant("b")
await a.start()
await sleep(200)
await b.start()
await sleep(1000)
console.log(`a leads: ${a.isLeader()}, b leads: ${b.isLeader()}, b sees leader ${b.status().leader}`)
await a.stop()
await sleep(1000)
console.log(`after a stopped, b leads: ${b.isLeader()} with fence ${b.fence()}`)
await b.stop()
