/**
 * A fault-injecting TCP proxy on loopback. In "blackhole" mode it stops
 * forwarding bytes in both directions (they are dropped) while keeping every
 * socket open, which is how a hung server or a silent network partition looks
 * to a client. It can also record what clients send, for wire-level checks.
 */
import * as net from "node:net"

export interface Proxy {
  readonly port: number
  /** `url` with its host and port replaced by the proxy's. */
  readonly via: (url: string) => string
  readonly blackhole: (on: boolean) => void
  /** Bytes each client connection sent, in connection order. */
  readonly sent: () => ReadonlyArray<Buffer>
  readonly close: () => Promise<void>
}

export const start = (target: { readonly host: string; readonly port: number }): Promise<Proxy> =>
  new Promise((resolve, reject) => {
    let dropping = false
    const sockets = new Set<net.Socket>()
    const recorded: Array<Array<Buffer>> = []
    const server = net.createServer((client) => {
      const chunks: Array<Buffer> = []
      recorded.push(chunks)
      const upstream = net.connect(target.port, target.host)
      for (const socket of [client, upstream]) {
        sockets.add(socket)
        socket.on("error", () => socket.destroy())
        socket.on("close", () => {
          sockets.delete(socket)
          client.destroy()
          upstream.destroy()
        })
      }
      client.on("data", (data) => {
        chunks.push(data)
        if (!dropping) upstream.write(data)
      })
      upstream.on("data", (data) => {
        if (!dropping) client.write(data)
      })
    })
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo
      resolve({
        port,
        via: (url) => {
          const u = new URL(url)
          u.hostname = "127.0.0.1"
          u.port = String(port)
          return u.toString()
        },
        blackhole: (on) => {
          dropping = on
        },
        sent: () => recorded.map((chunks) => Buffer.concat(chunks)),
        close: () =>
          new Promise((done) => {
            for (const socket of sockets) socket.destroy()
            server.close(() => done())
          })
      })
    })
  })
