/** Starts what the tests need beyond the shared servers: a PgBouncer in transaction pooling mode in front of them. */
import type { TestProject } from "vitest/node"
import { startPgBouncer } from "../chaos/harness/ThrowawayPgBouncer.js"
import { directUrl } from "./databases.js"

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const upstream = new URL(directUrl)
  const bouncer = await startPgBouncer({
    targetHost: upstream.hostname,
    targetPort: Number(upstream.port || "5432"),
    // Few server connections for many clients: any session state or named
    // statement leaking between clients would show up at once.
    poolSize: 2
  })
  project.provide("pgbouncerUrl", bouncer.url(upstream.pathname.slice(1) || "test"))
  return bouncer.destroy
}

declare module "vitest" {
  export interface ProvidedContext {
    /** PgBouncer in transaction pooling mode in front of the shared PostgreSQL: `inject("pgbouncerUrl")`. */
    pgbouncerUrl: string
  }
}
