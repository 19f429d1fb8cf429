import { describe, expect, it } from "@effect/vitest"
import { Cause, Duration, Effect, Layer } from "effect"
import { execFile } from "node:child_process"
import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import * as Store from "../src/Store.js"
import * as MemoryStore from "../src/stores/MemoryStore.js"
import { StoreSuite } from "../src/testing.js"
import {
  type ContractViolation,
  Probe,
  refuses,
  Requirement,
  rule,
  show,
  traced
} from "../src/testing/internal/contract.js"
import { caseError, caseTest, suiteCases } from "../src/testing/internal/suite.js"

/** MemoryStore, with a renewal that goes through after the lease expired, as long as holder and fence match. */
const renewsAfterExpiry = Layer.effect(
  Store.Store,
  Effect.map(MemoryStore.make(), (inner): Store.StoreShape => ({
    ...inner,
    renew: (name, identity, fence, ttl, payload) =>
      Effect.catchTag(
        inner.renew(name, identity, fence, ttl, payload),
        "LeaseLost",
        (lost) =>
          Effect.flatMap(Effect.orElseFail(inner.inspect(name), () => lost), (lease) =>
            lease.holder === identity && lease.fence === fence
              ? Effect.succeed({ ...lease, payload, expiresAt: new Date(lease.now.getTime() + Duration.toMillis(ttl)) })
              : Effect.fail(lost))
      )
  }))
)

/** MemoryStore without the optional operations: no job slots, no candidates. */
const bare = Layer.effect(
  Store.Store,
  Effect.map(MemoryStore.make(), ({ acquire, inspect, release, renew }): Store.StoreShape => ({
    acquire,
    renew,
    release,
    inspect
  }))
)

