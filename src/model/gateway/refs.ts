/**
 * Reference checks: ReferenceGrant permission, label selectors and the Service/Secret lookups the
 * Gateway API core needs. Pure functions over the input lists.
 */
import type { LabelSelector, ReferenceGrant } from './types.js';

/** GrantQuery asks whether `from` (kind in a namespace) may refer to `to` (kind and name in another). */
export interface GrantQuery {
  readonly fromGroup: string;
  readonly fromKind: string;
  readonly fromNamespace: string;
  readonly toGroup: string;
  readonly toKind: string;
  readonly toNamespace: string;
  readonly toName: string;
}

/**
 * isGranted says whether a reference across namespaces is allowed: a ReferenceGrant in the target's
 * namespace lists the referrer (group, kind, namespace) in `from` and the target (group, kind and,
 * when given, name) in `to`. A reference within one namespace needs no grant.
 */
export function isGranted(grants: readonly ReferenceGrant[], q: GrantQuery): boolean {
  if (q.fromNamespace === q.toNamespace) return true;
  return grants.some(
    (g) =>
      g.meta.namespace === q.toNamespace &&
      g.from.some((f) => f.group === q.fromGroup && f.kind === q.fromKind && f.namespace === q.fromNamespace) &&
      g.to.some((t) => t.group === q.toGroup && t.kind === q.toKind && (t.name === undefined || t.name === q.toName)),
  );
}

/** selectorMatches applies a metav1.LabelSelector to a label set (an empty selector matches all). */
export function selectorMatches(selector: LabelSelector, labels: Readonly<Record<string, string>>): boolean {
  for (const [key, value] of Object.entries(selector.matchLabels)) if (labels[key] !== value) return false;
  return selector.matchExpressions.every((e) => {
    const has = Object.hasOwn(labels, e.key);
    switch (e.operator) {
      case 'In':
        return has && e.values.includes(labels[e.key] as string);
      case 'NotIn':
        return !has || !e.values.includes(labels[e.key] as string);
      case 'Exists':
        return has;
      case 'DoesNotExist':
        return !has;
    }
    return false;
  });
}
