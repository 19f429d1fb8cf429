/**
 * A throwaway PostgreSQL server for chaos tests: its own data directory in a
 * fresh temp dir, listening on 127.0.0.1 on a free port, trust auth, fsync
 * off. Never the shared server on 5432.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import pg from "pg"
import { type HeldLock, holdLock } from "./heldLock.js"
import {
  childrenOf,
  freePort,
  isAlive,
  lifecycle,
  logTail,
  ownTempDir,
  run,
  serverUser,
  signalTree,
  waitFor
} from "./process.js"

export type { HeldLock } from "./heldLock.js"

export type TableLockMode =
  | "ACCESS SHARE"
  | "ROW SHARE"
  | "ROW EXCLUSIVE"
  | "SHARE UPDATE EXCLUSIVE"
  | "SHARE"
  | "SHARE ROW EXCLUSIVE"
  | "EXCLUSIVE"
  | "ACCESS EXCLUSIVE"

/** A table name, optionally with its schema. Quoted safely, never interpolated raw. */
export type TableName = string | readonly [schema: string, table: string]

export interface ThrowawayPostgres {
  readonly port: number
  readonly dir: string
  readonly dataDir: string
  readonly logFile: string
  /** `postgres://postgres@127.0.0.1:<port>/<database>` (default database `test`). */
  url(database?: string): string
  start(): Promise<void>
  /** Stops the server (resuming it first if paused). Default mode `fast`. */
  stop(options?: { readonly mode?: "fast" | "immediate" }): Promise<void>
  restart(): Promise<void>
  /** SIGSTOP the postmaster and every backend: connections stay up, nothing answers. */
  pause(): void
  resume(): void
  /** SIGKILL the postmaster and every backend. A later `start()` runs crash recovery. */
  kill(): Promise<void>
  /** Sets `default_transaction_read_only` server-wide; sessions pick it up at their next transaction. */
  setReadOnly(on: boolean): Promise<void>
  /** `pg_terminate_backend` every client backend except the harness's own; returns how many. */
  terminateBackends(): Promise<number>
  /** Runs one query on a fresh connection (database `test` unless given). */
  sql<Row extends Record<string, unknown> = Record<string, unknown>>(
    query: string,
    params?: ReadonlyArray<unknown>,
    options?: { readonly database?: string }
  ): Promise<Array<Row>>
  /** Takes `LOCK TABLE ... IN <mode> MODE` in an open transaction of another session. */
  lockTable(table: TableName, mode: TableLockMode): Promise<HeldLock>
  /** Takes `SELECT ... FOR UPDATE` on the rows matching `whereSql` in an open transaction of another session. */
  lockRow(table: TableName, whereSql: string): Promise<HeldLock>
  /** `pg_ctl promote`: a standby stops streaming and becomes a primary; resolves once it accepts writes. */
  promote(): Promise<void>
  /** Pid of the running postmaster, read from postmaster.pid. */
  postmasterPid(): number | undefined
  /** Stops the server and removes its temp dir. Idempotent. */
  destroy(): Promise<void>
}

/** Sessions the harness opens itself carry this, so terminateBackends spares them. */
export const harnessApplicationName = "chaos-harness"

export const quoteIdent = (name: string): string => `"${name.replaceAll("\"", "\"\"")}"`

const quoteTable = (table: TableName): string =>
  typeof table === "string" ? quoteIdent(table) : `${quoteIdent(table[0])}.${quoteIdent(table[1])}`

const binDir = (): string => {
  const candidates = [
    process.env["PG_BIN"],
    ...(fs.existsSync("/usr/lib/postgresql")
      ? fs.readdirSync("/usr/lib/postgresql")
        .filter((v) => /^\d+$/.test(v))
        .sort((a, b) => Number(b) - Number(a))
        .map((v) => `/usr/lib/postgresql/${v}/bin`)
      : []),
    "/usr/local/bin"
  ]
  for (const dir of candidates) {
    if (dir !== undefined && fs.existsSync(path.join(dir, "initdb")) && fs.existsSync(path.join(dir, "pg_ctl"))) {
      return dir
    }
  }
  throw new Error("no PostgreSQL binaries (initdb, pg_ctl) found; set PG_BIN")
}

