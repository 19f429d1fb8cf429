/**
 * What the constructor tests of both SQL stores share: a round trip through
 * the `Store` in context, a log capture to prove a password never shows, the
 * `Config` plumbing, and the proof that a store built from an `@effect/sql`
 * client runs on a pool of its own.
 */
import type { SqlClient } from "@effect/sql/SqlClient"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Config, ConfigError, ConfigProvider, Duration, Effect, Exit, Layer, Logger, Redacted } from "effect"
import type * as Scope from "effect/Scope"
import type { Lease } from "../../src/Lease.js"
import * as Store from "../../src/Store.js"
import { uniqueName } from "../../src/testing/StoreSuite.js"
import { uniqueTable } from "./databases.js"

/** A password no error, log line or cause may ever contain. */
export const secret = `s3cret-${process.pid}-pw`

/** Unique table names, remembered so that the file can drop them when done. */
export const tableTracker = (prefix: string) => {
  const names: Array<string> = []
  return {
    names,
    fresh: (label: string): string => {
      const name = uniqueTable(`${prefix}_${label}`)
      names.push(name)
      return name
    }
  }
}

/** Acquires then inspects one lease through the `Store` in context. */
export const roundTrip = Effect.gen(function*() {
  const store = yield* Store.Store
  const name = uniqueName("ctor")
  const lease = yield* store.acquire(name, "a", Duration.seconds(30), null)
  expect(lease.fence).toBe(1n)
  expect((yield* store.inspect(name)).holder).toBe("a")
})

/** Everything logged while `effect` runs, its failure's full cause included. */
export const logged = <A, E>(effect: Effect.Effect<A, E>) =>
  Effect.gen(function*() {
    const lines: Array<string> = []
    const capture = Logger.make(({ cause, message }) => {
      lines.push(`${String(message)} ${Cause.pretty(cause)}`)
    })
    const exit = yield* effect.pipe(
      Effect.tapErrorCause((cause) => Effect.logError("store failed", cause)),
      Effect.exit,
      Effect.provide(Logger.replace(Logger.defaultLogger, capture))
    )
    return { exit, text: [...lines, Exit.isFailure(exit) ? Cause.pretty(exit.cause) : ""].join("\n") }
  })

/**
 * Acquires and inspects through `store` while the client's only connection
 * is busy in a transaction: a store that borrowed the client's pool could not
 * run at all.
 */
export const whileClientBusy = (sql: SqlClient, store: Store.StoreShape): Effect.Effect<Lease, unknown> => {
  const name = uniqueName("client")
  return sql.withTransaction(
    Effect.zipRight(
      sql`SELECT 1`,
      Effect.zipRight(store.acquire(name, "a", Duration.seconds(30), null), store.inspect(name))
    )
  )
}

/** What {@link describeConstructors} needs to know about one SQL store. */
export interface ConstructorSpec {
  readonly name: string
  /** A URL of the shared server that works. */
  readonly url: string
  /** The `_tag` of the store's own configuration error. */
  readonly configErrorTag: string
  readonly layerFromUrl: (
    url: string | Redacted.Redacted<string>,
    options: { readonly table: string; readonly ensureSchema: boolean }
  ) => Layer.Layer<Store.Store, unknown>
  readonly makeFromUrl: (
    url: Redacted.Redacted<string>,
    options: { readonly table: string; readonly ensureSchema: boolean }
  ) => Effect.Effect<
    { readonly table: string; readonly list: Effect.Effect<ReadonlyArray<Lease>, Store.StoreError> },
    unknown,
    Scope.Scope
  >
  readonly quoteIdentifier: (name: string) => string
  readonly layerConfig: (config: {
    readonly url: Config.Config<Redacted.Redacted<string>>
    readonly table: Config.Config<string>
    readonly operationTimeout: Config.Config<Duration.Duration>
    readonly ensureSchema: Config.Config<boolean>
  }) => Layer.Layer<Store.Store, unknown>
  /** `layer(options)` over the `@effect/sql` client, that client built from `url`. */
  readonly layerFromClient: (
    url: Redacted.Redacted<string>,
    options: { readonly table: string; readonly ensureSchema: boolean }
  ) => Layer.Layer<Store.Store, unknown>
  /** A URL with {@link secret} as its password that the driver fails on, and what the failure says. */
  readonly failing: readonly [Redacted.Redacted<string>, string]
  /** URLs with {@link secret} in them that the store refuses, and what the refusal says. */
  readonly refused: ReadonlyArray<readonly [Redacted.Redacted<string>, string]>
  readonly fresh: (label: string) => string
}

