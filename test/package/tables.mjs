// The tables the README's examples create in the shared databases when the
// package check runs them: the default `leader_election` and the `elections`
// of the layerConfig examples, each with the `_slots` and `_candidates`
// tables beside it.
//
//   node tables.mjs absent       prints those that do not exist yet (pg:name or mysql:name, one a line)
//   node tables.mjs drop LIST... drops the ones listed: what `absent` printed before the run,
//                                so that a table that was there already is left alone
import mysql from "mysql2/promise"
import pg from "pg"

const pgUrl = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test"
const mysqlUrl = process.env.MYSQL_URL ?? "mysql://root@127.0.0.1:3306/test"
const names = ["leader_election", "elections"].flatMap((t) => [t, `${t}_slots`, `${t}_candidates`])

const databases = {
  pg: async () => {
    const client = new pg.Client({ connectionString: pgUrl })
    await client.connect()
    return {
      existing: async () =>
        (await client.query("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")).rows
          .map((row) => row.tablename),
      drop: (table) => client.query(`DROP TABLE IF EXISTS "${table}"`),
      end: () => client.end()
    }
  },
  mysql: async () => {
    const connection = await mysql.createConnection(mysqlUrl)
    return {
      existing: async () =>
        (await connection.query("SELECT table_name AS name FROM information_schema.tables WHERE table_schema = DATABASE()"))[0]
          .map((row) => row.name),
      drop: (table) => connection.query(`DROP TABLE IF EXISTS \`${table}\``),
      end: () => connection.end()
    }
  }
}

const [command, ...list] = process.argv.slice(2)
for (const [kind, open] of Object.entries(databases)) {
  const db = await open()
  try {
    if (command === "absent") {
      const existing = new Set(await db.existing())
      for (const name of names) if (!existing.has(name)) console.log(`${kind}:${name}`)
    } else if (command === "drop") {
      for (const entry of list) {
        const [where, name] = entry.split(":")
        if (where === kind && names.includes(name)) await db.drop(name)
      }
    } else throw new Error(`usage: node tables.mjs absent | drop LIST...`)
  } finally {
    await db.end()
  }
}
