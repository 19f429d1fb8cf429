/**
 * How the acceptance suite talks to a store author. Every store call a case
 * makes goes through a {@link Probe}, which keeps each call (written out as
 * the call it was), what the store answered, and when time passed. A rule
 * that does not hold throws a {@link Requirement} naming what the contract
 * requires; the case's runner puts the two together into a
 * {@link ContractViolation}: the call that broke the rule and its answer
 * (the write before the read that noticed, when a read noticed), the rule,
 * and the case's calls in order, with bigints, dates and bytes printed as
 * they are.
 *
 * Nothing here imports vitest: the suite runs in a plain node script too.
 */
import { Cause, Data, Duration, Effect, Exit } from "effect"
import { inspect, isDeepStrictEqual } from "node:util"
import * as Lease from "../../Lease.js"
import type * as Store from "../../Store.js"

/** A value as a store author reads it: `1n`, dates in ISO, bytes as bytes, durations as durations. */
export const show = (value: unknown): string =>
  inspect(readable(value), { depth: 5, breakLength: Infinity, compact: true, maxArrayLength: 12, maxStringLength: 120 })

/** {@link show}, shorter: for one line of a list of calls. */
const glance = (value: unknown): string =>
  inspect(readable(value), { depth: 3, breakLength: Infinity, compact: true, maxArrayLength: 4, maxStringLength: 48 })

/** Durations as `2s`, tagged errors as `LeaseLost { name, identity, fence }`, through arrays and plain objects. */
const readable = (value: unknown): unknown => {
  if (Duration.isDuration(value)) return { [inspect.custom]: () => Duration.format(value) }
  if (Array.isArray(value)) return value.map(readable)
  if (typeof value !== "object" || value === null) return value
  const prototype = Object.getPrototypeOf(value)
  const tag = (value as { readonly _tag?: unknown })._tag
  if (value instanceof Error && typeof tag === "string") {
    const { _tag: _, ...fields } = value as unknown as Record<string, unknown>
    return { [inspect.custom]: () => `${tag} ${show(fields)}` }
  }
  if (prototype !== Object.prototype && prototype !== null) return value
  return Object.fromEntries(Object.entries(value).map(([key, field]) => [key, readable(field)]))
}

/**
 * A rule of the contract that did not hold; the runner adds the calls it is
 * about. `ownCall` when the rule is about the last call's own answer (it
 * should have been refused), not about what earlier calls left behind.
 */
export class Requirement extends Error {
  constructor(readonly requires: string, readonly ownCall = false) {
    super(requires)
  }
}

/** The case cannot run: the store lacks an optional operation. */
export class Skipped extends Data.TaggedError("Skipped")<{ readonly reason: string }> {}

/**
 * A case that failed: the store call that broke the rule and its answer,
 * the read that noticed (when that is a later call), the rule, and the
 * case's calls in order.
 */
export class ContractViolation extends Data.TaggedError("ContractViolation")<{
  readonly operation: string
  readonly answered: string
  /** The read that showed the rule broken, with its answer, when it is not `operation` itself. */
  readonly noticed: string | undefined
  readonly requires: string
  /** What `calls` are (a case's, a model sequence's). */
  readonly history: string
  /** The latest calls, in order, one line each. */
  readonly calls: ReadonlyArray<string>
  /** How many calls came before those listed. */
  readonly earlier: number
}> {
  override get message(): string {
    return [
      this.operation,
      `  answered: ${this.answered}`,
      ...(this.noticed === undefined ? [] : [`  then ${this.noticed}`]),
      `  the contract requires: ${this.requires}`,
      `  ${this.history}${
        this.earlier === 0 ? "" : ` (the last ${this.calls.length} of ${this.calls.length + this.earlier})`
      }:`,
      ...this.calls.map((call) => `    ${call}`)
    ].join("\n")
  }
}

/**
 * How a call bears on a rule: a write changes the record (acquire, renew,
 * release, a slot's claim or completion, a candidacy), a read only shows it
 * (inspect, a job's last slot).
 */
export type CallKind = "write" | "read"

/** A call as the rule's message shows it, and as one line of the list of calls. */
export interface CallText {
  readonly operation: string
  readonly line: string
}

/** `name(arguments)`, the arguments as they were passed, durations and bigints included. */
export const callText = (name: string, args: ReadonlyArray<unknown>): CallText => ({
  operation: `${name}(${args.map(show).join(", ")})`,
  line: `${name}(${args.map(glance).join(", ")})`
})

