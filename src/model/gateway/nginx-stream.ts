/**
 * The Gateway API's TLS, TCP and UDP listeners as nginx's stream block (beside `--tcp-services-configmap`,
 * `--udp-services-configmap` and ssl-passthrough, src/model/stream.ts, whose Service resolution and upstreams they
 * share: a Service port both name is one upstream). Debian has no stream Lua module, so this is nginx.conf text
 * listing endpoints, remade each build (it is small).
 *
 * - TCP and UDP: one stream server per listen socket, `proxy_pass` to the route's backend, or to a
 *   `split_clients` variable when it has several weighted ones (weights are shares of connections).
 * - TLS Passthrough: `ssl_preread` and a map from the SNI name to the route's backend; a name no route serves is
 *   closed. On the https port under `--enable-ssl-passthrough` the names join ssl-passthrough's own map instead, whose
 *   default is the http servers' TLS socket: HTTPS and TLS listeners share that port, SNI decides. A hostname an
 *   Ingress serves there stays the Ingress's (as for an HTTPRoute: a problem on the route).
 * - A backend that did not resolve, or has no ready endpoint, keeps its share and is closed (`ia_gw_closed`).
 * - TLS Terminate: the same SNI map, whose entry for a name is the upstream of an internal unix socket with `ssl` and
 *   the listener's certificate, proxying the plain bytes to the route's backend (tls-terminate.ts). Passthrough and
 *   Terminate names share a port, and on the https port under `--enable-ssl-passthrough` HTTPS listeners too.
 */
import { compare, UpstreamTable, BuiltUpstreams } from '../backends.js';
import { type Lookups, TrackedReads } from '../lookups.js';
import type {
  GatewayStream,
  GatewayStreamServed,
  GatewayStreamServer,
  GatewayTermination,
  PassthroughHost,
  Problem,
  Server,
  StreamModel,
  StreamUpstream,
} from '../nginx-model.js';
import { resolveStreamBackend } from '../stream.js';
import type { EffectiveBackend, StreamListenerRoutes, StreamRoute } from './routes.js';
import { type TerminateCertificates, terminationSocket } from './tls-terminate.js';

/** CLOSED is the upstream a share without a usable backend goes to: its only server is down, so nginx closes. */
export const CLOSED_UPSTREAM = 'ia_gw_closed';

export interface GatewayStreamInput {
  readonly streams: readonly StreamListenerRoutes[];
  readonly lookups: Lookups;
  readonly httpPort: number;
  readonly httpsPort: number;
  /** the `host:` part of the listen directives, or '' for all addresses */
  readonly listenHost: string;
  /** the stream block the flags made, or null */
  readonly stream: StreamModel | null;
  /** the stream module's load_module paths, for a stream block the flags did not ask for */
  readonly modules: readonly string[];
  /** the Ingress servers (a hostname one serves is theirs on the https port) */
  readonly servers: readonly Server[];
  /** the stream module's socket folder, for TLS Terminate's internal sockets (absent: Terminate names close) */
  readonly socketDir?: string;
  /** each TLS Terminate listener's certificate (tls-terminate.ts; absent or missing: its names close) */
  readonly terminateCertificates?: TerminateCertificates;
}

