import { describe, expect, it } from "@effect/vitest"
import { load } from "../src/stores/internal/driver.js"
import * as MysqlStore from "../src/stores/MysqlStore.js"
import * as PgStore from "../src/stores/PgStore.js"
import { MissingDriverError } from "../src/stores/SqlStoreError.js"

// A name nothing provides, passed through a variable so the compiler does not resolve it.
const absent = "effect-leaderelection-no-such-driver"

describe("driver loading", () => {
  it("an absent driver fails with a MissingDriverError naming the package to install", async () => {
    const error: unknown = await load("PgStore", [absent], () => import(absent)).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(MissingDriverError)
    const missing = error as MissingDriverError
    expect(missing._tag).toBe("MissingDriverError")
    expect(missing.packages).toEqual([absent])
    expect(missing.message).toMatch(
      new RegExp(
        `^PgStore needs the npm package ${absent}: npm install ${absent} \\(Cannot find (package|module) '${absent}'`
      )
    )
  })

  it("names every package of a store that needs several, and a cause that is not an Error", async () => {
    const error: unknown = await load("MysqlStore", ["mysql2", "@effect/sql-mysql2"], () => Promise.reject("gone"))
      .catch((e: unknown) => e)
    expect((error as MissingDriverError).message).toBe(
      "MysqlStore needs the npm packages mysql2 @effect/sql-mysql2: npm install mysql2 @effect/sql-mysql2 (gone)"
    )
  })

  it("a present driver is the module itself", async () => {
    const pg = await load("PgStore", ["pg"], () => import("pg"))
    expect(typeof pg.Pool).toBe("function")
  })

  it("each store exports the error class", () => {
    expect(PgStore.MissingDriverError).toBe(MissingDriverError)
    expect(MysqlStore.MissingDriverError).toBe(MissingDriverError)
  })
})
