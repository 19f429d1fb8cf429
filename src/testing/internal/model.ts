/**
 * An operation-level model of the store contract: a sequence of acquire,
 * renew, release, inspect and "time passes" commands is run against a real
 * store and against a few lines of reference semantics, and every answer must
 * agree. Time in the model is counted in steps: a short lease lives less than
 * one step, a long one outlives every run.
 */
import type { Duration } from "effect"
import { Cause, Effect, Either, Exit, TestClock, TestContext } from "effect"
import * as fc from "effect/FastCheck"
import * as Lease from "../../Lease.js"
import * as Store from "../../Store.js"
import { ContractViolation, show } from "./contract.js"
import { type Case, defaultModelRuns, type StoreHarness, timing, uniqueName } from "./suite/kit.js"

export type Command =
  | {
    readonly op: "acquire"
    readonly name: number
    readonly who: number
    readonly short: boolean
    readonly payload: number | null
  }
  | {
    readonly op: "renew"
    readonly name: number
    readonly who: number
    readonly fenceDelta: -1 | 0 | 1
    readonly short: boolean
  }
  | { readonly op: "release"; readonly name: number; readonly who: number; readonly fenceDelta: -1 | 0 | 1 }
  | { readonly op: "inspect"; readonly name: number }
  | { readonly op: "elapse" }

// Skewed towards one election and two participants, so that contention and
// handovers happen in most runs rather than in a few.
const name = fc.constantFrom(0, 0, 0, 1)
const who = fc.constantFrom(0, 0, 1, 1, 2)
const fenceDelta = fc.constantFrom(-1 as const, 0 as const, 0 as const, 0 as const, 1 as const)

const command: fc.Arbitrary<Command> = fc.oneof(
  {
    arbitrary: fc.record({
      op: fc.constant("acquire" as const),
      name,
      who,
      short: fc.boolean(),
      payload: fc.option(fc.integer({ min: 0, max: 255 }))
    }),
    weight: 4
  },
  {
    arbitrary: fc.record({ op: fc.constant("renew" as const), name, who, fenceDelta, short: fc.boolean() }),
    weight: 3
  },
  { arbitrary: fc.record({ op: fc.constant("release" as const), name, who, fenceDelta }), weight: 2 },
  { arbitrary: fc.record({ op: fc.constant("inspect" as const), name }), weight: 2 },
  { arbitrary: fc.constant({ op: "elapse" as const }), weight: 2 }
)

export const modelCommands: fc.Arbitrary<ReadonlyArray<Command>> = fc.array(command, { minLength: 1, maxLength: 14 })

interface Row {
  holder: string
  fence: bigint
  payload: Uint8Array | null
  /** The step at which the lease stops being valid. */
  expiresAt: number
}

export interface ModelTiming {
  readonly short: Duration.Duration
  readonly pastShort: Duration.Duration
  readonly long: Duration.Duration
  readonly elapse: (d: Duration.Duration) => Effect.Effect<void>
}

/** What the reference semantics expect of a lease, as the contract words it. */
const expected = (row: Row, step: number) =>
  `holder ${show(row.holder)}, fence ${show(row.fence)}, payload ${
    show(row.payload === null ? null : Array.from(row.payload))
  }, ${row.expiresAt > step ? "valid" : "expired"}`

/** The store's answer to command `i` disagrees with the reference semantics. */
const mismatch = (commands: ReadonlyArray<Command>, i: number, answered: unknown, requires: string) =>
  Effect.fail(
    new ContractViolation({
      operation: `model command ${i} of ${show(commands)}: ${show(commands[i])}`,
      answered: show(answered),
      requires
    })
  )
