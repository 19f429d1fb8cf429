import { execFile, spawn } from "node:child_process"
import { once } from "node:events"
import { promisify } from "node:util"
import { describe, expect, it } from "vitest"

const run = async (file: string) => {
  const { stderr, stdout } = await promisify(execFile)("npx", ["tsx", file], { timeout: 60_000 })
  return stdout + stderr
}

describe("examples run against MemoryStore", () => {
  it("examples/effect.ts: the first leader hands over to the second under the next fence", async () => {
    const output = await run("examples/effect.ts")
    expect(output).toContain("eu-west reconciling under fence 1")
    expect(output).toContain("us-east reconciling under fence 2")
    expect(output.indexOf("stopped leading under fence 1")).toBeLessThan(
      output.indexOf("us-east reconciling under fence 2")
    )
  })

  it("examples/promise.ts: start, isLeader, status and stop", async () => {
    const output = await run("examples/promise.ts")
    expect(output).toContain("a leads under fence 1")
    expect(output).toContain("a leads: true, b leads: false, b sees leader a")
    expect(output).toContain("after a stopped, b leads: true with fence 2")
  })
})

describe("operating examples", () => {
  it("examples/prometheus.ts serves /metrics in the Prometheus format and /healthz, and releases on SIGTERM", async () => {
    // One process (no npx in between), so that SIGTERM reaches the example itself.
    const child = spawn(process.execPath, ["--import", "tsx", "examples/prometheus.ts"], {
      env: { ...process.env, PORT: "0" },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let output = ""
    child.stdout.on("data", (chunk) => (output += chunk))
    child.stderr.on("data", (chunk) => (output += chunk))
    const exited = once(child, "exit")
    try {
      const base = await until(() => /metrics at (http:\/\/127\.0\.0\.1:\d+)\/metrics/.exec(output)?.[1])
      const metrics = await until(async () => {
        const text = await (await fetch(`${base}/metrics`)).text()
        return /^leaderelection_is_leader\{election="invoice-reconciler"[^}]*\} 1$/m.test(text) ? text : undefined
      })
      expect(metrics).toMatch(/^# TYPE leaderelection_is_leader gauge$/m)
      expect(metrics).toMatch(/^leaderelection_terms_total\{election="invoice-reconciler"[^}]*\} 1$/m)
      expect(metrics).toMatch(/^leaderelection_info\{election="invoice-reconciler",identity="[^"]+"[^}]*\} 1$/m)
      // The identity is on the info gauge only.
      expect(metrics.split("\n").filter((l) => l.startsWith("leaderelection_") && l.includes("identity=")))
        .toHaveLength(1)
      const health = await fetch(`${base}/healthz`)
      expect(health.status).toBe(200)
      expect(await health.json()).toMatchObject({
        state: "leader",
        election: "invoice-reconciler",
        status: { fence: "1" }
      })
    } finally {
      child.kill("SIGTERM")
    }
    // NodeRuntime.runMain turns SIGTERM into interruption: the lease is released, the exit is clean.
    expect(await exited).toEqual([0, null])
    expect(output).toContain("stopped leading under fence 1 (shutdown)")
  })

  it("examples/opentelemetry.ts: spans for every store call and the metrics, on the console", async () => {
    const output = await run("examples/opentelemetry.ts")
    for (const span of ["inspect", "acquire", "renew", "release"]) {
      expect(output).toContain(`name: 'leaderelection.${span}'`)
    }
    expect(output).toContain("attributes: { election: 'invoice-reconciler', identity: 'worker-1', fence: '1' }")
    expect(output).toContain("name: 'reconcile'")
    expect(output).toContain("name: 'leaderelection_is_leader'")
    expect(output).toContain("attributes: { election: 'invoice-reconciler', identity: 'worker-1' },")
    expect(output).toContain("stopped leading under fence 1 (shutdown)")
  })
})

/** Polls `probe` every 100 ms until it returns a value (20 s at most). */
const until = async <A>(probe: () => A | undefined | Promise<A | undefined>): Promise<A> => {
  for (let i = 0; i < 200; i++) {
    const value = await probe()
    if (value !== undefined) return value
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error("gave up waiting")
}
