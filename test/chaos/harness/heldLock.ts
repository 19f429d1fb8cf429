/**
 * Locks held by another session of a throwaway server: the statement runs in
 * a transaction left open until `release`, on PostgreSQL or MariaDB alike.
 */

/** A lock held by another session until released. */
export interface HeldLock {
  /** Rows locked (for row locks; 0 for table locks). */
  readonly rows: number
  /** Ends the holding transaction and closes its session. Idempotent. */
  release(): Promise<void>
}

/** A fresh session of its own: a node-postgres Client or a mysql2 Connection. */
export interface LockSession {
  query(statement: string): Promise<unknown>
  end(): Promise<void>
}

/**
 * Runs `BEGIN`, then `lock` on `session` (it returns how many rows it locked),
 * and keeps the transaction open until `release`, which rolls it back and
 * closes the session. On failure the session is closed and the error rethrown.
 */
export const holdLock = async <S extends LockSession>(
  session: S,
  lock: (session: S) => Promise<number>
): Promise<HeldLock> => {
  let released = false
  try {
    await session.query("BEGIN")
    const rows = await lock(session)
    return {
      rows,
      release: async () => {
        if (released) return
        released = true
        await session.query("ROLLBACK").catch(() => {})
        await session.end().catch(() => {})
      }
    }
  } catch (error) {
    await session.end().catch(() => {})
    throw error
  }
}
