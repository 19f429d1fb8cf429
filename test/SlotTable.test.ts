import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Either } from "effect"
import * as Mysql from "mysql2"
import pg from "pg"
import * as MysqlStore from "../src/stores/MysqlStore.js"
import * as PgStore from "../src/stores/PgStore.js"
import { directUrl } from "./support/databases.js"
import { dropMysqlTables, dropPgTables } from "./support/tables.js"

const long = "t".repeat(60)

describe("job slot tables", () => {
  it("slotSchema gives the DDL of the slot table, names validated and quoted", () => {
    const pgDdl = Either.getOrThrow(PgStore.slotSchema("ops", "leader_election_slots"))
    expect(pgDdl).toMatch(/^CREATE TABLE IF NOT EXISTS "ops"\."leader_election_slots" \(/)
    expect(pgDdl).toContain("PRIMARY KEY (name, job, slot_ms)")
    const mysqlDdl = Either.getOrThrow(MysqlStore.slotSchema("", "leader_election_slots"))
    expect(mysqlDdl).toMatch(/^CREATE TABLE IF NOT EXISTS `leader_election_slots` \(/)
    expect(mysqlDdl).toContain("PRIMARY KEY (name, job, slot_ms)")
    expect(Either.isLeft(PgStore.slotSchema("", ""))).toBe(true)
    expect(Either.isLeft(MysqlStore.slotSchema("", "x".repeat(65)))).toBe(true)
  })

  it.scoped("the slot table defaults to the table's name + _slots, or the slotTable option", () =>
    Effect.gen(function*() {
      const pool = yield* Effect.acquireRelease(
        Effect.sync(() => new pg.Pool({ connectionString: directUrl })),
        (pool) => Effect.promise(() => pool.end())
      )
      expect((yield* PgStore.makeFromPool(pool, { table: "le" })).slotTable).toBe("\"le_slots\"")
      const named = yield* PgStore.makeFromPool(pool, { schema: "s", table: "le", slotTable: "jobs" })
      expect(named.slotTable).toBe("\"s\".\"jobs\"")
      const refused = yield* Effect.flip(PgStore.makeFromPool(pool, { slotTable: "" }))
      expect(refused).toMatchObject({ _tag: "InvalidConfig", field: "slotTable" })
      const mysql = Mysql.createPool({ host: "127.0.0.1", user: "root", database: "test" })
      yield* Effect.addFinalizer(() => Effect.promise(() => new Promise<void>((resolve) => mysql.end(() => resolve()))))
      expect((yield* MysqlStore.makeFromPool(mysql, { table: "le" })).slotTable).toBe("`le_slots`")
      expect(yield* Effect.flip(MysqlStore.makeFromPool(mysql, { slotTable: "x".repeat(65) }))).toMatchObject({
        field: "slotTable"
      })
    }))

  it.scoped("a table whose default slot table name is too long still elects, and records no slots", () =>
    Effect.gen(function*() {
      const pool = yield* Effect.acquireRelease(
        Effect.sync(() => new pg.Pool({ connectionString: directUrl })),
        (pool) => Effect.promise(() => pool.end())
      )
      const name = `${long}${process.pid % 1000}`
      // The candidates' table needs a name of its own too: its default would be as long.
      const candidatesTable = `slot_table_candidates_${process.pid}`
      yield* Effect.addFinalizer(() => Effect.promise(() => dropPgTables({ table: name, candidatesTable })))
      const store = yield* PgStore.makeFromPool(pool, { table: name, candidatesTable, ensureSchema: true })
      expect(store.slotTable).toBeUndefined()
      expect(store.slots).toBeUndefined()
      expect((yield* store.acquire("slots-too-long", "a", Duration.minutes(1), null)).fence).toBe(1n)
      const mysql = Mysql.createPool({ host: "127.0.0.1", user: "root", database: "test" })
      yield* Effect.addFinalizer(() => Effect.promise(() => new Promise<void>((resolve) => mysql.end(() => resolve()))))
      yield* Effect.addFinalizer(() => Effect.promise(() => dropMysqlTables({ table: name, candidatesTable })))
      const onMysql = yield* MysqlStore.makeFromPool(mysql, { table: name, candidatesTable, ensureSchema: true })
      expect(onMysql.slots).toBeUndefined()
      expect((yield* onMysql.acquire("slots-too-long", "a", Duration.minutes(1), null)).fence).toBe(1n)
    }))
})