/** gatewayStream adds the Gateway's stream listeners to the stream block (made when the flags made none). */
export function gatewayStream(input: GatewayStreamInput, problems: Problem[]): StreamModel | null {
  if (input.streams.length === 0) return input.stream;
  const upstreams = new Map<string, StreamUpstream>((input.stream?.upstreams ?? []).map((u) => [u.name, u]));
  const table = new UpstreamTable(new TrackedReads(input.lookups), new BuiltUpstreams());
  const splits: GatewayStream['splits'][number][] = [];
  let closedUsed = false;
  /** targetOf is what proxy_pass gets for a route: an upstream name, a split variable, or the closed upstream */
  const targetOf = (listener: StreamListenerRoutes, route: StreamRoute): string => {
    const shares = route.backends.flatMap((b): { target: string; weight: number }[] =>
      b.weight > 0 ? [{ target: upstreamOf(listener, route, b), weight: b.weight }] : [],
    );
    const distinct = new Set(shares.map((s) => s.target));
    const only = shares[0];
    const target = only === undefined ? CLOSED_UPSTREAM : distinct.size === 1 ? only.target : splitOf(shares, splits);
    if (target === CLOSED_UPSTREAM || shares.some((s) => s.target === CLOSED_UPSTREAM)) closedUsed = true;
    return target;
  };
  const upstreamOf = (listener: StreamListenerRoutes, route: StreamRoute, b: EffectiveBackend): string => {
    if (b.kind !== 'service') return CLOSED_UPSTREAM;
    const protocol = listener.protocol === 'UDP' ? 'UDP' : 'TCP';
    const resolved = resolveStreamBackend(
      protocol,
      { namespace: b.namespace, service: b.name, port: b.port, decodeProxy: false, encodeProxy: false },
      input.lookups,
      table,
      'spec.rules[0].backendRefs',
    );
    if (typeof resolved === 'string') {
      problems.push({
        kind: route.kind,
        namespace: route.route.namespace,
        name: route.route.name,
        field: 'spec.rules[0].backendRefs',
        message: `${resolved}; its share of connections is closed`,
      });
      return CLOSED_UPSTREAM;
    }
    upstreams.set(resolved.name, resolved);
    return resolved.name;
  };

  const terminations = new Map<string, GatewayTermination>();
  /** sniTarget is what an SNI map entry gets: the route's target, or for Terminate its internal socket's upstream */
  const sniTarget = (listener: StreamListenerRoutes, route: StreamRoute, listen: string): string => {
    if (listener.tlsMode !== 'Terminate') return targetOf(listener, route);
    const certificate = input.terminateCertificates?.get(listener);
    if (certificate === undefined || input.socketDir === undefined) {
      closedUsed = true;
      return CLOSED_UPSTREAM;
    }
    const { upstream, socket } = terminationSocket(input.socketDir, listen, listener, route);
    if (!terminations.has(upstream))
      terminations.set(upstream, {
        upstream,
        socket,
        certificateFile: certificate.file,
        target: targetOf(listener, route),
        comment: `${listener.gateway.namespace}/${listener.gateway.name} ${listener.listener} ${route.hostname ?? '*'}`,
      });
    return upstream;
  };

  const served: GatewayStreamServed[] = [];
  const serve = (route: StreamRoute, where: string) =>
    served.push({ kind: route.kind, route: `${route.route.namespace}/${route.route.name}`, where });
  const passthroughHosts: PassthroughHost[] = [...(input.stream?.passthrough?.hosts ?? [])];
  const ingressHosts = new Set(input.servers.map((s) => s.host));
  const bySocket = new Map<string, GatewayStreamServer & { entries: { match: string; target: string }[] }>();
  for (const listener of input.streams) {
    const port = listener.port === 80 ? input.httpPort : listener.port === 443 ? input.httpsPort : listener.port;
    const sharedHttps = listener.protocol === 'TLS' && port === input.httpsPort && input.stream?.passthrough;
    if (sharedHttps) {
      // ssl-passthrough's own SNI map on the https port: its default is the http servers' TLS socket
      for (const route of listener.routes) {
        const hostname = route.hostname ?? '';
        if (ingressHosts.has(hostname)) {
          problems.push({
            kind: route.kind,
            namespace: route.route.namespace,
            name: route.route.name,
            field: 'spec.hostnames',
            message: `host ${hostname} is served by an Ingress on the https port, which keeps it; not passed through`,
          });
          continue;
        }
        const match = sniMatch(hostname);
        if (passthroughHosts.some((h) => h.match === match)) continue;
        passthroughHosts.push({ match, upstream: sniTarget(listener, route, `${port}`) });
        serve(route, hostname || '*');
      }
      continue;
    }
    const listen =
      listener.address === undefined
        ? `${input.listenHost}${port}`
        : listener.address.includes(':')
          ? `[${listener.address}]:${port}`
          : `${listener.address}:${port}`;
    const udp = listener.protocol === 'UDP';
    const socketKey = `${listen}${udp ? '/udp' : ''}`;
    let server = bySocket.get(socketKey);
    if (server === undefined) {
      server = {
        listen,
        udp,
        gateways: [],
        target: null,
        sni: null,
        entries: [],
      };
      bySocket.set(socketKey, server);
    }
    const gateway = `${listener.gateway.namespace}/${listener.gateway.name}`;
    if (!server.gateways.includes(gateway)) (server.gateways as string[]).push(gateway);
    if (listener.protocol === 'TLS') {
      for (const route of listener.routes) {
        const match = sniMatch(route.hostname ?? '');
        if (server.entries.some((e) => e.match === match)) continue;
        server.entries.push({ match, target: sniTarget(listener, route, listen) });
        serve(route, route.hostname ?? '*');
      }
      continue;
    }
    const route = listener.routes[0];
    (server as { target: string | null }).target = route === undefined ? CLOSED_UPSTREAM : targetOf(listener, route);
    if (route === undefined) closedUsed = true;
    else serve(route, `:${listener.port}`);
  }
  for (const problem of table.sliceProblems.values()) problems.push(problem);

  const servers: GatewayStreamServer[] = [...bySocket.values()]
    .map(({ entries, ...server }, i) => {
      if (server.target !== null) return server;
      closedUsed = true;
      // exact names before regexes (nginx's map tries them so anyway), regexes most specific first
      const sorted = [...entries].sort((a, b) => sniOrder(a.match, b.match));
      return { ...server, sni: { variable: `$ia_gw_sni_${i}`, entries: sorted } };
    })
    .sort((a, b) => compare(a.listen, b.listen) || Number(a.udp) - Number(b.udp));
  const all = [...upstreams.values()];
  return {
    modules: input.stream?.modules ?? input.modules,
    upstreams: all.sort((a, b) => compare(a.name, b.name)),
    services: input.stream?.services ?? [],
    passthrough:
      input.stream?.passthrough == null
        ? null
        : { ...input.stream.passthrough, hosts: passthroughHosts.sort((a, b) => compare(a.match, b.match)) },
    gateway: {
      splits,
      servers,
      closed: closedUsed,
      ...(terminations.size === 0
        ? {}
        : { terminations: [...terminations.values()].sort((a, b) => compare(a.upstream, b.upstream)) }),
      ...(served.length === 0 ? {} : { served }),
    },
  };
}

