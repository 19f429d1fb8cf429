/**
 * The documented limits of `Lease` (`maxNameBytes`, `maxIdentityBytes`,
 * `maxPayloadBytes`, `minDuration`, `maxDuration`), checked in one place: by
 * the elector's config, by the stores' options, and, through {@link enforce},
 * at the boundary of every store, so that no store accepts what another one
 * would refuse, truncate or corrupt.
 *
 * Each check takes `unknown`: plain JavaScript can pass anything.
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import { InvalidConfig } from "../../ElectorError.js"
import * as Lease from "../../Lease.js"
import type { Operation, StoreError, StoreShape } from "../../Store.js"

const loneSurrogate = /\p{Cs}/u

/** `Store.maxVersionBytes`, which is this: the limits live beneath the public modules that name them. */
export const maxVersionBytes = 255

/** What a value is, for a message, without ever throwing. */
export const kind = (u: unknown): string =>
  Predicate.isNullable(u)
    ? String(u)
    : Array.isArray(u)
    ? "an array"
    : `${/^[aeiou]/.test(typeof u) ? "an" : "a"} ${typeof u}`

/** `1.5s`, or `0.5ms` below a millisecond. */
export const formatDuration = (d: Duration.Duration): string => {
  const millis = Duration.toMillis(d)
  return millis === 0 || millis >= 1 ? `${Number((millis / 1000).toFixed(3))}s` : `${millis}ms`
}

const show = (input: unknown): string =>
  Predicate.isString(input)
    ? JSON.stringify(input)
    : Predicate.isBigInt(input)
    ? `${input}n`
    : Duration.isDuration(input)
    ? formatDuration(input)
    : Array.isArray(input)
    ? `[${input.map((u) => show(u)).join(", ")}]`
    : Predicate.isNumber(input) || Predicate.isBoolean(input) || Predicate.isNullable(input)
    ? String(input)
    : kind(input)

const refuse = (field: string, reason: string) => Either.left(new InvalidConfig({ field, reason }))

/**
 * A name or identity: a non-empty string of well-formed Unicode without NUL
 * (PostgreSQL cannot store NUL in `text`; a lone surrogate would be sent as
 * U+FFFD and name another election), at most `maxBytes` bytes of UTF-8.
 */
export const text = (field: string, value: unknown, maxBytes: number): Either.Either<string, InvalidConfig> => {
  if (!Predicate.isString(value)) return refuse(field, `must be a string, got ${kind(value)}`)
  if (value.length === 0) return refuse(field, "must not be empty")
  if (value.includes("\u0000")) return refuse(field, "must not contain a NUL character")
  if (loneSurrogate.test(value)) return refuse(field, "must be well-formed Unicode (it contains a lone surrogate)")
  const bytes = Buffer.byteLength(value, "utf8")
  return bytes > maxBytes
    ? refuse(field, `must be at most ${maxBytes} bytes of UTF-8, got ${bytes}`)
    : Either.right(value)
}

/** An election name, within {@link Lease.maxNameBytes}. */
export const name = (value: unknown, field = "name"): Either.Either<string, InvalidConfig> =>
  text(field, value, Lease.maxNameBytes)

/** An identity, within {@link Lease.maxIdentityBytes}. */
export const identity = (value: unknown, field = "identity"): Either.Either<string, InvalidConfig> =>
  text(field, value, Lease.maxIdentityBytes)

/** An incarnation: absent, or printable ASCII within {@link Lease.maxIncarnationBytes}. */
export const incarnation = (value: unknown): Either.Either<string | undefined, InvalidConfig> =>
  value === undefined ? Either.right(undefined) : !Predicate.isString(value) || !/^[\x21-\x7e]{1,64}$/.test(value)
    ? refuse("incarnation", `must be 1 to ${Lease.maxIncarnationBytes} printable ASCII characters, got ${kind(value)}`)
    : Either.right(value)

/** Bytes or null, within {@link Lease.maxPayloadBytes}. A string is refused, not encoded. */
export const payload = (value: unknown, field = "payload"): Either.Either<Uint8Array | null, InvalidConfig> =>
  value === null
    ? Either.right(null)
    : !Predicate.isUint8Array(value)
    ? refuse(field, `must be a Uint8Array or null, got ${kind(value)}`)
    : value.byteLength > Lease.maxPayloadBytes
    ? refuse(field, `must be at most ${Lease.maxPayloadBytes} bytes, got ${value.byteLength}`)
    : Either.right(value)

const decode = (input: unknown): Option.Option<Duration.Duration> =>
  (Predicate.isNumber(input) && !Number.isFinite(input)) ||
    (Array.isArray(input) && !input.every((part) => Predicate.isNumber(part) && Number.isFinite(part)))
    ? Option.none()
    : Duration.decodeUnknown(input)

/**
 * A duration between `min` (default {@link Lease.minDuration}) and
 * {@link Lease.maxDuration}: Effect's clock never fires a longer sleep.
 */
export const duration = (
  field: string,
  input: unknown,
  min: Duration.Duration = Lease.minDuration
): Either.Either<Duration.Duration, InvalidConfig> =>
  Option.match(decode(input), {
    onNone: () => refuse(field, `${show(input)} is not a duration`),
    onSome: (d) =>
      !Duration.isFinite(d)
        ? refuse(field, "must be finite")
        : Duration.lessThanOrEqualTo(d, Duration.zero)
        ? refuse(field, `must be positive, got ${show(input)}`)
        : Duration.lessThan(d, min)
        ? refuse(field, `must be at least ${Duration.toMillis(min)}ms, got ${show(input)}`)
        : Duration.greaterThan(d, Lease.maxDuration)
        ? refuse(
          field,
          `must be at most ${
            Duration.toMillis(Lease.maxDuration)
          }ms (about 24.8 days, the longest timer Node.js can set), got ${show(input)}`
        )
        : Either.right(d)
  })

