/**
 * Admission to a SQL store's connections, with priority, so that overload
 * degrades into skipped polls instead of a reconnect storm.
 *
 * A call holds one of `capacity` slots (the pool's size) from admission until
 * its connection is back in the pool or destroyed, which can be after the
 * caller gave up (see `call.ts`). So the gate always knows how many
 * connections are really busy, and the store never asks the pool for more
 * than it has.
 *
 * When every slot is taken, renewals and releases (a leader keeping or ending
 * its term) wait in their own queue, served first; the other calls wait
 * behind them, and a follower's poll (`inspect`) that would wait behind
 * {@link waitingLimit} others is refused at once with {@link Saturated}, a
 * retryable error: the follower tries again at its next poll, and the store
 * does no work for it. A claim (`acquire`) is never shed: a follower only
 * claims a lease it saw free, and the claim is what ends a leaderless
 * interval. Nor is the poll of a participant joining the election (no call
 * of it answered yet, as its call's context says: `Store.CallContext`):
 * when a fleet starts, its participants poll within one retry period, and a
 * poll shed then waits a retry period more, so the
 * elections whose participants all came late would stay leaderless while
 * the others are led. Joiners' polls wait in a queue of their own, served
 * after every other, newest first: when the pool cannot answer the burst
 * within the calls' deadline, the ones it serves are fresh and answered in
 * time, and the oldest time out still queued, where first come, first
 * served would answer each just after its caller gave up. A joiner whose
 * poll timed out queued polls again a retry period after that poll
 * started: with the defaults, at once (participant.ts, `repoll`). Waiting is
 * bounded by the call's own deadline: a call still queued then is
 * withdrawn, and costs the database nothing.
 *
 * @internal
 */
import { stackless } from "../../internal/runtime/stackless.js"
import type { Operation } from "../../Store.js"
import { Saturated } from "../SqlStoreError.js"
import { waitingLimit } from "./rules.js"

/** A call waiting for admission, or admitted. */
export interface Waiter {
  /** Runs once the call holds a slot (maybe at once, synchronously, inside `enter`). */
  readonly admitted: () => void
}

export interface Gate {
  /**
   * Admits `waiter`'s call for `operation`: `waiter.admitted()` runs once a
   * slot is free (maybe at once, synchronously). A poll that would have to
   * queue behind {@link waitingLimit} other calls is refused instead, unless
   * its caller is `joining` (no call of it answered yet): that one waits
   * behind every other call, newest joiner first.
   */
  readonly enter: (operation: Operation, waiter: Waiter, joining: boolean) => Saturated | undefined
  /** Takes back a call still waiting; false when it was already admitted (it then holds a slot). */
  readonly withdraw: (waiter: Waiter) => boolean
  /** Frees the slot of an admitted call; call it exactly once per admission. */
  readonly leave: () => void
}

/** A leader's calls: losing them loses a term, or delays the next one. */
const urgent = (operation: Operation): boolean => operation === "renew" || operation === "release"

/** A gate over `capacity` connections. */
export const make = (capacity: number): Gate => {
  let free = capacity
  const leaders: Array<Waiter> = []
  const others: Array<Waiter> = []
  /** Joiners' polls, a stack: the newest is served first. */
  const joiners: Array<Waiter> = []
  const remove = (queue: Array<Waiter>, waiter: Waiter): boolean => {
    const index = queue.indexOf(waiter)
    if (index < 0) return false
    queue.splice(index, 1)
    return true
  }
  return {
    enter: (operation, waiter, joining) => {
      if (free > 0) {
        free -= 1
        waiter.admitted()
        return undefined
      }
      if (operation === "inspect") {
        if (joining) {
          joiners.push(waiter)
          return undefined
        }
        if (others.length >= waitingLimit(capacity)) return stackless(() => new Saturated({ operation, capacity }))
      }
      ;(urgent(operation) ? leaders : others).push(waiter)
      return undefined
    },
    withdraw: (waiter) => remove(leaders, waiter) || remove(others, waiter) || remove(joiners, waiter),
    leave: () => {
      const next = leaders.shift() ?? others.shift() ?? joiners.pop()
      if (next === undefined) free += 1
      else next.admitted()
    }
  }
}
