/**
 * An operation-level model of the store contract: a sequence of acquire,
 * renew, release, inspect and "time passes" commands is run against a real
 * store and against a few lines of reference semantics, and every answer must
 * agree. Time in the model is counted in steps: a short lease lives less than
 * one step, a long one outlives every run.
 *
 * Commands are the store's calls in the store's words (an election, a
 * holder identity, a fence relative to the record's), so that a failure reads
 * as the calls the store was given: the session records them (see `Probe`).
 *
 * The reference is the contract of 0.2 when the store keeps incarnations
 * (acquires then come under one of two incarnations, or none), and, when the
 * harness can make records look written by another server, a command does
 * that to every record, whose next claim holds the lease back.
 */
import { Cause, Effect, Either, Exit, TestContext } from "effect"
import * as fc from "effect/FastCheck"
import * as Lease from "../../Lease.js"
import { ContractViolation, Requirement, show } from "./contract.js"
import { type Case, defaultModelRuns, type Session, type StoreHarness, uniqueName, withSession } from "./suite/kit.js"

/** One of a run's two elections. */
type Election = 0 | 1
type Identity = "a" | "b" | "c"
/** Two processes of one identity, or a call without an incarnation (a tool's). */
type Incarnation = "1" | "2" | undefined
/** A short lease expires within one "time passes"; a long one outlives the run. */
type Ttl = "short" | "long"
/**
 * The fence a renewal or release passes: the record's (1 when there is
 * none), the one before it, or the one after.
 */
type Fence = "stale" | "current" | "future"

export type Command =
  | {
    readonly op: "acquire"
    readonly election: Election
    readonly identity: Identity
    readonly ttl: Ttl
    readonly payload: number | null
    /** Passed only to a store that keeps incarnations. */
    readonly incarnation: Incarnation
  }
  | {
    readonly op: "renew"
    readonly election: Election
    readonly identity: Identity
    readonly fence: Fence
    readonly ttl: Ttl
  }
  | { readonly op: "release"; readonly election: Election; readonly identity: Identity; readonly fence: Fence }
  | { readonly op: "inspect"; readonly election: Election }
  | { readonly op: "elapse" }
  /** Every record now looks written by another server (the harness's `writtenElsewhere`). */
  | { readonly op: "elsewhere" }

// Skewed towards one election and two participants, so that contention and
// handovers happen in most runs rather than in a few.
const election = fc.constantFrom<Election>(0, 0, 0, 1)
const identity = fc.constantFrom<Identity>("a", "a", "b", "b", "c")
const fence = fc.constantFrom<Fence>("stale", "current", "current", "current", "future")
const ttl = fc.constantFrom<Ttl>("short", "long")
const incarnation = fc.constantFrom<Incarnation>("1", "1", "2", undefined)

const command = (elsewhere: boolean): fc.Arbitrary<Command> =>
  fc.oneof(
    {
      arbitrary: fc.record({
        op: fc.constant("acquire" as const),
        election,
        identity,
        ttl,
        payload: fc.option(fc.integer({ min: 0, max: 255 })),
        incarnation
      }),
      weight: 4
    },
    {
      arbitrary: fc.record({ op: fc.constant("renew" as const), election, identity, fence, ttl }),
      weight: 3
    },
    { arbitrary: fc.record({ op: fc.constant("release" as const), election, identity, fence }), weight: 2 },
    { arbitrary: fc.record({ op: fc.constant("inspect" as const), election }), weight: 2 },
    { arbitrary: fc.constant({ op: "elapse" as const }), weight: 2 },
    { arbitrary: fc.constant({ op: "elsewhere" as const }), weight: elsewhere ? 1 : 0 }
  )

/** Command sequences; with `elsewhere`, some make the records look written by another server. */
export const modelCommands = (elsewhere: boolean): fc.Arbitrary<ReadonlyArray<Command>> =>
  fc.array(command(elsewhere), { minLength: 1, maxLength: 14 })

interface Row {
  holder: string
  incarnation: Incarnation
  fence: bigint
  payload: Uint8Array | null
  /** The step at which the lease stops being valid. */
  expiresAt: number
  /** Written by another server than the one the store talks to now. */
  elsewhere: boolean
}

const fenceDelta = { stale: -1n, current: 0n, future: 1n } as const

/** What the reference semantics expect of a lease, as the contract words it. */
const expected = (row: Row, step: number) =>
  `holder ${show(row.holder)}, fence ${show(row.fence)}, payload ${
    show(row.payload === null ? null : Array.from(row.payload))
  }, ${row.expiresAt > step ? "valid" : "expired"}${
    row.incarnation === undefined ? "" : `, incarnation ${show(row.incarnation)}`
  }`

/** The store's last answer disagrees with the reference semantics. */
const mismatch = (requires: string) => Effect.die(new Requirement(requires))

