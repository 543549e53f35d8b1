/**
 * The Gateway API status as it should be written: what buildGatewayRoutes says (GatewayStatus, without
 * lastTransitionTime) merged into what the object carries now. Pure: the writer (src/kube/gateway-status.ts)
 * gives the time. A condition keeps its lastTransitionTime while its type, status, reason and observedGeneration
 * stay; condition types this controller does not set stay as they are; route `parents[]` entries of other
 * controllers stay untouched, and ours go when the route no longer names our Gateway.
 */
import type { GatewayStatus, ListenerSetStatus, ListenerStatus, PolicyStatus, RouteParentStatus } from './routes.js';
import { type Condition, GATEWAY_GROUP, type ParentRef } from './types.js';

/** WrittenCondition is a condition as the API holds it. */
export interface WrittenCondition extends Condition {
  readonly lastTransitionTime: string;
}

/** GatewayAddress is one entry of a Gateway's `status.addresses`. */
export interface GatewayAddress {
  readonly type: 'IPAddress' | 'Hostname';
  readonly value: string;
}

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const list = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);

/** apiTime is a time as metav1.Time serializes it: RFC 3339, whole seconds, UTC. */
export function apiTime(now: Date): string {
  return now.toISOString().replace(/\.\d+Z$/, 'Z');
}

/** mergeConditions gives `ours` their lastTransitionTime from `current` where they did not change, keeping other types. */
export function mergeConditions(current: unknown, ours: readonly Condition[], now: string): unknown[] {
  const before = list(current).filter(isObject);
  const byType = new Map(before.map((c) => [c.type, c]));
  const merged: unknown[] = ours.map((c) => {
    const old = byType.get(c.type);
    const same =
      old !== undefined &&
      old.status === c.status &&
      old.reason === c.reason &&
      old.observedGeneration === c.observedGeneration &&
      typeof old.lastTransitionTime === 'string';
    return { ...c, lastTransitionTime: same ? (old.lastTransitionTime as string) : now };
  });
  const set = new Set(ours.map((c) => c.type));
  return [...merged, ...before.filter((c) => !set.has(c.type as string))];
}

/** gatewayAddresses turns the publish addresses (as Ingress status has them) into Gateway addresses. */
export function gatewayAddresses(addresses: readonly { ip?: string; hostname?: string }[]): GatewayAddress[] {
  return addresses.flatMap((a): GatewayAddress[] =>
    a.ip ? [{ type: 'IPAddress', value: a.ip }] : a.hostname ? [{ type: 'Hostname', value: a.hostname }] : [],
  );
}

/** gatewayClassStatus is the status a GatewayClass should carry. */
export function gatewayClassStatus(current: unknown, ours: GatewayStatus['gatewayClasses'][number], now: string): Json {
  const status = isObject(current) ? current : {};
  return { ...status, conditions: mergeConditions(status.conditions, ours.conditions, now) };
}

function listenerStatus(current: unknown[], ours: ListenerStatus, now: string): Json {
  const old = current.filter(isObject).find((l) => l.name === ours.name);
  return {
    name: ours.name,
    supportedKinds: ours.supportedKinds.map((k) => ({ group: k.group, kind: k.kind })),
    attachedRoutes: ours.attachedRoutes,
    conditions: mergeConditions(old?.conditions, ours.conditions, now),
  };
}

/**
 * gatewayStatus is the status a Gateway should carry: `addresses` its own (GatewayStatus addresses, from
 * `--gateway-addresses`) when the build assigned them, else the publish addresses; none when none are known.
 */
export function gatewayStatus(
  current: unknown,
  ours: GatewayStatus['gateways'][number],
  addresses: readonly GatewayAddress[],
  now: string,
): Json {
  const { addresses: _old, attachedListenerSets: _count, ...status } = isObject(current) ? current : {};
  const listeners = list(status.listeners);
  // the Gateway's own address from --gateway-addresses (none: not served) replaces the publish address
  const own = ours.addresses?.map((value): GatewayAddress => ({ type: 'IPAddress', value }));
  const written = own ?? addresses;
  return {
    ...status,
    ...(written.length > 0 ? { addresses: written.map((a) => ({ ...a })) } : {}),
    conditions: mergeConditions(status.conditions, ours.conditions, now),
    listeners: ours.listeners.map((l) => listenerStatus(listeners, l, now)),
    ...(ours.attachedListenerSets === undefined ? {} : { attachedListenerSets: ours.attachedListenerSets }),
  };
}

