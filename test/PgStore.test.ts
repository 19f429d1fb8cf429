import { afterAll, describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Either, Fiber } from "effect"
import * as fc from "fast-check"
import pg from "pg"
import { inject } from "vitest"
import * as Lease from "../src/Lease.js"
import * as Store from "../src/Store.js"
import * as PgStore from "../src/stores/PgStore.js"
import { StoreSuite } from "../src/testing.js"

const { uniqueName } = StoreSuite
import { proxyScoped } from "./chaos/harness/scoped.js"
import { directUrl, uniqueTable } from "./support/databases.js"
import { dropPgTables } from "./support/tables.js"
import { frontendMessages } from "./support/wire.js"

const poolerUrl = inject("pgbouncerUrl")
const directTable = uniqueTable("direct")
const pooledTable = uniqueTable("pooled")

/** Runs `f` on a plain pg.Client, outside the store, for setup and checks. */
const withClient = <A>(url: string, f: (client: pg.Client) => Promise<A>): Promise<A> => {
  const client = new pg.Client({ connectionString: url })
  return client.connect().then(() => f(client)).finally(() => client.end())
}
const sql = (text: string, values: Array<unknown> = []) =>
  Effect.promise(() => withClient(directUrl, (client) => client.query(text, values)))

const dropped: Array<string> = [directTable, pooledTable]
afterAll(() => dropPgTables(...dropped))

/** Makes the row of `name` look written by another server: a failover to a standby, or a restart. */
const writtenElsewhere = (table: string) => (name: string) =>
  sql(`UPDATE ${PgStore.quoteIdentifier(table)} SET server = 'elsewhere' WHERE name = $1`, [name])

StoreSuite.run(
  "PgStore (PostgreSQL direct)",
  PgStore.layerFromUrl(directUrl, { table: directTable, ensureSchema: true, maxConnections: 8 }),
  { live: true, modelRuns: 10, writtenElsewhere: writtenElsewhere(directTable) }
)

// The same suite through PgBouncer in transaction pooling mode, whose few
// server connections are shared by all the store's client connections.
StoreSuite.run(
  "PgStore (via PgBouncer, transaction pooling)",
  PgStore.layerFromUrl(poolerUrl, { table: pooledTable, ensureSchema: true, maxConnections: 8 }),
  { live: true, modelRuns: 10, writtenElsewhere: writtenElsewhere(pooledTable) }
)

const withStore = <A, E>(
  url: string,
  options: PgStore.PgStoreUrlOptions,
  f: (store: Store.StoreShape) => Effect.Effect<A, E>
) => Effect.flatMap(Store.Store, f).pipe(Effect.provide(PgStore.layerFromUrl(url, options)))

