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

/**
 * listChange gives the changed middle of `before` and `after`, compared by identity: the longest common prefix and
 * suffix are left out. An item that moved counts as gone and came; callers that care (an item in both) check.
 */
export function listChange<T>(before: readonly T[], after: readonly T[]): ListChange<T> {
  const shorter = Math.min(before.length, after.length);
  let start = 0;
  while (start < shorter && before[start] === after[start]) start++;
  let end = 0;
  while (end < shorter - start && before[before.length - 1 - end] === after[after.length - 1 - end]) end++;
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
