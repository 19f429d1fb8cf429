/**
 * The `mysql2` driver, an optional peer dependency, loaded when MysqlStore is
 * imported (see src/internal/driver.ts). `@effect/sql-mysql2` is never
 * loaded: a `MysqlClient` the app hands the store is found by its key.
 *
 * @internal
 */
import type * as MysqlModule from "mysql2"
import { load } from "../internal/driver.js"

export const Mysql: typeof MysqlModule = await load("MysqlStore", ["mysql2"], () => import("mysql2"))