describe("PgStore transaction-pooling safety", () => {
  it.live("the pooled path is real: named statements collide through PgBouncer, not directly", () =>
    Effect.promise(async () => {
      const prepareTwice = async (url: string) => {
        const one = new pg.Client({ connectionString: url })
        const two = new pg.Client({ connectionString: url })
        await one.connect()
        await two.connect()
        try {
          await one.query({ name: "s1", text: "select $1::int", values: [1] })
          return await two.query({ name: "s1", text: "select $1::text", values: ["x"] }).then(
            () => "ok",
            (error: Error) => error.message
          )
        } finally {
          await one.end()
          await two.end()
        }
      }
      expect(await prepareTwice(directUrl)).toBe("ok")
      expect(await prepareTwice(poolerUrl)).toBe("prepared statement \"s1\" already exists")
    }))

  it.live("on the wire, every store statement is an unnamed Parse/Bind (and the parser does see names)", () =>
    Effect.gen(function*() {
      // What each client connection sent, in accept order.
      const recorded: Array<Array<Buffer>> = []
      const sent = () => recorded.map((chunks) => Buffer.concat(chunks))
      const proxy = yield* proxyScoped({
        targetPort: Number(new URL(directUrl).port),
        onClientData: (connection, data) => (recorded[connection] ??= []).push(data)
      })
      const table = uniqueTable("wire")
      dropped.push(table)
      yield* withStore(
        proxy.via(directUrl),
        { table, ensureSchema: true, maxConnections: 3 },
        (store) =>
          Effect.gen(function*() {
            const name = uniqueName("wire")
            const lease = yield* store.acquire(name, "a", Duration.seconds(30), new Uint8Array([1]))
            yield* store.renew(name, "a", lease.fence, Duration.seconds(30), null)
            yield* store.inspect(name)
            yield* store.release(name, "a", lease.fence)
            // Calls that meet in flight go together (batch.ts): those
            // requests are unnamed statements too.
            const names = Array.from({ length: 6 }, (_, i) => uniqueName(`wire${i}`))
            const leases = yield* Effect.forEach(names, (name) => store.acquire(name, "a", Duration.seconds(30), null))
            yield* Effect.all([
              ...names.map((name) => store.inspect(name)),
              ...leases.map(({ fence, name }) => store.renew(name, "a", fence, Duration.seconds(30), null))
            ], { concurrency: "unbounded" })
          })
      )
      const storeMessages = sent().flatMap(frontendMessages)
      const named = storeMessages.filter((m) => m.statement !== undefined && m.statement !== "")
      const parsed = storeMessages.filter((m) => m.type === "P")
      expect(parsed.length).toBeGreaterThanOrEqual(14)
      expect(parsed.some((m) => m.query?.includes("= ANY($1::text[])"))).toBe(true)
      expect(parsed.some((m) => m.query?.includes("unnest("))).toBe(true)
      expect(named).toEqual([])
      // Negative control: a named statement through the same proxy is seen as one.
      yield* Effect.promise(() =>
        withClient(proxy.via(directUrl), (client) => client.query({ name: "s1", text: "select $1::int", values: [1] }))
      )
      const control = frontendMessages(sent().at(-1)!)
      expect(control.filter((m) => m.type === "P")).toEqual([{ type: "P", statement: "s1", query: "select $1::int" }])
    }).pipe(Effect.scoped))
})

