/** Where the shared test servers are. Tests that break a server on purpose go through a proxy instead. */
export const directUrl = process.env["LE_PG_URL"] ?? "postgres://postgres@127.0.0.1:5432/test"

/** A table name unique to this process and run, so concurrent runs never share rows. */
export const uniqueTable = (label: string): string => `le_${label}_${process.pid}_${Date.now().toString(36)}`

/** The shared MariaDB. */
export const mysqlUrl = "mysql://root@127.0.0.1:3306/test"
