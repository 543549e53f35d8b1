/**
 * ingress-age: the one order in which Ingresses settle conflicts (a host's certificate, a path two Ingresses name),
 * shared by the controller's build and by `convert`, so that both pick the same winner.
 */
import { compare } from './backends.js';
import type { Ingress } from './snapshot.js';

/**
 * creationMillis is an Ingress's creation time in milliseconds; 0 (the oldest) when it is missing or unreadable, as
 * ingress-nginx reads a zero creationTimestamp.
 */
export function creationMillis(ingress: Ingress): number {
  const t = ingress.metadata?.creationTimestamp;
  if (t === undefined) return 0;
  const ms = t instanceof Date ? t.getTime() : Date.parse(t);
  return Number.isNaN(ms) ? 0 : ms;
}

/**
 * byAge orders Ingresses as ingress-nginx resolves conflicts: oldest first, then by namespace, then by name. `age`
 * lets a caller pass a cached {@link creationMillis}.
 */
export function byAge(a: Ingress, b: Ingress, age: (i: Ingress) => number = creationMillis): number {
  return (
    age(a) - age(b) ||
    compare(a.metadata?.namespace ?? '', b.metadata?.namespace ?? '') ||
    compare(a.metadata?.name ?? '', b.metadata?.name ?? '')
  );
}
