/**
 * Readers: untrusted objects from the API server → the typed shapes in types.ts. Every string that
 * could reach nginx passes its field's validator; a value that fails is recorded as `field: message`
 * and left out, never passed on. Shapes the CRD schema forbids are refused the same way, since the
 * objects may come from a file or an API server without the CRD's validation.
 */
import { TABLE_LIMITS } from '../table-schema.js';
import { checkRegexPath, regexSubsetRefusal } from '../regex-path.js';
import {
  type Checked,
  checkDnsLabel,
  checkHeaderName,
  checkHost,
  checkIp,
  checkObjectName,
  checkPath,
  checkPortNumber,
  show,
} from '../validate.js';
import {
  type AllowedNamespaces,
  type BackendRef,
  type CertificateRef,
  GATEWAY_GROUP,
  type GrpcMethodMatch,
  type Gateway,
  type GatewayClass,
  type GatewaySpecAddress,
  HTTP_METHODS,
  type HeaderModifier,
  type HTTPRoute,
  type HttpMethod,
  type LabelSelector,
  type Listener,
  type Meta,
  type ParentRef,
  type PathMatch,
  type PathModifier,
  type ReferenceGrant,
  type RouteFilter,
  type RouteGroupKind,
  type RouteKind,
  type RouteMatch,
  type RouteRule,
  type RouteTimeouts,
  type ValueMatch,
} from './types.js';
import { checkHeaderValue, checkLabelKey, checkLabelValue, checkQueryParamName } from './values.js';

/** Invalid is one refused value: its field path and why. */
export interface Invalid {
  readonly field: string;
  readonly message: string;
}

type Rec = Readonly<Record<string, unknown>>;

const rec = (value: unknown): Rec =>
  typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Rec) : {};
const list = (value: unknown): readonly unknown[] => (Array.isArray(value) ? value : []);
const text = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

/** Collector gathers refused values while a reader walks an object. */
class Collector {
  readonly invalid: Invalid[] = [];
  refuse(field: string, message: string): undefined {
    this.invalid.push({ field, message });
    return undefined;
  }
  check<T>(field: string, checked: Checked<T>): T | undefined {
    return checked.ok ? checked.value : this.refuse(field, checked.message);
  }
  /** optional checks a field only when present. */
  optional<T>(field: string, value: unknown, checker: (v: unknown) => Checked<T>): T | undefined {
    return value === undefined || value === null ? undefined : this.check(field, checker(value));
  }
  oneOf<T extends string>(field: string, value: unknown, allowed: readonly T[], fallback: T): T | undefined {
    if (value === undefined || value === null) return fallback;
    if ((allowed as readonly unknown[]).includes(value)) return value as T;
    return this.refuse(field, `${show(value)} is not one of ${allowed.join(', ')}`);
  }
}

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

function readListener(raw: unknown, index: number): Listener | null {
  const c = new Collector();
  const l = rec(raw);
  const field = `spec.listeners[${index}]`;
  const name = c.check(`${field}.name`, checkDnsLabel(l.name)) ?? `#${index}`;
  const hostname = c.optional(`${field}.hostname`, l.hostname, checkHost);
  const port = c.check(`${field}.port`, checkPortNumber(l.port)) ?? 0;
  const protocol = text(l.protocol) ?? '';
  const tls = rec(l.tls);
  const mode = tls.mode ?? 'Terminate';
  if (protocol === 'HTTPS' && mode !== 'Terminate')
    c.refuse(`${field}.tls.mode`, `${show(mode)} is not supported (only Terminate)`);
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
  return { name, hostname, port, protocol, certificateRefs, allowedNamespaces, allowedKinds, invalid: c.invalid };
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
  };
}

/** readSpecAddress reads one `spec.addresses` entry (type defaults to IPAddress, as the CRD says). */
function readSpecAddress(raw: unknown): GatewaySpecAddress {
  const r = rec(raw);
  const type = r.type ?? 'IPAddress';
  if (type !== 'IPAddress') return { type: 'unsupported', written: show(type) };
  if (r.value === undefined || r.value === '') return { type: 'IPAddress', value: undefined };
  const ip = checkIp(r.value);
  return ip.ok ? { type: 'IPAddress', value: ip.value.address } : { type: 'unsupported', written: show(r.value) };
}

