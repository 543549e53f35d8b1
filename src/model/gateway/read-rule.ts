/**
 * The rules of an HTTPRoute (shared with GRPCRoute where the spec shares them): matches, filters, backendRefs and
 * timeouts, each value through its field's validator (read.ts says how refusals are kept).
 */
import { TABLE_LIMITS } from '../table-schema.js';
import { checkRegexPath, regexSubsetRefusal } from '../regex-path.js';
import {
  type Checked,
  checkDnsLabel,
  checkHeaderName,
  checkHost,
  checkObjectName,
  checkPath,
  checkPortNumber,
  show,
} from '../validate.js';
import { type Collector, list, type Rec, rec, text } from './read-fields.js';
import type {
  BackendRef,
  HeaderModifier,
  HttpMethod,
  PathMatch,
  PathModifier,
  RouteFilter,
  RouteMatch,
  RouteRule,
  RouteTimeouts,
  ValueMatch,
} from './types.js';
import { HTTP_METHODS } from './types.js';
import { checkHeaderValue, checkQueryParamName } from './values.js';

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

/** checkRegexValue accepts a header, query or gRPC name regex the router can run anchored at both ends. */
export function checkRegexValue(value: unknown): Checked<string> {
  if (typeof value !== 'string' || value.length === 0 || value.length > 1024)
    return { ok: false, message: 'must be a regex of 1 to 1024 characters' };
  // the router runs it as ^(?:…)$ (lua/ingress_actors/router.lua)
  const refused = regexSubsetRefusal(value, 'both');
  return refused === null ? { ok: true, value } : { ok: false, message: `${show(value)}: ${refused}` };
}

/** readValueMatches reads header or query param matches; of matches with an equal name, the first wins. */
export function readValueMatches(
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

/** readFilter reads one filter of a rule; `prefixMatch`: every match of the rule is a PathPrefix. */
export function readFilter(
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
    case 'CORS':
      return readCors(c, `${field}.cors`, rec(r.cors));
    default:
      return c.refuse(
        `${field}.type`,
        `${show(r.type)} is not a supported filter (RequestHeaderModifier, ResponseHeaderModifier, RequestRedirect, URLRewrite, RequestMirror, CORS)`,
      );
  }
}

/** the CRD's CORSOrigin: `*`, or a scheme, a host (`*`, or DNS labels after an optional `*.`) and a port */
const CORS_ORIGIN = /^(https?):\/\/((?:\*\.)?(?:[a-z0-9-]+\.)*[a-z0-9-]+|\*)(?::([0-9]{1,5}))?$/;
/** CORS_LIMITS are the CRD's maxItems (and MaxLength of an origin) */
export const CORS_LIMITS = { origins: 64, origin: 253, methods: 9, headers: 64 } as const;

/** checkCorsOrigin accepts an allowOrigins entry, in lower case (scheme and host are case-insensitive). */
export function checkCorsOrigin(value: unknown): Checked<string> {
  if (typeof value !== 'string' || value.length === 0 || value.length > CORS_LIMITS.origin)
    return { ok: false, message: `must be 1 to ${CORS_LIMITS.origin} characters` };
  if (value === '*') return { ok: true, value };
  const lower = value.toLowerCase();
  const m = CORS_ORIGIN.exec(lower);
  if (m === null || (m[3] !== undefined && (Number(m[3]) < 1 || Number(m[3]) > 65535)))
    return { ok: false, message: `${show(value)} is not * or http(s)://host[:port] (the host may start with *.)` };
  return { ok: true, value: lower };
}

/** CORS_METHODS are an allowMethods entry's values (HTTPMethodWithWildcard). */
const CORS_METHODS: readonly string[] = [...HTTP_METHODS, '*'];

