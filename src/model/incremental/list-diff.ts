/**
 * listChange: what changed between two versions of a list whose items are replaced, never mutated (the caches' lists,
 * and what builds make from them item by item). Both keep their order: an update stays in its place, an addition
 * comes last, a deletion leaves a gap closed up. So the items before the first difference and after the last are
 * the same objects, and only the part between them is looked at: one change costs a walk of reference comparisons,
 * not a Set or Map of the whole list.
 */

/** ListChange is the changed middle of two lists: the items `before` had there (`gone`) and those `after` has (`came`). */
export interface ListChange<T> {
  /** how many items both lists start with */
  readonly start: number;
  /** how many items both lists end with (after `start`) */
  readonly end: number;
  readonly gone: readonly T[];
  readonly came: readonly T[];
}

/** a change between two lists, as found by a walk or told by the code that made `after` from `before` */
interface KnownChange {
  readonly before: readonly unknown[];
  readonly after: readonly unknown[];
  readonly start: number;
  readonly end: number;
}

/**
 * The last changes looked at or told. Several parts of a build compare the same two lists (the plans, the servers, the
 * Ingresses: 10,000 items each), and a walk over lists V8 has seen in several shapes (frozen cache lists, plain ones)
 * costs about 0.1 µs an item: the first caller walks, the others read it here. A few entries, held strongly: each
 * keeps two lists alive until newer changes push it out (a WeakMap keyed by `after` would chain every list to the one
 * before it).
 */
const recent: (KnownChange | undefined)[] = new Array(16).fill(undefined);
let next = 0;

function remember(change: KnownChange): void {
  recent[next] = change;
  next = (next + 1) % recent.length;
}

/**
 * tellChange records that `after` is `before` with only the items between the first `start` and the last `end`
 * changed, for the code that made it so (a splice it did): listChange then answers without a walk. Told wrong, every
 * caller of listChange is wrong: tell only what the code just did.
 */
export function tellChange<T>(before: readonly T[], after: readonly T[], start: number, end: number): void {
  remember({ before, after, start, end });
}

/**
 * listChange gives the changed middle of `before` and `after`, compared by identity: the longest common prefix and
 * suffix are left out. An item that moved counts as gone and came; callers that care (an item in both) check.
 */
export function listChange<T>(before: readonly T[], after: readonly T[]): ListChange<T> {
  let known: KnownChange | undefined;
  for (const change of recent)
    if (change !== undefined && change.after === after && change.before === before) {
      known = change;
      break;
    }
  let start: number;
  let end: number;
  if (known !== undefined) ({ start, end } = known);
  else {
    const shorter = Math.min(before.length, after.length);
    start = 0;
    while (start < shorter && before[start] === after[start]) start++;
    end = 0;
    while (end < shorter - start && before[before.length - 1 - end] === after[after.length - 1 - end]) end++;
    if (before !== after) remember({ before, after, start, end });
  }
  return { start, end, gone: before.slice(start, before.length - end), came: after.slice(start, after.length - end) };
}

/**
 * addedAndRemoved is what came and what went between two lists, by identity: the changed middle, less the items in
 * both of its sides (moved within it).
 */
export function addedAndRemoved<T>(before: readonly T[], after: readonly T[]): { added: T[]; removed: T[] } {
  const { gone, came } = listChange(before, after);
  if (gone.length === 0) return { added: [...came], removed: [] };
  if (came.length === 0) return { added: [], removed: [...gone] };
  const goneSet = new Set(gone);
  const cameSet = new Set(came);
  return { added: came.filter((x) => !goneSet.has(x)), removed: gone.filter((x) => !cameSet.has(x)) };
}
