/**
 * Readers: untrusted objects from the API server → the typed shapes in types.ts. Every string that
 * could reach nginx passes its field's validator; a value that fails is recorded as `field: message`
 * and left out, never passed on. Shapes the CRD schema forbids are refused the same way, since the
 * objects may come from a file or an API server without the CRD's validation.
 *
 * This module reads the objects whole (GatewayClass, Gateway and its listeners, the routes' parentRefs and
 * hostnames, ReferenceGrant); read-rule.ts reads an HTTPRoute's rules, read-grpc-rule.ts a GRPCRoute's.
 */
import { checkDnsLabel, checkGatewayHostname, checkIp, checkObjectName, checkPortNumber, show } from '../validate.js';
import { readFrontendTls } from './frontend-tls.js';
import { readGrpcRule } from './read-grpc-rule.js';
import { Collector, list, rec, text } from './read-fields.js';
import { readRule } from './read-rule.js';
import {
  type AllowedListeners,
  type AllowedNamespaces,
  type CertificateRef,
  type FrontendTls,
  GATEWAY_GROUP,
  type Gateway,
  type GatewayClass,
  type GatewaySpecAddress,
  type HTTPRoute,
  type LabelSelector,
  type Listener,
  type Meta,
  type ParentRef,
  type ReferenceGrant,
  type RouteGroupKind,
  type RouteKind,
  type RouteRule,
} from './types.js';
import { checkLabelKey, checkLabelValue } from './values.js';

/** readMeta reads name, namespace, generation, creationTimestamp and labels; null when the name is missing. */
export function readMeta(object: unknown, namespaced: boolean): Meta | null {
  const meta = rec(rec(object).metadata);
  const name = text(meta.name);
  const namespace = namespaced ? (text(meta.namespace) ?? 'default') : '';
  if (!name) return null;
  const stamp = meta.creationTimestamp;
  const created = stamp instanceof Date ? stamp.getTime() : typeof stamp === 'string' ? Date.parse(stamp) : Number.NaN;
  const labels: Record<string, string> = {};
  for (const [key, value] of Object.entries(rec(meta.labels))) if (typeof value === 'string') labels[key] = value;
  const generation = typeof meta.generation === 'number' ? meta.generation : 0;
  return { namespace, name, generation, created, labels };
}

/** readGatewayClass reads a GatewayClass; null without a name. */
export function readGatewayClass(object: unknown): GatewayClass | null {
  const meta = readMeta(object, false);
  if (!meta) return null;
  const spec = rec(rec(object).spec);
  return { meta, controllerName: text(spec.controllerName) ?? '', hasParameters: spec.parametersRef != null };
}

function readSelector(c: Collector, field: string, value: unknown): LabelSelector {
  const raw = rec(value);
  const matchLabels: Record<string, string> = {};
  for (const [key, v] of Object.entries(rec(raw.matchLabels))) {
    const k = c.check(`${field}.matchLabels`, checkLabelKey(key));
    const val = c.check(`${field}.matchLabels[${key}]`, checkLabelValue(v));
    if (k !== undefined && val !== undefined) matchLabels[k] = val;
  }
  const matchExpressions: LabelSelector['matchExpressions'][number][] = [];
  for (const [i, e] of list(raw.matchExpressions).entries()) {
    const f = `${field}.matchExpressions[${i}]`;
    const expr = rec(e);
    const key = c.check(`${f}.key`, checkLabelKey(expr.key));
    const operator = c.oneOf(`${f}.operator`, expr.operator, ['In', 'NotIn', 'Exists', 'DoesNotExist'] as const, 'In');
    const values = list(expr.values).map((v, j) => c.check(`${f}.values[${j}]`, checkLabelValue(v)));
    if (key === undefined || operator === undefined || values.some((v) => v === undefined)) continue;
    matchExpressions.push({ key, operator, values: values as string[] });
  }
  return { matchLabels, matchExpressions };
}

