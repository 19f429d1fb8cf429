/**
 * Which candidate a fleet prefers as its leader: the order `priority`,
 * `version` and `versionPolicy` define.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import type { ElectorConfig } from "../../Elector.js"
import { InvalidConfig } from "../../ElectorError.js"
import type { Candidacy, StoreShape } from "../../Store.js"

/** Where leadership goes during a rolling upgrade. */
export type VersionPolicy = "newer" | "older"

const segments = (version: string): ReadonlyArray<string> => version.split(/[.\-+]/)

/**
 * Orders versions segment by segment (split at `.`, `-` and `+`): numeric
 * segments as numbers, others as text, a numeric segment before a textual
 * one, a shorter version before a longer one it prefixes. `1.10.0` follows
 * `1.9.2`.
 */
export const compareVersions = (a: string, b: string): number => {
  const x = segments(a)
  const y = segments(b)
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const p = x[i]!
    const q = y[i]!
    const pn = /^\d+$/.test(p)
    const qn = /^\d+$/.test(q)
    const order = pn && qn
      ? Math.sign(Number(BigInt(p) - BigInt(q)))
      : pn !== qn
      ? (pn ? -1 : 1)
      : p < q
      ? -1
      : p > q
      ? 1
      : 0
    if (order !== 0) return order
  }
  return Math.sign(x.length - y.length)
}

/**
 * Whether `a` is preferred to `b`: the version the policy favours first (a
 * candidate without a version counts as older than any with one), then the
 * higher priority. Equals are not preferred to each other.
 */
export const outranks = (a: Candidacy, b: Candidacy, policy: VersionPolicy): boolean => {
  const byVersion = a.version === b.version
    ? 0
    : a.version === null
    ? -1
    : b.version === null
    ? 1
    : compareVersions(a.version, b.version)
  const preferred = policy === "newer" ? byVersion : -byVersion
  return preferred !== 0 ? preferred > 0 : a.priority > b.priority
}

/**
 * What a candidate needs of the store, and where it stands.
 *
 * @internal
 */
export interface Standing {
  readonly candidacy: Candidacy
  readonly advertise: NonNullable<StoreShape["advertise"]>
  readonly withdraw: NonNullable<StoreShape["withdraw"]>
}

/**
 * The standing of a participant with `candidacy` (none without one), over
 * `store`; refused when the store lacks the candidate operations.
 *
 * @internal
 */
export const standingOf = (
  input: ElectorConfig,
  candidacy: Candidacy | null,
  store: StoreShape
): Effect.Effect<Standing | undefined, InvalidConfig> => {
  const { advertise, withdraw } = store
  if (candidacy === null) return Effect.succeed(undefined)
  if (advertise !== undefined && withdraw !== undefined) return Effect.succeed({ candidacy, advertise, withdraw })
  return new InvalidConfig({
    field: input.priority === undefined ? "version" : "priority",
    reason: "needs a store with the candidate operations (advertise, withdraw)"
  })
}
