/**
 * The three paths a soak runs on, each on throwaway servers (never the
 * shared ones): PostgreSQL direct, PostgreSQL through PgBouncer (transaction
 * pooling), MariaDB direct. Every slot of a fleet gets its own FaultProxy in
 * front of the path, so one participant's network can break alone:
 *
 *   participant process -> its FaultProxy -> [PgBouncer ->] database
 */
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { type FaultProxy, type ProxyMode, startProxy } from "../chaos/harness/FaultProxy.js"
import { startMariaDB, type ThrowawayMariaDB } from "../chaos/harness/ThrowawayMariaDB.js"
import { startPgBouncer, type ThrowawayPgBouncer } from "../chaos/harness/ThrowawayPgBouncer.js"
import { startPostgres, type ThrowawayPostgres } from "../chaos/harness/ThrowawayPostgres.js"

export type PathName = "pg" | "pgbouncer" | "mariadb"
export const pathNames: ReadonlyArray<PathName> = ["pg", "pgbouncer", "mariadb"]

export const table = "soak_election"

export interface Backend {
  readonly path: PathName
  readonly kind: "pg" | "mysql"
  readonly bouncer: ThrowawayPgBouncer | undefined
  /** The proxy of `slot`, started on first use. */
  proxy(slot: string): Promise<FaultProxy>
  /** The URL a participant in `slot` uses. */
  url(slot: string): Promise<string>
  /** PostgreSQL's own URL, past every proxy and PgBouncer (for a wake-up hints listener); none on MariaDB. */
  readonly direct: string | undefined
  setAll(mode: ProxyMode): void
  /** SIGSTOP the database server. */
  pause(): void
  resume(): void
  restart(): Promise<void>
  /** Holds `SELECT ... FOR UPDATE` on an election's row in another session. */
  lockElection(name: string): Promise<() => Promise<void>>
  /** Client connections the database sees, the runner's own excluded (server connections, behind PgBouncer). */
  connections(): Promise<number>
  destroy(): Promise<void>
}

const distDir = fileURLToPath(new URL("../../dist/", import.meta.url))

/** Creates the table with the built library's own DDL. */
const ensureSchema = async (kind: "pg" | "mysql", url: string): Promise<void> => {
  const { Effect, Layer } = await import("effect")
  const store = kind === "pg"
    ? (await import(path.join(distDir, "stores/PgStore.js"))).layerFromUrl(url, { table, ensureSchema: true })
    : (await import(path.join(distDir, "stores/MysqlStore.js"))).layerFromUrl(url, { table, ensureSchema: true })
  await Effect.runPromise(Effect.scoped(Layer.build(store)))
}

export interface BackendOptions {
  /** PgBouncer's server connections (default 5). */
  readonly poolSize?: number
}

export const startBackend = async (name: PathName, options: BackendOptions = {}): Promise<Backend> => {
  let pg: ThrowawayPostgres | undefined
  let maria: ThrowawayMariaDB | undefined
  let bouncer: ThrowawayPgBouncer | undefined
  const proxies = new Map<string, FaultProxy>()
  // Every proxy asked for, started or starting: two runs side by side (the
  // mutation check) may ask for one slot at the same moment, and must not
  // each start one, one of them then never closed.
  const starting = new Map<string, Promise<FaultProxy>>()
  const destroy = async (): Promise<void> => {
    await Promise.all([...starting.values()].map((p) => p.then((proxy) => proxy.close(), () => undefined)))
    starting.clear()
    proxies.clear()
    await bouncer?.destroy()
    await pg?.destroy()
    await maria?.destroy()
  }
  try {
    if (name === "mariadb") maria = await startMariaDB()
    else pg = await startPostgres()
    if (name === "pgbouncer" && pg !== undefined) {
      bouncer = await startPgBouncer({ targetPort: pg.port, ...(options.poolSize === undefined ? {} : options) })
    }
    const kind = name === "mariadb" ? "mysql" : "pg"
    await ensureSchema(kind, kind === "pg" ? (pg as ThrowawayPostgres).url() : (maria as ThrowawayMariaDB).url())
  } catch (error) {
    await destroy()
    throw error
  }
  const targetPort = bouncer?.port ?? pg?.port ?? (maria as ThrowawayMariaDB).port
  const proxy = (slot: string): Promise<FaultProxy> => {
    const found = starting.get(slot)
    if (found !== undefined) return found
    const started = startProxy({ targetPort }).then(
      (p) => {
        proxies.set(slot, p)
        return p
      },
      (error: unknown) => {
        starting.delete(slot)
        throw error
      }
    )
    starting.set(slot, started)
    return started
  }
  const db = {
    pause: () => (pg ?? (maria as ThrowawayMariaDB)).pause(),
    resume: () => (pg ?? (maria as ThrowawayMariaDB)).resume(),
    restart: () => (pg ?? (maria as ThrowawayMariaDB)).restart()
  }
  return {
    path: name,
    kind: maria === undefined ? "pg" : "mysql",
    bouncer,
    proxy,
    direct: pg?.url(),
    url: async (slot) => {
      const port = (await proxy(slot)).port
      return maria === undefined
        ? `postgres://postgres@127.0.0.1:${port}/test`
        : `mysql://root@127.0.0.1:${port}/test`
    },
    setAll: (mode) => {
      for (const p of proxies.values()) p.setMode(mode)
    },
    ...db,
    lockElection: async (election) => {
      const quoted = election.replaceAll("'", "''")
      const lock = pg !== undefined
        ? await pg.lockRow(table, `name = '${quoted}'`)
        : await (maria as ThrowawayMariaDB).lockRow(table, `name = '${quoted}'`)
      if (lock.rows !== 1) throw new Error(`expected to lock 1 row of ${election}, locked ${lock.rows}`)
      return () => lock.release()
    },
    connections: async () => {
      if (pg !== undefined) {
        const rows = await pg.sql<{ n: string }>(
          `SELECT count(*)::text AS n FROM pg_stat_activity
           WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() AND datname = 'test'`
        )
        return Number(rows[0]?.n ?? 0)
      }
      const rows = await (maria as ThrowawayMariaDB).sql<{ n: number }>(
        "SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE DB = 'test' AND ID <> CONNECTION_ID()"
      )
      return Number(rows[0]?.n ?? 0)
    },
    destroy
  }
}

/**
 * The backend as one run sees it: its slots get proxies of their own (named
 * `run/slot` on the backend), and `setAll` reaches only those, so runs side
 * by side on one backend (the mutation check) neither break nor heal each
 * other's paths.
 */
export const ownSlots = (backend: Backend, run: string): Backend => {
  const mine = new Map<string, FaultProxy>()
  const proxy = async (slot: string): Promise<FaultProxy> => {
    const found = await backend.proxy(`${run}/${slot}`)
    mine.set(slot, found)
    return found
  }
  return {
    ...backend,
    proxy,
    url: async (slot) => {
      await proxy(slot)
      return backend.url(`${run}/${slot}`)
    },
    setAll: (mode) => {
      for (const p of mine.values()) p.setMode(mode)
    }
  }
}
