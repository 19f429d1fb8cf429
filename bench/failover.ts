/**
 * Failover benchmark: a fleet of three electors (the chaos suite's 3s lease)
 * loses its leader, repeatedly, in two ways:
 *
 * - crash: the leader stops without releasing (disableRelease), so a
 *   successor must wait for the lease to expire in the database;
 * - clean: the leader shuts down and releases, so the next poll claims it
 *   (with the listener: the release's wake-up hint, at once);
 * - resign: the leader resigns (and stays out for its hold-off), so the next
 *   poll of another participant claims it (with the listener: at once).
 *
 * Failover is measured from the instant the leader is stopped to the
 * successor's onStartedLeading, on one monotonic clock. Each loss lands at a
 * random phase of the renewal cycle, so a crash leaves on average
 * leaseDuration - renewInterval/2 of the lease to wait out: the limit a
 * follower that claims at the expiry reaches is that plus one round trip
 * (measured first, as the median of 30 store calls on the same path). After
 * each crash the benchmark also reads the record, and reports how long after
 * the lease expired the successor led: the part of the failover that is the
 * library's, free of the random phase of the crash.
 *
 *   npm run bench:failover                    # 10 runs of each, throwaway PostgreSQL through fault proxies
 *   BENCH_DB=pg npm run bench:failover        # the shared PostgreSQL, direct
 *   BENCH_DB=mariadb npm run bench:failover   # the shared MariaDB, direct
 *   BENCH_DB=pgbouncer npm run bench:failover # the shared PostgreSQL through a throwaway PgBouncer (transaction pooling)
 *   BENCH_LISTEN=1 BENCH_DB=pg npm run bench:failover  # PostgreSQL with wake-up hints (`listen`; through
 *                                             # PgBouncer, the listener takes the direct URL)
 *   BENCH_MODES=clean,resign BENCH_RUNS=30 npm run bench:failover
 *   BENCH_TIMING=fast BENCH_DB=pg BENCH_MODES=crash npm run bench:failover  # a preset of Elector.timing
 */
import { Context, Duration, Effect, Exit, Layer, Scope } from "effect"
import * as Elector from "../src/Elector.js"
import * as Lease from "../src/Lease.js"
import * as Store from "../src/Store.js"
import * as MysqlStore from "../src/stores/MysqlStore.js"
import * as PgStore from "../src/stores/PgStore.js"
import { ensureSchema, type FleetOptions, pgStore, startFleet, timing as chaosTiming } from "../test/chaos/fleet.js"
import { sleep } from "../test/chaos/harness/process.js"
import { startPgBouncer } from "../test/chaos/harness/ThrowawayPgBouncer.js"
import { startTopology } from "../test/chaos/harness/Topology.js"

const runs = Number(process.env["BENCH_RUNS"] ?? 10)
const db = process.env["BENCH_DB"] ?? "throwaway"
const listen = process.env["BENCH_LISTEN"] === "1"
const modes = (process.env["BENCH_MODES"] ?? "crash,clean,resign").split(",") as ReadonlyArray<
  "crash" | "clean" | "resign"
>
const preset = process.env["BENCH_TIMING"] as keyof typeof Elector.timing | undefined
if (preset !== undefined && !(preset in Elector.timing)) throw new Error(`BENCH_TIMING must be fast, default or wan`)
// The chaos suite's short lease, or a preset (its safetyMargin included).
const timing: Partial<Elector.Timing> & typeof chaosTiming = preset === undefined ? chaosTiming : Elector.timing[preset]
const safetyMargin = timing.safetyMargin === undefined ? "1s (default)" : Duration.format(timing.safetyMargin)
// Long enough for a leader to be elected, or a crashed one's lease to run out.
const waitMs = 2 * Duration.toMillis(timing.leaseDuration) + 5_000
const participants = ["a", "b", "c"]
// On the shared servers: a table of this benchmark's own.
const table = "failover_bench"

