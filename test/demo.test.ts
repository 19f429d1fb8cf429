import { execFile } from "node:child_process"
import pg from "pg"
import { afterAll, describe, expect, it } from "vitest"
import { directUrl, uniqueTable } from "./support/databases.js"
import { dropPgTables } from "./support/tables.js"

interface Run {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** Runs `npm run demo`'s program as a child process, with a short pause between events. */
const demo = (env: Record<string, string>): Promise<Run> =>
  new Promise((resolve) => {
    execFile(
      "node_modules/.bin/tsx",
      ["examples/demo.ts"],
      { env: { ...process.env, DATABASE_URL: "", DEMO_PAUSE_MS: "600", ...env }, timeout: 50_000 },
      (error, stdout, stderr) => resolve({ code: error === null ? 0 : (error.code as number | null), stdout, stderr })
    )
  })

const expectFullRun = (run: Run, store: string) => {
  expect(run.stderr).toBe("")
  expect(run.code).toBe(0)
  expect(run.stdout).toContain(`on ${store}`)
  // Every fence is a new term, and the three terms are 1, 2 and 3 in a fresh table.
  expect(run.stdout).toMatch(/\] p\d-[0-9a-f]{4} leads under fence 1\n/)
  expect(run.stdout).toMatch(/\] crash \(no release; the lease must expire\): p\d/)
  expect(run.stdout).toMatch(/\] p\d-[0-9a-f]{4} leads under fence 2\n/)
  expect(run.stdout).toMatch(/failover after crash \(no release; the lease must expire\): \d+ms/)
  expect(run.stdout).toMatch(/\] p\d-[0-9a-f]{4} leads under fence 3\n/)
  expect(run.stdout).toMatch(/failover after clean shutdown \(release\): \d+ms/)
  expect(run.stdout).toMatch(/\] done\n$/)
  // Never two leaders in one snapshot of the fleet.
  for (const line of run.stdout.split("\n").filter((l) => l.includes("fleet:"))) {
    expect(line.match(/LEADER/g)?.length ?? 0).toBeLessThanOrEqual(1)
  }
}

describe("npm run demo", () => {
  it("runs a fleet in memory: a leader, a crash failover and a clean handover, then exits 0", async () => {
    expectFullRun(await demo({}), "an in-memory store (no server)")
  })

  const table = uniqueTable("demo")
  // The demo's participants create the store's tables (ensureSchema): drop them all.
  afterAll(() => dropPgTables(table))

  it("runs the same fleet against PostgreSQL with DATABASE_URL, one pool per participant", async () => {
    const run = await demo({ DATABASE_URL: directUrl, DEMO_TABLE: table })
    expectFullRun(run, "PostgreSQL at postgres://…@127.0.0.1:5432/test")
    const client = new pg.Client({ connectionString: directUrl })
    await client.connect()
    const rows = await client.query(
      `SELECT holder, fence::text AS fence, expires_at <= now() AS released FROM ${table}`
    )
      .finally(() => client.end())
    // The last leader released at exit: the row is kept, expired, under the third fence.
    expect(rows.rows).toEqual([expect.objectContaining({ fence: "3", released: true })])
  })
})
