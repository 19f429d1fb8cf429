/**
 * Drops what a SQL store's `ensureSchema` creates in the shared databases,
 * for a test's cleanup: the lease table and the two tables beside it, job
 * slots and candidates. Each is dropped IF EXISTS, so a test may name a table
 * it never got to create.
 */
import { Either } from "effect"
import mysql from "mysql2/promise"
import pg from "pg"
import * as MysqlStore from "../../src/stores/MysqlStore.js"
import * as PgStore from "../../src/stores/PgStore.js"
import { directUrl, mysqlUrl } from "./databases.js"

/** A lease table, with the side tables' names when the test set them (`slotTable`, `candidatesTable`). */
export type StoreTables = string | {
  readonly table: string
  readonly slotTable?: string | undefined
  readonly candidatesTable?: string | undefined
}

interface Dialect {
  readonly schema: (schemaName: string, table: string) => Either.Either<string, unknown>
  readonly quoteIdentifier: (name: string) => string
  readonly candidatesSuffix: string
  readonly run: (statement: string) => Promise<unknown>
}

/**
 * The tables the store creates for each of `tables`: the side tables default
 * to the table's name + `_slots` and + `_candidates`. A default too long to
 * be an identifier is left out, as the store creates no such table (and
 * PostgreSQL would truncate the name to another one).
 */
const dropper = (dialect: Dialect) => async (...tables: ReadonlyArray<StoreTables>): Promise<void> => {
  const names = new Set(
    tables.flatMap((entry) => {
      const { table, slotTable = `${table}_slots`, candidatesTable = table + dialect.candidatesSuffix } =
        typeof entry === "string" ? { table: entry } : entry
      return [table, slotTable, candidatesTable]
    }).filter((name) => Either.isRight(dialect.schema("", name)))
  )
  if (names.size > 0) await dialect.run(`DROP TABLE IF EXISTS ${[...names].map(dialect.quoteIdentifier).join(", ")}`)
}

/** Drops the store tables of `tables` from the shared PostgreSQL. */
export const dropPgTables = dropper({
  schema: PgStore.schema,
  quoteIdentifier: PgStore.quoteIdentifier,
  candidatesSuffix: PgStore.candidatesSuffix,
  run: async (statement) => {
    const client = new pg.Client({ connectionString: directUrl })
    await client.connect()
    return client.query(statement).finally(() => client.end())
  }
})

/** Drops the store tables of `tables` from the shared MariaDB. */
export const dropMysqlTables = dropper({
  schema: MysqlStore.schema,
  quoteIdentifier: MysqlStore.quoteIdentifier,
  candidatesSuffix: MysqlStore.candidatesSuffix,
  run: async (statement) => {
    const connection = await mysql.createConnection(mysqlUrl)
    return connection.query(statement).finally(() => connection.end())
  }
})
