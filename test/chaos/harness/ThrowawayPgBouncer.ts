/**
 * A throwaway PgBouncer in transaction pooling mode in front of one
 * PostgreSQL (a throwaway one, or the shared server for the store suites),
 * listening on 127.0.0.1 on a free port. Restart keeps the port so clients
 * can reconnect to the same URL.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import pg from "pg"
import { exited, freePort, isRoot, ownTempDir, running, serverUser, terminate, waitUntilServing } from "./process.js"

export interface ThrowawayPgBouncer {
  readonly port: number
  readonly dir: string
  readonly logFile: string
  /** `[major, minor, patch]` of the pgbouncer binary. */
  readonly version: readonly [number, number, number]
  /** `postgres://postgres@127.0.0.1:<port>/<database>` (default database `test`). */
  url(database?: string): string
  start(): Promise<void>
  /** SIGTERM (immediate shutdown on 1.18), SIGKILL if it lingers. */
  stop(): Promise<void>
  /** SIGKILL, then start on the same port: every client connection breaks. */
  restart(): Promise<void>
  /** `PAUSE` on the admin console: waits for running transactions, then holds new queries. */
  pause(): Promise<void>
  /** `RESUME` on the admin console. */
  resume(): Promise<void>
  /** Runs an admin console command (simple query protocol, no parameters), e.g. `SHOW POOLS`. */
  admin(command: string): Promise<Array<Record<string, unknown>>>
  /** Stops it and removes its temp dir. Idempotent. */
  destroy(): Promise<void>
}

export interface PgBouncerOptions {
  /** Port of the PostgreSQL to pool. */
  readonly targetPort: number
  /** Its host: loopback only. Default 127.0.0.1. */
  readonly targetHost?: string
  /** Server connections per (database, user); default 5. */
  readonly poolSize?: number
  /** Extra lines for the `[pgbouncer]` section. */
  readonly config?: ReadonlyArray<string>
}

/**
 * How long PgBouncer refuses logins after one to a server failed (1 s here,
 * 15 s by default): after a failover, the first statement through it waits
 * this long at most before the promoted server is tried.
 */
export const serverLoginRetrySeconds = 1

const binary = (): string => {
  for (
    const candidate of [
      process.env["PGBOUNCER"],
      "/usr/sbin/pgbouncer",
      "/usr/bin/pgbouncer",
      "/usr/local/bin/pgbouncer"
    ]
  ) {
    if (candidate !== undefined && fs.existsSync(candidate)) return candidate
  }
  throw new Error("pgbouncer not found (apt-get install -y pgbouncer, or set PGBOUNCER)")
}

/** Parses `PgBouncer 1.18.0` from `pgbouncer --version`. */
export const parseVersion = (text: string): readonly [number, number, number] => {
  const match = /PgBouncer\s+(\d+)\.(\d+)(?:\.(\d+))?/i.exec(text)
  if (match === null) throw new Error(`cannot read a PgBouncer version from: ${text}`)
  return [Number(match[1]), Number(match[2]), Number(match[3] ?? 0)]
}

/** 1.21 added prepared-statement support; 1.18 rejects the key as "unknown parameter". */
export const supportsMaxPreparedStatements = (version: readonly [number, number, number]): boolean =>
  version[0] > 1 || (version[0] === 1 && version[1] >= 21)

const canConnect = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const socket = net.connect({ host: "127.0.0.1", port })
    socket.once("connect", () => {
      socket.destroy()
      resolve(true)
    })
    socket.once("error", () => resolve(false))
  })

/** Writes the config and starts a PgBouncer pooling `options.targetPort`. */
export const startPgBouncer = async (options: PgBouncerOptions): Promise<ThrowawayPgBouncer> => {
  const targetHost = options.targetHost ?? "127.0.0.1"
  if (targetHost !== "127.0.0.1" && targetHost !== "localhost" && targetHost !== "::1") {
    throw new Error(`ThrowawayPgBouncer pools loopback servers only, not ${targetHost}`)
  }
  const bin = binary()
  const version = parseVersion(execFileSync(bin, ["--version"], { encoding: "utf8" }))
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "chaos-pgbouncer-"))
  const logFile = path.join(dir, "pgbouncer.log")
  const ini = path.join(dir, "pgbouncer.ini")
  const port = await freePort()
  fs.writeFileSync(path.join(dir, "userlist.txt"), "\"postgres\" \"\"\n")
  fs.writeFileSync(
    ini,
    [
      "[databases]",
      `* = host=${targetHost} port=${options.targetPort}`,
      "",
      "[pgbouncer]",
      "listen_addr = 127.0.0.1",
      `listen_port = ${port}`,
      `unix_socket_dir = ${dir}`,
      "auth_type = trust",
      `auth_file = ${path.join(dir, "userlist.txt")}`,
      "admin_users = postgres",
      "pool_mode = transaction",
      `default_pool_size = ${options.poolSize ?? 5}`,
      "max_client_conn = 200",
      "server_lifetime = 10",
      "server_idle_timeout = 5",
      "server_connect_timeout = 5",
      `server_login_retry = ${serverLoginRetrySeconds}`,
      "ignore_startup_parameters = extra_float_digits",
      `logfile = ${logFile}`,
      `pidfile = ${path.join(dir, "pgbouncer.pid")}`,
      ...(supportsMaxPreparedStatements(version) ? ["max_prepared_statements = 0"] : []),
      ...(options.config ?? []),
      ""
    ].join("\n")
  )
  const user = serverUser()
  for (const file of [dir, ini, path.join(dir, "userlist.txt")]) fs.chownSync(file, user.uid, user.gid)

  let child: ChildProcess | undefined

  const tempDir = ownTempDir(dir, () => {
    if (running(child) && child.pid !== undefined) child.kill("SIGKILL")
  })

  const start = async (): Promise<void> => {
    if (running(child)) throw new Error("PgBouncer is already running")
    // pgbouncer refuses root; `-u` makes it switch user itself, so the pid we
    // hold is pgbouncer's own (runuser would sit in between).
    const proc = spawn(bin, [...(isRoot() ? ["-u", "postgres"] : []), ini], { stdio: "ignore" })
    child = proc
    const serving = { name: "pgbouncer", what: "PgBouncer to listen", logFile, logLines: 10 }
    await waitUntilServing(proc, serving, () => canConnect(port))
  }

  const stop = async (): Promise<void> => {
    const proc = child
    if (proc === undefined) return
    await terminate(proc, 5000)
  }

  const admin = async (command: string): Promise<Array<Record<string, unknown>>> => {
    const client = new pg.Client({ host: "127.0.0.1", port, user: "postgres", database: "pgbouncer" })
    client.on("error", () => {})
    await client.connect()
    try {
      // No parameters: node-postgres then uses the simple query protocol, the
      // only one the admin console speaks.
      return (await client.query(command)).rows
    } finally {
      await client.end().catch(() => {})
    }
  }

  const bouncer: ThrowawayPgBouncer = {
    port,
    dir,
    logFile,
    version,
    url: (database = "test") => `postgres://postgres@127.0.0.1:${port}/${database}`,
    start,
    stop,
    restart: async () => {
      const proc = child
      if (proc !== undefined) {
        proc.kill("SIGKILL")
        await exited(proc)
      }
      await start()
    },
    pause: async () => {
      await admin("PAUSE")
    },
    resume: async () => {
      await admin("RESUME")
    },
    admin,
    destroy: () => tempDir.destroy(stop)
  }

  try {
    await start()
    return bouncer
  } catch (error) {
    await bouncer.destroy()
    throw error
  }
}
