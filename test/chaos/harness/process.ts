/**
 * Process plumbing shared by the throwaway servers: running commands as the
 * `postgres` user when we are root, finding free ports, signalling process
 * trees through /proc, stopping spawned servers, and killing leftovers when
 * the test process exits.
 */
import { type ChildProcess, execFile } from "node:child_process"
import * as fs from "node:fs"
import * as net from "node:net"

export const isRoot = (): boolean => process.getuid?.() === 0

/** The uid/gid servers run as: `postgres` when we are root, ourselves otherwise. */
export const serverUser = (): { readonly uid: number; readonly gid: number } => {
  if (!isRoot()) return { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 }
  const line = fs.readFileSync("/etc/passwd", "utf8").split("\n").find((l) => l.startsWith("postgres:"))
  const fields = line?.split(":")
  const uid = Number(fields?.[2])
  const gid = Number(fields?.[3])
  if (!Number.isInteger(uid) || !Number.isInteger(gid)) {
    throw new Error("running as root, but there is no `postgres` user to run the throwaway servers as")
  }
  return { uid, gid }
}

export interface RunResult {
  readonly stdout: string
  readonly stderr: string
}

/** Runs a command (as `postgres` when root, since initdb, pg_ctl and pgbouncer refuse root). */
export const run = (
  command: string,
  args: ReadonlyArray<string>,
  options: { readonly timeoutMs?: number; readonly asServerUser?: boolean } = {}
): Promise<RunResult> => {
  const [file, argv] = options.asServerUser !== false && isRoot()
    ? ["runuser", ["-u", "postgres", "--", command, ...args]]
    : [command, [...args]]
  return new Promise((resolve, reject) => {
    execFile(file, argv, { timeout: options.timeoutMs ?? 120_000, cwd: "/tmp" }, (error, stdout, stderr) => {
      if (error) {
        reject(new Error(`${command} ${args.join(" ")} failed: ${error.message}\n${stdout}\n${stderr}`))
      } else {
        resolve({ stdout, stderr })
      }
    })
  })
}

/** A port that was free a moment ago on 127.0.0.1. */
export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = net.createServer()
    server.once("error", reject)
    server.listen({ host: "127.0.0.1", port: 0 }, () => {
      const address = server.address()
      const port = address !== null && typeof address !== "string" ? address.port : 0
      server.close(() => (port > 0 ? resolve(port) : reject(new Error("no free port"))))
    })
  })

interface ProcStat {
  readonly pid: number
  readonly ppid: number
  readonly state: string
}

const readStat = (pid: number): ProcStat | undefined => {
  try {
    const text = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    // The command name is parenthesised and may itself contain spaces or parentheses.
    const rest = text.slice(text.lastIndexOf(")") + 2).split(" ")
    return { pid, state: rest[0] ?? "?", ppid: Number(rest[1]) }
  } catch {
    return undefined
  }
}

/** True while `pid` exists and is not a zombie (PID 1 here may never reap it). */
export const isAlive = (pid: number): boolean => {
  const stat = readStat(pid)
  return stat !== undefined && stat.state !== "Z" && stat.state !== "X"
}

/** Direct children of `pid`, read from /proc (procps may be absent). */
export const childrenOf = (pid: number): Array<number> => {
  const children: Array<number> = []
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    const stat = readStat(Number(entry))
    if (stat !== undefined && stat.ppid === pid && stat.state !== "Z") children.push(stat.pid)
  }
  return children
}

export const signal = (pid: number, sig: NodeJS.Signals): void => {
  try {
    process.kill(pid, sig)
  } catch {
    // already gone
  }
}

/**
 * Signals a process and its direct children. The parent goes first so it
 * cannot fork anyone new meanwhile; the children are listed again afterwards
 * to catch one forked just before.
 */