/** The constructor cases both SQL stores must pass the same way. */
export const describeConstructors = (spec: ConstructorSpec) => {
  describe(`${spec.name}.layerFromUrl`, () => {
    it.live("takes a plain or a Redacted URL", () =>
      Effect.gen(function*() {
        yield* Effect.provide(roundTrip, spec.layerFromUrl(spec.url, { table: spec.fresh("url"), ensureSchema: true }))
        const table = spec.fresh("redacted")
        yield* Effect.provide(roundTrip, spec.layerFromUrl(Redacted.make(spec.url), { table, ensureSchema: true }))
      }))

    it.live("a Redacted URL's password shows in no error, cause or log line", () =>
      Effect.gen(function*() {
        const [failing, failure] = spec.failing
        const failed = yield* logged(
          Effect.provide(roundTrip, spec.layerFromUrl(failing, { table: "t", ensureSchema: false }))
        )
        expect(Exit.isFailure(failed.exit)).toBe(true)
        expect(failed.text).toContain(failure)
        expect(failed.text).not.toContain(secret)
        for (const [url, reason] of spec.refused) {
          const refused = yield* logged(
            Effect.provide(Effect.void, spec.layerFromUrl(url, { table: "t", ensureSchema: false }))
          )
          expect(refused.text).toContain(reason)
          expect(refused.text).not.toContain(secret)
        }
      }))
  })

  describe(`${spec.name}.makeFromUrl`, () => {
    it.live("gives the store with its table and list, for the scope", () =>
      Effect.gen(function*() {
        const table = spec.fresh("make")
        const store = yield* spec.makeFromUrl(Redacted.make(spec.url), { table, ensureSchema: true })
        expect(store.table).toBe(spec.quoteIdentifier(table))
        expect(yield* store.list).toEqual([])
      }).pipe(Effect.scoped))
  })

  describe(`${spec.name}.layerConfig`, () => {
    const fromEnv = spec.layerConfig({
      url: Config.redacted("DATABASE_URL"),
      table: Config.string("ELECTION_TABLE"),
      operationTimeout: Config.duration("ELECTION_OPERATION_TIMEOUT").pipe(Config.withDefault(Duration.seconds(3))),
      ensureSchema: Config.boolean("ELECTION_ENSURE_SCHEMA")
    })
    const withConfig = (entries: ReadonlyArray<readonly [string, string]>) =>
      fromEnv.pipe(Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map(entries)))))

    it.live("reads the URL and the options from Config", () =>
      Effect.provide(
        roundTrip,
        withConfig([
          ["DATABASE_URL", spec.url],
          ["ELECTION_TABLE", spec.fresh("config")],
          ["ELECTION_OPERATION_TIMEOUT", "5 seconds"],
          ["ELECTION_ENSURE_SCHEMA", "true"]
        ])
      ))

    it.live("a missing variable fails with effect's ConfigError; a bad option with the store's", () =>
      Effect.gen(function*() {
        const missing = yield* Effect.flip(Effect.provide(Effect.void, withConfig([])))
        expect(ConfigError.isConfigError(missing)).toBe(true)
        expect(String(missing)).toContain("Missing data at DATABASE_URL")
        const withSecret = new URL(spec.url)
        withSecret.password = secret
        const bad = yield* Effect.flip(Effect.provide(
          Effect.void,
          withConfig([["DATABASE_URL", withSecret.toString()], ["ELECTION_TABLE", ""], [
            "ELECTION_ENSURE_SCHEMA",
            "false"
          ]])
        ))
        expect(bad).toMatchObject({ _tag: spec.configErrorTag, field: "table" })
        expect(Cause.pretty(Cause.fail(bad))).not.toContain(secret)
      }))
  })

  describe(`${spec.name}.layer from the @effect/sql client in context`, () => {
    it.live("takes the client's URL", () =>
      Effect.provide(
        roundTrip,
        spec.layerFromClient(Redacted.make(spec.url), { table: spec.fresh("client_url"), ensureSchema: true })
      ))
  })
}