/** listenerSetStatus is the status a ListenerSet should carry (its listeners as a Gateway's are written). */
export function listenerSetStatus(current: unknown, ours: ListenerSetStatus, now: string): Json {
  const status = isObject(current) ? current : {};
  const listeners = list(status.listeners);
  return {
    ...status,
    conditions: mergeConditions(status.conditions, ours.conditions, now),
    listeners: ours.listeners.map((l) => listenerStatus(listeners, l, now)),
  };
}

/** sameParentRef compares a written parentRef with ours, defaults filled as the API fills them. */
function sameParentRef(written: unknown, ours: ParentRef, routeNamespace: string): boolean {
  if (!isObject(written)) return false;
  return (
    (written.group ?? 'gateway.networking.k8s.io') === ours.group &&
    (written.kind ?? 'Gateway') === ours.kind &&
    (written.namespace ?? routeNamespace) === ours.namespace &&
    written.name === ours.name &&
    (written.sectionName ?? undefined) === ours.sectionName &&
    (written.port ?? undefined) === ours.port
  );
}

/** writtenParentRef is our ParentRef as it goes into the status: optional fields only when set. */
function writtenParentRef(ref: ParentRef): Json {
  return {
    group: ref.group,
    kind: ref.kind,
    namespace: ref.namespace,
    name: ref.name,
    ...(ref.sectionName === undefined ? {} : { sectionName: ref.sectionName }),
    ...(ref.port === undefined ? {} : { port: ref.port }),
  };
}

/**
 * routeStatus is the status a route should carry: other controllers' `parents[]` entries as they are, then ours
 * (none when `ours` is undefined: the route names no Gateway of ours any more).
 */
export function routeStatus(
  current: unknown,
  routeNamespace: string,
  controllerName: string,
  ours: readonly RouteParentStatus[] | undefined,
  now: string,
): Json {
  const status = isObject(current) ? current : {};
  const parents = list(status.parents).filter(isObject);
  const others = parents.filter((p) => p.controllerName !== controllerName);
  const mine = parents.filter((p) => p.controllerName === controllerName);
  const entries = (ours ?? []).map((p) => {
    const old = mine.find((m) => sameParentRef(m.parentRef, p.parentRef, routeNamespace));
    return {
      parentRef: writtenParentRef(p.parentRef),
      controllerName,
      conditions: mergeConditions(old?.conditions, p.conditions, now),
    };
  });
  return { ...status, parents: [...others, ...entries] };
}

/**
 * policyStatus is a BackendTLSPolicy's status with our `ancestors[]` entries as `ours` says (absent: none left),
 * other controllers' entries kept: the route merge, with ancestorRef for parentRef.
 */
export function policyStatus(
  current: unknown,
  policyNamespace: string,
  controllerName: string,
  ours: PolicyStatus['ancestors'] | undefined,
  now: string,
): Json {
  const status = isObject(current) ? current : {};
  const asParents = list(status.ancestors)
    .filter(isObject)
    .map(({ ancestorRef, ...rest }) => ({ ...rest, parentRef: ancestorRef }));
  const parents: RouteParentStatus[] | undefined = ours?.map((a) => ({
    parentRef: {
      group: GATEWAY_GROUP,
      kind: 'Gateway',
      namespace: a.ancestorRef.namespace,
      name: a.ancestorRef.name,
      sectionName: undefined,
      port: undefined,
    },
    controllerName,
    conditions: a.conditions,
  }));
  const merged = routeStatus({ parents: asParents }, policyNamespace, controllerName, parents, now);
  const { parents: entries, ...rest } = merged as { parents: Json[] };
  const ancestors = entries.map(({ parentRef, ...entry }) => ({ ancestorRef: parentRef, ...entry }));
  return { ...status, ...rest, ancestors };
}

/** sameJson compares two JSON values structurally, key order aside. */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    return a.every((x, i) => sameJson(x, b[i]));
  }
  if (!isObject(a) || !isObject(b)) return false;
  const keys = Object.keys(a).filter((k) => a[k] !== undefined);
  if (keys.length !== Object.keys(b).filter((k) => b[k] !== undefined).length) return false;
  return keys.every((k) => sameJson(a[k], b[k]));
}