/** readCors reads a CORS filter; a `*` must be alone in its list (the CRD's rules). */
function readCors(c: Collector, field: string, r: Rec): RouteFilter | undefined {
  const entries = (key: string, max: number, check: (v: unknown) => Checked<string>): string[] | undefined => {
    const items = list(r[key]);
    if (items.length > max) return c.refuse(`${field}.${key}`, `at most ${max} entries`);
    const out = items.flatMap((v, i) => c.check(`${field}.${key}[${i}]`, check(v)) ?? []);
    if (out.length !== items.length) return undefined;
    if (out.includes('*') && out.length > 1) return c.refuse(`${field}.${key}`, '* cannot be listed with others');
    return [...new Set(out)];
  };
  const method = (v: unknown): Checked<string> =>
    CORS_METHODS.includes(v as string)
      ? { ok: true, value: v as string }
      : { ok: false, message: `${show(v)} is not one of ${CORS_METHODS.join(', ')}` };
  const header = (v: unknown): Checked<string> => (v === '*' ? { ok: true, value: '*' } : checkHeaderName(v));
  const allowOrigins = entries('allowOrigins', CORS_LIMITS.origins, checkCorsOrigin);
  const allowMethods = entries('allowMethods', CORS_LIMITS.methods, method);
  const allowHeaders = entries('allowHeaders', CORS_LIMITS.headers, header);
  const exposeHeaders = entries('exposeHeaders', CORS_LIMITS.headers, header);
  const credentials = r.allowCredentials ?? false;
  if (typeof credentials !== 'boolean') return c.refuse(`${field}.allowCredentials`, 'is not a boolean');
  // the API server defaults maxAge to 5
  const maxAge = r.maxAge ?? 5;
  if (!isInt(maxAge) || maxAge < 1 || maxAge > 2 ** 31 - 1)
    return c.refuse(`${field}.maxAge`, `${show(maxAge)} is not 1-${2 ** 31 - 1} seconds`);
  if (!allowOrigins || !allowMethods || !allowHeaders || !exposeHeaders) return undefined;
  return {
    type: 'CORS',
    allowOrigins,
    allowCredentials: credentials,
    allowMethods,
    allowHeaders,
    exposeHeaders,
    maxAge,
  };
}

/** checkPreciseHost is checkHost without the wildcard, as a redirect or rewrite hostname is. */
function checkPreciseHost(value: unknown): Checked<string> {
  if (typeof value === 'string' && value.startsWith('*'))
    return { ok: false, message: `${show(value)} may not be a wildcard` };
  return checkHost(value);
}

/**
 * readBackendRef reads one backendRef; a missing namespace is the route's. `withFilters`: an HTTPRoute rule's
 * backendRef, whose own RequestHeaderModifier filters are read (any other filter, or filters elsewhere, is refused).
 */
export function readBackendRef(
  c: Collector,
  field: string,
  raw: unknown,
  namespace: string,
  withFilters = false,
): BackendRef | undefined {
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
  const requestHeaders: HeaderModifier[] = [];
  for (const [i, f] of list(r.filters).entries()) {
    const filter = rec(f);
    if (withFilters && filter.type === 'RequestHeaderModifier')
      requestHeaders.push(
        readHeaderModifier(c, `${field}.filters[${i}].requestHeaderModifier`, filter.requestHeaderModifier),
      );
    else
      c.refuse(
        `${field}.filters[${i}].type`,
        withFilters
          ? `${show(filter.type)}: only RequestHeaderModifier is supported on a backendRef`
          : 'per-backend filters are not supported here',
      );
  }
  if (name === undefined) return undefined;
  return {
    group,
    kind,
    name,
    namespace: ns ?? namespace,
    port,
    weight,
    ...(requestHeaders.length > 0 ? { requestHeaders } : {}),
  };
}

/** readRule reads one HTTPRoute rule. */
export function readRule(c: Collector, field: string, raw: unknown, namespace: string): RouteRule {
  const r = rec(raw);
  const rawMatches = r.matches === undefined ? [{}] : list(r.matches);
  const matches = rawMatches.flatMap((m, i) => readMatch(c, `${field}.matches[${i}]`, m) ?? []);
  const prefixMatch = matches.length > 0 && matches.every((m) => m.path.type === 'PathPrefix');
  const filters = list(r.filters).flatMap(
    (f, i) => readFilter(c, `${field}.filters[${i}]`, f, prefixMatch, namespace) ?? [],
  );
  const backendRefs = list(r.backendRefs).flatMap(
    (b, i) => readBackendRef(c, `${field}.backendRefs[${i}]`, b, namespace, true) ?? [],
  );
  if (filters.some((f) => f.type === 'RequestRedirect') && filters.some((f) => f.type === 'URLRewrite'))
    c.refuse(`${field}.filters`, 'RequestRedirect and URLRewrite cannot be used together');
  if (filters.filter((f) => f.type === 'CORS').length > 1) c.refuse(`${field}.filters`, 'at most one CORS filter');
  if (filters.filter((f) => f.type === 'RequestMirror').length > MAX_MIRRORS)
    c.refuse(`${field}.filters`, `at most ${MAX_MIRRORS} RequestMirror filters are supported`);
  return {
    ...ruleName(c, field, r),
    matches,
    filters,
    backendRefs,
    timeouts: readTimeouts(c, `${field}.timeouts`, r.timeouts),
  };
}

/** ruleName is a rule's optional `name` (a SectionName: an RFC 1123 subdomain), as a spread. */
export function ruleName(c: Collector, field: string, r: Rec): { name?: string } {
  const name = c.optional(`${field}.name`, r.name, checkObjectName);
  return name === undefined ? {} : { name };
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