/** readListener reads one listener of a Gateway or a ListenerSet (the same shape, the same field path). */
export function readListener(raw: unknown, index: number): Listener | null {
  const c = new Collector();
  const l = rec(raw);
  const field = `spec.listeners[${index}]`;
  const name = c.check(`${field}.name`, checkDnsLabel(l.name)) ?? `#${index}`;
  const hostname = c.optional(`${field}.hostname`, l.hostname, checkGatewayHostname);
  const port = c.check(`${field}.port`, checkPortNumber(l.port)) ?? 0;
  const protocol = text(l.protocol) ?? '';
  const tls = rec(l.tls);
  const mode = tls.mode ?? 'Terminate';
  if (protocol === 'HTTPS' && mode !== 'Terminate')
    c.refuse(`${field}.tls.mode`, `${show(mode)} is not supported (only Terminate)`);
  // a TLS listener terminates in the stream block (nginx-stream.ts) or passes the connection through
  if (protocol === 'TLS' && mode !== 'Passthrough' && mode !== 'Terminate')
    c.refuse(`${field}.tls.mode`, `${show(mode)} is not supported for a TLS listener (Terminate or Passthrough)`);
  const tlsMode = protocol === 'TLS' && mode === 'Passthrough' ? 'Passthrough' : 'Terminate';
  const certificateRefs: CertificateRef[] = [];
  for (const [i, r] of list(tls.certificateRefs).entries()) {
    const ref = rec(r);
    const f = `${field}.tls.certificateRefs[${i}]`;
    const refName = c.check(`${f}.name`, checkObjectName(ref.name));
    const refNs = c.optional(`${f}.namespace`, ref.namespace, checkDnsLabel);
    if (refName === undefined) continue;
    certificateRefs.push({
      group: text(ref.group) ?? '',
      kind: text(ref.kind) ?? 'Secret',
      name: refName,
      namespace: refNs ?? '',
    });
  }
  const allowed = rec(l.allowedRoutes);
  const ns = rec(allowed.namespaces);
  const from = c.oneOf(`${field}.allowedRoutes.namespaces.from`, ns.from, ['Same', 'All', 'Selector'] as const, 'Same');
  let allowedNamespaces: AllowedNamespaces = { from: 'Same' };
  if (from === 'All') allowedNamespaces = { from: 'All' };
  if (from === 'Selector') {
    if (ns.selector == null)
      c.refuse(`${field}.allowedRoutes.namespaces.selector`, 'is required when from is Selector');
    allowedNamespaces = {
      from: 'Selector',
      selector: readSelector(c, `${field}.allowedRoutes.namespaces.selector`, ns.selector),
    };
  }
  const allowedKinds: RouteGroupKind[] | undefined =
    allowed.kinds === undefined
      ? undefined
      : list(allowed.kinds).map((k) => ({ group: text(rec(k).group) ?? GATEWAY_GROUP, kind: text(rec(k).kind) ?? '' }));
  return {
    name,
    hostname,
    port,
    protocol,
    certificateRefs,
    tlsMode,
    allowedNamespaces,
    allowedKinds,
    invalid: c.invalid,
  };
}

/** readGateway reads a Gateway; invalid listener fields stay on the listener (its conditions report them). */
export function readGateway(object: unknown): Gateway | null {
  const meta = readMeta(object, true);
  if (!meta) return null;
  const spec = rec(rec(object).spec);
  const listeners = list(spec.listeners)
    .map((l, i) => readListener(l, i))
    .filter((l): l is Listener => l !== null);
  const ref = rec(rec(spec.infrastructure).parametersRef);
  // Any parametersRef is refused (no kind is supported); the text is only shown, quoted, in status and problems.
  const parametersRef =
    rec(spec.infrastructure).parametersRef == null
      ? undefined
      : show(`${text(ref.group) ?? ''}/${text(ref.kind) ?? ''} ${text(ref.name) ?? ''}`);
  const addresses = list(spec.addresses).map(readSpecAddress);
  const statusAddresses = list(rec(rec(object).status).addresses).flatMap((a) => {
    const r = rec(a);
    const ip = checkIp(r.value);
    return (r.type ?? 'IPAddress') === 'IPAddress' && ip.ok ? [ip.value.address] : [];
  });
  return {
    meta,
    gatewayClassName: text(spec.gatewayClassName) ?? '',
    listeners,
    addresses,
    statusAddresses,
    parametersRef,
    ...optionalFrontend(readFrontendTls(spec)),
    ...backendClientCertificateOf(spec, meta.namespace),
    ...allowedListenersOf(spec),
  };
}

/**
 * allowedListenersOf reads `spec.allowedListeners.namespaces` (absent: no ListenerSet may attach, the spec's
 * default). A value the CRD would refuse, or a selector with a refused label, allows none: never more than written.
 */
function allowedListenersOf(spec: unknown): { allowedListeners?: AllowedListeners } {
  const namespaces = rec(rec(rec(spec).allowedListeners).namespaces);
  const c = new Collector();
  const from = c.oneOf('from', namespaces.from, ['None', 'Same', 'All', 'Selector'] as const, 'None');
  if (from === undefined || from === 'None') return {};
  if (from !== 'Selector') return { allowedListeners: { from } };
  if (namespaces.selector == null) return {};
  const selector = readSelector(c, 'selector', namespaces.selector);
  return c.invalid.length > 0 ? {} : { allowedListeners: { from, selector } };
}

