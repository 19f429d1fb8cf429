/**
 * The errors of the SQL stores' own making, shared by `PgStore` and
 * `MysqlStore` (each re-exports them). Both are retryable: the stores
 * classify them so.
 *
 * @since 0.1.0
 */
import * as Data from "effect/Data"
import * as Duration from "effect/Duration"
import type { Operation } from "../Store.js"
import { waitingLimit } from "./internal/rules.js"

/**
 * A store call did not complete within the store's operation timeout. Its
 * connection stays out of the pool until the statement answers, and is
 * destroyed if it does not answer within its grace, twice the timeout, more.
 *
 * @since 0.1.0
 * @category errors
 * @example
 * ```ts
 * import { Duration } from "effect"
 * import * as PgStore from "effect-leaderelection/stores/PgStore"
 *
 * new PgStore.OperationTimeout({ timeout: Duration.seconds(3) }).message
 * // "no answer from the database within 3s"
 * ```
 */
export class OperationTimeout extends Data.TaggedError("OperationTimeout")<{
  readonly timeout: Duration.Duration
}> {
  override get message(): string {
    return `no answer from the database within ${Duration.format(this.timeout)}`
  }
}

/**
 * A poll refused because every connection of the store was busy and enough
 * calls were already waiting (twice the pool's size). Retryable: it is
 * skipped, not failed.
 *
 * @since 0.1.0
 * @category errors
 * @example
 * ```ts
 * import * as PgStore from "effect-leaderelection/stores/PgStore"
 *
 * new PgStore.Saturated({ operation: "inspect", capacity: 4 }).message
 * // "inspect shed: all 4 connections are busy and 8 calls already wait"
 * ```
 */
export class Saturated extends Data.TaggedError("Saturated")<{
  readonly operation: Operation
  readonly capacity: number
}> {
  override get message(): string {
    return `${this.operation} shed: all ${this.capacity} connections are busy and ${
      waitingLimit(this.capacity)
    } calls already wait`
  }
}

/**
 * A store was imported but the npm packages it runs on could not be loaded.
 *
 * @since 0.1.0
 * @category errors
 * @example
 * ```ts
 * import * as PgStore from "effect-leaderelection/stores/PgStore"
 *
 * const error = new PgStore.MissingDriverError({ store: "PgStore", packages: ["pg"], cause: null })
 * console.log(error.message) // PgStore needs the npm package pg: npm install pg (null)
 * ```
 */
export class MissingDriverError extends Data.TaggedError("MissingDriverError")<{
  /** The store module that needs the packages. */
  readonly store: string
  /** The packages to install, all of them. */
  readonly packages: ReadonlyArray<string>
  /** What the import failed with. */
  readonly cause: unknown
}> {
  override get message(): string {
    const detail = this.cause instanceof Error ? this.cause.message : String(this.cause)
    const noun = this.packages.length === 1 ? "package" : "packages"
    const names = this.packages.join(" ")
    return `${this.store} needs the npm ${noun} ${names}: npm install ${names} (${detail})`
  }
}
