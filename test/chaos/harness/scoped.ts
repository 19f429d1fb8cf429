/**
 * The harness's servers as scoped Effect resources, for scenarios written
 * with `it.scoped` from @effect/vitest: each is torn down when its scope
 * closes, whatever the scenario's outcome. A harness failure is a defect:
 * the scenario cannot run without its infrastructure.
 */
import { Effect, type Scope } from "effect"
import { type FaultProxy, type FaultProxyOptions, startProxy } from "./FaultProxy.js"
import { type PgBouncerOptions, startPgBouncer, type ThrowawayPgBouncer } from "./ThrowawayPgBouncer.js"
import { type PostgresOptions, startPostgres, type ThrowawayPostgres } from "./ThrowawayPostgres.js"
import { startTopology, type Topology, type TopologyOptions } from "./Topology.js"

const scoped = <A>(acquire: () => Promise<A>, release: (a: A) => Promise<void>): Effect.Effect<A, never, Scope.Scope> =>
  Effect.acquireRelease(Effect.promise(acquire), (a) => Effect.promise(() => release(a)))

export const postgresScoped = (options?: PostgresOptions): Effect.Effect<ThrowawayPostgres, never, Scope.Scope> =>
  scoped(() => startPostgres(options), (db) => db.destroy())

export const pgBouncerScoped = (options: PgBouncerOptions): Effect.Effect<ThrowawayPgBouncer, never, Scope.Scope> =>
  scoped(() => startPgBouncer(options), (bouncer) => bouncer.destroy())

export const proxyScoped = (options: FaultProxyOptions): Effect.Effect<FaultProxy, never, Scope.Scope> =>
  scoped(() => startProxy(options), (proxy) => proxy.close())

export const topologyScoped = (options: TopologyOptions): Effect.Effect<Topology, never, Scope.Scope> =>
  scoped(() => startTopology(options), (topology) => topology.destroy())
