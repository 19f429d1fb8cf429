/**
 * The `pg` driver, an optional peer dependency, loaded when PgStore is
 * imported (see src/internal/driver.ts).
 *
 * @internal
 */
import { load } from "../internal/driver.js"

export const Pg = await load("PgStore", ["pg"], () => import("pg"))
