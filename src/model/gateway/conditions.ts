/**
 * The conditions the Gateway API core writes on the objects it judges: a GatewayClass's and a Gateway's Accepted and
 * Programmed, a listener's when its Gateway is refused or has no address, and a route's Accepted and ResolvedRefs
 * for each of its parents, with how far the route got with that parent's listeners (matchParent). Pure.
 */
import type { AddressVerdict } from './addresses.js';
import { intersectHostnames } from './hostnames.js';
import { type Context, cond, type ListenerState, namespaceAllowed } from './listeners.js';
import type { Condition, Gateway, HTTPRoute, ParentRef } from './types.js';

/** REF_MESSAGES says, for each ResolvedRefs reason, what is wrong with the reference. */
export const REF_MESSAGES: Readonly<Record<string, string>> = {
  InvalidKind: 'is not a core Service',
  RefNotPermitted: 'is in another namespace and no ReferenceGrant allows it',
  BackendNotFound: 'names a Service or port that does not exist',
};

/** parametersMessage says why a Gateway with `spec.infrastructure.parametersRef` is not accepted. */
export const parametersMessage = (g: Gateway) =>
  `spec.infrastructure.parametersRef names ${g.parametersRef}: this controller supports no parameters kind, ` +
  'so the Gateway is not accepted and none of its listeners is served';

/** notProgrammed turns a listener's Programmed condition False: its Gateway is not accepted. */
export const notProgrammed = (c: Condition): Condition =>
  c.type === 'Programmed'
    ? { ...c, status: 'False', reason: 'Invalid', message: 'the Gateway is not accepted (InvalidParameters)' }
    : c;

/** withoutAddress: a listener of a Gateway without an address is not served, whatever else holds. */
export const withoutAddress = (c: Condition, gen: number): Condition =>
  c.type === 'Programmed' && c.status === 'True'
    ? cond('Programmed', false, 'Pending', 'the Gateway has no address to be served on', gen)
    : c;

/** classAccepted is a GatewayClass's Accepted: a class with parameters is refused (no parameters kind is supported). */
export const classAccepted = (hasParameters: boolean, controllerName: string, gen: number): Condition =>
  hasParameters
    ? cond('Accepted', false, 'InvalidParameters', 'parametersRef is not supported', gen)
    : cond('Accepted', true, 'Accepted', `handled by ${controllerName}`, gen);

/** gatewayAccepted is a Gateway's Accepted: refused for its parameters or its address, else by its listeners. */
export function gatewayAccepted(
  gateway: Gateway,
  listeners: readonly ListenerState[],
  verdict: AddressVerdict | undefined,
): Condition {
  const gen = gateway.meta.generation;
  const acceptedCount = listeners.filter((s) => s.accepted).length;
  if (gateway.parametersRef !== undefined)
    return cond('Accepted', false, 'InvalidParameters', parametersMessage(gateway), gen);
  if (verdict?.kind === 'unsupported') return cond('Accepted', false, 'UnsupportedAddress', verdict.message, gen);
  if (acceptedCount === listeners.length && listeners.length > 0)
    return cond('Accepted', true, 'Accepted', 'gateway is accepted', gen);
  return cond(
    'Accepted',
    acceptedCount > 0,
    'ListenersNotValid',
    `${listeners.length - acceptedCount} listener(s) are not valid`,
    gen,
  );
}

/** programmedCondition is a Gateway's Programmed: served, or why not (its listeners first, then its address). */
export function programmedCondition(
  programmed: boolean,
  listenersProgrammed: boolean,
  verdict: AddressVerdict | undefined,
  gen: number,
): Condition {
  if (programmed) return cond('Programmed', true, 'Programmed', 'gateway is served', gen);
  if (!listenersProgrammed || verdict === undefined || verdict.kind === 'assigned')
    return cond('Programmed', false, 'Invalid', 'no listener is served', gen);
  if (verdict.kind === 'unsupported') return cond('Programmed', false, 'Invalid', verdict.message, gen);
  const reason = verdict.kind === 'unusable' ? 'AddressNotUsable' : 'AddressNotAssigned';
  return cond('Programmed', false, reason, verdict.message, gen);
}

