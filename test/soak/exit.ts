/**
 * How a soak command ends once it has reported. Everything it started should
 * be closed by then; it waits up to `graceMs` for the last of it, then exits
 * explicitly: with its own code if nothing is left, else with 1 after saying
 * what is still open, so CI shows a leak instead of hanging.
 *
 * It never lets node end by itself: a handle that node marked closing but
 * never closed (FaultProxy's `reset` has the one case seen) keeps node's exit
 * clean-up spinning at 100% CPU forever, and `process.exit` skips that
 * clean-up. Such a handle still shows here as an open socket.
 */
import { ChildProcess } from "node:child_process"
import * as net from "node:net"
import { sleep } from "../chaos/harness/process.js"

const describe = (handle: unknown): string => {
  if (handle instanceof net.Socket) {
    // A destroyed socket has lost its addresses; the ports are what is left to tell.
    const ends = handle.localPort === undefined
      ? "addresses gone"
      : `${handle.localAddress}:${handle.localPort} -> ${handle.remoteAddress ?? "?"}:${handle.remotePort ?? "?"}`
    return `socket (${ends}; destroyed ${handle.destroyed}, ended ${handle.writableEnded}, finished ${handle.writableFinished})`
  }
  if (handle instanceof net.Server) {
    const address = handle.address()
    return `server listening on ${
      typeof address === "string" || address === null ? String(address) : `${address.address}:${address.port}`
    }`
  }
  if (handle instanceof ChildProcess) return `child process ${handle.pid}: ${handle.spawnargs.join(" ")}`
  return (handle as object | null)?.constructor?.name ?? String(handle)
}

interface Internals {
  _getActiveHandles(): Array<unknown>
  _getActiveRequests(): Array<unknown>
}

/** What still keeps the event loop alive, stdio aside, one line each. */
export const openResources = (): Array<string> => {
  const internals = process as unknown as Internals
  const stdio: Array<unknown> = [process.stdin, process.stdout, process.stderr]
  const timers = process.getActiveResourcesInfo().filter((r) => r === "Timeout" || r === "Immediate")
  return [
    ...internals._getActiveHandles().filter((h) => !stdio.includes(h)).map(describe),
    ...internals._getActiveRequests().map((r) => `request ${(r as object | null)?.constructor?.name ?? "?"}`),
    ...timers.map((t) => `timer (${t})`)
  ]
}

/**
 * Waits up to `graceMs` for everything to close, then exits: `code` if it
 * did, 1 (and what is left) if not.
 */
export const exitWhenClosed = async (code: number, graceMs = 10_000): Promise<never> => {
  const deadline = performance.now() + graceMs
  let open = openResources()
  while (open.length > 0 && performance.now() < deadline) {
    await sleep(100)
    open = openResources()
  }
  if (open.length > 0) {
    process.stderr.write(
      `\nstill open ${graceMs / 1000} s after the report (a leak in the soak or its harness):\n${
        open.map((line) => `  - ${line}`).join("\n")
      }\n`
    )
    process.exit(1)
  }
  process.exit(code)
}