function readPath(c: Collector, field: string, raw: unknown): PathMatch | undefined {
  if (raw === undefined || raw === null) return { type: 'PathPrefix', value: '/' };
  const p = rec(raw);
  const type = c.oneOf(`${field}.type`, p.type, ['Exact', 'PathPrefix', 'RegularExpression'] as const, 'PathPrefix');
  const rawValue = p.value ?? '/';
  if (type === undefined) return undefined;
  const value = c.check(
    `${field}.value`,
    type === 'RegularExpression' ? checkRegexPath(rawValue, 'both') : checkPath(rawValue),
  );
  return value === undefined ? undefined : { type, value };
}

function checkRegexValue(value: unknown): Checked<string> {
  if (typeof value !== 'string' || value.length === 0 || value.length > 1024)
    return { ok: false, message: 'must be a regex of 1 to 1024 characters' };
  // the router runs it as ^(?:…)$ (lua/ingress_actors/router.lua)
  const refused = regexSubsetRefusal(value, 'both');
  return refused === null ? { ok: true, value } : { ok: false, message: `${show(value)}: ${refused}` };
}

function readValueMatches(
  c: Collector,
  field: string,
  raw: unknown,
  checkName: (v: unknown) => Checked<string>,
  foldCase: boolean,
): ValueMatch[] {
  const out: ValueMatch[] = [];
  const seen = new Set<string>();
  for (const [i, m] of list(raw).entries()) {
    const f = `${field}[${i}]`;
    const r = rec(m);
    const type = c.oneOf(`${f}.type`, r.type, ['Exact', 'RegularExpression'] as const, 'Exact');
    const name = c.check(`${f}.name`, checkName(r.name));
    const value = c.check(
      `${f}.value`,
      type === 'RegularExpression' ? checkRegexValue(r.value) : checkHeaderValue(r.value),
    );
    if (type === undefined || name === undefined || value === undefined) continue;
    // The spec: of matches with an equal name, the first wins and the rest are ignored.
    const key = foldCase ? name.toLowerCase() : name;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ type, name, value });
  }
  return out;
}

function readMatch(c: Collector, field: string, raw: unknown): RouteMatch | undefined {
  const m = rec(raw);
  const path = readPath(c, `${field}.path`, m.path);
  const headers = readValueMatches(c, `${field}.headers`, m.headers, checkHeaderName, true);
  const queryParams = readValueMatches(c, `${field}.queryParams`, m.queryParams, checkQueryParamName, false);
  const method =
    m.method === undefined ? undefined : c.oneOf<HttpMethod>(`${field}.method`, m.method, HTTP_METHODS, 'GET');
  if (path === undefined || (m.method !== undefined && method === undefined)) return undefined;
  return { path, headers, queryParams, method };
}

function readHeaderModifier(c: Collector, field: string, raw: unknown): HeaderModifier {
  const r = rec(raw);
  const pairs = (key: 'set' | 'add') =>
    list(r[key]).flatMap((p, i) => {
      const name = c.check(`${field}.${key}[${i}].name`, checkHeaderName(rec(p).name));
      const value = c.check(`${field}.${key}[${i}].value`, checkHeaderValue(rec(p).value));
      return name === undefined || value === undefined ? [] : [{ name, value }];
    });
  const remove = list(r.remove).flatMap((n, i) => {
    const name = c.check(`${field}.remove[${i}]`, checkHeaderName(n));
    return name === undefined ? [] : [name];
  });
  return { set: pairs('set'), add: pairs('add'), remove };
}

function readPathModifier(c: Collector, field: string, raw: unknown, prefixMatch: boolean): PathModifier | undefined {
  if (raw === undefined || raw === null) return undefined;
  const r = rec(raw);
  const type = c.oneOf(`${field}.type`, r.type, ['ReplaceFullPath', 'ReplacePrefixMatch'] as const, 'ReplaceFullPath');
  if (type === undefined) return undefined;
  if (type === 'ReplacePrefixMatch' && !prefixMatch)
    return c.refuse(`${field}.type`, 'ReplacePrefixMatch needs every match of the rule to be a PathPrefix match');
  const value = c.check(
    `${field}.${type === 'ReplaceFullPath' ? 'replaceFullPath' : 'replacePrefixMatch'}`,
    checkPath(type === 'ReplaceFullPath' ? r.replaceFullPath : r.replacePrefixMatch),
  );
  return value === undefined ? undefined : { type, value };
}

/** REDIRECT_CODES are the status codes a standard-channel RequestRedirect takes (Gateway API v1.5 and later). */
export const REDIRECT_CODES = [301, 302, 303, 307, 308] as const;

/** MAX_MIRRORS is how many RequestMirror filters a rule may have: nginx.conf has one `mirror` per slot. */
export const MAX_MIRRORS = TABLE_LIMITS.mirrors;

