/**
 * A fault-injecting TCP proxy for chaos tests: one instance per network path
 * (typically one per participant), listening on 127.0.0.1 on an ephemeral
 * port and forwarding to one loopback target. Its fault mode can be switched
 * at any moment and applies to connections that are already open.
 */
import * as net from "node:net"

/** A fault mode. Build one with the constructors in {@link Mode}. */
export type ProxyMode =
  | { readonly _tag: "pass" }
  | { readonly _tag: "partition" }
  | { readonly _tag: "blackhole" }
  | { readonly _tag: "sinkhole" }
  | { readonly _tag: "latency"; readonly ms: number; readonly jitterMs: number }
  | { readonly _tag: "dropReplies" }
  | { readonly _tag: "resetOnFirstUse"; readonly times: number }
  | { readonly _tag: "bandwidth"; readonly bytesPerSecond: number }

export const Mode = {
  /** Forward everything untouched. */
  pass: { _tag: "pass" } as ProxyMode,
  /** RST every open connection and every new one as soon as it is accepted. */
  partition: { _tag: "partition" } as ProxyMode,
  /**
   * Forward nothing in either direction but keep connections open. Bytes are
   * held in order and delivered when the mode changes, as TCP retransmission
   * would after a short outage.
   */
  blackhole: { _tag: "blackhole" } as ProxyMode,
  /**
   * Forward nothing in either direction and throw the bytes away, keeping
   * connections open: a path that lost its state (a NAT or a firewall that
   * forgot the flow). After healing, what was in flight never arrives.
   */
  sinkhole: { _tag: "sinkhole" } as ProxyMode,
  /** Delay every chunk in each direction by `ms + random(0..jitterMs)`, preserving order. */
  latency: (ms: number, jitterMs = 0): ProxyMode => ({ _tag: "latency", ms, jitterMs }),
  /** Deliver client->server bytes; discard server->client bytes; keep connections open. */
  dropReplies: { _tag: "dropReplies" } as ProxyMode,
  /**
   * RST a new connection when its first client bytes arrive; after `times`
   * resets (default: unlimited) connections pass again.
   */
  resetOnFirstUse: (times = Number.POSITIVE_INFINITY): ProxyMode => ({ _tag: "resetOnFirstUse", times }),
  /** Throttle each direction of each connection to `bytesPerSecond`. */
  bandwidth: (bytesPerSecond: number): ProxyMode => ({ _tag: "bandwidth", bytesPerSecond })
} as const

/** Counters since the proxy started. */
export interface ProxyStats {
  /** Bytes written to the target (client->server). */
  readonly bytesUp: number
  /** Bytes written to clients (server->client). */
  readonly bytesDown: number
  /** Bytes discarded by `dropReplies` and `sinkhole`. */
  readonly bytesDropped: number
  readonly connectionsAccepted: number
  readonly connectionsActive: number
  /** Connections refused (RST on accept) while partitioned. */
  readonly connectionsRefused: number
  /** Connections RST by `partition`, `resetOnFirstUse` or {@link FaultProxy.resetConnections}. */
  readonly connectionsReset: number
}

/** A running schedule of alternating `pass` and `partition`. */
export interface Flapping {
  /** How many times the mode has been switched so far. */
  readonly transitions: number
  /** Stops the schedule and leaves the proxy in `pass`. */
  stop(): void
}

export interface FaultProxy {
  readonly host: "127.0.0.1"
  readonly port: number
  readonly mode: ProxyMode
  /** Where new connections go. */
  readonly targetPort: number
  /** `url` with its host and port replaced by the proxy's. */
  via(url: string): string
  /** Changes the fault mode; applies to open connections and to bytes already queued. */
  setMode(mode: ProxyMode): void
  /** Alternates `pass` for `upMs` and `partition` for `downMs`, starting with `pass`, until stopped. */
  flap(upMs: number, downMs: number): Flapping
  /** RSTs every open connection without changing the mode. */
  resetConnections(): void
  /**
   * New connections go to `targetPort` from now on and open ones are RST, as
   * when a virtual IP moves to another server: nothing keeps talking to the
   * old one through this proxy.
   */
  retarget(targetPort: number): void
  stats(): ProxyStats
  /** RSTs every connection and frees the port. Idempotent. */
  close(): Promise<void>
}

export interface FaultProxyOptions {
  readonly targetPort: number
  readonly targetHost?: string
  readonly mode?: ProxyMode
  /**
   * Sees every chunk a client sends, as it arrives and before any fault
   * applies, with the connection's number in accept order (from 0): for
   * wire-level checks of what a driver sends.
   */
  readonly onClientData?: (connection: number, data: Buffer) => void
}

/** Queued bytes per direction above which the source socket is paused. */
const highWaterMark = 1 << 20

// Longest slice bandwidth throttling delivers at once, so a large chunk
// trickles through instead of arriving in one late burst.
const bandwidthSlice = (bytesPerSecond: number): number => Math.max(1, Math.floor(bytesPerSecond / 20))

