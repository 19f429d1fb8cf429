/**
 * What every case of the acceptance suite stands on: the harness a caller
 * describes its store with, the timing of leases that a test waits out, and
 * a session on a fresh store whose every call is recorded, so that a broken
 * rule names the call it is about.
 */
import type { Layer, Scope } from "effect"
import { Duration, Effect, TestClock } from "effect"
import { randomBytes } from "node:crypto"
import * as Lease from "../../../Lease.js"
import * as Store from "../../../Store.js"
import { Probe, rule, show, traced } from "../contract.js"

export interface StoreHarness {
  /** Shown in the test names. */
  readonly name: string
  /** Built afresh for every test and every model run. */
  readonly layer: Layer.Layer<Store.Store, unknown>
  /**
   * true when the store's clock is a real server's: time passes by sleeping.
   * false when it follows Effect's Clock: time passes through TestClock.
   */
  readonly live: boolean
  /** Model runs (default {@link defaultModelRuns}). */
  readonly modelRuns?: number | undefined
  /** How long one case may take (default: the runner's `defaultTimeout`). */
  readonly timeout?: Duration.DurationInput | undefined
  /** Makes an election's record look written by another server (`StoreSuite.Options.writtenElsewhere`). */
  readonly writtenElsewhere?: ((name: string) => Effect.Effect<void, unknown>) | undefined
}

/**
 * Model runs by default. A live store sleeps through every expiry (0.7s
 * each, a couple per run), so it gets fewer.
 */
export const defaultModelRuns = (live: boolean): number => live ? 25 : 200

let counter = 0
const run = randomBytes(6).toString("hex")
/** Election names unique to this process and run, so suites can share a table. */
export const uniqueName = (label: string): string => `storetest-${label}-${run}-${(counter++).toString(36)}`

export const bytes = (...values: Array<number>) => new Uint8Array(values)

/** One case of the suite, ready to run: a name and a test body. */
export interface Case {
  readonly name: string
  readonly model: boolean
  readonly body: Effect.Effect<void, unknown, Scope.Scope>
}

/** The leases a case asks for, and how it lets time pass. */
export interface Timing {
  /** A lease that a test waits out. */
  readonly short: Duration.Duration
  /** A lease that never expires during a test. */
  readonly long: Duration.Duration
  /** Just longer than `short`: what a test waits for a short lease to expire. */
  readonly pastShort: Duration.Duration
}

export const timing = (live: boolean): Timing => {
  const short = live ? Duration.millis(400) : Duration.seconds(2)
  return {
    short,
    long: Duration.minutes(5),
    pastShort: Duration.sum(short, live ? Duration.millis(300) : Duration.millis(1))
  }
}

/** A case's view of one fresh store: its calls recorded on `probe`. */
export interface Session extends Timing {
  readonly store: Store.StoreShape
  readonly probe: Probe
  /** Lets `d` pass on the store's clock (sleeping when it is live). */
  readonly elapse: (d: Duration.Duration) => Effect.Effect<void>
  /** The harness's `writtenElsewhere`, recorded among the calls; undefined without one. */
  readonly writtenElsewhere: ((name: string) => Effect.Effect<void, unknown>) | undefined
}

/**
 * Runs `f` on a fresh store of the harness. A failure comes out as the
 * store's terms: the call, its answer, the rule and the calls before, under
 * the title `history` (see `Probe.explain`).
 */
export const withSession = <A>(
  harness: StoreHarness,
  f: (session: Session) => Effect.Effect<A, unknown>,
  history?: string
): Effect.Effect<A, unknown> =>
  Effect.flatMap(Store.Store, (store) => {
    const probe = new Probe()
    const { writtenElsewhere } = harness
    const session: Session = {
      ...timing(harness.live),
      store: traced(store, probe),
      probe,
      elapse: (d) =>
        Effect.zipRight(Effect.sync(() => probe.elapsed(d)), harness.live ? Effect.sleep(d) : TestClock.adjust(d)),
      writtenElsewhere: writtenElsewhere === undefined ? undefined : (name) =>
        Effect.zipRight(
          Effect.sync(() => probe.happened(`the record of ${show(name)} now looks written by another server`)),
          writtenElsewhere(name)
        )
    }
    return Effect.catchAllCause(f(session), (cause) => Effect.failCause(probe.explain(cause, history)))
  }).pipe(Effect.provide(harness.layer))

/** A case of a section of the contract, before a harness is given. */
export interface StoreCase {
  readonly name: string
  readonly body: (session: Session) => Effect.Effect<void, unknown>
}

export const storeCase = (name: string, body: StoreCase["body"]): StoreCase => ({ name, body })

/** `c` on the harness's store. */
export const bind = (harness: StoreHarness, c: StoreCase): Case => ({
  name: c.name,
  model: false,
  body: withSession(harness, c.body)
})

/**
 * Twelve contenders acquire at once: exactly one of them must win. They are
 * twelve identities, or with `identity` twelve incarnations of it.
 */
export const race = ({ long, probe, store }: Session, name: string, identity?: string) =>
  Effect.gen(function*() {
    const contenders = Array.from({ length: 12 }, (_, i) => `c${i}`)
    const calls = identity === undefined
      ? `12 concurrent acquire(${show(name)}, 'c0' ... 'c11', ${show(long)}, null)`
      : `12 concurrent acquire(${show(name)}, ${show(identity)}, ${show(long)}, null, 'c0' ... 'c11')`
    const results = yield* probe.together(
      calls,
      Effect.all(
        contenders.map((who) =>
          identity === undefined ? store.acquire(name, who, long, null) : store.acquire(name, identity, long, null, who)
        ),
        { concurrency: "unbounded" }
      ),
      (leases) =>
        show(leases.map((lease) =>
          `${lease.holder}${lease.incarnation === undefined ? "" : `/${lease.incarnation}`}@${lease.fence}`
        ))
    )
    const winners = results.filter((lease, i) =>
      identity === undefined
        ? Lease.isHeldBy(lease, contenders[i]!)
        : Lease.isHeldBy(lease, identity, contenders[i]!)
    )
    rule("exactly one of concurrent acquires wins, the others see its lease: winners", winners.length).is(1)
    return { results, winner: winners[0]! }
  })