/**
 * sniMatch spells a hostname as a key of a map on `$ssl_preread_server_name`: exact, or for `*.example.com` a
 * case-insensitive regex for one label or more before the suffix (the Gateway API's wildcard). Hostnames passed
 * checkHost (letters, digits, `-`, `.`), so the dots are the only characters to escape.
 */
function sniMatch(hostname: string): string {
  if (!hostname.startsWith('*.')) return hostname;
  return `~*^.+${hostname.slice(1).replaceAll('.', '\\.')}$`;
}

const sniOrder = (a: string, b: string) => {
  const ra = a.startsWith('~');
  const rb = b.startsWith('~');
  if (ra !== rb) return ra ? 1 : -1;
  // among regexes, a longer suffix is more specific
  return ra ? b.length - a.length || compare(a, b) : compare(a, b);
};

/** splitOf makes a split_clients for weighted targets (percentages to two decimals, the last `*`); its variable. */
function splitOf(
  shares: readonly { target: string; weight: number }[],
  splits: GatewayStream['splits'][number][],
): string {
  const total = shares.reduce((sum, s) => sum + s.weight, 0);
  const entries = shares.map((s, i) => ({
    share: i === shares.length - 1 ? '*' : `${(Math.floor((s.weight / total) * 10_000) / 100).toFixed(2)}%`,
    target: s.target,
  }));
  const variable = `$ia_gw_split_${splits.length}`;
  splits.push({ variable, entries });
  return variable;
}
