/**
 * A fleet of participant processes (participant.mjs), one per slot. A slot
 * keeps its fault proxy across restarts; each process started in it gets a
 * fresh identity and its own log file. The runner follows the logs as they
 * grow to know who leads now (to aim faults), and records what it does to
 * each process on the shared monotonic clock for the oracle.
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { sleep } from "../chaos/harness/process.js"
import { analyse, type Analysis, type ParticipantEvent, type ParticipantLog, type ProcessEvent } from "./oracle.js"

/** The machine's monotonic clock in microseconds: the participants' clock. */
export const nowUs = (): number => Number(process.hrtime.bigint() / 1000n)

const participantScript = fileURLToPath(new URL("./participant.mjs", import.meta.url))

export interface FleetOptions {
  readonly dir: string
  readonly kind: "pg" | "mysql"
  readonly name: string
  readonly table: string
  /** The URL a process in `slot` connects to (through the slot's proxy). */
  readonly url: (slot: string) => Promise<string>
  /** The built library (default dist/). */
  readonly dist?: string | undefined
  /** A direct PostgreSQL URL: every process's store listens for wake-up hints on it. */
  readonly listenUrl?: string | undefined
  /** More of participant.mjs's environment for every process (SOAK_NAMES, SOAK_TIMING, ...). */
  readonly env?: Readonly<Record<string, string>> | undefined
}

interface Member {
  readonly slot: string
  readonly id: string
  readonly child: ChildProcess
  readonly logFile: string
  offset: number
  partial: string
  leading: bigint | undefined
  /** In a spread group: the elections it leads, with their fences. */
  readonly led: Map<string, bigint>
  ready: boolean
  frozen: boolean
  exited: boolean
  expectedExit: boolean
  /** Exited and its log read to the end. */
  drained: boolean
}

export class Fleet {
  readonly processEvents: Array<ProcessEvent> = []
  private readonly members = new Map<string, Member>()
  private readonly everyone: Array<Member> = []
  /** When each term began (its `start`), as the logs were followed. */
  readonly termStarts: Array<number> = []
  private generation = 0
  private readonly tail: NodeJS.Timeout

  constructor(readonly options: FleetOptions) {
    fs.mkdirSync(options.dir, { recursive: true })
    this.tail = setInterval(() => this.follow(), 20)
  }

  get slots(): Array<string> {
    return [...this.members.keys()]
  }

  member(slot: string): Member | undefined {
    return this.members.get(slot)
  }

