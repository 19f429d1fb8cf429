// StoreSuite.check from a plain node script: no vitest anywhere in the process.
import { Effect } from "effect"
import * as MemoryStore from "../../src/stores/MemoryStore.js"
import { StoreSuite } from "../../src/testing.js"

const report = await Effect.runPromise(StoreSuite.check("MemoryStore", MemoryStore.layer(), { modelRuns: 20 }))
console.log(report.summary)