describe("PgStore schema", () => {
  it("schema() is the reference DDL with the columns of 0.2, fillfactor included; schemaUpgrade() adds them", () => {
    expect(Either.getOrThrow(PgStore.schema("", PgStore.defaultTable))).toBe(
      `CREATE TABLE IF NOT EXISTS "leader_election" (
    name        text        PRIMARY KEY,
    holder      text        NOT NULL,
    fence       bigint      NOT NULL,
    acquired_at timestamptz NOT NULL,
    renewed_at  timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL,
    payload     bytea,
    incarnation text,
    server      text
) WITH (fillfactor = 70);`
    )
    expect(Either.getOrThrow(PgStore.schemaUpgrade("ops", "t"))).toBe(
      `ALTER TABLE "ops"."t" ADD COLUMN IF NOT EXISTS incarnation text, ADD COLUMN IF NOT EXISTS server text;`
    )
    expect(Either.getOrThrow(PgStore.schema("ops", "my \"le\""))).toContain(
      "CREATE TABLE IF NOT EXISTS \"ops\".\"my \"\"le\"\"\" ("
    )
  })

  it("bad identifiers are refused with the field and the reason", () => {
    const refused = (schemaName: string, table: string) =>
      Either.match(PgStore.schema(schemaName, table), {
        onLeft: (error) => ({ tag: error._tag, field: error.field, reason: error.reason, message: error.message }),
        onRight: () => undefined
      })
    expect(refused("", "")).toEqual({
      tag: "InvalidConfig",
      field: "table",
      reason: "must not be empty",
      message: "invalid config: table: must not be empty"
    })
    expect(refused("a\u0000b", "t")).toMatchObject({ field: "schema", reason: "must not contain a NUL character" })
    expect(refused("", "x".repeat(64))).toMatchObject({
      field: "table",
      reason: "must be at most 63 bytes of UTF-8, got 64"
    })
    expect(refused("", "é".repeat(32))).toMatchObject({ reason: "must be at most 63 bytes of UTF-8, got 64" })
    expect(refused("", "\ud800")).toMatchObject({
      reason: "must be well-formed Unicode (it contains a lone surrogate)"
    })
    expect(refused("", "x".repeat(63))).toBeUndefined()
  })

  it("the quote function never lets a name escape its quotes", () =>
    fc.assert(
      fc.property(fc.string({ unit: "binary" }), (value) => {
        const quoted = PgStore.quoteIdentifier(value)
        const inner = quoted.slice(1, -1)
        expect(quoted.startsWith("\"") && quoted.endsWith("\"")).toBe(true)
        // Inside, quotes only come in doubled pairs, so none can close the identifier.
        expect(inner.split("\"\"").join("")).not.toContain("\"")
        expect(inner.replaceAll("\"\"", "\"")).toBe(value)
      }),
      { numRuns: 2000 }
    ))

  const identifier = fc.string({ unit: "binary", minLength: 1, maxLength: 24 }).filter((value) =>
    Either.isRight(PgStore.validateIdentifier("table", value))
  )

  it.live("PostgreSQL parses every quoted identifier back to exactly the name", () =>
    Effect.promise(() =>
      withClient(directUrl, (client) =>
        fc.assert(
          fc.asyncProperty(identifier, async (value) => {
            const { rows } = await client.query<{ parts: Array<string> }>("select parse_ident($1) as parts", [
              PgStore.quoteIdentifier(value)
            ])
            expect(rows[0]!.parts).toEqual([value])
          }),
          { numRuns: 500 }
        ))
    ))

  it.live("a quoted name really creates that exact table, in a custom schema, and the store works on it", () =>
    Effect.gen(function*() {
      const schemaName = `le_quoting_${process.pid}_${Date.now().toString(36)}`
      yield* Effect.acquireRelease(
        sql(`CREATE SCHEMA ${PgStore.quoteIdentifier(schemaName)}`),
        () => sql(`DROP SCHEMA ${PgStore.quoteIdentifier(schemaName)} CASCADE`)
      )
      yield* Effect.promise(() =>
        fc.assert(
          fc.asyncProperty(identifier, (table) =>
            withStore(directUrl, { schema: schemaName, table, ensureSchema: true, maxConnections: 1 }, (store) =>
              Effect.gen(function*() {
                const { rows } = yield* sql(
                  "select c.relname, c.reloptions from pg_class c join pg_namespace n on n.oid = c.relnamespace where n.nspname = $1 and c.relname = $2 and c.relkind = 'r'",
                  [schemaName, table]
                )
                expect(rows).toEqual([{ relname: table, reloptions: ["fillfactor=70"] }])
                const lease = yield* store.acquire("e", "a", Duration.seconds(30), null)
                expect(Lease.isHeldBy(lease, "a")).toBe(true)
              })).pipe(Effect.runPromise)),
          { numRuns: 20 }
        )
      )
    }).pipe(Effect.scoped))

  it.live("ensureSchema is idempotent and safe when many replicas run it at once", () =>
    Effect.gen(function*() {
      const table = uniqueTable("ensure")
      dropped.push(table)
      // Concurrent replicas, each with its own pool.
      yield* Effect.all(
        Array.from({ length: 8 }, () =>
          Effect.provide(
            Effect.void,
            PgStore.layerFromUrl(directUrl, { table, ensureSchema: true, maxConnections: 1 })
          )),
        { concurrency: "unbounded" }
      )
      yield* Effect.provide(Effect.void, PgStore.layerFromUrl(directUrl, { table, ensureSchema: true }))
      const { rows } = yield* sql("select count(*)::int as n from pg_class where relname = $1", [table])
      expect(rows).toEqual([{ n: 1 }])
    }))

  it.live("ensureSchema succeeds when it loses the creation race to another replica", () =>
    Effect.gen(function*() {
      const table = uniqueTable("race")
      dropped.push(table)
      const ddl = Either.getOrThrow(PgStore.schema("", table))
      const other = new pg.Client({ connectionString: directUrl })
      yield* Effect.promise(() => other.connect())
      // The other replica has created the table but not committed yet: ours
      // does not see it, goes on to create it, and blocks on the catalog's
      // unique index until the other commits, then fails with 23505.
      yield* Effect.promise(() => other.query(`BEGIN; ${ddl}`))
      const ours = yield* Effect.fork(
        Effect.provide(Effect.void, PgStore.layerFromUrl(directUrl, { table, ensureSchema: true, maxConnections: 1 }))
      )
      yield* Effect.sleep("300 millis")
      yield* Effect.promise(() => other.query("COMMIT"))
      yield* Effect.promise(() => other.end())
      yield* Fiber.join(ours)
    }))

  it.live("a custom table is used and the default one is not touched", () =>
    Effect.gen(function*() {
      const table = `${uniqueTable("Custom")} "odd"`
      dropped.push(table)
      const name = uniqueName("custom")
      yield* withStore(directUrl, { table, ensureSchema: true }, (store) =>
        store.acquire(name, "a", Duration.seconds(30), null))
      const { rows } = yield* sql(`select holder from ${PgStore.quoteIdentifier(table)} where name = $1`, [name])
      expect(rows).toEqual([{ holder: "a" }])
    }))
})