export const signalTree = (pid: number, sig: NodeJS.Signals): void => {
  signal(pid, sig)
  const seen = new Set<number>()
  for (let round = 0; round < 2; round++) {
    for (const child of childrenOf(pid)) {
      if (seen.has(child)) continue
      seen.add(child)
      signal(child, sig)
    }
  }
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

/** Polls `check` until it returns true or `timeoutMs` passes. */
export const waitFor = async (
  what: string,
  check: () => boolean | Promise<boolean>,
  timeoutMs = 30_000
): Promise<void> => {
  const deadline = performance.now() + timeoutMs
  for (;;) {
    if (await check()) return
    if (performance.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await sleep(25)
  }
}

const leftovers = new Set<() => void>()
let hooked = false

/**
 * Registers a synchronous last-resort cleanup run when the process exits
 * (or is interrupted), so a crashed test run leaves no server behind.
 * Returns a function that unregisters it.
 */
export const onExit = (cleanup: () => void): () => void => {
  if (!hooked) {
    hooked = true
    const runAll = (): void => {
      for (const fn of leftovers) {
        try {
          fn()
        } catch {
          // keep going: the others still need cleaning
        }
      }
      leftovers.clear()
    }
    process.on("exit", runAll)
    for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
      // Only take over a signal nobody else handles, then re-raise it so the
      // default behaviour (exit) still happens.
      if (process.listenerCount(sig) === 0) {
        process.once(sig, () => {
          runAll()
          process.kill(process.pid, sig)
        })
      }
    }
  }
  leftovers.add(cleanup)
  return () => {
    leftovers.delete(cleanup)
  }
}

/** The last `lines` lines of a server's log file, for error messages. */
export const logTail = (logFile: string, lines: number): string => {
  try {
    return fs.readFileSync(logFile, "utf8").split("\n").slice(-lines).join("\n")
  } catch {
    return "(no log)"
  }
}

/** True while a spawned process has neither exited nor died of a signal. */
export const running = (proc: ChildProcess | undefined): proc is ChildProcess =>
  proc !== undefined && proc.exitCode === null && proc.signalCode === null

/** Resolves once `proc` has exited (at once if it already has). */
export const exited = (proc: ChildProcess): Promise<void> =>
  running(proc) ? new Promise((resolve) => proc.once("exit", () => resolve())) : Promise.resolve()

/** SIGTERM, then SIGKILL if it is still there after `graceMs`; resolves once it has exited. */
export const terminate = async (proc: ChildProcess, graceMs: number): Promise<void> => {
  proc.kill("SIGTERM")
  const timer = setTimeout(() => proc.kill("SIGKILL"), graceMs)
  await exited(proc)
  clearTimeout(timer)
}

/**
 * Owns a throwaway server's temp dir `dir`. Last resort, when the test process
 * exits: `killNow` (synchronous) and the dir goes. `destroy(stop)` is the
 * orderly, idempotent end: `stop` once, then the dir goes and the exit hook
 * is dropped.
 */
export const ownTempDir = (dir: string, killNow: () => void): { destroy(stop: () => Promise<void>): Promise<void> } => {
  const remove = (): void => fs.rmSync(dir, { recursive: true, force: true })
  const unhook = onExit(() => {
    killNow()
    remove()
  })
  let destroyed = false
  return {
    destroy: async (stop) => {
      if (destroyed) return
      destroyed = true
      await stop()
      unhook()
      remove()
    }
  }
}

/**
 * Waits until `ready` says the just-spawned server `proc` serves. Call it right
 * after spawning: if the process fails to start or exits first, it fails at
 * once with the tail of the server's log.
 */
export const waitUntilServing = (
  proc: ChildProcess,
  server: { readonly name: string; readonly what: string; readonly logFile: string; readonly logLines: number },
  ready: () => Promise<boolean>,
  timeoutMs?: number
): Promise<void> => {
  let failed: Error | undefined
  proc.once("error", (error) => (failed = error))
  proc.once("exit", (code, sig) => (failed ??= new Error(`${server.name} exited (${code ?? sig})`)))
  return waitFor(server.what, async () => {
    if (failed !== undefined) {
      throw new Error(`${failed.message}\nlog tail:\n${logTail(server.logFile, server.logLines)}`)
    }
    return ready()
  }, timeoutMs)
}

/** A server handle's `start` and `stop`, with `restart` as the one, then the other. */
export const lifecycle = <Stop extends () => Promise<void>>(start: () => Promise<void>, stop: Stop) => ({
  start,
  stop,
  restart: async (): Promise<void> => {
    await stop()
    await start()
  }
})
