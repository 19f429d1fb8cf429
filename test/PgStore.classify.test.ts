import { SqlError } from "@effect/sql/SqlError"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Either } from "effect"
import pg from "pg"
import * as ElectorError from "../src/ElectorError.js"
import * as Store from "../src/Store.js"
import * as PgStore from "../src/stores/PgStore.js"
import { uniqueName } from "../src/testing/StoreSuite.js"
import { directUrl, uniqueTable } from "./support/databases.js"

const withCode = (code: string, message = `error ${code}`) => Object.assign(new Error(message), { code })

describe("PgStore.classify", () => {
  const table: ReadonlyArray<readonly [string, boolean]> = [
    ["ECONNREFUSED", true],
    ["ECONNRESET", true],
    ["ETIMEDOUT", true],
    ["EPIPE", true],
    ["EHOSTUNREACH", true],
    ["EAI_AGAIN", true],
    ["57P01", true],
    ["57P02", true],
    ["57P03", true],
    ["57014", true],
    ["25006", true],
    ["55P03", true],
    ["40001", true],
    ["40P01", true],
    ["08006", true],
    ["08001", true],
    ["08P01", true],
    ["53300", true],
    ["53200", true],
    ["58030", true],
    ["42P01", false],
    ["42501", false],
    ["28P01", false],
    ["28000", false],
    ["3D000", false],
    ["42601", false],
    ["22P02", false],
    ["23505", false],
    ["ENOENT", false]
  ]
  for (const [code, retryable] of table) {
    it(`${code} is ${retryable ? "retryable" : "fatal"}`, () => {
      expect(PgStore.classify(withCode(code))).toEqual({ retryable, reason: `error ${code}`, code })
    })
  }

  it("classifies the store's own errors, wrapped errors and odd values", () => {
    const timeout = new PgStore.OperationTimeout({ timeout: Duration.seconds(3) })
    expect(PgStore.classify(timeout)).toEqual({ retryable: true, reason: "no answer from the database within 3s" })
    const config = new ElectorError.InvalidConfig({ field: "url", reason: "is not a URL" })
    expect(PgStore.classify(config)).toEqual({ retryable: false, reason: "invalid config: url: is not a URL" })
    expect(PgStore.classify(new SqlError({ cause: withCode("42P01", "no table"), message: "Failed" }))).toEqual({
      retryable: false,
      reason: "no table",
      code: "42P01"
    })
    // node reports ECONNREFUSED on a dual-stack host as an AggregateError without a message.
    expect(PgStore.classify(Object.assign(new AggregateError([]), { code: "ECONNREFUSED" }))).toEqual({
      retryable: true,
      reason: "ECONNREFUSED",
      code: "ECONNREFUSED"
    })
    expect(PgStore.classify(new Error("Connection terminated unexpectedly"))).toEqual({
      retryable: true,
      reason: "Connection terminated unexpectedly"
    })
    expect(PgStore.classify({ code: 42 })).toEqual({ retryable: true, reason: "[object Object]" })
    expect(PgStore.classify("boom")).toEqual({ retryable: true, reason: "boom" })
  })

  it("toStoreError keeps the operation, the verdict, the code and the cause", () => {
    const cause = withCode("42501", "permission denied for table leader_election")
    const error = PgStore.toStoreError("renew", cause)
    expect(error).toMatchObject({ _tag: "StoreError", operation: "renew", retryable: false, code: "42501", cause })
    expect(Store.isFatal(error)).toBe(true)
    expect(error.message).toBe("renew failed (fatal) [42501]: permission denied for table leader_election")
  })
})

describe("PgStore errors from real servers", () => {
  const failure = <A>(
    url: string,
    options: PgStore.PgStoreUrlOptions,
    f: (store: Store.StoreShape) => Effect.Effect<A, unknown>
  ) => Effect.flip(Effect.flatMap(Store.Store, f).pipe(Effect.provide(PgStore.layerFromUrl(url, options))))

  it.live("a missing table is fatal (42P01)", () =>
    Effect.gen(function*() {
      const error = yield* failure(directUrl, { table: uniqueTable("missing") }, (store) =>
        store.acquire(uniqueName("missing"), "a", Duration.seconds(5), null))
      expect(error).toMatchObject({ _tag: "StoreError", operation: "acquire", retryable: false, code: "42P01" })
    }))

  it.live("a refused connection is retryable", () =>
    Effect.gen(function*() {
      const error = yield* failure("postgres://postgres@127.0.0.1:1/test", {}, (store) => store.inspect("e"))
      expect(error).toMatchObject({ _tag: "StoreError", operation: "inspect", retryable: true, code: "ECONNREFUSED" })
    }))

  it.live("a database that does not exist (3D000) and a role that does not exist (28000) are fatal", () =>
    Effect.gen(function*() {
      const noDb = new URL(directUrl)
      noDb.pathname = `/no_such_db_${process.pid}`
      expect(yield* failure(noDb.toString(), {}, (store) => store.inspect("e"))).toMatchObject({
        retryable: false,
        code: "3D000"
      })
      const noRole = new URL(directUrl)
      noRole.username = `no_such_role_${process.pid}`
      expect(yield* failure(noRole.toString(), {}, (store) => store.inspect("e"))).toMatchObject({
        retryable: false,
        code: "28000"
      })
    }))

  it.live("a role without privileges on the table is fatal (42501)", () =>
    Effect.gen(function*() {
      const role = `le_noprivs_${process.pid}`
      const table = uniqueTable("privs")
      const admin = (text: string) =>
        Effect.promise(async () => {
          const client = new pg.Client({ connectionString: directUrl })
          await client.connect()
          await client.query(text).finally(() => client.end())
        })
      yield* Effect.acquireRelease(
        admin(`CREATE ROLE ${role} LOGIN; ${Either.getOrThrow(PgStore.schema("", table))}`),
        () => admin(`DROP TABLE ${table}; DROP ROLE ${role}`)
      )
      const url = new URL(directUrl)
      url.username = role
      const error = yield* failure(url.toString(), { table }, (store) => store.inspect("e"))
      expect(error).toMatchObject({ _tag: "StoreError", operation: "inspect", retryable: false, code: "42501" })
    }).pipe(Effect.scoped))
})