/** backendClientCertificateOf reads `spec.tls.backend.clientCertificateRef` (judged with the Gateway's status). */
function backendClientCertificateOf(spec: unknown, namespace: string): { backendClientCertificate?: CertificateRef } {
  const raw = rec(rec(rec(spec).tls).backend).clientCertificateRef;
  if (raw === undefined || raw === null) return {};
  const r = rec(raw);
  return {
    backendClientCertificate: {
      group: text(r.group) ?? '',
      kind: text(r.kind) ?? 'Secret',
      namespace: text(r.namespace) ?? namespace,
      name: text(r.name) ?? '',
    },
  };
}

const optionalFrontend = (frontend: FrontendTls | undefined) => (frontend === undefined ? {} : { frontend });

/** readSpecAddress reads one `spec.addresses` entry (type defaults to IPAddress, as the CRD says). */
function readSpecAddress(raw: unknown): GatewaySpecAddress {
  const r = rec(raw);
  const type = r.type ?? 'IPAddress';
  if (type !== 'IPAddress') return { type: 'unsupported', written: show(type) };
  if (r.value === undefined || r.value === '') return { type: 'IPAddress', value: undefined };
  const ip = checkIp(r.value);
  return ip.ok ? { type: 'IPAddress', value: ip.value.address } : { type: 'unsupported', written: show(r.value) };
}

function readParentRef(c: Collector, field: string, raw: unknown, namespace: string): ParentRef | undefined {
  const r = rec(raw);
  const name = c.check(`${field}.name`, checkObjectName(r.name));
  const ns = c.optional(`${field}.namespace`, r.namespace, checkDnsLabel);
  const sectionName = c.optional(`${field}.sectionName`, r.sectionName, checkDnsLabel);
  const port = c.optional(`${field}.port`, r.port, checkPortNumber);
  if (name === undefined) return undefined;
  return {
    group: text(r.group) ?? GATEWAY_GROUP,
    kind: text(r.kind) ?? 'Gateway',
    namespace: ns ?? namespace,
    name,
    sectionName,
    port,
  };
}

/** readHTTPRoute reads an HTTPRoute; refused values are listed in `invalid`. Null without a name. */
export function readHTTPRoute(object: unknown): HTTPRoute | null {
  return readRoute(object, 'HTTPRoute', readRule);
}

/** readRoute reads what every route kind has (parentRefs, hostnames) and its rules with the kind's own reader. */
export function readRoute(
  object: unknown,
  kind: RouteKind,
  readRuleOf: (c: Collector, field: string, raw: unknown, namespace: string) => RouteRule,
): HTTPRoute | null {
  const meta = readMeta(object, true);
  if (!meta) return null;
  const c = new Collector();
  const spec = rec(rec(object).spec);
  const parentRefs = list(spec.parentRefs).flatMap(
    (p, i) => readParentRef(c, `spec.parentRefs[${i}]`, p, meta.namespace) ?? [],
  );
  const hostnames = list(spec.hostnames).flatMap(
    (h, i) => c.check(`spec.hostnames[${i}]`, checkGatewayHostname(h)) ?? [],
  );
  const rules = list(spec.rules).map((r, i) => readRuleOf(c, `spec.rules[${i}]`, r, meta.namespace));
  return { meta, kind, parentRefs, hostnames, rules, invalid: c.invalid };
}

/**
 * readGRPCRoute reads a GRPCRoute into the HTTPRoute shape (kind 'GRPCRoute'): each method match becomes the
 * path match it is, kept beside it for the GRPCRoute precedence. Refused values are listed in `invalid`.
 */
export function readGRPCRoute(object: unknown): HTTPRoute | null {
  // A GRPCRoute without rules routes nothing; as for an HTTPRoute, that is a route with no rules.
  return readRoute(object, 'GRPCRoute', readGrpcRule);
}

/** readReferenceGrant reads a ReferenceGrant; entries it cannot read are dropped (they grant nothing). */
export function readReferenceGrant(object: unknown): ReferenceGrant | null {
  const meta = readMeta(object, true);
  if (!meta) return null;
  const spec = rec(rec(object).spec);
  const from = list(spec.from).flatMap((f) => {
    const r = rec(f);
    const namespace = text(r.namespace);
    return namespace === undefined ? [] : [{ group: text(r.group) ?? '', kind: text(r.kind) ?? '', namespace }];
  });
  const to = list(spec.to).map((t) => {
    const r = rec(t);
    return { group: text(r.group) ?? '', kind: text(r.kind) ?? '', name: text(r.name) };
  });
  return { meta, from, to };
}