/** A job name: the same limits as an election name. */
export const job = (value: unknown): Either.Either<string, InvalidConfig> => text("job", value, Lease.maxNameBytes)

/** A slot instant: a valid `Date`. */
const instant = (value: unknown): Either.Either<Date, InvalidConfig> =>
  Predicate.isDate(value) && Number.isFinite(value.getTime())
    ? Either.right(value)
    : refuse("at", `must be a valid Date, got ${kind(value)}`)
/** A candidacy's priority: an integer PostgreSQL's and MySQL's `integer` hold. */
export const priority = (value: unknown, field = "priority"): Either.Either<number, InvalidConfig> =>
  Number.isSafeInteger(value) && (value as number) >= -2_147_483_648 && (value as number) <= 2_147_483_647
    ? Either.right(value as number)
    : refuse(field, `must be an integer from -2147483648 to 2147483647, got ${show(value)}`)

/** A candidacy's version, or null. */
export const version = (value: unknown, field = "version"): Either.Either<string | null, InvalidConfig> =>
  value === null ? Either.right(null) : text(field, value, maxVersionBytes)

/** What is wrong with a checked value, if anything. */
const problem = (check: Either.Either<unknown, InvalidConfig>): InvalidConfig | undefined =>
  Either.isLeft(check) ? check.left : undefined

/** How many passed strings a {@link remembering} check keeps before it starts over. */
const remembered = 10_000

/**
 * `check`, which remembers the strings it passed: a store's calls carry the
 * same few names and identities again and again, and checking one again (a
 * scan for lone surrogates, a byte count) would be most of what guarding a
 * call costs. It starts over once it holds {@link remembered}, so that a
 * stream of distinct names cannot grow it.
 */
const remembering = (check: (value: unknown) => Either.Either<string, InvalidConfig>) => {
  const passed = new Set<unknown>()
  return (value: unknown): InvalidConfig | undefined => {
    if (passed.has(value)) return undefined
    const checked = check(value)
    if (Either.isLeft(checked)) return checked.left
    if (passed.size >= remembered) passed.clear()
    passed.add(value)
    return undefined
  }
}

/** The candidate operations of `store`, guarded, when it has them. */
const candidates = (
  store: StoreShape,
  guard: <A, E>(
    operation: Operation,
    invalid: InvalidConfig | undefined,
    call: () => Effect.Effect<A, E>
  ) => Effect.Effect<A, E | StoreError>,
  checked: Checks
): Pick<StoreShape, "advertise" | "withdraw"> => {
  const { advertise, withdraw } = store
  return advertise === undefined || withdraw === undefined ? {} : {
    advertise: (n, i, c, ttl) =>
      guard(
        "advertise",
        checked.name(n) ?? checked.identity(i) ?? problem(priority(c.priority)) ?? problem(version(c.version)),
        () => advertise(n, i, c, ttl)
      ),
    withdraw: (n, i) => guard("withdraw", checked.name(n) ?? checked.identity(i), () => withdraw(n, i))
  }
}

/** The checks of names and identities, remembering what passed. */
interface Checks {
  readonly name: (value: unknown) => InvalidConfig | undefined
  readonly identity: (value: unknown) => InvalidConfig | undefined
}

/**
 * Holds a store to the documented limits: a call whose name, identity or
 * payload is outside them fails with the error `refused` makes of the
 * {@link InvalidConfig} (`Store.enforceLimits`: a fatal `StoreError`) before
 * it reaches the store.
 */
export const enforce = <S extends StoreShape>(
  store: S,
  refused: (operation: Operation, invalid: InvalidConfig) => StoreError
): S => {
  const guard = <A, E>(
    operation: Operation,
    invalid: InvalidConfig | undefined,
    call: () => Effect.Effect<A, E>
  ): Effect.Effect<A, E | StoreError> => invalid === undefined ? call() : Effect.fail(refused(operation, invalid))
  const checked: Checks = { name: remembering((u) => name(u)), identity: remembering((u) => identity(u)) }
  const slots = store.slots
  return {
    ...store,
    ...(slots === undefined ? {} : {
      slots: {
        claim: (n, i, fence, j, at, reclaim) =>
          guard(
            "claimSlot",
            checked.name(n) ?? checked.identity(i) ?? problem(job(j)) ?? problem(instant(at)),
            () => slots.claim(n, i, fence, j, at, reclaim)
          ),
        complete: (n, i, fence, j, at) =>
          guard(
            "completeSlot",
            checked.name(n) ?? checked.identity(i) ?? problem(job(j)) ?? problem(instant(at)),
            () => slots.complete(n, i, fence, j, at)
          ),
        last: (n, j) => guard("lastSlot", checked.name(n) ?? problem(job(j)), () => slots.last(n, j))
      }
    }),
    acquire: (n, i, ttl, p, incarnation_) =>
      guard(
        "acquire",
        checked.name(n) ?? checked.identity(i) ?? problem(payload(p)) ?? problem(incarnation(incarnation_)),
        () => store.acquire(n, i, ttl, p, incarnation_)
      ),
    renew: (n, i, fence, ttl, p) =>
      guard(
        "renew",
        checked.name(n) ?? checked.identity(i) ?? problem(payload(p)),
        () => store.renew(n, i, fence, ttl, p)
      ),
    release: (n, i, fence) =>
      guard("release", checked.name(n) ?? checked.identity(i), () => store.release(n, i, fence)),
    inspect: (n) => guard("inspect", checked.name(n), () => store.inspect(n)),
    ...candidates(store, guard, checked)
  }
}
