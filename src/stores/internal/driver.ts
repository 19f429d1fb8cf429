/**
 * Loading of the database drivers, which are optional peer dependencies: a
 * PostgreSQL user does not install mysql2 and vice versa. Each store module
 * loads its driver when it is imported, and an absent driver fails that
 * import with a {@link MissingDriverError} naming what to install, instead of
 * a resolution error from deep inside the package.
 *
 * @internal
 */
import { MissingDriverError } from "../SqlStoreError.js"

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
