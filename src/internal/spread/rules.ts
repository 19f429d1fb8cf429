/**
 * The share rules of a spread group, as pure functions: how many of its N
 * elections each of its M live members should lead. Every member computes
 * them from its own view (the live members, and who it last saw holding
 * each election); views that disagree cost extra moves, never safety, since
 * the rules only decide who claims when and who hands over.
 *
 * @internal
 */

/**
 * The number of elections `self` should lead, out of `n`, among `members`
 * (sorted or not; `self` among them), where `count` gives how many each
 * member leads now. Each gets floor(n / M); the r = n mod M members that
 * lead the most (ties by identity) get one more. Sticky: a balanced fleet
 * (every member within floor..ceil) has each member at its target, so
 * nothing moves that need not, and a fleet out of balance moves the fewest
 * elections that balance it.
 *
 * @internal
 */
export const target = (
  n: number,
  members: ReadonlyArray<string>,
  count: (identity: string) => number,
  self: string
): number => {
  const m = members.length
  const base = Math.floor(n / m)
  const extra = n % m
  if (extra === 0) return base
  // Self's rank: the members that sort before it, by count descending, then identity.
  const mine = count(self)
  let rank = 0
  for (const other of members) {
    const theirs = count(other)
    if (theirs > mine || (theirs === mine && other < self)) rank++
  }
  return rank < extra ? base + 1 : base
}
