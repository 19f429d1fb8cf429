/** Starts what the tests need beyond the shared servers: a PgBouncer in transaction pooling mode. */
import type { TestProject } from "vitest/node"
import { directUrl } from "./databases.js"
import * as PgBouncer from "./pgbouncer.js"

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const bouncer = await PgBouncer.start(new URL(directUrl))
  project.provide("pgbouncerUrl", bouncer.url)
  return bouncer.stop
}

declare module "vitest" {
  export interface ProvidedContext {
    /** PgBouncer in transaction pooling mode in front of the shared PostgreSQL: `inject("pgbouncerUrl")`. */
    pgbouncerUrl: string
  }
}
