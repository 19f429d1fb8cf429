/**
 * Starts a throwaway PgBouncer (transaction pooling, trust auth) in front of
 * the shared PostgreSQL: its own temp dir, its own free port, daemonized.
 * PgBouncer refuses to run as root, so under root it is told to switch to the
 * `postgres` user. `max_prepared_statements = 0` is written only on 1.21+,
 * because older versions (Debian's 1.18) refuse to start on the unknown key
 * and have no prepared-statement support in transaction mode anyway.
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import pg from "pg"

export interface PgBouncer {
  readonly url: string
  readonly version: string
  readonly stop: () => Promise<void>
}

const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = net.createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo
      server.close(() => resolve(port))
    })
  })

export const version = (): string => {
  const out = execFileSync("pgbouncer", ["--version"], { encoding: "utf8" })
  const match = /PgBouncer (\d+)\.(\d+)(?:\.(\d+))?/.exec(out)
  if (match === null) throw new Error(`cannot read the pgbouncer version from: ${out}`)
  return `${match[1]}.${match[2]}.${match[3] ?? "0"}`
}

const atLeast = (v: string, major: number, minor: number): boolean => {
  const [a = 0, b = 0] = v.split(".").map(Number)
  return a > major || (a === major && b >= minor)
}

const waitUntilAccepting = async (url: string, logfile: string): Promise<void> => {
  let last: unknown
  for (let i = 0; i < 100; i++) {
    const client = new pg.Client({ connectionString: url })
    try {
      await client.connect()
      await client.query("select 1")
      await client.end()
      return
    } catch (error) {
      last = error
      await client.end().catch(() => undefined)
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }
  const log = fs.existsSync(logfile) ? fs.readFileSync(logfile, "utf8") : "(no log)"
  throw new Error(`pgbouncer did not accept connections: ${String(last)}\n${log}`)
}

export const start = async (upstream: URL): Promise<PgBouncer> => {
  const v = version()
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "le-pgbouncer-"))
  const port = await freePort()
  const user = decodeURIComponent(upstream.username) || "postgres"
  const database = upstream.pathname.slice(1) || "test"
  const logfile = path.join(dir, "pgbouncer.log")
  const pidfile = path.join(dir, "pgbouncer.pid")
  fs.writeFileSync(path.join(dir, "userlist.txt"), `"${user}" ""\n`)
  fs.writeFileSync(
    path.join(dir, "pgbouncer.ini"),
    [
      "[databases]",
      `${database} = host=${upstream.hostname} port=${upstream.port || "5432"} dbname=${database}`,
      "[pgbouncer]",
      "listen_addr = 127.0.0.1",
      `listen_port = ${port}`,
      "unix_socket_dir =",
      "auth_type = trust",
      `auth_file = ${path.join(dir, "userlist.txt")}`,
      "pool_mode = transaction",
      // Few server connections for many clients: any session state or named
      // statement leaking between clients would show up at once.
      "default_pool_size = 2",
      "max_client_conn = 500",
      `logfile = ${logfile}`,
      `pidfile = ${pidfile}`,
      ...(atLeast(v, 1, 21) ? ["max_prepared_statements = 0"] : [])
    ].join("\n") + "\n"
  )
  const asRoot = process.getuid?.() === 0
  if (asRoot) {
    const uid = Number(execFileSync("id", ["-u", "postgres"], { encoding: "utf8" }).trim())
    const gid = Number(execFileSync("id", ["-g", "postgres"], { encoding: "utf8" }).trim())
    for (const entry of [dir, ...fs.readdirSync(dir).map((f) => path.join(dir, f))]) fs.chownSync(entry, uid, gid)
  }
  execFileSync("pgbouncer", ["-d", ...(asRoot ? ["-u", "postgres"] : []), path.join(dir, "pgbouncer.ini")])
  const url = `postgres://${encodeURIComponent(user)}@127.0.0.1:${port}/${database}`
  await waitUntilAccepting(url, logfile)
  return {
    url,
    version: v,
    stop: async () => {
      const pid = Number(fs.readFileSync(pidfile, "utf8").trim())
      process.kill(pid, "SIGTERM")
      for (let i = 0; i < 50 && fs.existsSync(pidfile); i++) await new Promise((r) => setTimeout(r, 100))
      fs.rmSync(dir, { recursive: true, force: true })
    }
  }
}
