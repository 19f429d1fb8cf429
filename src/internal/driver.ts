/**
 * Loading of the database drivers, which are optional peer dependencies: a
 * PostgreSQL user does not install mysql2 and vice versa. Each store module
 * loads its driver when it is imported, and an absent driver fails that
 * import with a {@link MissingDriverError} naming what to install, instead of
 * a resolution error from deep inside the package.
 *
 * @internal
 */
import * as Data from "effect/Data"

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

/**
 * Imports a store's driver, turning any failure into a
 * {@link MissingDriverError}. `importer` is a literal `() => import("pg")`, so
 * bundlers still see the dependency.
 */
export const load = <A>(
  store: string,
  packages: ReadonlyArray<string>,
  importer: () => Promise<A>
): Promise<A> =>
  importer().catch((cause: unknown) => {
    throw new MissingDriverError({ store, packages, cause })
  })