describe("StoreSuite speaks store", () => {
  it.live("a renewal accepted after expiry fails naming the call, the answer and the rule", () =>
    Effect.gen(function*() {
      const report = yield* StoreSuite.check("renews after expiry", renewsAfterExpiry)
      const guard = report.failures.find((f) => f.name.startsWith("renew fails with LeaseLost"))
      expect(guard?.message).toMatch(
        /^renew\('storetest-guard-[0-9a-f]+-[0-9a-z]+', 'a', 1n, 5m, null\)\n {2}answered: \{ name: 'storetest-guard-.*fence: 1n,.*\}\n {2}the contract requires: renewing an expired lease: fail with LeaseLost\n {2}the case's store calls, in order:\n/
      )
      // The calls that led there, time passing included, the broken one last.
      expect(guard?.message.split("\n").slice(-2).join("\n")).toMatch(
        /^ {4}\(time passes: 2s 1ms\)\n {4}renew\('storetest-guard-[^']+', 'a', 1n, 5m, null\) → holder 'a', fence 1n, expires in 5m$/
      )
      // The model's failure is the renewal it made, in the store's words.
      const model = report.failures.find((f) => f.name === "operation-level model of the contract")
      expect(model?.message).toMatch(
        /^renew\('storetest-model-[01]-[^']+', '[abc]', \d+n, (2s|5m), null\)\n {2}answered: \{ name: .*fence: \d+n/
      )
      expect(model?.message).toContain(
        "the contract requires: LeaseLost: the renewal's guard (holder, fence, lease not expired) does not match"
      )
      for (const failure of report.failures) {
        expect(failure.message).not.toMatch(/serialize|\[object Object\]/)
      }
      // The other rules hold, and the summary lists the two failures with their reasons.
      expect(report.failures.map((f) => f.name)).toHaveLength(2)
      expect(report.summary).toContain("  × renew fails with LeaseLost rather than silently succeeding")
      expect(report.summary).toContain("      the contract requires: renewing an expired lease: fail with LeaseLost")
      expect(report.summary.split("\n").at(-1)).toBe("2 failed, 23 passed, 1 skipped")
    }))

  it.live("a store without job slots or candidates has those cases skipped, not passed", () =>
    Effect.gen(function*() {
      const report = yield* StoreSuite.check("bare", bare, { modelRuns: 20 })
      expect(report.failures).toEqual([])
      expect(report.skipped).toEqual([
        "a lease is its incarnation's: the same identity under another neither continues nor takes it over",
        "concurrent acquires by one identity under twelve incarnations elect exactly one",
        "after the database changed, a claim holds the lease back; the leader whose lease survived renews it",
        "a slot is claimed under the term, completed once, and reported as the job's latest",
        "a deposed term can neither claim nor complete; its successor re-runs an open slot only when asked",
        "slot calls are held to the limits",
        "candidates: every live one is returned with database-derived durations; a lapse restarts aliveFor",
        "candidates: priority and version are held to their limits at the store boundary"
      ])
      expect(report.summary).toContain(
        "  ↓ slot calls are held to the limits (skipped: the store has no scheduled-job slots (StoreShape.slots))"
      )
      // A store written to the contract of 0.1 is told so.
      expect(report.summary).toContain(
        "  ↓ concurrent acquires by one identity under twelve incarnations elect exactly one (skipped: the store " +
          "does not keep incarnations (StoreShape.incarnations): it runs the contract of 0.1, where two processes " +
          "given one identity are not told apart)"
      )
      expect(report.summary.split("\n").at(-1)).toBe("0 failed, 18 passed, 8 skipped")
    }))

  it.live("a case past its timeout fails, saying so", () =>
    Effect.gen(function*() {
      const hangs = Layer.effect(
        Store.Store,
        Effect.map(MemoryStore.make(), (s) => ({ ...s, inspect: () => Effect.never }))
      )
      const report = yield* StoreSuite.check("hangs", hangs, { timeout: "50 millis", modelRuns: 1 })
      expect(report.failures.find((f) => f.name === "inspect of a missing record fails with NoLease")?.message).toBe(
        "the case did not finish within 50ms (raise the `timeout` option)"
      )
    }))

  it.live("the sample failure of the README and docs/testing.md is what the suite prints", () =>
    Effect.gen(function*() {
      const report = yield* StoreSuite.check("RenewsAfterExpiry", renewsAfterExpiry, { modelRuns: 1 })
      const guard = report.failures.find((f) => f.name.startsWith("renew fails with LeaseLost"))!
      // As vitest lists a failed test: its name, then the message, its first line after an arrow.
      const [first, ...rest] = guard.message.split("\n")
      const printed = [
        `× store contract: RenewsAfterExpiry > ${guard.name}`,
        `  → ${first}`,
        ...rest
      ].join("\n").replace(/storetest-guard-[0-9a-f]+-[0-9a-z]+/g, "storetest-guard-…")
      for (const page of ["README.md", "docs/testing.md"]) {
        const text = readFileSync(new URL(`../${page}`, import.meta.url), "utf8")
        const sample = text.match(/^```text\n(× store contract: RenewsAfterExpiry[^]*?)\n```$/m)?.[1]
        expect(sample, page).toBe(printed)
      }
    }))

  it("check runs in a plain node script, without vitest", async () => {
    const script = fileURLToPath(new URL("support/storeSuiteScript.ts", import.meta.url))
    const { VITEST: _, VITEST_WORKER_ID: __, VITEST_POOL_ID: ___, ...env } = process.env
    const { stdout } = await promisify(execFile)(process.execPath, ["--import", "tsx", script], { env })
    expect(stdout).toContain("store contract: MemoryStore\n  ✓ inspect of a missing record fails with NoLease")
    expect(stdout.trim().split("\n").at(-1)).toBe("0 failed, 25 passed, 1 skipped")
  })
})

describe("StoreSuite on other broken stores", () => {
  const withStore = (f: (inner: Store.StoreShape) => Partial<Store.StoreShape>) =>
    Layer.effect(Store.Store, Effect.map(MemoryStore.make(), (inner) => ({ ...inner, ...f(inner) })))

  it.live("an inspect that errors: the call a case needed, the wrong error, the model's mismatch", () =>
    Effect.gen(function*() {
      const failing = () =>
        Effect.fail(new Store.StoreError({ operation: "inspect", retryable: true, reason: "down", cause: undefined }))
      const report = yield* StoreSuite.check("inspect fails", withStore(() => ({ inspect: failing })))
      const message = (name: string) => report.failures.find((f) => f.name.startsWith(name))?.message
      expect(message("inspect of a missing record")).toMatch(
        /answered: failed with StoreError \{ operation: 'inspect', retryable: true, reason: 'down'.*\n {2}the contract requires: inspecting an election with no record: fail with NoLease\n/
      )
      expect(message("a fresh acquire")).toMatch(
        /^inspect\('storetest-fresh-.*the case needs this call to succeed here\n/s
      )
      expect(message("operation-level model")).toContain("the contract requires: NoLease: nothing was acquired")
    }))

  it.live("a renewal that answers another payload breaks the model's renewal rule", () =>
    Effect.gen(function*() {
      const layer = withStore((inner) => ({
        renew: (name, identity, fence, ttl) => inner.renew(name, identity, fence, ttl, new Uint8Array([7]))
      }))
      const report = yield* StoreSuite.check("renew keeps a payload", layer)
      const model = report.failures.find((f) => f.name === "operation-level model of the contract")
      expect(model?.message).toContain("the contract requires: the holder's renewal succeeds: holder '")
    }))

  it.live("a release that does nothing: the failure leads with the release, not the inspect that noticed", () =>
    Effect.gen(function*() {
      const report = yield* StoreSuite.check("release does nothing", withStore(() => ({ release: () => Effect.void })))
      const message = (name: string) => report.failures.find((f) => f.name.startsWith(name))?.message
      expect(message("release hands over at once")).toMatch(
        new RegExp(
          [
            String.raw`^release\('storetest-release-[^']+', 'a', 1n\)`,
            String.raw` {2}answered: done`,
            String.raw` {2}then inspect\('storetest-release-[^']+'\) answered: \{ .*holder: 'a', fence: 1n, .*\}`,
            String.raw` {2}the contract requires: a released lease is expired at once: true \(got false\)`,
            String.raw` {2}the case's store calls, in order:`,
            String.raw` {4}release\('storetest-release-[^']+', 'nobody', 1n\) → done`,
            String.raw` {4}acquire\('storetest-release-[^']+', 'a', 5m, null\) → holder 'a', fence 1n, expires in 5m`
          ].join("\n")
        )
      )
      // The model's shortest sequence, as the store calls it made: the release that did nothing among them.
      const model = message("operation-level model")!
      expect(model).toMatch(
        /\n {2}the sequence's store calls \(the shortest failing one found, after \d+ run\(s\) and \d+ shrink\(s\)\):\n/
      )
      expect(model).toMatch(/\n {4}release\('storetest-model-[01]-[^']+', '[abc]', \d+n\) → done\n/)
      expect(model).not.toMatch(/\bwho\b|fenceDelta|\bop:|model command/)
    }))

  it.live("a renewal that moves the fence: the renew call is named, with its arguments and answer", () =>
    Effect.gen(function*() {
      const layer = withStore((inner) => ({
        renew: (name, identity, fence, ttl, payload) =>
          Effect.map(
            inner.renew(name, identity, fence, ttl, payload),
            (lease) => ({ ...lease, fence: lease.fence + 1n })
          )
      }))
      const report = yield* StoreSuite.check("renew moves the fence", layer)
      const message = (name: string) => report.failures.find((f) => f.name.startsWith(name))?.message
      expect(message("renew extends the term")).toMatch(
        /^renew\('storetest-renew-[^']+', 'a', 1n, 5m, Uint8Array\(2\) \[ 2, 3 \]\)\n {2}answered: \{ .*fence: 2n, .*\}\n {2}the contract requires: a renewal keeps the term and stores the new payload: \{ fence: 1n, /
      )
      expect(message("operation-level model")).toMatch(
        /^renew\('storetest-model-[01]-[^']+', '([abc])', (\d+)n, (2s|5m), null\)\n {2}answered: \{ .*holder: '\1', (incarnation: '[12]', )?fence: \d+n, .*\}\n {2}the contract requires: the holder's renewal succeeds: holder '\1', fence \2n, payload null, valid(, incarnation '[12]')?\n/
      )
    }))

  it.live("a store that says it keeps incarnations but tells processes apart by identity alone", () =>
    Effect.gen(function*() {
      const layer = withStore((inner) => ({
        acquire: (name, identity, ttl, payload) => inner.acquire(name, identity, ttl, payload)
      }))
      const report = yield* StoreSuite.check("drops incarnations", layer)
      const message = (name: string) => report.failures.find((f) => f.name.startsWith(name))?.message
      expect(message("a lease is its incarnation's")).toMatch(
        /^acquire\('storetest-incarnation-[^']+', 'a', 2s, Uint8Array\(1\) \[ 1 \], 'i{63}1'\)\n {2}answered: .*\n {2}the contract requires: the first term is its caller's incarnation's, kept whole: \{ holder: 'a', incarnation: 'i{63}1', fence: 1n \} \(got \{ holder: 'a', incarnation: undefined, fence: 1n \}\)\n/
      )
      expect(message("concurrent acquires by one identity")).toContain(
        "the contract requires: exactly one of concurrent acquires wins, the others see its lease: winners: 1 (got 0)"
      )
      expect(message("operation-level model")).toMatch(/, incarnation '[12]'\n/)
    }))

  it.live("a store that ignores the server a record was written on: the claim that should have held it back", () =>
    Effect.gen(function*() {
      const report = yield* StoreSuite.check("no hold-back", MemoryStore.layer(), {
        writtenElsewhere: () => Effect.void
      })
      const message = (name: string) => report.failures.find((f) => f.name.startsWith(name))?.message
      const lines = message("after the database changed")!.split("\n")
      expect(lines[0]).toMatch(/^acquire\('storetest-own-elsewhere-[^']+', 'a', 2s, Uint8Array\(1\) \[ 2 \], 'i1'\)$/)
      expect(lines[2]).toBe(
        "  the contract requires: a claim on one's own lease written by another server: held back by nobody, " +
          "under the fence moved on by Lease.fenceJump: { holder: '', fence: 4294967297n, payload: null } " +
          "(got { holder: 'a', fence: 1n, payload: Uint8Array(1) [ 2 ] })"
      )
      expect(lines.slice(-2)).toEqual([
        expect.stringMatching(
          /^ {4}\(the record of 'storetest-own-elsewhere-[^']+' now looks written by another server\)$/
        ),
        expect.stringMatching(
          /^ {4}acquire\(.*\) → holder 'a' \(incarnation 'i1'\), fence 1n, payload .*, expires in 2s$/
        )
      ])
      expect(message("operation-level model")).toContain("now looks written by another server)\n")
      expect(report.failures).toHaveLength(2)
    }))

  it.live("a layer that does not build fails every case, saying so", () =>
    Effect.gen(function*() {
      const report = yield* StoreSuite.check("no database", Layer.fail("no database"), { modelRuns: 1 })
      expect(report.failures).toHaveLength(26)
      expect(report.failures[0]?.message).toBe("the store's layer or the case failed: 'no database'")
    }))

  it.effect("a failure lists the latest calls, and blames the write before a read that noticed", () =>
    Effect.gen(function*() {
      const probe = new Probe()
      const store = traced(yield* MemoryStore.make(), probe)
      for (let i = 0; i < 7; i++) {
        yield* store.acquire("e", "a", Duration.seconds(1), null)
        probe.elapsed(Duration.millis(1))
      }
      yield* store.release("e", "a", 1n)
      const lease = yield* store.inspect("e")
      const explained = (requirement: Requirement) =>
        Cause.squash(probe.explain(Cause.die(requirement), "the calls")) as ContractViolation
      const noticed = explained(new Requirement("the rule"))
      expect(noticed).toMatchObject({
        operation: "release('e', 'a', 1n)",
        answered: "done",
        noticed: `inspect('e') answered: ${show(lease)}`,
        earlier: 4
      })
      expect(noticed.message.split("\n").slice(3, 6)).toEqual([
        "  the contract requires: the rule",
        "  the calls (the last 12 of 16):",
        "    acquire('e', 'a', 1s, null) → holder 'a', fence 1n, expires in 1s"
      ])
      expect(noticed.message.split("\n").slice(-2)).toEqual([
        "    release('e', 'a', 1n) → done",
        "    inspect('e') → holder 'a', fence 1n, expired"
      ])
      // A rule about the read's own answer blames the read.
      expect(explained(new Requirement("refuse", true))).toMatchObject({
        operation: "inspect('e')",
        noticed: undefined
      })
      // Before any call, there is nothing to blame.
      expect(new Probe().explain(Cause.die(new Requirement("x")))).toMatchObject(
        Cause.fail({ operation: "(before any store call)", answered: "(nothing yet)", calls: [], earlier: 0 })
      )
    }))

  it("rules say what they compared, for any value", () => {
    expect(() => rule("a candidate", undefined as { a: number } | undefined).matches({ a: 1 })).toThrow(
      "a candidate: { a: 1 } (got undefined)"
    )
    expect(() => rule("a time", new Date(5)).above(5)).toThrow("a time: more than 5 (got 1970-01-01T00:00:00.005Z)")
  })

  it.effect("refuses: a failure with another tag breaks the rule", () =>
    Effect.gen(function*() {
      const call: Effect.Effect<void, Store.NoLease | Store.LeaseLost> = Effect.fail(new Store.NoLease({ name: "x" }))
      const exit = yield* Effect.exit(refuses(call, "LeaseLost", "renewing"))
      expect(exit).toMatchObject({ _tag: "Failure" })
      expect(String(exit)).toContain("renewing: fail with LeaseLost")
    }))

  it("a failed case reaches vitest as the case's message, without a stack", async () => {
    expect(caseError("the rule").stack).toBe("StoreContractViolation: the rule")
    const harness = { name: "no database", layer: Layer.fail("no database"), live: false, modelRuns: 1 }
    const test = caseTest(harness, suiteCases(harness)[0]!)
    await expect(test({ skip: () => undefined })).rejects.toThrow("the store's layer or the case failed: 'no database'")
  })
})

// Registered as tests: the bare store's optional cases show as skipped in vitest's report.
StoreSuite.run("MemoryStore without optional operations", bare, { modelRuns: 20 })
