/**
 * Readers of the stream route kinds (gateway.networking.k8s.io/v1 TLSRoute, TCPRoute, UDPRoute) into the HTTPRoute
 * shape, so parentRefs, listeners, ReferenceGrants and status are judged by the same code as HTTPRoute's: a rule is
 * its backendRefs only (no match, no filter). The CRDs allow exactly one rule; a TLSRoute needs hostnames (SNI names),
 * a TCPRoute or UDPRoute has none (a `spec.hostnames` sent anyway is refused, never used to pick a listener).
 */
import { Collector, list, rec } from './read-fields.js';
import { readRoute } from './read.js';
import { readBackendRef } from './read-rule.js';
import type { HTTPRoute, L4RouteKind, RouteRule } from './types.js';

/** a stream has nothing to pick one rule among several with: the CRDs say one */
const MAX_RULES = 1;

function readL4Rule(c: Collector, field: string, raw: unknown, namespace: string): RouteRule {
  const r = rec(raw);
  const backendRefs = list(r.backendRefs).flatMap(
    (b, i) => readBackendRef(c, `${field}.backendRefs[${i}]`, b, namespace) ?? [],
  );
  return { matches: [], filters: [], backendRefs, timeouts: { request: undefined, backendRequest: undefined } };
}

function readL4Route(object: unknown, kind: L4RouteKind): HTTPRoute | null {
  const route = readRoute(object, kind, readL4Rule);
  if (route === null) return null;
  const extra = new Collector();
  const spec = rec(rec(object).spec);
  if (route.rules.length !== MAX_RULES) extra.refuse('spec.rules', `a ${kind} has exactly one rule`);
  if (kind === 'TLSRoute' && route.hostnames.length === 0 && list(spec.hostnames).length === 0)
    extra.refuse('spec.hostnames', 'a TLSRoute needs at least one hostname (the SNI names it serves)');
  if (kind !== 'TLSRoute' && list(spec.hostnames).length > 0)
    extra.refuse('spec.hostnames', `a ${kind} has no hostnames`);
  const hostnames = kind === 'TLSRoute' ? route.hostnames : [];
  return { ...route, hostnames, invalid: [...route.invalid, ...extra.invalid] };
}

export const readTLSRoute = (object: unknown) => readL4Route(object, 'TLSRoute');
export const readTCPRoute = (object: unknown) => readL4Route(object, 'TCPRoute');
export const readUDPRoute = (object: unknown) => readL4Route(object, 'UDPRoute');
