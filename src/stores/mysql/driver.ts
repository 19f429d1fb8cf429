/**
 * The `mysql2` driver and `@effect/sql-mysql2`, optional peer dependencies,
 * loaded when MysqlStore is imported (see src/internal/driver.ts).
 *
 * @internal
 */
import type * as MysqlClientModule from "@effect/sql-mysql2/MysqlClient"
import type * as MysqlModule from "mysql2"
import { load } from "../../internal/driver.js"

const packages = ["mysql2", "@effect/sql-mysql2"]

export const Mysql: typeof MysqlModule = await load("MysqlStore", packages, () => import("mysql2"))

export const MysqlClient: typeof MysqlClientModule = await load(
  "MysqlStore",
  packages,
  () => import("@effect/sql-mysql2/MysqlClient")
)
