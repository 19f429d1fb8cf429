import { execFile } from "node:child_process"
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
    expect(output.indexOf("stopped leading under fence 1")).toBeLessThan(output.indexOf("us-east reconciling under fence 2"))
  })

  it("examples/promise.ts: start, isLeader, status and stop", async () => {
    const output = await run("examples/promise.ts")
    expect(output).toContain("a leads under fence 1")
    expect(output).toContain("a leads: true, b leads: false, b sees leader a")
    expect(output).toContain("after a stopped, b leads: true with fence 2")
  })
})
