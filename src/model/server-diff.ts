/**
 * What changed between two builds' servers, by object: an incremental build hands every server it did not settle
 * again back as the same object, so whatever reads every server each sync (the shared server's table, the request
 * metrics' routes) can look at the changed ones only.
 */
import type { Server } from './nginx-model.js';

/**
 * changedServers is the servers of `after` that `before` does not hold at the same place, and those of `before` that
 * `after` does not (by place: where both lists hold the same object at the same place, from either end when their
 * lengths differ, nothing changed). Everything outside the two lists is the same objects on both sides, so a server
 * only moved may be in both; each host is once in each list given. Costs a reference comparison per server, and the
 * changed ones.
 */
export function changedServers(
  before: readonly Server[],
  after: readonly Server[],
): { readonly added: readonly Server[]; readonly removed: readonly Server[] } {
  if (before === after) return { added: [], removed: [] };
  if (before.length === after.length) {
    const added: Server[] = [];
    const removed: Server[] = [];
    for (let i = 0; i < after.length; i++)
      if (before[i] !== after[i]) {
        removed.push(before[i]!);
        added.push(after[i]!);
      }
    return { added, removed };
  }
  const both = Math.min(before.length, after.length);
  let head = 0;
  while (head < both && before[head] === after[head]) head++;
  let tail = 0;
  while (tail < both - head && before[before.length - 1 - tail] === after[after.length - 1 - tail]) tail++;
  return { added: after.slice(head, after.length - tail), removed: before.slice(head, before.length - tail) };
}
