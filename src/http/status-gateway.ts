/**
 * The status page's Gateway API routes: every HTTPRoute, GRPCRoute, TLSRoute, TCPRoute and UDPRoute this controller
 * has a status for (the status actor's last `gatewayStatus`), where nginx serves each (the hostnames of the pushed
 * routes table; a stream route's SNI name or `:port`, from the model's stream block), and each parent's Accepted and
 * ResolvedRefs. Pure: reads what the actors hold.
 */
import type { GatewayStatus, RouteStatus } from '../model/gateway/routes.js';
import type { Condition } from '../model/gateway/types.js';
import type { NginxModel } from '../model/nginx-model.js';

/** GatewayRouteReport is one Gateway API route, where nginx serves it, and its parents' status. */
export interface GatewayRouteReport {
  readonly kind: 'HTTPRoute' | 'GRPCRoute' | 'TLSRoute' | 'TCPRoute' | 'UDPRoute';
  /** `namespace/name` of the route */
  readonly route: string;
  /**
   * the hostnames nginx serves it on (`*`: any host), or for TCP and UDP the `:port`, sorted; [] when it is served
   * nowhere
   */
  readonly hostnames: readonly string[];
  readonly parents: readonly GatewayParentReport[];
}

/** GatewayParentReport is one parentRef's status: `True`, or `False (Reason)` / `Unknown (Reason)`; null when unset. */
export interface GatewayParentReport {
  /** `namespace/name` of the Gateway, with `/sectionName` and `:port` when the parentRef names them */
  readonly parent: string;
  readonly accepted: string | null;
  readonly resolvedRefs: string | null;
}

const conditionOf = (conditions: readonly Condition[], type: string): string | null => {
  const c = conditions.find((x) => x.type === type);
  return c ? (c.status === 'True' ? 'True' : `${c.status} (${c.reason})`) : null;
};

/** gatewayRoutesOf lists the routes of `status` by kind then `namespace/name`; null before the first sync. */
export function gatewayRoutesOf(status: GatewayStatus | null, model: NginxModel | null): GatewayRouteReport[] | null {
  if (status === null) return null;
  // The pushed table's servers are keyed `<port>/<hostname or _>`; each entry names `namespace/name#rule`.
  const hosts = new Map<string, Set<string>>();
  for (const server of model?.gateway?.routes.servers ?? []) {
    const host = server.key.slice(server.key.indexOf('/') + 1);
    for (const entry of server.routes) {
      const key = `${entry.grpc ? 'GRPCRoute' : 'HTTPRoute'} ${entry.route.split('#')[0]}`;
      hosts.set(key, (hosts.get(key) ?? new Set()).add(host === '_' ? '*' : host));
    }
  }
  for (const s of model?.stream?.gateway?.served ?? []) {
    const key = `${s.kind} ${s.route}`;
    hosts.set(key, (hosts.get(key) ?? new Set()).add(s.where));
  }
  const report = (kind: GatewayRouteReport['kind'], r: RouteStatus): GatewayRouteReport => {
    const route = `${r.namespace}/${r.name}`;
    return {
      kind,
      route,
      hostnames: [...(hosts.get(`${kind} ${route}`) ?? [])].sort(),
      parents: r.parents.map((p) => ({
        parent:
          `${p.parentRef.namespace}/${p.parentRef.name}` +
          (p.parentRef.sectionName ? `/${p.parentRef.sectionName}` : '') +
          (p.parentRef.port !== undefined ? `:${p.parentRef.port}` : ''),
        accepted: conditionOf(p.conditions, 'Accepted'),
        resolvedRefs: conditionOf(p.conditions, 'ResolvedRefs'),
      })),
    };
  };
  const byName = (a: GatewayRouteReport, b: GatewayRouteReport) =>
    a.kind === b.kind ? (a.route < b.route ? -1 : a.route > b.route ? 1 : 0) : a.kind < b.kind ? -1 : 1;
  return [
    ...status.httpRoutes.map((r) => report('HTTPRoute', r)),
    ...(status.grpcRoutes ?? []).map((r) => report('GRPCRoute', r)),
    ...(status.tlsRoutes ?? []).map((r) => report('TLSRoute', r)),
    ...(status.tcpRoutes ?? []).map((r) => report('TCPRoute', r)),
    ...(status.udpRoutes ?? []).map((r) => report('UDPRoute', r)),
  ].sort(byName);
}