const isInt = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v);

/** readMirrorShare reads `percent` (0-100) or `fraction` (numerator/denominator) as a percentage; 100 when neither. */
function readMirrorShare(c: Collector, field: string, m: Rec): number | undefined {
  if (m.percent != null && m.fraction != null) return c.refuse(field, 'percent and fraction cannot both be set');
  if (m.percent != null) {
    if (!isInt(m.percent) || m.percent < 0 || m.percent > 100)
      return c.refuse(`${field}.percent`, `${show(m.percent)} is not 0-100`);
    return m.percent;
  }
  if (m.fraction != null) {
    const fr = rec(m.fraction);
    const denominator = fr.denominator ?? 100;
    if (
      !isInt(fr.numerator) ||
      !isInt(denominator) ||
      fr.numerator < 0 ||
      denominator < 1 ||
      fr.numerator > denominator
    )
      return c.refuse(`${field}.fraction`, 'needs 0 <= numerator <= denominator, denominator >= 1');
    return (fr.numerator / denominator) * 100;
  }
  return 100;
}

function readFilter(
  c: Collector,
  field: string,
  raw: unknown,
  prefixMatch: boolean,
  namespace: string,
): RouteFilter | undefined {
  const r = rec(raw);
  switch (r.type) {
    case 'RequestHeaderModifier':
      return {
        type: r.type,
        modifier: readHeaderModifier(c, `${field}.requestHeaderModifier`, r.requestHeaderModifier),
      };
    case 'ResponseHeaderModifier':
      return {
        type: r.type,
        modifier: readHeaderModifier(c, `${field}.responseHeaderModifier`, r.responseHeaderModifier),
      };
    case 'RequestRedirect': {
      const f = `${field}.requestRedirect`;
      const rr = rec(r.requestRedirect);
      const scheme =
        rr.scheme == null ? undefined : c.oneOf(`${f}.scheme`, rr.scheme, ['http', 'https'] as const, 'http');
      const code = rr.statusCode ?? 302;
      const statusCode = (REDIRECT_CODES as readonly unknown[]).includes(code)
        ? (code as (typeof REDIRECT_CODES)[number])
        : c.refuse(`${f}.statusCode`, `${show(code)} is not one of ${REDIRECT_CODES.join(', ')}`);
      return {
        type: 'RequestRedirect',
        scheme,
        hostname: c.optional(`${f}.hostname`, rr.hostname, checkPreciseHost),
        path: readPathModifier(c, `${f}.path`, rr.path, prefixMatch),
        port: c.optional(`${f}.port`, rr.port, checkPortNumber),
        statusCode: statusCode ?? 302,
      };
    }
    case 'RequestMirror': {
      const f = `${field}.requestMirror`;
      const m = rec(r.requestMirror);
      const percent = readMirrorShare(c, f, m);
      const backendRef = readBackendRef(c, `${f}.backendRef`, { ...rec(m.backendRef), weight: 1 }, namespace);
      return backendRef === undefined || percent === undefined
        ? undefined
        : { type: 'RequestMirror', backendRef, percent };
    }
    case 'URLRewrite': {
      const f = `${field}.urlRewrite`;
      const u = rec(r.urlRewrite);
      return {
        type: 'URLRewrite',
        hostname: c.optional(`${f}.hostname`, u.hostname, checkPreciseHost),
        path: readPathModifier(c, `${f}.path`, u.path, prefixMatch),
      };
    }
    default:
      return c.refuse(
        `${field}.type`,
        `${show(r.type)} is not a supported filter (RequestHeaderModifier, ResponseHeaderModifier, RequestRedirect, URLRewrite, RequestMirror)`,
      );
  }
}

/** checkPreciseHost is checkHost without the wildcard, as a redirect or rewrite hostname is. */
function checkPreciseHost(value: unknown): Checked<string> {
  if (typeof value === 'string' && value.startsWith('*'))
    return { ok: false, message: `${show(value)} may not be a wildcard` };
  return checkHost(value);
}

