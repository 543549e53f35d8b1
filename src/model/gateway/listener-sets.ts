/**
 * ListenerSets (gateway.networking.k8s.io/v1, standard since v1.5): listeners of a Gateway written in other objects,
 * often by other teams in other namespaces. Pure.
 *
 * A ListenerSet attaches to the Gateway its `spec.parentRef` names when that Gateway is ours and its
 * `spec.allowedListeners.namespaces` admits the set's namespace (absent: none may, the spec's default); else it is
 * `Accepted=False/NotAllowed`. An attached set's listeners are judged as the Gateway's own, in the spec's merged
 * order: the Gateway's listeners first, then the sets oldest first (then by namespace/name), so a set never takes a
 * port's protocol or a hostname from the Gateway or from an older set; the later listener is Conflicted, and for a
 * set's listener that also means `Accepted=False` and `Programmed=False` with the conflict's reason. Its
 * certificateRefs default to, and are granted from, the set's own namespace (kind ListenerSet: a Gateway's grants are
 * not inherited), and `allowedRoutes` `Same` is the set's namespace. A set is Accepted while one of its listeners is
 * served; the Gateway counts those in `status.attachedListenerSets`. Routes reach a set's listeners only through a
 * parentRef of kind ListenerSet (a Gateway parentRef, sectionName or not, sees only the Gateway's own).
 */
import { cond, type ListenerOrigin, type ListenerState } from './listeners.js';
import { byAge } from './precedence.js';
import { readListener, readMeta } from './read.js';
import { list, rec, text } from './read-fields.js';
import { selectorMatches } from './refs.js';
import type { ListenerSetStatus, ListenerStatus } from './routes.js';
import {
  type Condition,
  GATEWAY_GROUP,
  type Gateway,
  type Listener,
  type ListenerSet,
  type ObjectRef,
} from './types.js';

const key = (ref: ObjectRef) => `${ref.namespace}/${ref.name}`;

/** readListenerSet reads a ListenerSet; invalid listener fields stay on the listener (its conditions report them). */
export function readListenerSet(object: unknown): ListenerSet | null {
  const meta = readMeta(object, true);
  if (!meta) return null;
  const spec = rec(rec(object).spec);
  const parent = rec(spec.parentRef);
  const listeners = list(spec.listeners)
    .map((l, i) => readListener(l, i))
    .filter((l): l is Listener => l !== null);
  return {
    meta,
    parentRef: {
      group: text(parent.group) ?? GATEWAY_GROUP,
      kind: text(parent.kind) ?? 'Gateway',
      namespace: text(parent.namespace) ?? meta.namespace,
      name: text(parent.name) ?? '',
    },
    listeners,
  };
}

/** ListenerSetVerdict is what became of one ListenerSet whose parentRef names a Gateway of ours. */
export type ListenerSetVerdict =
  | { readonly kind: 'attached'; readonly set: ListenerSet; readonly gateway: Gateway }
  | { readonly kind: 'notAllowed'; readonly set: ListenerSet; readonly gateway: Gateway };

/**
 * attachListenerSets judges each ListenerSet naming one of `gateways` (others are another controller's business: no
 * verdict): attached when the Gateway's allowedListeners admits its namespace. `byGateway` lists the attached sets of
 * each Gateway in the spec's merge order (oldest first, then namespace/name).
 */
export function attachListenerSets(
  gateways: readonly Gateway[],
  objects: readonly unknown[],
  namespaceLabels: ReadonlyMap<string, Readonly<Record<string, string>>>,
): { readonly verdicts: ListenerSetVerdict[]; readonly byGateway: Map<string, ListenerSet[]> } {
  const gatewayByKey = new Map(gateways.map((g) => [key(g.meta), g]));
  const verdicts: ListenerSetVerdict[] = [];
  const byGateway = new Map<string, ListenerSet[]>();
  const sets = objects
    .map(readListenerSet)
    .filter((s): s is ListenerSet => s !== null)
    .sort((a, b) => byAge(a.meta, b.meta));
  for (const set of sets) {
    if (set.parentRef.group !== GATEWAY_GROUP || set.parentRef.kind !== 'Gateway') continue;
    const gateway = gatewayByKey.get(key(set.parentRef));
    if (gateway === undefined) continue;
    if (!allows(gateway, set.meta.namespace, namespaceLabels)) {
      verdicts.push({ kind: 'notAllowed', set, gateway });
      continue;
    }
    verdicts.push({ kind: 'attached', set, gateway });
    const attached = byGateway.get(key(gateway.meta)) ?? [];
    attached.push(set);
    byGateway.set(key(gateway.meta), attached);
  }
  return { verdicts, byGateway };
}