/** Nearest-rank percentile of an ascending list. */
const percentile = (sorted: ReadonlyArray<number>, p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? Number.NaN

const seconds = (ms: number): string => `${(ms / 1000).toFixed(3)}s`

/** Where the fleet runs, and how each participant reaches it. */
interface Target {
  readonly label: string
  readonly url: (id: string) => string
  readonly store: (url: string) => Layer.Layer<Store.Store, unknown>
  readonly destroy: () => Promise<void>
}

const shared = (url: string, store: (url: string) => Layer.Layer<Store.Store, unknown>, label: string): Target => ({
  label,
  url: () => url,
  store,
  destroy: async () => {}
})

const target = async (): Promise<Target> => {
  const options = { table, operationTimeout: timing.operationTimeout, maxConnections: 2 }
  const pgUrl = process.env["LE_PG_URL"] ?? "postgres://postgres@127.0.0.1:5432/test"
  const hints = listen ? ", wake-up hints (listener on the direct URL)" : ""
  switch (db) {
    case "pg":
      return shared(
        pgUrl,
        (url) => PgStore.layerFromUrl(url, { ...options, ensureSchema: true, listen }),
        `shared PostgreSQL, direct${hints}`
      )
    case "pgbouncer": {
      const upstream = new URL(pgUrl)
      const bouncer = await startPgBouncer({ targetHost: upstream.hostname, targetPort: Number(upstream.port || 5432) })
      return {
        ...shared(
          bouncer.url(upstream.pathname.slice(1) || "test"),
          (url) =>
            PgStore.layerFromUrl(url, { ...options, ensureSchema: true, listen: listen ? { url: pgUrl } : false }),
          `shared PostgreSQL through a throwaway PgBouncer ${bouncer.version.join(".")} (transaction pooling)${hints}`
        ),
        destroy: () => bouncer.destroy()
      }
    }
    case "mariadb":
      return shared(
        process.env["LE_MYSQL_URL"] ?? "mysql://root@127.0.0.1:3306/test",
        (url) => MysqlStore.layerFromUrl(url, { ...options, ensureSchema: true }),
        "shared MariaDB, direct"
      )
    case "throwaway": {
      const topology = await startTopology({ participants })
      await ensureSchema(topology.db.url())
      return {
        label: "throwaway PostgreSQL through fault proxies",
        url: topology.url,
        store: pgStore,
        destroy: topology.destroy
      }
    }
    default:
      throw new Error(`BENCH_DB must be throwaway, pg, pgbouncer or mariadb, got ${db}`)
  }
}

/** A store of the benchmark's own, beside the fleet's, to time round trips and read the record. */
const observer = async (store: Layer.Layer<Store.Store, unknown>) => {
  const scope = Effect.runSync(Scope.make())
  const context = await Effect.runPromise(Layer.buildWithScope(store, scope))
  const { inspect } = Context.get(context, Store.Store)
  return {
    /** The median of 30 sequential calls (an inspect of a record that does not exist), in milliseconds. */
    roundTrip: async (): Promise<number> => {
      const samples: Array<number> = []
      for (let i = 0; i < 31; i++) {
        const start = performance.now()
        await Effect.runPromise(Effect.either(inspect(`failover-rtt-${process.pid}`)))
        if (i > 0) samples.push(performance.now() - start) // the first one connects
      }
      return percentile(samples.sort((a, b) => a - b), 50)
    },
    /** The local instant the lease of `name` expires at, anchored halfway through the call. */
    expiry: async (name: string): Promise<number> => {
      const start = performance.now()
      const lease = await Effect.runPromise(inspect(name))
      return (start + performance.now()) / 2 + Duration.toMillis(Lease.ttl(lease))
    },
    close: () => Effect.runPromise(Scope.close(scope, Exit.void))
  }
}

const main = async (): Promise<void> => {
  const where = await target()
  const probe = await observer(where.store(where.url("a")))
  try {
    const rtt = await probe.roundTrip()
    const lease = Duration.toMillis(timing.leaseDuration)
    const limit = lease - Duration.toMillis(timing.renewInterval) / 2 + rtt
    console.log(
      `config: ${participants.length} participants, ${where.label}, ` +
        Object.entries(timing).filter(([k]) => k !== "safetyMargin").map(([k, v]) => `${k} ${Duration.format(v)}`).join(
          ", "
        ) +
        `, safetyMargin ${safetyMargin}; ${runs} runs each; round trip (median store call) ${rtt.toFixed(1)}ms`
    )
    const fleetOptions: FleetOptions = { store: where.store, configure: () => timing }
    for (const mode of modes) {
      const samples: Array<number> = []
      // After a crash: how long after the lease expired the successor led.
      const late: Array<number> = []
      for (let i = 0; i < runs; i++) {
        const fleet = await startFleet(
          { participants, url: where.url },
          { ...fleetOptions, disableRelease: mode === "crash" }
        )
        try {
          const leader = await fleet.leaderWithin(waitMs)
          await sleep(1_000 + Math.random() * Duration.toMillis(timing.renewInterval))
          const at = performance.now()
          if (mode === "resign") await fleet.resign(leader.id)
          else await fleet.stop(leader.id)
          const expiry = mode === "crash" ? await probe.expiry(fleet.name) : undefined
          const next = await fleet.nextTerm(at, waitMs, leader.id)
          samples.push(next.start - at)
          if (expiry !== undefined) late.push(next.start - expiry)
        } finally {
          await fleet.destroy()
        }
        const violations = fleet.oracle.violations()
        if (violations.length > 0) throw new Error(`safety violated in ${mode} run ${i}`)
      }
      const sorted = [...samples].sort((a, b) => a - b)
      const median = percentile(sorted, 50)
      const against = mode === "crash"
        ? `limit (lease - renewInterval/2 + round trip) ${seconds(limit)}, median/limit ${
          (median / limit).toFixed(3)
        }; ` +
          `led after the lease expired by: median ${(percentile(late.sort((a, b) => a - b), 50)).toFixed(1)}ms, max ${
            (late.at(-1) ?? Number.NaN).toFixed(1)
          }ms`
        : `retryPeriod ${seconds(Duration.toMillis(timing.retryPeriod))}`
      console.log(
        `${mode.padEnd(6)} (${mode === "crash" ? "no release" : "release"}): median ${seconds(median)}, ` +
          `p95 ${seconds(percentile(sorted, 95))}, min ${seconds(sorted[0] ?? Number.NaN)}, max ${
            seconds(sorted.at(-1) ?? Number.NaN)
          }; ${against}`
      )
    }
  } finally {
    await probe.close()
    await where.destroy()
  }
}

main().catch((error: unknown) => {
  console.error(error)
  process.exitCode = 1
})