export interface PostgresOptions {
  /** Extra lines appended to postgresql.conf. */
  readonly config?: ReadonlyArray<string>
  /**
   * Make the server an asynchronous streaming standby instead of a fresh
   * cluster: its data directory is a `pg_basebackup` of the server on
   * 127.0.0.1:`port`, taken as `user` (a role with REPLICATION), and it keeps
   * streaming WAL from that same address (`primary_conninfo`), so a proxy on
   * that port can cut replication. The primary needs `wal_level = replica`
   * (the default) and `max_wal_senders`; the database `test` comes with the
   * copy.
   */
  readonly standbyOf?: { readonly port: number; readonly user: string }
}

/**
 * Creates, starts and returns a throwaway PostgreSQL with an empty database
 * `test`, or a standby of another server (`standbyOf`).
 */
export const startPostgres = async (options: PostgresOptions = {}): Promise<ThrowawayPostgres> => {
  const bin = binDir()
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "chaos-pg-"))
  const dataDir = path.join(dir, "data")
  const logFile = path.join(dir, "postgres.log")
  const user = serverUser()
  fs.chownSync(dir, user.uid, user.gid)
  const port = await freePort()
  let paused = false

  const postmasterPid = (): number | undefined => {
    try {
      const pid = Number(fs.readFileSync(path.join(dataDir, "postmaster.pid"), "utf8").split("\n")[0])
      return Number.isInteger(pid) && pid > 0 ? pid : undefined
    } catch {
      return undefined
    }
  }

  const killNow = (): void => {
    const pid = postmasterPid()
    if (pid !== undefined) {
      signalTree(pid, "SIGKILL")
    }
  }
  const tempDir = ownTempDir(dir, killNow)

  const connect = async (database = "test"): Promise<pg.Client> => {
    const client = new pg.Client({
      host: "127.0.0.1",
      port,
      user: "postgres",
      database,
      application_name: harnessApplicationName,
      connectionTimeoutMillis: 30_000
    })
    client.on("error", () => {})
    await client.connect()
    return client
  }

  const sql = async <Row extends Record<string, unknown>>(
    query: string,
    params: ReadonlyArray<unknown> = [],
    sqlOptions: { readonly database?: string } = {}
  ): Promise<Array<Row>> => {
    const client = await connect(sqlOptions.database)
    try {
      const result = params.length === 0
        ? await client.query<Row>(query)
        : await client.query<Row>(query, [...params])
      return result.rows
    } finally {
      await client.end().catch(() => {})
    }
  }

  const pgCtl = (args: ReadonlyArray<string>) => run(path.join(bin, "pg_ctl"), ["-D", dataDir, ...args])

  // initdb for a cluster of its own; a base backup for a standby, with -R
  // writing standby.signal and a primary_conninfo for the address it was
  // copied from.
  const create = (standbyOf: PostgresOptions["standbyOf"]) =>
    standbyOf === undefined
      ? run(path.join(bin, "initdb"), [
        "-D",
        dataDir,
        "-U",
        "postgres",
        "-A",
        "trust",
        "-E",
        "UTF8",
        "--locale=C",
        "--no-sync"
      ])
      : run(path.join(bin, "pg_basebackup"), [
        "-h",
        "127.0.0.1",
        "-p",
        String(standbyOf.port),
        "-U",
        standbyOf.user,
        "-D",
        dataDir,
        "-X",
        "stream",
        "-c",
        "fast",
        "-R",
        "--no-sync"
      ])

  const start = async (): Promise<void> => {
    await pgCtl(["start", "-w", "-t", "60", "-l", logFile]).catch((error: unknown) => {
      throw new Error(`${error instanceof Error ? error.message : String(error)}\nlog tail:\n${logTail(logFile, 15)}`)
    })
  }

  const resume = (): void => {
    const pid = postmasterPid()
    if (pid !== undefined) signalTree(pid, "SIGCONT")
    paused = false
  }

  const stop = async (stopOptions: { readonly mode?: "fast" | "immediate" } = {}): Promise<void> => {
    if (paused) resume()
    await pgCtl(["stop", "-w", "-t", "60", "-m", stopOptions.mode ?? "fast"])
  }

  const kill = async (): Promise<void> => {
    const pid = postmasterPid()
    if (pid === undefined) throw new Error("PostgreSQL is not running")
    const children = [pid, ...childrenOf(pid)]
    signalTree(pid, "SIGKILL")
    paused = false
    await waitFor("the killed PostgreSQL processes to go", () => children.every((p) => !isAlive(p)))
    // The dead postmaster may linger as a zombie if nobody reaps it (PID 1 in
    // a container often does not); its pid would still look alive to the next
    // postmaster's lock-file checks, so its lock files go now.
    for (const file of [path.join(dataDir, "postmaster.pid"), path.join(dir, `.s.PGSQL.${port}.lock`)]) {
      fs.rmSync(file, { force: true })
    }
  }

  const setReadOnly = async (on: boolean): Promise<void> => {
    await sql(`ALTER SYSTEM SET default_transaction_read_only = ${on ? "on" : "off"}`)
    await sql("SELECT pg_reload_conf()")
    const want = on ? "on" : "off"
    await waitFor(`default_transaction_read_only = ${want}`, async () => {
      const rows = await sql<{ default_transaction_read_only: string }>("SHOW default_transaction_read_only")
      return rows[0]?.default_transaction_read_only === want
    })
  }

  const terminateBackends = async (): Promise<number> => {
    const rows = await sql<{ n: string }>(
      `SELECT count(pg_terminate_backend(pid))::text AS n FROM pg_stat_activity
       WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() AND application_name <> $1`,
      [harnessApplicationName]
    )
    return Number(rows[0]?.n ?? 0)
  }

  const hold = async (statement: string): Promise<HeldLock> =>
    holdLock(await connect(), async (client) => {
      const result = await client.query(statement)
      return statement.startsWith("SELECT") ? result.rowCount ?? 0 : 0
    })

  const server: ThrowawayPostgres = {
    port,
    dir,
    dataDir,
    logFile,
    url: (database = "test") => `postgres://postgres@127.0.0.1:${port}/${database}`,
    ...lifecycle(start, stop),
    pause: () => {
      const pid = postmasterPid()
      if (pid === undefined) throw new Error("PostgreSQL is not running")
      paused = true
      signalTree(pid, "SIGSTOP")
    },
    resume,
    kill,
    promote: async () => {
      await pgCtl(["promote", "-w", "-t", "60"])
    },
    setReadOnly,
    terminateBackends,
    sql,
    lockTable: (table, mode) => hold(`LOCK TABLE ${quoteTable(table)} IN ${mode} MODE`),
    lockRow: (table, whereSql) => hold(`SELECT * FROM ${quoteTable(table)} WHERE ${whereSql} FOR UPDATE`),
    postmasterPid,
    destroy: () =>
      tempDir.destroy(async () => {
        if (paused) resume()
        const pid = postmasterPid()
        if (pid !== undefined && isAlive(pid)) {
          await stop({ mode: "immediate" }).catch(() => killNow())
        }
      })
  }

  try {
    await create(options.standbyOf)
    // A standby's copy of postgresql.conf carries its primary's lines; these,
    // appended after them, win.
    fs.appendFileSync(
      path.join(dataDir, "postgresql.conf"),
      [
        "",
        "# chaos harness",
        "listen_addresses = '127.0.0.1'",
        `port = ${port}`,
        `unix_socket_directories = '${dir}'`,
        "fsync = off",
        // fsync off survives a SIGKILL (the kernel still has the pages);
        // synchronous_commit off would not: acknowledged commits still in WAL
        // buffers would vanish with the shared memory, which no real
        // deployment of a lease store does.
        "full_page_writes = off",
        "shared_buffers = 16MB",
        "max_connections = 60",
        ...(options.config ?? []),
        ""
      ].join("\n")
    )
    await start()
    if (options.standbyOf === undefined) await sql("CREATE DATABASE test", [], { database: "postgres" })
    return server
  } catch (error) {
    await server.destroy()
    throw error
  }
}
