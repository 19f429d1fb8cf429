/**
 * A loopback TCP proxy that can stop moving bytes while keeping every
 * connection open: the database "hangs" as far as its clients can tell,
 * without touching the shared server. In blackhole mode bytes in either
 * direction are dropped, as a path that silently lost its state would.
 */
import * as net from "node:net"
import { Effect } from "effect"

export interface Proxy {
  readonly port: number
  /** Stop forwarding; sockets stay open, and what arrives is dropped. */
  readonly blackhole: () => void
  /** Forward again, on existing and new connections. */
  readonly forward: () => void
  /** Client connections currently open through the proxy. */
  readonly open: () => number
  /** Client connections accepted so far. */
  readonly accepted: () => number
  /** Destroys every connection, so clients see a reset instead of silence. */
  readonly resetAll: () => void
}

export const makeProxy = (target: { readonly host: string; readonly port: number }) =>
  Effect.acquireRelease(
    Effect.async<{ readonly proxy: Proxy; readonly server: net.Server }>((resume) => {
      let forwarding = true
      let accepted = 0
      const sockets = new Set<net.Socket>()
      const clients = new Set<net.Socket>()
      const server = net.createServer((client) => {
        accepted++
        clients.add(client)
        const upstream = net.connect(target.port, target.host)
        for (const socket of [client, upstream]) {
          sockets.add(socket)
          socket.on("error", () => {})
          socket.on("close", () => {
            sockets.delete(socket)
            clients.delete(socket)
            client.destroy()
            upstream.destroy()
          })
        }
        client.on("data", (chunk) => {
          if (forwarding) upstream.write(chunk)
        })
        upstream.on("data", (chunk) => {
          if (forwarding) client.write(chunk)
        })
      })
      const resetAll = () => {
        for (const socket of sockets) socket.destroy()
      }
      server.listen(0, "127.0.0.1", () => {
        const address = server.address() as net.AddressInfo
        resume(Effect.succeed({
          server,
          proxy: {
            port: address.port,
            blackhole: () => {
              forwarding = false
            },
            forward: () => {
              forwarding = true
            },
            open: () => clients.size,
            accepted: () => accepted,
            resetAll
          }
        }))
      })
    }),
    ({ proxy, server }) =>
      Effect.async<void>((resume) => {
        proxy.resetAll()
        server.close(() => resume(Effect.void))
      })
  ).pipe(Effect.map(({ proxy }) => proxy))