function readBackendRef(c: Collector, field: string, raw: unknown, namespace: string): BackendRef | undefined {
  const r = rec(raw);
  const group = text(r.group) ?? '';
  const kind = text(r.kind) ?? 'Service';
  const name = c.check(`${field}.name`, checkObjectName(r.name));
  const ns = c.optional(`${field}.namespace`, r.namespace, checkDnsLabel);
  const port = c.optional(`${field}.port`, r.port, checkPortNumber);
  if (group === '' && kind === 'Service' && r.port == null)
    c.refuse(`${field}.port`, 'is required when the backend is a Service');
  const weight = r.weight ?? 1;
  if (typeof weight !== 'number' || !Number.isInteger(weight) || weight < 0 || weight > 1_000_000)
    return c.refuse(`${field}.weight`, `${show(weight)} is not a weight (0-1000000)`);
  if (r.filters !== undefined && list(r.filters).length > 0)
    c.refuse(`${field}.filters`, 'per-backend filters are not supported');
  if (name === undefined) return undefined;
  return { group, kind, name, namespace: ns ?? namespace, port, weight };
}

function readRule(c: Collector, field: string, raw: unknown, namespace: string): RouteRule {
  const r = rec(raw);
  const rawMatches = r.matches === undefined ? [{}] : list(r.matches);
  const matches = rawMatches.flatMap((m, i) => readMatch(c, `${field}.matches[${i}]`, m) ?? []);
  const prefixMatch = matches.length > 0 && matches.every((m) => m.path.type === 'PathPrefix');
  const filters = list(r.filters).flatMap(
    (f, i) => readFilter(c, `${field}.filters[${i}]`, f, prefixMatch, namespace) ?? [],
  );
  const backendRefs = list(r.backendRefs).flatMap(
    (b, i) => readBackendRef(c, `${field}.backendRefs[${i}]`, b, namespace) ?? [],
  );
  if (filters.some((f) => f.type === 'RequestRedirect') && filters.some((f) => f.type === 'URLRewrite'))
    c.refuse(`${field}.filters`, 'RequestRedirect and URLRewrite cannot be used together');
  if (filters.filter((f) => f.type === 'RequestMirror').length > MAX_MIRRORS)
    c.refuse(`${field}.filters`, `at most ${MAX_MIRRORS} RequestMirror filters are supported`);
  return { matches, filters, backendRefs, timeouts: readTimeouts(c, `${field}.timeouts`, r.timeouts) };
}

/** A Gateway API Duration: one to four `<number><unit>` parts, units h, m, s, ms (GEP-2257). */
const DURATION = /^([0-9]{1,5}(h|m|s|ms)){1,4}$/;
const UNIT_MS: Readonly<Record<string, number>> = { h: 3_600_000, m: 60_000, s: 1_000, ms: 1 };

/** checkDuration reads a Gateway API Duration into milliseconds. */
export function checkDuration(value: unknown): Checked<number> {
  if (typeof value !== 'string' || !DURATION.test(value))
    return { ok: false, message: `${show(value)} is not a duration (like 10s, 500ms, 1m30s; units h, m, s, ms)` };
  let ms = 0;
  for (const [, amount, unit] of value.matchAll(/([0-9]{1,5})(ms|h|m|s)/g)) ms += Number(amount) * UNIT_MS[unit!]!;
  return { ok: true, value: ms };
}

