/**
 * lowerBound is the first index of `sorted` (from `from` on) whose item `comesBefore` does not hold for: where an item
 * stands or would stand in a list sorted by the order `comesBefore` tests against it. One binary search for the sorted
 * lists kept between builds (hosts, upstreams by name, Ingresses in age order, served Ingress keys).
 */
export function lowerBound<T>(sorted: readonly T[], comesBefore: (item: T) => boolean, from = 0): number {
  let lo = from;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (comesBefore(sorted[mid]!)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
