/**
 * The shape most chaos scenarios need: one throwaway PostgreSQL, optionally a
 * PgBouncer in front of it, and one fault proxy per participant so a single
 * participant's path can be broken while the others keep theirs.
 *
 *   participant -> its FaultProxy -> [PgBouncer ->] PostgreSQL
 */
import { type FaultProxy, type ProxyMode, startProxy } from "./FaultProxy.js"
import { startPgBouncer, type ThrowawayPgBouncer } from "./ThrowawayPgBouncer.js"
import { startPostgres, type ThrowawayPostgres } from "./ThrowawayPostgres.js"

export interface Topology {
  readonly db: ThrowawayPostgres
  /** Present when the topology is pooled. */
  readonly bouncer: ThrowawayPgBouncer | undefined
  readonly participants: ReadonlyArray<string>
  /** The proxy on `id`'s path; throws for an unknown participant. */
  proxy(id: string): FaultProxy
  /** `id`'s connection URL, through its proxy (database `test` unless given). */
  url(id: string, database?: string): string
  /** Sets every participant's path to `mode`. */
  setAll(mode: ProxyMode): void
  /** Closes the proxies, the pooler, and the database unless it was passed in. */
  destroy(): Promise<void>
}

export interface TopologyOptions {
  readonly participants: ReadonlyArray<string>
  /** Route every path through one PgBouncer (transaction pooling). Default false. */
  readonly pooled?: boolean
  /** Reuse a running database (not destroyed with the topology) instead of starting one. */
  readonly db?: ThrowawayPostgres
  /**
   * Where the paths (or PgBouncer) connect, when not to `db` itself: a proxy
   * in front of it whose target can move to another server, say.
   */
  readonly upstreamPort?: number
}

export const startTopology = async (options: TopologyOptions): Promise<Topology> => {
  if (new Set(options.participants).size !== options.participants.length) {
    throw new Error(`participant ids must be unique: ${options.participants.join(", ")}`)
  }
  const db = options.db ?? (await startPostgres())
  const proxies = new Map<string, FaultProxy>()
  let bouncer: ThrowawayPgBouncer | undefined
  const destroy = async (): Promise<void> => {
    await Promise.all([...proxies.values()].map((p) => p.close()))
    await bouncer?.destroy()
    if (options.db === undefined) await db.destroy()
  }
  try {
    const upstreamPort = options.upstreamPort ?? db.port
    if (options.pooled === true) bouncer = await startPgBouncer({ targetPort: upstreamPort })
    const targetPort = bouncer?.port ?? upstreamPort
    for (const id of options.participants) proxies.set(id, await startProxy({ targetPort }))
  } catch (error) {
    await destroy()
    throw error
  }
  const proxy = (id: string): FaultProxy => {
    const found = proxies.get(id)
    if (found === undefined) throw new Error(`no participant ${id} in this topology`)
    return found
  }
  return {
    db,
    bouncer,
    participants: [...options.participants],
    proxy,
    url: (id, database = "test") => `postgres://postgres@127.0.0.1:${proxy(id).port}/${database}`,
    setAll: (mode) => {
      for (const p of proxies.values()) p.setMode(mode)
    },
    destroy
  }
}
