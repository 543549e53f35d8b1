/**
 * The rules of a GRPCRoute, read into the HTTPRoute rule shape: a method match becomes the path match it is (a call
 * is a POST to `/<service>/<method>`), kept beside it for the GRPCRoute precedence; only the header modifier filters.
 */
import { checkRegexPath } from '../regex-path.js';
import { type Checked, checkHeaderName, show } from '../validate.js';
import { type Collector, list, rec } from './read-fields.js';
import { checkRegexValue, readBackendRef, readFilter, readValueMatches, ruleName } from './read-rule.js';
import type { GrpcMethodMatch, PathMatch, RouteMatch, RouteRule } from './types.js';

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

/** readGrpcRule reads one GRPCRoute rule; a rule without matches matches every call. */
export function readGrpcRule(c: Collector, field: string, raw: unknown, namespace: string): RouteRule {
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
  return {
    ...ruleName(c, field, r),
    matches,
    filters,
    backendRefs,
    timeouts: { request: undefined, backendRequest: undefined },
  };
}