function readTimeouts(c: Collector, field: string, raw: unknown): RouteTimeouts {
  const t = rec(raw);
  const request = c.optional(`${field}.request`, t.request, checkDuration);
  const backendRequest = c.optional(`${field}.backendRequest`, t.backendRequest, checkDuration);
  // "0s" disables a timeout; the spec wants backendRequest no longer than a set request timeout.
  if (
    request !== undefined &&
    request > 0 &&
    backendRequest !== undefined &&
    (backendRequest === 0 || backendRequest > request)
  )
    c.refuse(`${field}.backendRequest`, `${show(t.backendRequest)} is longer than request ${show(t.request)}`);
  return { request, backendRequest };
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
function readRoute(
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
  const hostnames = list(spec.hostnames).flatMap((h, i) => c.check(`spec.hostnames[${i}]`, checkHost(h)) ?? []);
  const rules = list(spec.rules).map((r, i) => readRuleOf(c, `spec.rules[${i}]`, r, meta.namespace));
  return { meta, kind, parentRefs, hostnames, rules, invalid: c.invalid };
}

/** gRPC names as the GRPCRoute CRD allows them: a service is a dotted proto name, a method an identifier. */
const GRPC_SERVICE = /^\.?[a-zA-Z_][a-zA-Z_0-9]*(\.[a-zA-Z_][a-zA-Z_0-9]*)*$/;
const GRPC_METHOD = /^[A-Za-z_][A-Za-z_0-9]*$/;

function checkGrpcName(value: unknown, pattern: RegExp, what: string): Checked<string> {
  if (typeof value !== 'string' || value.length === 0 || value.length > 1024 || !pattern.test(value))
    return { ok: false, message: `${show(value)} is not a gRPC ${what} name` };
  return { ok: true, value };
}

/** ANY_SEGMENT stands for a service or method a RegularExpression match leaves out: one path segment. */
const ANY_SEGMENT = '[^/]+';

/**
 * grpcPath is the path match a gRPC method match is: a call is a POST to `/<service>/<method>`. Exact: both
 * → Exact path; service only → prefix `/<service>/`; method only → regex `/[^/]+/<method>` (the names are
 * identifiers, nothing in them is special to a regex). RegularExpression: `/(?:service)/(?:method)`, a left-out
 * part being one segment. Neither: any path.
 */
function grpcPath(m: GrpcMethodMatch): PathMatch {
  const { service, method } = m;
  if (m.type === 'RegularExpression') {
    if (service === undefined && method === undefined) return { type: 'PathPrefix', value: '/' };
    return { type: 'RegularExpression', value: `/(?:${service ?? ANY_SEGMENT})/(?:${method ?? ANY_SEGMENT})` };
  }
  if (service !== undefined && method !== undefined) return { type: 'Exact', value: `/${service}/${method}` };
  if (service !== undefined) return { type: 'PathPrefix', value: `/${service}/` };
  if (method !== undefined) return { type: 'RegularExpression', value: `/${ANY_SEGMENT}/${method}` };
  return { type: 'PathPrefix', value: '/' };
}

/** ANY_GRPC is the match of a GRPCRoute rule without matches: every gRPC call. */
const ANY_GRPC: GrpcMethodMatch = { type: 'Exact', service: undefined, method: undefined };

function readGrpcMatch(c: Collector, field: string, raw: unknown): RouteMatch | undefined {
  const m = rec(raw);
  const headers = readValueMatches(c, `${field}.headers`, m.headers, checkHeaderName, true);
  let grpc = ANY_GRPC;
  if (m.method != null) {
    const f = `${field}.method`;
    const r = rec(m.method);
    const type = c.oneOf(`${f}.type`, r.type, ['Exact', 'RegularExpression'] as const, 'Exact');
    const exact = type === 'Exact';
    const part = (name: 'service' | 'method', pattern: RegExp) =>
      r[name] == null || r[name] === ''
        ? undefined
        : c.check(`${f}.${name}`, exact ? checkGrpcName(r[name], pattern, name) : checkRegexValue(r[name]));
    const service = part('service', GRPC_SERVICE);
    const method = part('method', GRPC_METHOD);
    const given = (name: 'service' | 'method') => r[name] != null && r[name] !== '';
    if (type === undefined || (given('service') && service === undefined) || (given('method') && method === undefined))
      return undefined;
    if (service === undefined && method === undefined && exact)
      return c.refuse(f, 'an Exact method match needs a service or a method');
    grpc = { type, service, method };
  }
  const path = grpcPath(grpc);
  if (path.type === 'RegularExpression' && c.check(`${field}.method`, checkRegexPath(path.value, 'both')) === undefined)
    return undefined;
  return { path, grpc, headers, queryParams: [], method: undefined };
}

/** GRPC_FILTERS are the GRPCRoute filters served (a mirror would need an HTTP/2 subrequest nginx cannot make). */
const GRPC_FILTERS = ['RequestHeaderModifier', 'ResponseHeaderModifier'];

function readGrpcRule(c: Collector, field: string, raw: unknown, namespace: string): RouteRule {
  const r = rec(raw);
  const rawMatches = r.matches === undefined || list(r.matches).length === 0 ? [{}] : list(r.matches);
  const matches = rawMatches.flatMap((m, i) => readGrpcMatch(c, `${field}.matches[${i}]`, m) ?? []);
  const filters = list(r.filters).flatMap((f, i) => {
    const type = rec(f).type;
    if (!GRPC_FILTERS.includes(type as string))
      return (
        c.refuse(
          `${field}.filters[${i}].type`,
          `${show(type)} is not a supported GRPCRoute filter (${GRPC_FILTERS.join(', ')})`,
        ) ?? []
      );
    return readFilter(c, `${field}.filters[${i}]`, f, false, namespace) ?? [];
  });
  const backendRefs = list(r.backendRefs).flatMap(
    (b, i) => readBackendRef(c, `${field}.backendRefs[${i}]`, b, namespace) ?? [],
  );
  return { matches, filters, backendRefs, timeouts: { request: undefined, backendRequest: undefined } };
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
