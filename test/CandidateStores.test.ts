import { afterAll, describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Either } from "effect"
import { compareVersions } from "../src/internal/election/candidacy.js"
import * as MysqlStore from "../src/stores/MysqlStore.js"
import * as PgStore from "../src/stores/PgStore.js"
import { directUrl, mysqlUrl, uniqueTable } from "./support/databases.js"
import { dropMysqlTables, dropPgTables } from "./support/tables.js"

const pgTable = uniqueTable("cand")
const pgCandidates = uniqueTable("cand_own")
const mysqlTable = uniqueTable("cand")

afterAll(async () => {
  await dropPgTables({ table: pgTable, candidatesTable: pgCandidates })
  await dropMysqlTables(mysqlTable)
})

const long = Duration.minutes(5)

describe("candidates in the SQL stores", () => {
  it("the candidates' DDL, and a table name that leaves no room for the suffix names candidatesTable", () => {
    expect(Either.getOrThrow(PgStore.candidatesSchema("ops", "le_candidates"))).toContain(
      "CREATE TABLE IF NOT EXISTS \"ops\".\"le_candidates\" (\n    name        text        NOT NULL,"
    )
    expect(Either.getOrThrow(MysqlStore.candidatesSchema("", "le_candidates"))).toContain(
      "CREATE TABLE IF NOT EXISTS `le_candidates` (\n  name        VARBINARY(1020) NOT NULL,"
    )
    expect(Either.getLeft(PgStore.candidatesSchema("", "x".repeat(64)))).toMatchObject({
      _tag: "Some",
      value: { field: "candidatesTable" }
    })
    // A version whose textual segments are equal compares by the next one.
    expect(compareVersions("1.0-rc.1", "1.0-rc.2")).toBe(-1)
  })

  it.scopedLive("PostgreSQL: ensureSchema creates both tables; candidates lists the live ones of every election", () =>
    Effect.gen(function*() {
      const store = yield* PgStore.makeFromUrl(directUrl, {
        table: pgTable,
        candidatesTable: pgCandidates,
        ensureSchema: true
      })
      const name = `${pgTable}-e`
      yield* store.advertise(name, "a", { priority: 1, version: "1.0" }, long)
      yield* store.advertise(name, "b", { priority: 7, version: null }, long)
      yield* store.advertise(`${name}2`, "c", { priority: 0, version: null }, Duration.millis(1))
      yield* Effect.sleep("20 millis")
      const listed = (yield* store.candidates).filter((c) => c.name.startsWith(pgTable))
      expect(listed.map((c) => [c.name, c.identity, c.priority, c.version])).toEqual([
        [name, "b", 7, null],
        [name, "a", 1, "1.0"]
      ])
      yield* store.withdraw(name, "a")
      expect((yield* store.candidates).filter((c) => c.name === name).map((c) => c.identity)).toEqual(["b"])
    }))

  it.scopedLive("MySQL/MariaDB: ensureSchema creates both tables; candidates lists the live ones of every election", () =>
    Effect.gen(function*() {
      const store = yield* MysqlStore.makeFromUrl(mysqlUrl, { table: mysqlTable, ensureSchema: true })
      const name = `${mysqlTable}-e`
      yield* store.advertise(name, "a", { priority: 1, version: "1.0" }, long)
      yield* store.advertise(name, "b", { priority: 7, version: null }, long)
      const listed = (yield* store.candidates).filter((c) => c.name === name)
      expect(listed.map((c) => [c.identity, c.priority, c.version])).toEqual([["b", 7, null], ["a", 1, "1.0"]])
      expect(Duration.toMillis(listed[0]!.ttl)).toBeGreaterThan(Duration.toMillis(long) - 5_000)
    }))
})
