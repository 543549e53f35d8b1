/**
 * The order of HTTPRoute matches within one listener and hostname, as the spec prescribes
 * (httproute_types.go, HTTPRouteRule.Matches): exact path; longest prefix; method; most header
 * matches; most query-param matches; then the oldest route, the route first by
 * "{namespace}/{name}", and rule order. RegularExpression precedence is left to implementations:
 * here regex paths come after Exact and before PathPrefix (longer pattern first), as nginx itself
 * tries regex locations before plain prefixes, so a default `/` prefix does not hide them.
 *
 * GRPCRoute matches (grpcroute_types.go, GRPCRouteRule.Matches) come before HTTPRoute ones on a hostname (they
 * match only gRPC calls, so an HTTPRoute still gets all else) and rank among themselves by: Exact method match
 * before RegularExpression (the spec leaves regex precedence to implementations), most characters in the service,
 * most in the method, most header matches; then the same route and rule tie-breaks.
 */
import type { GrpcMethodMatch, Meta, RouteMatch } from './types.js';

/** Ranked is what the order needs of one match: the match, its route's metadata and its position. */
export interface Ranked {
  readonly match: RouteMatch;
  readonly route: Meta;
  readonly ruleIndex: number;
  readonly matchIndex: number;
}

const PATH_RANK = { Exact: 0, RegularExpression: 1, PathPrefix: 2 } as const;

/** compareGrpc ranks two GRPCRoute matches by the GRPCRoute criteria; 0 on a tie. */
function compareGrpc(a: GrpcMethodMatch, b: GrpcMethodMatch, ha: number, hb: number): number {
  if (a.type !== b.type) return a.type === 'Exact' ? -1 : 1;
  const service = (b.service?.length ?? 0) - (a.service?.length ?? 0);
  if (service !== 0) return service;
  const method = (b.method?.length ?? 0) - (a.method?.length ?? 0);
  if (method !== 0) return method;
  return hb - ha;
}

/** comparePrecedence sorts the higher-precedence match first. */
export function comparePrecedence(a: Ranked, b: Ranked): number {
  const ga = a.match.grpc;
  const gb = b.match.grpc;
  if ((ga === undefined) !== (gb === undefined)) return ga ? -1 : 1;
  if (ga && gb) {
    const by = compareGrpc(ga, gb, a.match.headers.length, b.match.headers.length);
    return by !== 0 ? by : compareRoutes(a, b);
  }
  const pa = a.match.path;
  const pb = b.match.path;
  if (pa.type !== pb.type) return PATH_RANK[pa.type] - PATH_RANK[pb.type];
  if (pa.type !== 'Exact' && pa.value.length !== pb.value.length) return pb.value.length - pa.value.length;
  const ma = a.match.method === undefined ? 1 : 0;
  const mb = b.match.method === undefined ? 1 : 0;
  if (ma !== mb) return ma - mb;
  if (a.match.headers.length !== b.match.headers.length) return b.match.headers.length - a.match.headers.length;
  if (a.match.queryParams.length !== b.match.queryParams.length)
    return b.match.queryParams.length - a.match.queryParams.length;
  return compareRoutes(a, b);
}

/**
 * byAge is the spec's tie-break between objects: the oldest first (no creation time last), then by
 * "{namespace}/{name}"; 0 for the same key.
 */
export function byAge(a: Meta, b: Meta): number {
  const ca = Number.isNaN(a.created) ? Number.POSITIVE_INFINITY : a.created;
  const cb = Number.isNaN(b.created) ? Number.POSITIVE_INFINITY : b.created;
  if (ca !== cb) return ca < cb ? -1 : 1;
  const ka = `${a.namespace}/${a.name}`;
  const kb = `${b.namespace}/${b.name}`;
  return ka === kb ? 0 : ka < kb ? -1 : 1;
}

/** compareRoutes breaks ties: the oldest route, then by "{namespace}/{name}", then rule and match order. */
function compareRoutes(a: Ranked, b: Ranked): number {
  const aged = a.route === b.route ? 0 : byAge(a.route, b.route);
  if (aged !== 0) return aged;
  if (a.ruleIndex !== b.ruleIndex) return a.ruleIndex - b.ruleIndex;
  return a.matchIndex - b.matchIndex;
}