interface Entry extends CallText {
  readonly kind: CallKind | "time"
  answered: string
  brief: string
}

/** How many of a case's calls its failure lists, the latest last. */
const listed = 12

/** Every store call of a case, in order, and how each was answered. */
export class Probe {
  private readonly entries: Array<Entry> = []
  private muted = 0

  /** Records `effect` as the call `text`, and its outcome as the answer. */
  call<A, E>(
    text: CallText,
    kind: CallKind,
    effect: Effect.Effect<A, E>,
    describe?: (value: A) => string
  ): Effect.Effect<A, E> {
    return Effect.suspend(() => {
      if (this.muted > 0) return effect
      const entry: Entry = { ...text, kind, answered: "(no answer yet)", brief: "(no answer yet)" }
      this.entries.push(entry)
      return Effect.onExit(effect, (exit) =>
        Effect.sync(() => {
          entry.answered = outcome(exit, describe ?? show, show)
          entry.brief = outcome(exit, describe ?? brief, brief)
        }))
    })
  }

  /** Records the calls `effect` makes as the one call `operation`: what they did together. */
  together<A, E>(operation: string, effect: Effect.Effect<A, E>, describe: (value: A) => string) {
    const quiet = Effect.acquireUseRelease(
      Effect.sync(() => this.muted++),
      () => effect,
      () => Effect.sync(() => this.muted--)
    )
    return this.call({ operation, line: operation }, "write", quiet, describe)
  }

  /** Records that `d` passed on the store's clock. */
  elapsed(d: Duration.Duration): void {
    this.happened(`time passes: ${Duration.format(d)}`)
  }

  /** Records something that happened to the store between calls, in parentheses. */
  happened(what: string): void {
    const line = `(${what})`
    this.entries.push({ operation: line, line, kind: "time", answered: "", brief: "" })
  }

  /** What a case's failure means, in the store's terms. */
  explain(cause: Cause.Cause<unknown>, history = "the case's store calls, in order"): Cause.Cause<unknown> {
    if (Cause.isInterruptedOnly(cause)) return cause
    const defect = Cause.dieOption(cause)
    if (defect._tag === "Some" && defect.value instanceof Requirement) {
      return Cause.fail(this.violation(defect.value, history))
    }
    const failure = Cause.failureOption(cause)
    if (failure._tag === "Some" && failure.value instanceof Skipped) return cause
    // A call the case needed to succeed failed or died.
    return Cause.fail(
      this.violation(new Requirement("an answer: the case needs this call to succeed here", true), history)
    )
  }

  private violation(requirement: Requirement, history: string): ContractViolation {
    const calls = this.entries.filter((e) => e.kind !== "time")
    const last = calls.at(-1)
    // A read is where a broken rule shows, seldom where it broke: lead with the write before it.
    const culprit = last?.kind === "read" && !requirement.ownCall
      ? calls.slice().reverse().find((e) => e.kind === "write")
      : undefined
    const blamed = culprit ?? last
    const shown = this.entries.slice(-listed)
    return new ContractViolation({
      operation: blamed?.operation ?? "(before any store call)",
      answered: blamed?.answered ?? "(nothing yet)",
      noticed: culprit === undefined ? undefined : `${last!.operation} answered: ${last!.answered}`,
      requires: requirement.requires,
      history,
      calls: shown.map((e) => e.kind === "time" ? e.line : `${e.line} → ${e.brief}`),
      earlier: this.entries.length - shown.length
    })
  }
}

const outcome = <A>(
  exit: Exit.Exit<A, unknown>,
  value: (value: A) => string,
  error: (error: unknown) => string
): string =>
  Exit.match(exit, {
    onSuccess: (a) => a === undefined ? "done" : value(a),
    onFailure: (cause) => {
      const failure = Cause.failureOption(cause)
      if (failure._tag === "Some") return `failed with ${error(failure.value)}`
      const defect = Cause.dieOption(cause)
      return defect._tag === "Some" ? `died with ${show(defect.value)}` : "interrupted"
    }
  })

const isLease = (value: unknown): value is Lease.Lease =>
  typeof value === "object" && value !== null && typeof (value as Lease.Lease).fence === "bigint" &&
  (value as Lease.Lease).expiresAt instanceof Date && (value as Lease.Lease).now instanceof Date

