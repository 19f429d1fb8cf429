import * as fs from "node:fs"
import pg from "pg"
import { describe, expect, it } from "vitest"
import { startAsyncStandby } from "./harness/AsyncStandby.js"
import { isAlive } from "./harness/process.js"

/** Runs one query on a fresh connection to `url`. */
const query = async <Row extends Record<string, unknown>>(
  url: string,
  text: string,
  params: ReadonlyArray<unknown> = []
): Promise<Array<Row>> => {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 })
  client.on("error", () => {})
  await client.connect()
  try {
    return (await client.query<Row>(text, [...params])).rows
  } finally {
    await client.end().catch(() => {})
  }
}

describe.each(["direct", "pooled"] as const)("AsyncStandby (%s)", (path) => {
  it("a failover to the standby loses what the primary committed after replication was cut", async () => {
    const topology = await startAsyncStandby({ participants: ["a"], pooled: path === "pooled" })
    const url = topology.url("a")
    const primaryPid = topology.primary.postmasterPid()
    const standbyPid = topology.standby.postmasterPid()
    try {
      const [standbyInfo] = await topology.standby.sql<{ recovering: boolean; sender: string }>(
        "SELECT pg_is_in_recovery() AS recovering, (SELECT sender_port::text FROM pg_stat_wal_receiver) AS sender"
      )
      // It streams, and through the replication proxy.
      expect(standbyInfo).toEqual({ recovering: true, sender: String(topology.replication.port) })

      await query(url, "CREATE TABLE rows_seen (k text PRIMARY KEY)")
      await query(url, "INSERT INTO rows_seen VALUES ('before the cut')")
      await topology.caughtUp()
      topology.cutReplication()
      await query(url, "INSERT INTO rows_seen VALUES ('after the cut')")
      expect(await query(url, "SELECT k FROM rows_seen ORDER BY k")).toEqual([
        { k: "after the cut" },
        { k: "before the cut" }
      ])

      await topology.killPrimary()
      expect(primaryPid !== undefined && isAlive(primaryPid)).toBe(false)
      await topology.promoteStandby()
      topology.moveToStandby()

      // The participant's own path now reaches the promoted standby: it
      // writes, it is on a new timeline, and it never saw the last commit.
      const [after] = await query<{ recovering: boolean; port: number }>(
        url,
        "SELECT pg_is_in_recovery() AS recovering, inet_server_port() AS port"
      )
      expect(after).toEqual({ recovering: false, port: topology.standby.port })
      expect(await query(url, "SELECT k FROM rows_seen ORDER BY k")).toEqual([{ k: "before the cut" }])
      await query(url, "INSERT INTO rows_seen VALUES ('on the new primary')")
      expect(await topology.standby.sql("SELECT k FROM rows_seen ORDER BY k")).toEqual([
        { k: "before the cut" },
        { k: "on the new primary" }
      ])
    } finally {
      await topology.destroy()
    }
    const dirs = [
      topology.primary.dir,
      topology.standby.dir,
      ...(topology.bouncer === undefined ? [] : [topology.bouncer.dir])
    ]
    expect(dirs.filter((dir) => fs.existsSync(dir))).toEqual([])
    expect(standbyPid !== undefined && isAlive(standbyPid)).toBe(false)
  })
})