/**
 * RSTs `socket`, or just destroys it while the FIN of an `end()` is still on
 * its way out: node (20, libuv 1.46) refuses a reset then (EINVAL, as an
 * 'error' event), marks the handle closing anyway and never closes it. No
 * 'close' follows, the fd stays open, and once nothing else is left node
 * spins at 100% CPU in its exit clean-up, waiting for that handle.
 */
const reset = (socket: net.Socket): void => {
  if (socket.destroyed) return
  if (socket.writableEnded && !socket.writableFinished) {
    socket.destroy()
    return
  }
  try {
    socket.resetAndDestroy()
  } catch {
    socket.destroy()
  }
}

interface Chunk {
  readonly data: Buffer
  readonly readyAt: number
}

type Direction = "up" | "down"

/** One direction of one connection: a FIFO of chunks, each with the time it may leave. */
class Lane {
  private readonly queue: Array<Chunk> = []
  private queuedBytes = 0
  private lastReadyAt = 0
  private ended = false
  private timer: NodeJS.Timeout | undefined = undefined

  constructor(
    private readonly direction: Direction,
    private readonly source: net.Socket,
    private readonly sink: net.Socket,
    private readonly proxy: Proxy
  ) {}

  push(data: Buffer): void {
    const mode = this.proxy.mode
    const now = performance.now()
    if (mode._tag === "latency") {
      this.enqueue(data, now + mode.ms + Math.random() * mode.jitterMs)
    } else if (mode._tag === "bandwidth") {
      const slice = bandwidthSlice(mode.bytesPerSecond)
      for (let offset = 0; offset < data.length; offset += slice) {
        const part = data.subarray(offset, offset + slice)
        this.enqueue(part, Math.max(now, this.lastReadyAt) + (part.length / mode.bytesPerSecond) * 1000)
      }
    } else {
      this.enqueue(data, now)
    }
    if (this.queuedBytes > highWaterMark) this.source.pause()
    this.pump()
  }

  end(): void {
    this.ended = true
    this.pump()
  }

  private enqueue(data: Buffer, readyAt: number): void {
    // Order is preserved by never letting a chunk leave before its predecessor.
    const at = Math.max(readyAt, this.lastReadyAt)
    this.lastReadyAt = at
    this.queue.push({ data, readyAt: at })
    this.queuedBytes += data.length
  }

  pump(): void {
    if (this.timer !== undefined) {
      clearTimeout(this.timer)
      this.timer = undefined
    }
    if (this.sink.destroyed) return
    const mode = this.proxy.mode
    if (mode._tag === "blackhole") return
    const now = performance.now()
    let head = this.queue[0]
    while (head !== undefined && head.readyAt <= now) {
      this.queue.shift()
      this.queuedBytes -= head.data.length
      if (mode._tag === "sinkhole" || (mode._tag === "dropReplies" && this.direction === "down")) {
        this.proxy.counters.bytesDropped += head.data.length
      } else {
        this.sink.write(head.data)
        if (this.direction === "up") this.proxy.counters.bytesUp += head.data.length
        else this.proxy.counters.bytesDown += head.data.length
      }
      head = this.queue[0]
    }
    if (this.queuedBytes <= highWaterMark && this.source.isPaused()) this.source.resume()
    if (head !== undefined) {
      this.timer = setTimeout(() => this.pump(), Math.max(0, head.readyAt - now))
    } else if (this.ended) {
      this.sink.end()
    }
  }

  dispose(): void {
    if (this.timer !== undefined) clearTimeout(this.timer)
    this.timer = undefined
    this.queue.length = 0
    this.queuedBytes = 0
  }
}

class Connection {
  private readonly up: Lane
  private readonly down: Lane
  private sawClientBytes = false

  constructor(
    readonly client: net.Socket,
    readonly server: net.Socket,
    private readonly proxy: Proxy,
    onClientData: ((data: Buffer) => void) | undefined
  ) {
    this.up = new Lane("up", client, server, proxy)
    this.down = new Lane("down", server, client, proxy)
    client.on("data", (data: Buffer) => {
      onClientData?.(data)
      if (!this.sawClientBytes) {
        this.sawClientBytes = true
        if (proxy.takeFirstUseReset()) {
          proxy.counters.connectionsReset += 1
          this.reset()
          return
        }
      }
      this.up.push(data)
    })
    server.on("data", (data: Buffer) => this.down.push(data))
    client.on("end", () => this.up.end())
    server.on("end", () => this.down.end())
    const onClose = (): void => this.reset()
    client.on("error", onClose)
    server.on("error", onClose)
    // A graceful FIN is forwarded by the lanes; a socket that closes while
    // its peer is still open takes the peer down with it.
    client.on("close", () => this.closed())
    server.on("close", () => this.closed())
  }

  pump(): void {
    this.up.pump()
    this.down.pump()
  }

  reset(): void {
    this.up.dispose()
    this.down.dispose()
    reset(this.client)
    reset(this.server)
  }