/** An answer in a few words, for the list of a case's calls: a lease by its holder, fence and expiry. */
const brief = (value: unknown): string => {
  if (isLease(value)) {
    const expiry = Lease.isExpired(value) ? "expired" : `expires in ${Duration.format(Lease.ttl(value))}`
    const payload = value.payload === null ? "" : `, payload ${glance(value.payload)}`
    const incarnation = value.incarnation === undefined ? "" : ` (incarnation ${glance(value.incarnation)})`
    return `holder ${glance(value.holder)}${incarnation}, fence ${show(value.fence)}${payload}, ${expiry}`
  }
  const tag = typeof value === "object" && value !== null ? (value as { readonly _tag?: unknown })._tag : undefined
  if (value instanceof Error && typeof tag === "string") return tag
  const text = glance(value)
  return text.length > 100 ? `${text.slice(0, 99)}…` : text
}

/** A store whose every call is recorded on `probe`. */
export const traced = (store: Store.StoreShape, probe: Probe): Store.StoreShape => {
  const via =
    <P extends ReadonlyArray<unknown>, A, E>(op: string, kind: CallKind, f: (...a: P) => Effect.Effect<A, E>) =>
    (...a: P) => probe.call(callText(op, a), kind, f(...a))
  const { advertise, slots, withdraw } = store
  return {
    ...store,
    acquire: via("acquire", "write", store.acquire),
    renew: via("renew", "write", store.renew),
    release: via("release", "write", store.release),
    inspect: via("inspect", "read", store.inspect),
    ...(slots === undefined ? {} : {
      slots: {
        claim: via("slots.claim", "write", slots.claim),
        complete: via("slots.complete", "write", slots.complete),
        last: via("slots.last", "read", slots.last)
      }
    }),
    ...(advertise === undefined ? {} : { advertise: via("advertise", "write", advertise) }),
    ...(withdraw === undefined ? {} : { withdraw: via("withdraw", "write", withdraw) })
  }
}

/** Deep equality, bytes compared as bytes (a driver may hand back a Buffer for a Uint8Array). */
const same = (actual: unknown, expected: unknown): boolean =>
  actual instanceof Uint8Array && expected instanceof Uint8Array
    ? Buffer.compare(actual, expected) === 0
    : isDeepStrictEqual(actual, expected)

/** Partial deep match: every field `expected` names has the value it gives, recursively for plain objects. */
const matches = (actual: unknown, expected: object): boolean =>
  typeof actual === "object" && actual !== null &&
  Object.entries(expected).every(([key, value]) => {
    const field = (actual as Record<string, unknown>)[key]
    return typeof value === "object" && value !== null && Object.getPrototypeOf(value) === Object.prototype
      ? matches(field, value)
      : same(field, value)
  })

/**
 * A rule about `actual`, read as `rule: <what> (got <actual>)` when it
 * fails. Each check throws a {@link Requirement}, which the case's runner
 * turns into a {@link ContractViolation}.
 */
export const rule = <A>(text: string, actual: A) => {
  const holds = (ok: boolean, what: string, got: unknown = actual): void => {
    if (!ok) throw new Requirement(`${text}: ${what} (got ${show(got)})`)
  }
  /** Of an object, the fields a partial match names: what the reader compares. */
  const picked = (expected: object): unknown =>
    typeof actual === "object" && actual !== null
      ? Object.fromEntries(Object.keys(expected).map((key) => [key, (actual as Record<string, unknown>)[key]]))
      : actual
  const number = (value: A): number => value instanceof Date ? value.getTime() : Number(value)
  return {
    is: (expected: A) => holds(same(actual, expected), show(expected)),
    matches: (expected: object) => holds(matches(actual, expected), show(expected), picked(expected)),
    atLeast: (bound: number) => holds(number(actual) >= bound, `at least ${bound}`),
    above: (bound: number) => holds(number(actual) > bound, `more than ${bound}`),
    atMost: (bound: number) => holds(number(actual) <= bound, `at most ${bound}`),
    below: (bound: number) => holds(number(actual) < bound, `less than ${bound}`)
  }
}

/**
 * `call` must fail with `tag`; returns the error. A success or another
 * error breaks `text`.
 */
export const refuses = <A, E extends { readonly _tag: string }, Tag extends E["_tag"]>(
  call: Effect.Effect<A, E>,
  tag: Tag,
  text: string
): Effect.Effect<Extract<E, { readonly _tag: Tag }>> =>
  Effect.matchEffect(call, {
    onFailure: (error) =>
      error._tag === tag
        ? Effect.succeed(error as Extract<E, { readonly _tag: Tag }>)
        : Effect.die(new Requirement(`${text}: fail with ${tag}`, true)),
    onSuccess: () => Effect.die(new Requirement(`${text}: fail with ${tag}`, true))
  })