/** allows applies a Gateway's allowedListeners to a ListenerSet's namespace. */
function allows(
  gateway: Gateway,
  namespace: string,
  namespaceLabels: ReadonlyMap<string, Readonly<Record<string, string>>>,
): boolean {
  const from = gateway.allowedListeners ?? { from: 'None' };
  switch (from.from) {
    case 'None':
      return false;
    case 'All':
      return true;
    case 'Same':
      return namespace === gateway.meta.namespace;
    case 'Selector':
      return selectorMatches(from.selector, namespaceLabels.get(namespace) ?? {});
  }
}

/**
 * mergedListeners is the Gateway as the spec says to treat it: its own listeners, then those of its attached sets
 * (already in merge order), with the object each comes from.
 */
export function mergedListeners(
  gateway: Gateway,
  sets: readonly ListenerSet[],
): { readonly gateway: Gateway; readonly origins: ListenerOrigin[] } {
  const own = gateway.listeners.map((_, index): ListenerOrigin => ({ kind: 'Gateway', ...ref(gateway), index }));
  const theirs = sets.flatMap((set) =>
    set.listeners.map((_, index): ListenerOrigin => ({ kind: 'ListenerSet', ...ref(set), index })),
  );
  return {
    gateway: { ...gateway, listeners: [...gateway.listeners, ...sets.flatMap((s) => s.listeners)] },
    origins: [...own, ...theirs],
  };
}

const ref = (o: { readonly meta: ObjectRef }) => ({ namespace: o.meta.namespace, name: o.meta.name });

/** fromSet says whether a listener state comes from this ListenerSet. */
export const fromSet = (s: ListenerState, set: ObjectRef) =>
  s.listenerSet !== undefined && s.listenerSet.namespace === set.namespace && s.listenerSet.name === set.name;

/**
 * entryConditions are a ListenerSet listener's conditions: one that is Conflicted is also `Accepted=False` and
 * `Programmed=False` with the conflict's reason (ListenerEntry's rules, as its conformance tests check).
 */
export function entryConditions(conditions: readonly Condition[]): Condition[] {
  const conflict = conditions.find((c) => c.type === 'Conflicted' && c.status === 'True');
  if (conflict === undefined) return [...conditions];
  return conditions.map((c) =>
    c.type === 'Accepted' || c.type === 'Programmed'
      ? cond(c.type, false, conflict.reason, conflict.message, c.observedGeneration)
      : c,
  );
}

/**
 * listenerSetStatus is one judged ListenerSet's status: not allowed, its parent not accepted, or its listeners'
 * verdicts (`listeners`: the Gateway's listener status entries of this set, already made for the Gateway's state).
 */
export function listenerSetStatus(
  verdict: ListenerSetVerdict,
  parentAccepted: boolean,
  parentProgrammed: boolean,
  listeners: readonly ListenerStatus[],
): ListenerSetStatus {
  const { set } = verdict;
  const gen = set.meta.generation;
  const both = (ok: boolean, reason: string, programmedReason: string, message: string) => [
    cond('Accepted', ok, reason, message, gen),
    cond('Programmed', ok, programmedReason, message, gen),
  ];
  const of = (conditions: Condition[]) => ({ namespace: set.meta.namespace, name: set.meta.name, conditions });
  if (verdict.kind === 'notAllowed')
    return {
      ...of(
        both(false, 'NotAllowed', 'NotAllowed', "the Gateway's spec.allowedListeners does not admit this namespace"),
      ),
      listeners: [],
    };
  if (!parentAccepted)
    return {
      ...of(both(false, 'ParentNotAccepted', 'ParentNotProgrammed', 'the parent Gateway is not accepted')),
      listeners,
    };
  const entries = listeners.map((l) => ({ ...l, conditions: entryConditions(l.conditions) }));
  const holds = (l: ListenerStatus, type: string) => l.conditions.some((c) => c.type === type && c.status === 'True');
  const valid = entries.filter((l) => holds(l, 'Accepted') && holds(l, 'ResolvedRefs')).length;
  const served = entries.some((l) => holds(l, 'Programmed'));
  const accepted =
    valid === 0
      ? cond(
          'Accepted',
          false,
          'ListenersNotValid',
          'no listener of this ListenerSet is valid (see its listeners)',
          gen,
        )
      : valid === entries.length
        ? cond('Accepted', true, 'Accepted', 'ListenerSet is accepted', gen)
        : cond('Accepted', true, 'ListenersNotValid', `${entries.length - valid} listener(s) are not valid`, gen);
  const programmed = served
    ? cond('Programmed', true, 'Programmed', 'ListenerSet is served', gen)
    : valid === 0 || parentProgrammed
      ? cond('Programmed', false, 'ListenersNotValid', 'no listener of this ListenerSet is served', gen)
      : cond('Programmed', false, 'ParentNotProgrammed', 'the parent Gateway is not served', gen);
  return { ...of([accepted, programmed]), listeners: entries };
}
