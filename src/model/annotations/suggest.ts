/**
 * "Did you mean …?" for a misspelt annotation key: the known key within a small edit distance.
 * Bounded work: names longer than an annotation name can be are not compared, and each
 * comparison only fills the diagonal band the distance allows (O(length × distance)).
 */

/**
 * MAX_ANNOTATION_NAME is the longest annotation name Kubernetes accepts: a 253-character prefix, `/`, a 63-character
 * name.
 */
export const MAX_ANNOTATION_NAME = 317;

/**
 * editDistanceWithin is the Levenshtein distance of `a` and `b` (insert, delete, substitute one
 * character) when it is at most `max`, else null. Only cells within `max` of the diagonal are
 * computed, so it runs in O(min(|a|, |b|) × max) time and O(max) extra space per row.
 */
export function editDistanceWithin(a: string, b: string, max: number): number | null {
  if (Math.abs(a.length - b.length) > max) return null;
  const width = 2 * max + 1;
  const OUT = max + 1; // a cell outside the band: more than max
  // row[k] is the distance of a[0, i) and b[0, i - max + k); cells off the band count as OUT.
  let previous = new Array<number>(width).fill(OUT);
  for (let k = max; k < width; k++) previous[k] = k - max; // i = 0: "" vs b[0, j) is j
  for (let i = 1; i <= a.length; i++) {
    const row = new Array<number>(width).fill(OUT);
    let best = OUT;
    for (let k = 0; k < width; k++) {
      const j = i - max + k;
      if (j < 0 || j > b.length) continue;
      if (j === 0) {
        row[k] = i;
      } else {
        const substitute = previous[k]! + (a[i - 1] === b[j - 1] ? 0 : 1); // (i-1, j-1)
        const insert = k > 0 ? row[k - 1]! + 1 : OUT; // (i, j-1)
        const remove = k + 1 < width ? previous[k + 1]! + 1 : OUT; // (i-1, j)
        row[k] = Math.min(substitute, insert, remove, OUT);
      }
      best = Math.min(best, row[k]!);
    }
    if (best > max) return null; // every path from here on costs more
    previous = row;
  }
  const distance = previous[b.length - a.length + max]!;
  return distance <= max ? distance : null;
}

/**
 * closestName is the candidate nearest `name` within `max` edits (ties: the first in
 * alphabetical order), or null when none is that close or `name` is longer than any
 * annotation name may be.
 */
export function closestName(name: string, candidates: Iterable<string>, max = 2): string | null {
  if (name.length > MAX_ANNOTATION_NAME) return null;
  let best: { name: string; distance: number } | null = null;
  for (const candidate of candidates) {
    if (candidate === name) continue;
    const distance = editDistanceWithin(name, candidate, max);
    if (distance === null) continue;
    if (!best || distance < best.distance || (distance === best.distance && candidate < best.name))
      best = { name: candidate, distance };
  }
  return best?.name ?? null;
}
