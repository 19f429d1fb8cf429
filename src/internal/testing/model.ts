/**
 * An operation-level model of the store contract: a sequence of acquire,
 * renew, release, inspect and "time passes" commands is run against a real
 * store and against a few lines of reference semantics, and every answer must
 * agree. Time in the model is counted in steps: a short lease lives less than
 * one step, a long one outlives every run.
 */
import type { Duration } from "effect"
import { Effect, Either } from "effect"
import * as fc from "fast-check"
import * as Lease from "../../Lease.js"
import * as Store from "../../Store.js"
import { uniqueName } from "./suite.js"

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

const check = (condition: boolean, what: string, commands: ReadonlyArray<Command>, i: number) =>
  condition
    ? Effect.void
    : Effect.die(new Error(`model mismatch at command ${i} (${what}): ${JSON.stringify(commands)}`))

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
          yield* check(agrees(lease, rows.get(c.name)!), "acquire", commands, i)
          break
        }
        case "renew": {
          const identity = `w${c.who}`
          const row = rows.get(c.name)
          const fence = (row?.fence ?? 1n) + BigInt(c.fenceDelta)
          const result = yield* Effect.either(store.renew(names[c.name]!, identity, fence, ttl(c.short), null))
          if (valid(row) && row!.holder === identity && row!.fence === fence) {
            rows.set(c.name, { ...row!, payload: null, expiresAt: expiry(c.short) })
            yield* check(Either.isRight(result) && agrees(result.right, rows.get(c.name)!), "renew", commands, i)
          } else {
            yield* check(Either.isLeft(result) && result.left._tag === "LeaseLost", "renew refused", commands, i)
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
          yield* check(
            row === undefined
              ? Either.isLeft(result) && result.left._tag === "NoLease"
              : Either.isRight(result) && agrees(result.right, row),
            "inspect",
            commands,
            i
          )
          break
        }
      }
    }
  })
