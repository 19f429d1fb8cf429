// One soak participant: its own OS process, importing the BUILT library the
// way a user does (dist/, or the copy named by SOAK_DIST for the mutation
// check), never the test sources. Plain JavaScript so that nothing but node
// and the library run here (no tsx loader in the memory samples).
//
// It writes one JSON line per event to SOAK_LOG with fs.writeSync, so a line
// is on disk before the next statement runs and survives a SIGKILL. Every
// time is process.hrtime.bigint() in microseconds: CLOCK_MONOTONIC on Linux,
// the same clock in every process, so intervals from different participants
// (and the runner's own fault log) compare directly.
//
//   {"e":"up","id","pid","t"}               process started
//   {"e":"ready","t"}                       elector built, taking part
//   {"e":"start","f","t"}                   term began (onStartedLeading ran)
//   {"e":"act","f","t0","ok","t1"}          one step of the work: isLeader asked at [t0, t1], answered ok
//   {"e":"stop","f","t"}                    term's work interrupted
// (in a spread group, start, act and stop also carry "n": the election's name)
//   {"e":"res","t","heap","rss","handles","sockets","timers"}  after global.gc()
//   {"e":"log","t","l","m"}                 the library's own log lines
//   {"e":"exit","t"}                        clean shutdown done (SIGTERM)
//
// Environment: SOAK_URL, SOAK_KIND (pg | mysql), SOAK_NAME (election),
// SOAK_TABLE, SOAK_IDENTITY, SOAK_LOG, SOAK_DIST (a file: URL ending in /; default ../../dist/),
// SOAK_STEP_MS (work step, default 10), SOAK_RES_MS (resource sample, default 2000),
// SOAK_LISTEN_URL (a direct PostgreSQL URL: the store listens for wake-up hints there),
// SOAK_SHAPE (`make`, default: Elector.make, its run, onStartedLeading; `quickstart`:
// README's Effect quick start, Elector.layer and Elector.whileLeader over a store
// with ensureSchema, with this timing and identity; `spread`: one member of the
// spread group SOAK_NAME over the elections e0 .. e<SOAK_NAMES - 1>, the work in
// each term of each), SOAK_TIMING (a preset of Elector.timing instead of the
// chaos suite's timing), SOAK_POOL (the store's connections, default 2).
import * as fs from "node:fs"

const env = (name, fallback) => {
  const value = process.env[name] ?? fallback
  if (value === undefined) throw new Error(`${name} is required`)
  return value
}

const dist = env("SOAK_DIST", new URL("../../dist/", import.meta.url).href)
const kind = env("SOAK_KIND", "pg")
const identity = env("SOAK_IDENTITY")
const stepMs = Number(env("SOAK_STEP_MS", "10"))
const resMs = Number(env("SOAK_RES_MS", "2000"))
const fd = fs.openSync(env("SOAK_LOG"), "a")

const now = () => Number(process.hrtime.bigint() / 1000n)
const write = (event) => fs.writeSync(fd, JSON.stringify(event) + "\n")
write({ e: "up", id: identity, pid: process.pid, t: now() })

const { Effect, Fiber, Layer, Logger, Schedule } = await import("effect")
const Elector = await import(new URL("Elector.js", dist).href)
const Leadership = await import(new URL("Leadership.js", dist).href)
const Store = await import(new URL(kind === "pg" ? "stores/PgStore.js" : "stores/MysqlStore.js", dist).href)

const timing = process.env.SOAK_TIMING === undefined
  ? {
    leaseDuration: "3 seconds",
    renewInterval: "750 millis",
    retryPeriod: "500 millis",
    operationTimeout: "500 millis"
  }
  : Elector.timing[process.env.SOAK_TIMING]
if (timing === undefined) throw new Error(`SOAK_TIMING: ${Object.keys(Elector.timing).join(" or ")}`)

const resources = () => {
  globalThis.gc?.()
  const handles = process.getActiveResourcesInfo()
  const count = (type) => handles.filter((h) => h === type).length
  const memory = process.memoryUsage()
  write({
    e: "res",
    t: now(),
    heap: memory.heapUsed,
    rss: memory.rss,
    handles: handles.length,
    sockets: count("TCPSocketWrap") + count("TCPWrap"),
    timers: count("Timeout")
  })
}
// A sample due while the process was frozen is skipped: its GC would run in
// the instant after SIGCONT that the frozen-leader window measures.
let due = Date.now() + resMs
resources()
setInterval(() => {
  const late = Date.now() - due
  due = Date.now() + resMs
  if (late < 500) resources()
}, resMs)