  private closed(): void {
    if (this.client.destroyed && this.server.destroyed) {
      this.up.dispose()
      this.down.dispose()
      this.proxy.forget(this)
    } else if (this.client.destroyed || this.server.destroyed) {
      // Leave time for queued bytes to drain before tearing down the peer.
      if (this.client.destroyed) this.server.destroy()
      else this.down.end()
    }
  }
}

class Proxy implements FaultProxy {
  readonly host = "127.0.0.1" as const
  port = 0
  mode: ProxyMode
  targetPort: number
  readonly counters = {
    bytesUp: 0,
    bytesDown: 0,
    bytesDropped: 0,
    connectionsAccepted: 0,
    connectionsRefused: 0,
    connectionsReset: 0
  }
  private readonly connections = new Set<Connection>()
  private readonly flaps = new Set<{ stop(): void }>()
  private firstUseResetsLeft = 0
  private closing: Promise<void> | undefined = undefined
  readonly server: net.Server

  constructor(private readonly options: FaultProxyOptions) {
    this.mode = Mode.pass
    this.targetPort = options.targetPort
    this.server = net.createServer({ allowHalfOpen: true, pauseOnConnect: false }, (socket) => this.accept(socket))
    this.setMode(options.mode ?? Mode.pass)
  }

  private accept(client: net.Socket): void {
    const number = this.counters.connectionsAccepted
    this.counters.connectionsAccepted += 1
    if (this.mode._tag === "partition") {
      this.counters.connectionsRefused += 1
      reset(client)
      return
    }
    client.setNoDelay(true)
    const server = net.connect({
      host: this.options.targetHost ?? "127.0.0.1",
      port: this.targetPort,
      allowHalfOpen: true,
      noDelay: true
    })
    const record = this.options.onClientData
    this.connections.add(
      new Connection(client, server, this, record === undefined ? undefined : (data) => record(number, data))
    )
  }

  via(url: string): string {
    const u = new URL(url)
    u.hostname = this.host
    u.port = String(this.port)
    return u.toString()
  }

  forget(connection: Connection): void {
    this.connections.delete(connection)
  }

  takeFirstUseReset(): boolean {
    if (this.mode._tag !== "resetOnFirstUse" || this.firstUseResetsLeft <= 0) return false
    this.firstUseResetsLeft -= 1
    return true
  }

  setMode(mode: ProxyMode): void {
    this.mode = mode
    if (mode._tag === "resetOnFirstUse") this.firstUseResetsLeft = mode.times
    if (mode._tag === "partition") {
      this.counters.connectionsReset += this.connections.size
      for (const connection of this.connections) connection.reset()
    } else {
      for (const connection of this.connections) connection.pump()
    }
  }

  flap(upMs: number, downMs: number): Flapping {
    let transitions = 0
    let timer: NodeJS.Timeout | undefined
    const phase = (up: boolean): void => {
      timer = setTimeout(() => {
        transitions += 1
        this.setMode(up ? Mode.partition : Mode.pass)
        phase(!up)
      }, up ? upMs : downMs)
    }
    const flapping = {
      get transitions() {
        return transitions
      },
      stop: () => {
        clearTimeout(timer)
        this.flaps.delete(flapping)
        this.setMode(Mode.pass)
      }
    }
    this.flaps.add(flapping)
    this.setMode(Mode.pass)
    phase(true)
    return flapping
  }

  resetConnections(): void {
    this.counters.connectionsReset += this.connections.size
    for (const connection of this.connections) connection.reset()
  }

  retarget(targetPort: number): void {
    this.targetPort = targetPort
    this.resetConnections()
  }

  stats(): ProxyStats {
    return { ...this.counters, connectionsActive: this.connections.size }
  }

  close(): Promise<void> {
    if (this.closing === undefined) {
      for (const flapping of this.flaps) flapping.stop()
      for (const connection of this.connections) connection.reset()
      this.connections.clear()
      this.closing = new Promise((resolve) => this.server.close(() => resolve()))
    }
    return this.closing
  }
}

/** Starts a proxy on 127.0.0.1 (ephemeral port) forwarding to `targetHost:targetPort`. */
export const startProxy = (options: FaultProxyOptions): Promise<FaultProxy> => {
  const host = options.targetHost ?? "127.0.0.1"
  if (host !== "127.0.0.1" && host !== "localhost" && host !== "::1") {
    return Promise.reject(new Error(`FaultProxy forwards to loopback only, not ${host}`))
  }
  const proxy = new Proxy(options)
  return new Promise((resolve, reject) => {
    proxy.server.once("error", reject)
    proxy.server.listen({ host: "127.0.0.1", port: 0 }, () => {
      proxy.server.off("error", reject)
      const address = proxy.server.address()
      if (address === null || typeof address === "string") {
        reject(new Error("FaultProxy: listener has no TCP address"))
        return
      }
      proxy.port = address.port
      resolve(proxy)
    })
  })
}
