/**
 * How the acceptance suite talks to a store author. Every store call a case
 * makes goes through a {@link Probe}, which keeps the last call (written out
 * as the call it was) and what the store answered. A rule that does not hold
 * throws a {@link Requirement} naming what the contract requires; the case's
 * runner puts the two together into a {@link ContractViolation}: the
 * operation, the answer and the rule, with bigints, dates and bytes printed
 * as they are.
 *
 * Nothing here imports vitest: the suite runs in a plain node script too.
 */
import { Cause, Data, Duration, Effect, Exit } from "effect"
import { inspect, isDeepStrictEqual } from "node:util"
import type * as Store from "../../Store.js"

/** A value as a store author reads it: `1n`, dates in ISO, bytes as bytes, durations as durations. */
export const show = (value: unknown): string =>
  inspect(readable(value), { depth: 5, breakLength: Infinity, compact: true, maxArrayLength: 12, maxStringLength: 120 })

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

/** A rule of the contract that did not hold; the runner adds the call and the answer it is about. */
export class Requirement extends Error {
  constructor(readonly requires: string) {
    super(requires)
  }
}

/** The case cannot run: the store lacks an optional operation. */
export class Skipped extends Data.TaggedError("Skipped")<{ readonly reason: string }> {}

/** A case that failed: the store's call, its answer, and the rule it broke. */
export class ContractViolation extends Data.TaggedError("ContractViolation")<{
  readonly operation: string
  readonly answered: string
  readonly requires: string
}> {
  override get message(): string {
    return `${this.operation}\n  answered: ${this.answered}\n  the contract requires: ${this.requires}`
  }
}

/** The last store call of a case, and its answer. */
export class Probe {
  operation = "(before any store call)"
  answered = "(nothing yet)"

  /** Records `effect` as the call `operation`, and its outcome as the answer. */
  call<A, E>(operation: string, effect: Effect.Effect<A, E>): Effect.Effect<A, E> {
    return Effect.suspend(() => {
      this.operation = operation
      this.answered = "(no answer yet)"
      return Effect.onExit(effect, (exit) => Effect.sync(() => (this.answered = outcome(exit))))
    })
  }

  /** Records what several calls did together, for a rule about all of them. */
  note(operation: string, answered: string): void {
    this.operation = operation
    this.answered = answered
  }

  /** What a case's failure means, in the store's terms. */
  explain(cause: Cause.Cause<unknown>): Cause.Cause<unknown> {
    if (Cause.isInterruptedOnly(cause)) return cause
    const defect = Cause.dieOption(cause)
    if (defect._tag === "Some" && defect.value instanceof Requirement) {
      return Cause.fail(this.violation(defect.value.requires))
    }
    const failure = Cause.failureOption(cause)
    if (failure._tag === "Some" && failure.value instanceof Skipped) return cause
    // A call the case needed to succeed failed or died.
    return Cause.fail(this.violation("an answer: the case needs this call to succeed here"))
  }

  private violation(requires: string): ContractViolation {
    return new ContractViolation({ operation: this.operation, answered: this.answered, requires })
  }
}

const outcome = (exit: Exit.Exit<unknown, unknown>): string =>
  Exit.match(exit, {
    onSuccess: (value) => value === undefined ? "done" : show(value),
    onFailure: (cause) => {
      const failure = Cause.failureOption(cause)
      if (failure._tag === "Some") return `failed with ${show(failure.value)}`
      const defect = Cause.dieOption(cause)
      return defect._tag === "Some" ? `died with ${show(defect.value)}` : "interrupted"
    }
  })

/** The arguments of a call as they were passed, durations and bigints included. */
const args = (values: ReadonlyArray<unknown>) => values.map(show).join(", ")

/** A store whose every call is recorded on `probe`. */
export const traced = (store: Store.StoreShape, probe: Probe): Store.StoreShape => {
  const via = <P extends ReadonlyArray<unknown>, A, E>(op: string, f: (...a: P) => Effect.Effect<A, E>) => (...a: P) =>
    probe.call(`${op}(${args(a)})`, f(...a))
  const { advertise, slots, withdraw } = store
  return {
    ...store,
    acquire: via("acquire", store.acquire),
    renew: via("renew", store.renew),
    release: via("release", store.release),
    inspect: via("inspect", store.inspect),
    ...(slots === undefined ? {} : {
      slots: {
        claim: via("slots.claim", slots.claim),
        complete: via("slots.complete", slots.complete),
        last: via("slots.last", slots.last)
      }
    }),
    ...(advertise === undefined ? {} : { advertise: via("advertise", advertise) }),
    ...(withdraw === undefined ? {} : { withdraw: via("withdraw", withdraw) })
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
        : Effect.die(new Requirement(`${text}: fail with ${tag}`)),
    onSuccess: () => Effect.die(new Requirement(`${text}: fail with ${tag}`))
  })