describe("PgStore errors", () => {
  it.live("a lost lease and a missing record fail with readable typed errors", () =>
    withStore(directUrl, { table: directTable, ensureSchema: true }, (store) =>
      Effect.gen(function*() {
        const name = uniqueName("messages")
        const missing = yield* Effect.flip(store.inspect(name))
        expect(missing.message).toBe(`no lease record for "${name}"`)
        const lost = yield* Effect.flip(store.renew(name, "a", 7n, Duration.seconds(5), null))
        expect(lost.message).toBe(`lease "${name}" is no longer held by a under fence 7`)
      })))
})

describe("PgStore over a caller's pool", () => {
  it.live("PgStore.layerFromPool runs on the given pool and leaves it to the caller", () =>
    Effect.gen(function*() {
      const pool = yield* Effect.acquireRelease(
        Effect.sync(() => new pg.Pool({ connectionString: directUrl, max: 2 })),
        (pool) => Effect.promise(() => pool.end())
      )
      const table = uniqueTable("pool")
      dropped.push(table)
      const name = uniqueName("pool")
      const lease = yield* Effect.flatMap(Store.Store, (store) => store.acquire(name, "a", Duration.seconds(30), null))
        .pipe(
          Effect.provide(PgStore.layerFromPool(pool, { table, ensureSchema: true }))
        )
      expect(lease.fence).toBe(1n)
      const store = yield* PgStore.makeFromPool(pool, { table })
      expect(store.table).toBe(PgStore.quoteIdentifier(table))
      expect((yield* store.inspect(name)).holder).toBe("a")
      expect(pool.totalCount).toBeGreaterThan(0)
    }).pipe(Effect.scoped))
})

describe("PgStore configuration", () => {
  const refused = (url: string, options: PgStore.PgStoreUrlOptions = {}) =>
    Effect.flip(Effect.provide(Effect.void, PgStore.layerFromUrl(url, options)))

  it.live("bad URLs and options are refused with the field and the reason", () =>
    Effect.gen(function*() {
      expect(yield* refused("not a url")).toMatchObject({ _tag: "InvalidConfig", field: "url", reason: "is not a URL" })
      expect(yield* refused("mysql://root@127.0.0.1/test")).toMatchObject({
        field: "url",
        reason: "scheme must be postgres: or postgresql:, got mysql:"
      })
      expect(yield* refused(directUrl, { operationTimeout: 0 })).toMatchObject({
        field: "operationTimeout",
        reason: "must be positive, got 0"
      })
      expect(yield* refused(directUrl, { maxLifetime: Duration.infinity })).toMatchObject({ field: "maxLifetime" })
      expect(yield* refused(directUrl, { idleTimeout: "soon" as unknown as Duration.DurationInput })).toMatchObject({
        field: "idleTimeout",
        reason: "\"soon\" is not a duration"
      })
      expect(yield* refused(directUrl, { maxConnections: 0 })).toMatchObject({
        field: "maxConnections",
        reason: "must be a positive integer, got 0"
      })
      expect(yield* refused(directUrl, { table: "" })).toMatchObject({ field: "table" })
      expect(Either.isRight(PgStore.validateUrl("postgresql://app@db/app"))).toBe(true)
    }))
})