/** ParentMatch is how far a route got with one parentRef's Gateway: each step narrows the listeners. */
export interface ParentMatch {
  /** the Gateway is refused (infrastructure parameters) */
  readonly refusedGateway: boolean;
  /** listeners matching the parentRef's sectionName and port */
  readonly candidates: readonly ListenerState[];
  /** of those, accepted and not conflicted */
  readonly usable: readonly ListenerState[];
  /** of those, allowing the route's kind and namespace */
  readonly allowed: readonly ListenerState[];
  /** of those, the ones with hostnames in common with the route */
  readonly matching: readonly unknown[];
}

/** matchParent narrows a Gateway's listeners for one parentRef: by sectionName and port, usable, allowed, hostnames. */
export function matchParent(
  route: HTTPRoute,
  parentRef: ParentRef,
  gateway: Gateway,
  listenerStates: readonly ListenerState[],
  ctx: Context,
): ParentMatch & { readonly matching: readonly { s: ListenerState; hosts: (string | null)[] }[] } {
  const candidates = listenerStates.filter(
    (s) =>
      (parentRef.sectionName === undefined || s.listener.name === parentRef.sectionName) &&
      (parentRef.port === undefined || s.listener.port === parentRef.port),
  );
  const refusedGateway = gateway.parametersRef !== undefined;
  const usable = refusedGateway ? [] : candidates.filter((s) => s.accepted && !s.conflicted);
  const allowed = usable.filter(
    (s) =>
      s.supportedKinds.some((k) => k.kind === route.kind) && namespaceAllowed(s, gateway, route.meta.namespace, ctx),
  );
  const matching = allowed
    .map((s) => ({ s, hosts: intersectHostnames(s.listener.hostname, route.hostnames) }))
    .filter((x) => x.hosts.length > 0);
  return { refusedGateway, candidates, usable, allowed, matching };
}

/** parentAccepted is a route's Accepted for one parent: the first step that left no listener says why. */
export function parentAccepted(
  match: ParentMatch,
  invalid: readonly { readonly field: string; readonly message: string }[],
  gen: number,
): Condition {
  if (match.usable.length === 0)
    return cond(
      'Accepted',
      false,
      'NoMatchingParent',
      match.refusedGateway
        ? 'the Gateway is not accepted (InvalidParameters)'
        : match.candidates.some((s) => s.accepted && s.conflicted)
          ? 'every listener matching sectionName and port is Conflicted (see the Gateway’s listener status)'
          : 'no accepted listener matches sectionName and port',
      gen,
    );
  if (match.allowed.length === 0)
    return cond('Accepted', false, 'NotAllowedByListeners', 'no listener allows this route (namespace or kind)', gen);
  if (match.matching.length === 0)
    return cond('Accepted', false, 'NoMatchingListenerHostname', 'no hostname in common with any listener', gen);
  if (invalid.length > 0)
    return cond('Accepted', false, 'UnsupportedValue', invalid.map((i) => `${i.field}: ${i.message}`).join('; '), gen);
  return cond('Accepted', true, 'Accepted', 'route is accepted', gen);
}

/** resolvedRefs is a route's ResolvedRefs: the first reference that did not resolve, or all resolved. */
export function resolvedRefs(firstUnresolved: { readonly reason: string } | undefined, gen: number): Condition {
  return firstUnresolved
    ? cond('ResolvedRefs', false, firstUnresolved.reason, `a backendRef ${REF_MESSAGES[firstUnresolved.reason]}`, gen)
    : cond('ResolvedRefs', true, 'ResolvedRefs', 'all references resolved', gen);
}