export const runModel = (
  commands: ReadonlyArray<Command>,
  { elapse, long, pastShort, short, store, writtenElsewhere }: Session
) =>
  Effect.gen(function*() {
    const keeps = store.incarnations === true
    const names = [uniqueName("model-0"), uniqueName("model-1")]
    const rows = new Map<Election, Row>()
    let step = 0
    const valid = (row: Row | undefined): boolean => row !== undefined && row.expiresAt > step
    const expiry = (t: Ttl) => t === "short" ? step + 1 : Number.MAX_SAFE_INTEGER
    const duration = (t: Ttl) => t === "short" ? short : long
    const agrees = (lease: Lease.Lease, row: Row) =>
      lease.holder === row.holder && lease.fence === row.fence &&
      (!keeps || lease.incarnation === row.incarnation) &&
      Lease.isExpired(lease) === !valid(row) &&
      JSON.stringify(lease.payload === null ? null : Array.from(lease.payload)) ===
        JSON.stringify(row.payload === null ? null : Array.from(row.payload))

    for (const c of commands) {
      switch (c.op) {
        case "elapse": {
          yield* elapse(pastShort)
          step++
          break
        }
        case "acquire": {
          const payload = c.payload === null ? null : new Uint8Array([c.payload])
          const incarnation = keeps ? c.incarnation : undefined
          const name = names[c.election]!
          const lease = yield* incarnation === undefined
            ? store.acquire(name, c.identity, duration(c.ttl), payload)
            : store.acquire(name, c.identity, duration(c.ttl), payload, incarnation)
          const row = rows.get(c.election)
          const same = row !== undefined && row.holder === c.identity && row.incarnation === incarnation
          const begun = { expiresAt: expiry(c.ttl), elsewhere: false }
          if (row?.elsewhere === true) {
            if (!valid(row) || same) {
              rows.set(c.election, {
                holder: "",
                incarnation: undefined,
                fence: row.fence + Lease.fenceJump,
                payload: null,
                ...begun
              })
            }
          } else if (!valid(row)) {
            rows.set(c.election, { holder: c.identity, incarnation, fence: (row?.fence ?? 0n) + 1n, payload, ...begun })
          } else if (same) {
            rows.set(c.election, { ...row!, payload, expiresAt: expiry(c.ttl) })
          }
          const now = rows.get(c.election)!
          if (!agrees(lease, now)) {
            return yield* mismatch(`an acquire answers the election's lease: ${expected(now, step)}`)
          }
          break
        }
        case "renew": {
          const row = rows.get(c.election)
          const fence = (row?.fence ?? 1n) + fenceDelta[c.fence]
          const result = yield* Effect.either(store.renew(names[c.election]!, c.identity, fence, duration(c.ttl), null))
          if (valid(row) && row!.holder === c.identity && row!.fence === fence) {
            rows.set(c.election, { ...row!, payload: null, expiresAt: expiry(c.ttl), elsewhere: false })
            const now = rows.get(c.election)!
            if (!(Either.isRight(result) && agrees(result.right, now))) {
              return yield* mismatch(`the holder's renewal succeeds: ${expected(now, step)}`)
            }
          } else if (!(Either.isLeft(result) && result.left._tag === "LeaseLost")) {
            return yield* mismatch("LeaseLost: the renewal's guard (holder, fence, lease not expired) does not match")
          }
          break
        }
        case "release": {
          const row = rows.get(c.election)
          const fence = (row?.fence ?? 1n) + fenceDelta[c.fence]
          yield* store.release(names[c.election]!, c.identity, fence)
          if (valid(row) && row!.holder === c.identity && row!.fence === fence) {
            rows.set(c.election, { ...row!, expiresAt: step })
          }
          break
        }
        case "elsewhere": {
          // What the harness does to one record may reach others (a whole database's): it is done to all.
          for (const [e, row] of rows) {
            yield* writtenElsewhere!(names[e]!)
            row.elsewhere = true
          }
          break
        }
        case "inspect": {
          const row = rows.get(c.election)
          const result = yield* Effect.either(store.inspect(names[c.election]!))
          if (
            row === undefined
              ? !(Either.isLeft(result) && result.left._tag === "NoLease")
              : !(Either.isRight(result) && agrees(result.right, row))
          ) {
            return yield* mismatch(
              row === undefined ? "NoLease: nothing was acquired in this election" : `the lease: ${expected(row, step)}`
            )
          }
          break
        }
      }
    }
  })

const sequence = "the sequence's store calls"

/** The operation-level model, as one property over command sequences. */
export const modelCase = (harness: StoreHarness): Case => {
  const body = Effect.gen(function*() {
    const details = yield* Effect.promise(() =>
      fc.check(
        fc.asyncProperty(modelCommands(harness.writtenElsewhere !== undefined), (commands) => {
          const run = withSession(harness, (session) => runModel(commands, session), sequence)
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
    // Not a broken rule: the store's layer did not build.
    if (!(error instanceof ContractViolation)) return yield* Effect.fail(error)
    const { answered, calls, earlier, noticed, operation, requires } = error
    const shrunk = `the shortest failing one found, after ${details.numRuns} run(s) and ${details.numShrinks} shrink(s)`
    return yield* Effect.fail(
      new ContractViolation({
        operation,
        answered,
        noticed,
        requires,
        calls,
        earlier,
        history: `${sequence} (${shrunk})`
      })
    )
  })
  return { name: "operation-level model of the contract", model: true, body }
}
