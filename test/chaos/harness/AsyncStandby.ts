/**
 * A throwaway PostgreSQL primary with an ASYNCHRONOUS streaming standby, for
 * failovers that lose the last writes (Patroni's default, and most
 * self-managed PostgreSQL HA):
 *
 *   participant -> its FaultProxy -> [PgBouncer ->] service proxy -> primary, later the standby
 *   standby's WAL receiver -> replication proxy -> primary
 *
 * The replication proxy is what lets a test lose writes: once it is cut,
 * nothing the primary commits reaches the standby. Pausing replay would not
 * do, since promotion replays whatever was received. The service proxy is
 * the address the participants know, as a virtual IP or a DNS name is;
 * `moveToStandby` points it at the standby, as a failover manager would.
 */
import { type FaultProxy, Mode, startProxy } from "./FaultProxy.js"
import { waitFor } from "./process.js"
import { startPostgres, type ThrowawayPostgres } from "./ThrowawayPostgres.js"
import { startTopology, type Topology } from "./Topology.js"

/** The role the standby streams as (REPLICATION, trusted from 127.0.0.1 only). */
export const replicationUser = "replicator"

/** A topology whose database is the primary of an asynchronous pair. */
export interface AsyncStandbyTopology extends Topology {
  /** Also `db`: the server the participants reach until `moveToStandby`. */
  readonly primary: ThrowawayPostgres
  readonly standby: ThrowawayPostgres
  /** On the standby's replication connection. */
  readonly replication: FaultProxy
  /** The participants' (or PgBouncer's) upstream: the primary, then the standby. */
  readonly service: FaultProxy
  /** Resolves once the standby has replayed everything the primary had written when it was called. */
  caughtUp(timeoutMs?: number): Promise<void>
  /** RSTs the standby's replication connection and refuses its reconnects: it keeps what it has. */
  cutReplication(): void
  /** Lets the standby reconnect and stream again (it needs the WAL still on the primary). */
  healReplication(): void
  /** SIGKILL of the primary's postmaster and backends, by the pids it started. */
  killPrimary(): Promise<void>
  /** `pg_ctl promote` on the standby; resolves once it accepts writes. */
  promoteStandby(): Promise<void>
  /** Points the service address at the standby; connections still open to the primary break. */
  moveToStandby(): void
  /** Closes the proxies and the pooler, stops both servers and removes their temp dirs. */
  destroy(): Promise<void>
}

export interface AsyncStandbyOptions {
  readonly participants: ReadonlyArray<string>
  /** Route every participant through one PgBouncer (transaction pooling) in front of the service address. */
  readonly pooled?: boolean
}

export const startAsyncStandby = async (options: AsyncStandbyOptions): Promise<AsyncStandbyTopology> => {
  let primary: ThrowawayPostgres | undefined
  let standby: ThrowawayPostgres | undefined
  let replication: FaultProxy | undefined
  let service: FaultProxy | undefined
  let topology: Topology | undefined
  const destroy = async (): Promise<void> => {
    await topology?.destroy()
    await Promise.all([service?.close(), replication?.close()])
    await standby?.destroy()
    await primary?.destroy()
  }
  try {
    primary = await startPostgres({ config: ["wal_level = replica", "max_wal_senders = 4"] })
    await primary.sql(`CREATE ROLE ${replicationUser} WITH REPLICATION LOGIN`)
    replication = await startProxy({ targetPort: primary.port })
    standby = await startPostgres({ standbyOf: { port: replication.port, user: replicationUser } })
    service = await startProxy({ targetPort: primary.port })
    topology = await startTopology({
      participants: options.participants,
      pooled: options.pooled ?? false,
      db: primary,
      upstreamPort: service.port
    })
  } catch (error) {
    await destroy()
    throw error
  }
  const [p, s, r, v] = [primary, standby, replication, service]
  return {
    ...topology,
    primary: p,
    standby: s,
    replication: r,
    service: v,
    caughtUp: async (timeoutMs) => {
      const rows = await p.sql<{ lsn: string }>("SELECT pg_current_wal_lsn()::text AS lsn")
      const lsn = rows[0]?.lsn
      await waitFor(`the standby to replay the primary's WAL up to ${lsn}`, async () => {
        const replayed = await s.sql<{ caught: boolean | null }>(
          "SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn AS caught",
          [lsn]
        )
        return replayed[0]?.caught === true
      }, timeoutMs)
    },
    cutReplication: () => r.setMode(Mode.partition),
    healReplication: () => r.setMode(Mode.pass),
    killPrimary: () => p.kill(),
    promoteStandby: () => s.promote(),
    moveToStandby: () => v.retarget(s.port),
    destroy
  }
}