  /**
   * Starts a new process in `slot`, under a new identity unless `identity`
   * gives one (two processes given the same one are still told apart here,
   * by the id this returns), built as `shape` says (participant.mjs's
   * SOAK_SHAPE; default `make`).
   */
  async start(
    slot: string,
    options: { readonly identity?: string; readonly shape?: "make" | "quickstart" | "spread" } = {}
  ): Promise<string> {
    if (this.members.get(slot)?.exited === false) throw new Error(`slot ${slot} is running`)
    const id = `${slot}-${++this.generation}-${Math.random().toString(36).slice(2, 6)}`
    const logFile = path.join(this.options.dir, `${id}.jsonl`)
    const child = spawn(process.execPath, ["--expose-gc", participantScript], {
      stdio: ["ignore", "ignore", "pipe"],
      env: {
        ...process.env,
        SOAK_URL: await this.options.url(slot),
        SOAK_KIND: this.options.kind,
        SOAK_NAME: this.options.name,
        SOAK_TABLE: this.options.table,
        SOAK_IDENTITY: options.identity ?? id,
        SOAK_LOG: logFile,
        SOAK_SHAPE: options.shape ?? "make",
        ...this.options.env,
        ...(this.options.dist === undefined ? {} : { SOAK_DIST: this.options.dist }),
        ...(this.options.listenUrl === undefined ? {} : { SOAK_LISTEN_URL: this.options.listenUrl })
      }
    })
    const member: Member = {
      slot,
      id,
      child,
      logFile,
      offset: 0,
      partial: "",
      leading: undefined,
      led: new Map(),
      ready: false,
      frozen: false,
      exited: false,
      expectedExit: false,
      drained: false
    }
    let stderr = ""
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-4000)
    })
    child.once("exit", (code, signal) => {
      member.exited = true
      if (!member.expectedExit) {
        this.note({ id, k: "died", t: nowUs() })
        process.stderr.write(`participant ${id} exited on its own (${code ?? signal}):\n${stderr}\n`)
      }
    })
    this.members.set(slot, member)
    this.everyone.push(member)
    return id
  }

  /** Resolves once the process in `slot` has built its elector. */
  async ready(slot: string, timeoutMs = 60_000): Promise<void> {
    const deadline = performance.now() + timeoutMs
    while (this.members.get(slot)?.ready !== true) {
      if (performance.now() > deadline) throw new Error(`${slot} not ready within ${timeoutMs} ms`)
      await sleep(20)
    }
  }

  private record(member: Member, k: ProcessEvent["k"]): void {
    this.note({ id: member.id, k, t: nowUs() })
  }

  /** Kept in memory for the oracle and in runner.jsonl next to the participants' logs. */
  private note(event: ProcessEvent): void {
    this.processEvents.push(event)
    fs.appendFileSync(path.join(this.options.dir, "runner.jsonl"), `${JSON.stringify(event)}\n`)
  }

  private running(slot: string): Member {
    const member = this.members.get(slot)
    if (member === undefined || member.exited) throw new Error(`no running process in ${slot}`)
    return member
  }

  private exitOf(member: Member): Promise<void> {
    return member.exited ? Promise.resolve() : new Promise((resolve) => member.child.once("exit", () => resolve()))
  }

  /** SIGKILL: a crash, no release. */
  async kill(slot: string): Promise<void> {
    const member = this.running(slot)
    member.expectedExit = true
    this.record(member, "kill")
    member.child.kill("SIGKILL")
    await this.exitOf(member)
    this.follow()
  }

  /** SIGTERM: a clean shutdown, the lease released. SIGKILL after `timeoutMs`. */
  async terminate(slot: string, timeoutMs = 10_000): Promise<void> {
    const member = this.running(slot)
    member.expectedExit = true
    if (member.frozen) this.thaw(slot)
    this.record(member, "sigterm")
    member.child.kill("SIGTERM")
    const timer = setTimeout(() => {
      this.record(member, "kill")
      member.child.kill("SIGKILL")
    }, timeoutMs)
    await this.exitOf(member)
    clearTimeout(timer)
    this.follow()
  }

  freeze(slot: string): void {
    const member = this.running(slot)
    this.record(member, "sigstop")
    member.frozen = true
    member.child.kill("SIGSTOP")
  }

  thaw(slot: string): void {
    const member = this.running(slot)
    member.child.kill("SIGCONT")
    this.record(member, "sigcont")
    member.frozen = false
  }

  /** The slot whose running, unfrozen process is in a term, per its log so far. */
  leader(): string | undefined {
    this.follow()
    for (const member of this.members.values()) {
      if (!member.exited && !member.frozen && member.leading !== undefined) return member.slot
    }
    return undefined
  }

  /** Resolves with the leading slot once a term has lasted `holdMs`; rejects after `timeoutMs`. */
  async stableLeader(timeoutMs: number, holdMs: number): Promise<string> {
    const deadline = performance.now() + timeoutMs + holdMs
    let candidate: { slot: string; fence: bigint; since: number } | undefined
    for (;;) {
      const slot = this.leader()
      const fence = slot === undefined ? undefined : this.members.get(slot)?.leading
      const now = performance.now()
      if (slot === undefined || fence === undefined) candidate = undefined
      else if (candidate?.slot !== slot || candidate.fence !== fence) candidate = { slot, fence, since: now }
      if (candidate !== undefined && now - candidate.since >= holdMs) return candidate.slot
      if (now > deadline) throw new Error(`no term lasted ${holdMs} ms within ${timeoutMs} ms`)
      await sleep(20)
    }
  }

  /** Reads what the logs gained since last time. */
  follow(): void {
    for (const member of this.everyone) {
      if (member.drained) continue
      if (member.exited) member.drained = true
      let text: string
      try {
        const fd = fs.openSync(member.logFile, "r")
        const size = fs.fstatSync(fd).size
        const buffer = Buffer.alloc(Math.max(0, size - member.offset))
        fs.readSync(fd, buffer, 0, buffer.length, member.offset)
        fs.closeSync(fd)
        member.offset = size
        text = member.partial + buffer.toString("utf8")
      } catch {
        continue
      }
      const lines = text.split("\n")
      member.partial = lines.pop() ?? ""
      for (const line of lines) {
        if (line.length === 0) continue
        const event = JSON.parse(line) as ParticipantEvent
        if (event.e === "start") {
          this.termStarts.push(event.t)
          if (event.n === undefined) member.leading = BigInt(event.f)
          else member.led.set(event.n, BigInt(event.f))
        } else if (event.e === "stop") {
          if (event.n === undefined) member.leading = undefined
          else member.led.delete(event.n)
        } else if (event.e === "ready") member.ready = true
      }
      if (member.exited) {
        member.leading = undefined
        member.led.clear()
      }
    }
  }

  /** Every participant's full log. */
  logs(): Array<ParticipantLog> {
    return this.everyone.map((member) => ({
      id: member.id,
      events: fs.readFileSync(member.logFile, "utf8").split("\n").filter((l) => l.length > 0).map((l) =>
        JSON.parse(l) as ParticipantEvent
      )
    }))
  }

  analyse(): Analysis {
    return analyse(this.logs(), this.processEvents, nowUs())
  }

  /** Last library log lines of every participant, for a failure report. */
  tailLogs(lines = 40): string {
    return this.logs().flatMap((log) =>
      log.events.filter((e) => e.e === "log" || e.e === "start" || e.e === "stop").slice(-lines).map((e) =>
        `${log.id} ${JSON.stringify(e)}`
      )
    ).join("\n")
  }

  /** SIGTERMs every running process (thawing frozen ones first). */
  async stopAll(): Promise<void> {
    await Promise.all(
      [...this.members.values()].filter((m) => !m.exited).map((m) => this.terminate(m.slot).catch(() => undefined))
    )
    clearInterval(this.tail)
    this.follow()
  }
}
