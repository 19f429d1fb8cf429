/**
 * A throwaway MariaDB server for chaos and soak runs: its own data directory
 * in a fresh temp dir, listening on 127.0.0.1 on a free port, root with an
 * empty password, an empty database `test`. Never the shared server on 3306.
 * mariadbd is one process, so pause/resume are one SIGSTOP/SIGCONT.
 */
import * as mysql from "mysql2/promise"
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { type HeldLock, holdLock } from "./heldLock.js"
import {
  freePort,
  isRoot,
  lifecycle,
  ownTempDir,
  run,
  running,
  signal,
  terminate,
  waitUntilServing
} from "./process.js"

export interface ThrowawayMariaDB {
  readonly port: number
  readonly dir: string
  readonly logFile: string
  /** `mysql://root@127.0.0.1:<port>/<database>` (default database `test`). */
  url(database?: string): string
  start(): Promise<void>
  /** SIGTERM (clean shutdown), SIGKILL if it lingers. */
  stop(): Promise<void>
  restart(): Promise<void>
  /** SIGSTOP: connections stay up, nothing answers. */
  pause(): void
  resume(): void
  /** Runs one statement on a fresh connection to database `test`. */
  sql<Row = Record<string, unknown>>(statement: string, params?: ReadonlyArray<unknown>): Promise<Array<Row>>
  /** Takes `SELECT ... FOR UPDATE` on the rows matching `whereSql` in an open transaction of another session. */
  lockRow(table: string, whereSql: string): Promise<HeldLock>
  pid(): number | undefined
  /** Stops the server and removes its temp dir. Idempotent. */
  destroy(): Promise<void>
}

const binary = (name: "mariadbd" | "mariadb-install-db"): string => {
  for (const dir of ["/usr/sbin", "/usr/bin", "/usr/local/bin", "/usr/local/sbin"]) {
    const candidate = path.join(dir, name)
    if (fs.existsSync(candidate)) return candidate
  }
  throw new Error(`${name} not found (apt-get install -y mariadb-server)`)
}

/** Creates, starts and returns a throwaway MariaDB with an empty database `test`. */
export const startMariaDB = async (): Promise<ThrowawayMariaDB> => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "chaos-mariadb-"))
  const dataDir = path.join(dir, "data")
  const logFile = path.join(dir, "mariadb.log")
  const port = await freePort()
  const user = isRoot() ? ["--user=root"] : []
  let child: ChildProcess | undefined
  let paused = false

  const tempDir = ownTempDir(dir, () => {
    if (running(child)) {
      if (paused) child.kill("SIGCONT")
      child.kill("SIGKILL")
    }
  })

  const connect = () => mysql.createConnection({ host: "127.0.0.1", port, user: "root", database: "test" })

  const sql = async <Row>(statement: string, params: ReadonlyArray<unknown> = []): Promise<Array<Row>> => {
    const connection = await connect()
    try {
      const [rows] = await connection.query(statement, [...params] as Array<string | number | null>)
      return rows as Array<Row>
    } finally {
      await connection.end().catch(() => {})
    }
  }

  const start = async (): Promise<void> => {
    if (running(child)) throw new Error("MariaDB is already running")
    const proc = spawn(binary("mariadbd"), [
      "--no-defaults",
      ...user,
      `--datadir=${dataDir}`,
      `--socket=${path.join(dir, "mysqld.sock")}`,
      `--pid-file=${path.join(dir, "mysqld.pid")}`,
      `--log-error=${logFile}`,
      "--bind-address=127.0.0.1",
      `--port=${port}`,
      "--skip-log-bin",
      "--performance-schema=OFF",
      "--innodb-buffer-pool-size=32M",
      "--innodb-log-file-size=16M",
      "--innodb-flush-log-at-trx-commit=2",
      "--innodb-doublewrite=0",
      "--max-connections=200"
    ], { stdio: "ignore" })
    child = proc
    const serving = { name: "mariadbd", what: "MariaDB to accept connections", logFile, logLines: 15 }
    await waitUntilServing(proc, serving, async () => {
      try {
        const connection = await mysql.createConnection({ host: "127.0.0.1", port, user: "root" })
        await connection.end()
        return true
      } catch {
        return false
      }
    }, 60_000)
  }

  const stop = async (): Promise<void> => {
    const proc = child
    if (!running(proc)) return
    if (paused) resume()
    await terminate(proc, 15_000)
  }

  const resume = (): void => {
    paused = false
    if (child?.pid !== undefined) signal(child.pid, "SIGCONT")
  }

  const server: ThrowawayMariaDB = {
    port,
    dir,
    logFile,
    url: (database = "test") => `mysql://root@127.0.0.1:${port}/${database}`,
    ...lifecycle(start, stop),
    pause: () => {
      if (!running(child) || child.pid === undefined) throw new Error("MariaDB is not running")
      paused = true
      signal(child.pid, "SIGSTOP")
    },
    resume,
    sql,
    lockRow: async (table, whereSql) =>
      holdLock(await connect(), async (connection) => {
        const [rows] = await connection.query(
          `SELECT * FROM \`${table.replaceAll("`", "``")}\` WHERE ${whereSql} FOR UPDATE`
        )
        return Array.isArray(rows) ? rows.length : 0
      }),
    pid: () => child?.pid,
    destroy: () => tempDir.destroy(stop)
  }

  try {
    await run(binary("mariadb-install-db"), [
      "--no-defaults",
      ...user,
      `--datadir=${dataDir}`,
      "--auth-root-authentication-method=normal",
      "--skip-test-db"
    ], { asServerUser: false })
    await start()
    const connection = await mysql.createConnection({ host: "127.0.0.1", port, user: "root" })
    await connection.query("CREATE DATABASE test").finally(() => connection.end())
    return server
  } catch (error) {
    await server.destroy()
    throw error
  }
}