let elector

// The work a leader does: one step every stepMs, each asking isLeader first
// and recording when it asked and what it heard. A step that hears false
// does nothing else; the term goes on until the elector interrupts it.
// `name`: the election, in a spread group.
const work = (fence, isLeader, name) => {
  const at = { ...(name === undefined ? {} : { n: name }), f: String(fence) }
  return Effect.acquireUseRelease(
    Effect.sync(() => write({ e: "start", ...at, t: now() })),
    () =>
      Effect.gen(function*() {
        while (true) {
          const t0 = now()
          const ok = yield* isLeader
          write({ e: "act", ...at, t0, ok, t1: now() })
          yield* Effect.sleep(stepMs)
        }
      }),
    () => Effect.sync(() => write({ e: "stop", ...at, t: now() }))
  )
}

const logger = Logger.replace(
  Logger.defaultLogger,
  Logger.make(({ logLevel, message }) => {
    const text = Array.isArray(message) ? message.map(String).join(" ") : String(message)
    write({ e: "log", t: now(), l: logLevel.label, m: text })
  })
)

const storeOptions = {
  table: env("SOAK_TABLE"),
  operationTimeout: timing.operationTimeout,
  maxConnections: Number(env("SOAK_POOL", "2")),
  ...(process.env.SOAK_LISTEN_URL === undefined ? {} : { listen: { url: process.env.SOAK_LISTEN_URL } })
}

const config = { name: env("SOAK_NAME"), identity, ...timing }

const shapes = {
  make: Effect.gen(function*() {
    elector = yield* Elector.make({ ...config, onStartedLeading: (fence) => work(fence, elector.isLeader) })
    write({ e: "ready", t: now() })
    return yield* elector.run
  }).pipe(Effect.provide(Store.layerFromUrl(env("SOAK_URL"), storeOptions))),
  // As the quick start: the layer takes part while it lives, whileLeader
  // runs the work in each term with the term's fence in context.
  quickstart: Effect.gen(function*() {
    elector = yield* Elector.Elector
    write({ e: "ready", t: now() })
    return yield* Elector.whileLeader(Effect.flatMap(Leadership.fence, (fence) => work(fence, elector.isLeader)))
  }).pipe(
    Effect.provide(
      Elector.layer(config).pipe(
        Layer.provide(Store.layerFromUrl(env("SOAK_URL"), { ...storeOptions, ensureSchema: true }))
      )
    )
  ),
  // A member of a spread group: each election's work under its own term.
  spread: Effect.gen(function*() {
    const names = Array.from({ length: Number(env("SOAK_NAMES")) }, (_, i) => `e${i}`)
    yield* Elector.spread(
      { group: config.name, names, identity, ...timing },
      (name) => Effect.flatMap(Leadership.Leadership, (term) => work(term.fence, term.isLeader, name))
    )
    write({ e: "ready", t: now() })
    return yield* Effect.never
    // Scoped inside the store: the group's finalizers (withdraw, then each
    // election's release) run while the store's pool is still open.
  }).pipe(Effect.scoped, Effect.provide(Store.layerFromUrl(env("SOAK_URL"), storeOptions)))
}

const shape = shapes[env("SOAK_SHAPE", "make")]
if (shape === undefined) throw new Error(`SOAK_SHAPE: ${Object.keys(shapes).join(" or ")}`)

const participate = shape.pipe(
  Effect.scoped,
  // Building the store fails while its path is down: try again, as a
  // supervisor restarting the process would.
  Effect.tapError((error) => Effect.sync(() => write({ e: "log", t: now(), l: "ERROR", m: `build: ${String(error)}` }))),
  Effect.retry(Schedule.spaced("500 millis")),
  Effect.provide(logger)
)

const fiber = Effect.runFork(participate)

process.once("SIGTERM", () => {
  // A deploy's shutdown: the work is interrupted, the lease released.
  Effect.runPromise(Fiber.interrupt(fiber)).finally(() => {
    write({ e: "exit", t: now() })
    process.exit(0)
  })
})