export const runModel = (commands: ReadonlyArray<Command>, timing: ModelTiming) =>
  Effect.gen(function*() {
    const store = yield* Store.Store
    const names = [uniqueName("model-0"), uniqueName("model-1")]
    const rows = new Map<number, Row>()
    let step = 0
    const valid = (row: Row | undefined): boolean => row !== undefined && row.expiresAt > step
    const expiry = (short: boolean) => short ? step + 1 : Number.MAX_SAFE_INTEGER
    const ttl = (short: boolean) => short ? timing.short : timing.long
    const agrees = (lease: Lease.Lease, row: Row) =>
      lease.holder === row.holder && lease.fence === row.fence &&
      Lease.isExpired(lease) === !valid(row) &&
      JSON.stringify(lease.payload === null ? null : Array.from(lease.payload)) ===
        JSON.stringify(row.payload === null ? null : Array.from(row.payload))

    for (const [i, c] of commands.entries()) {
      switch (c.op) {
        case "elapse": {
          yield* timing.elapse(timing.pastShort)
          step++
          break
        }
        case "acquire": {
          const identity = `w${c.who}`
          const payload = c.payload === null ? null : new Uint8Array([c.payload])
          const lease = yield* store.acquire(names[c.name]!, identity, ttl(c.short), payload)
          const row = rows.get(c.name)
          if (!valid(row)) {
            rows.set(c.name, { holder: identity, fence: (row?.fence ?? 0n) + 1n, payload, expiresAt: expiry(c.short) })
          } else if (row!.holder === identity) {
            rows.set(c.name, { ...row!, payload, expiresAt: expiry(c.short) })
          }
          const now = rows.get(c.name)!
          if (!agrees(lease, now)) {
            return yield* mismatch(
              commands,
              i,
              lease,
              `an acquire answers the election's lease: ${expected(now, step)}`
            )
          }
          break
        }
        case "renew": {
          const identity = `w${c.who}`
          const row = rows.get(c.name)
          const fence = (row?.fence ?? 1n) + BigInt(c.fenceDelta)
          const result = yield* Effect.either(store.renew(names[c.name]!, identity, fence, ttl(c.short), null))
          if (valid(row) && row!.holder === identity && row!.fence === fence) {
            rows.set(c.name, { ...row!, payload: null, expiresAt: expiry(c.short) })
            const now = rows.get(c.name)!
            if (!(Either.isRight(result) && agrees(result.right, now))) {
              return yield* mismatch(
                commands,
                i,
                Either.merge(result),
                `the holder's renewal succeeds: ${expected(now, step)}`
              )
            }
          } else if (!(Either.isLeft(result) && result.left._tag === "LeaseLost")) {
            return yield* mismatch(
              commands,
              i,
              Either.merge(result),
              "LeaseLost: the renewal's guard (holder, fence, lease not expired) does not match"
            )
          }
          break
        }
        case "release": {
          const identity = `w${c.who}`
          const row = rows.get(c.name)
          const fence = (row?.fence ?? 1n) + BigInt(c.fenceDelta)
          yield* store.release(names[c.name]!, identity, fence)
          if (valid(row) && row!.holder === identity && row!.fence === fence) {
            rows.set(c.name, { ...row!, expiresAt: step })
          }
          break
        }
        case "inspect": {
          const row = rows.get(c.name)
          const result = yield* Effect.either(store.inspect(names[c.name]!))
          if (
            row === undefined
              ? !(Either.isLeft(result) && result.left._tag === "NoLease")
              : !(Either.isRight(result) && agrees(result.right, row))
          ) {
            return yield* mismatch(
              commands,
              i,
              Either.merge(result),
              row === undefined ? "NoLease: nothing was acquired in this election" : `the lease: ${expected(row, step)}`
            )
          }
          break
        }
      }
    }
  })

/** The operation-level model, as one property over command sequences. */
export const modelCase = (harness: StoreHarness): Case => {
  const { long, pastShort, short } = timing(harness.live)
  const elapse = (d: Duration.Duration) => harness.live ? Effect.sleep(d) : TestClock.adjust(d)
  const body = Effect.gen(function*() {
    const details = yield* Effect.promise(() =>
      fc.check(
        fc.asyncProperty(modelCommands, (commands) => {
          const run = runModel(commands, { short, pastShort, long, elapse }).pipe(
            Effect.provide(harness.layer),
            Effect.scoped
          )
          // What the property throws is what fast-check reports: the violation itself.
          return Effect.runPromiseExit(harness.live ? run : Effect.provide(run, TestContext.TestContext)).then(
            (exit) => {
              if (Exit.isFailure(exit)) throw Cause.squash(exit.cause)
            }
          )
        }),
        { numRuns: harness.modelRuns ?? defaultModelRuns(harness.live) }
      )
    )
    if (!details.failed) return
    const error = details.errorInstance
    const found = error instanceof ContractViolation ? error : undefined
    const shrunk =
      `(the shortest failing sequence found, after ${details.numRuns} run(s) and ${details.numShrinks} shrink(s))`
    return yield* Effect.fail(
      new ContractViolation({
        operation: `${found?.operation ?? `the sequence ${show(details.counterexample?.[0])}`} ${shrunk}`,
        answered: found?.answered ?? show(error),
        requires: found?.requires ?? "an answer: the model needs every call but renew's LeaseLost to succeed"
      })
    )
  })
  return { name: "operation-level model of the contract", model: true, body }
}
