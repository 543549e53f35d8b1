/**
 * The Gateway API's data path: the listeners buildGatewayRoutes serves → nginx servers (one per port and effective
 * hostname, each one `location /` asking lua/ingress_actors/router.lua), the Backends their routes name (the same
 * `<namespace>_<service>_<port>` upstreams as Ingress), and the `routes` table pushed beside backends and
 * certificates. So a route change is a push; only a new port or hostname changes nginx.conf. Pure.
 *
 * A hostname an Ingress names keeps going to the Ingress on the http and https ports (its traffic never moves when
 * someone adds a route): the Gateway's server for it is not made, with a Problem on each HTTPRoute that loses it.
 */
import { routeEntryProblem, tlsListenersProblem } from '../table-check.js';
import { BuiltUpstreams, compare, UpstreamTable } from '../backends.js';
import type { RouteEntry, RouteFilterEntry, RouteServer, RouteValueMatch } from '../pushed-tables.js';
import { routeTableOf, mostMirrors } from '../dynamic-tables.js';
import { type Lookups, TrackedReads } from '../lookups.js';
import type { BalancedUpstream, Certificate, NginxModel, Problem, Upstream } from '../nginx-model.js';
import type { GatewayModel, GatewayServer } from './model.js';
import type { CertificateTable } from '../tls.js';
import type {
  EffectiveBackend,
  EffectiveRoute,
  GatewayRoutes,
  ListenerRoutes,
  RouteParentStatus,
  RouteStatus,
} from './routes.js';
import { cond } from './listeners.js';
import type { RouteFilter } from './types.js';
import { type BackendTlsVerdict, caKey, SYSTEM_CA } from './backend-tls.js';

/** GatewayNginxInput is what the data path needs beside the routes: the model so far and the build's lookups. */
export interface GatewayNginxInput {
  readonly model: NginxModel;
  readonly routes: GatewayRoutes;
  readonly lookups: Lookups;
  readonly certificates: CertificateTable;
  /** BackendTLSPolicy verdicts by upstream name (src/model/gateway/backend-tls.ts); absent: none */
  readonly backendTls?: ReadonlyMap<string, BackendTlsVerdict>;
}

/** The upstream name of a Service port, as Ingress names it (src/model/backends.ts). */
const upstreamName = (b: { namespace: string; name: string; port: number }) => `${b.namespace}_${b.name}_${b.port}`;

/** Ingress is what the Ingress side holds on the http and https ports. */
interface IngressHosts {
  /** host → `namespace/name` of its Ingresses */
  readonly hosts: ReadonlyMap<string, readonly string[]>;
  /** the Ingresses with a rule without host, when any (then the catch-all stays theirs) */
  readonly catchAll: readonly string[];
}

function ingressHosts(model: NginxModel): IngressHosts {
  return {
    hosts: new Map(model.servers.map((s) => [s.host, s.ingresses])),
    catchAll: model.defaultServer.ingresses,
  };
}

/** Slot gathers the listeners of one nginx server: (the Gateway's own address or none, nginx listen port, hostname). */
interface Slot {
  /** the Gateway's address from `--gateway-addresses`; null: nginx's shared address (the Ingress servers') */
  readonly address: string | null;
  readonly port: number;
  readonly listenerPort: number;
  readonly ssl: boolean;
  readonly hostname: string | null;
  /** the specificity of the listeners kept (listenerRank): only the most specific ones serve a slot */
  rank: number;
  readonly listeners: ListenerRoutes[];
  readonly routes: EffectiveRoute[];
  /** HTTPS: the client-certificate validation of the port (the first listener's: one Gateway per address and port) */
  clientCa?: ListenerRoutes['clientCa'];
}

/**
 * listenerRank orders listener hostnames by how specific they are for a name they all match: none (-1) below any
 * wildcard (its label count: `*.foo.example.com` above `*.example.com`) below an exact name (1000; at most one of
 * those matches a name).
 */
function listenerRank(hostname: string | undefined): number {
  if (hostname === undefined) return -1;
  return hostname.startsWith('*.') ? hostname.split('.').length - 1 : 1000;
}

/**
 * gatewayModel adds the Gateway servers and their backends to a finished model (with the Lua balancer only), and
 * gives the status with the Ingress-vs-HTTPRoute rule applied. Problems go to `problems`.
 */
export function gatewayModel(
  input: GatewayNginxInput,
  problems: Problem[],
): { model: NginxModel; routes: GatewayRoutes } {
  const { model, routes } = input;
  // indexed only when a listener is served: without Gateways a build does not walk the Ingress servers here
  const ingress = routes.listeners.length > 0 ? ingressHosts(model) : null;
  const slots = new Map<string, Slot>();
  const portProtocol = new Map<number, boolean>([
    [model.httpPort, false],
    [model.httpsPort, true],
  ]);
  // route key → hostnames it lost to an Ingress / kept
  const lost = new Map<string, Set<string>>();
  const kept = new Set<string>();
  const routeKey = (r: EffectiveRoute) => `${r.kind ?? 'HTTPRoute'}/${r.route.namespace}/${r.route.name}`;
  // the hostnames ('' for none) of the HTTPS listeners of each socket (`[address:]port`), routes or not
  const tlsListeners = new Map<string, Set<string>>();
  for (const listener of routes.listeners) {
    const shared = listener.port === 80 || listener.port === 443;
    const port = listener.port === 80 ? model.httpPort : listener.port === 443 ? model.httpsPort : listener.port;
    const ssl = listener.protocol === 'HTTPS';
    const fixed = portProtocol.get(port);
    if (fixed !== undefined && fixed !== ssl) {
      problems.push({
        kind: 'Gateway',
        namespace: listener.gateway.namespace,
        name: listener.gateway.name,
        field: `spec.listeners[${listener.listener}].protocol`,
        message: `port ${listener.port} is served as ${fixed ? 'HTTPS' : 'HTTP'} by nginx; this listener is not served`,
      });
      continue;
    }
    portProtocol.set(port, ssl);
    // ssl-passthrough hands all TLS of the https port to one unix socket: there the address is not known
    const address = ssl && port === model.httpsPort && model.httpsSocket ? null : (listener.address ?? null);
    if (ssl) {
      const socket = address === null ? `${port}` : `${address}:${port}`;
      tlsListeners.set(socket, (tlsListeners.get(socket) ?? new Set()).add(listener.hostname ?? ''));
    }
    // An HTTPS listener without hostname answers every name with its certificate, even one no route serves (404):
    // its catch-all server exists with or without routes, or nginx's default certificate would answer those names.
    const catchAll = ssl && listener.hostname === undefined && !listener.hosts.some((h) => h.hostname === null);
    for (const host of catchAll ? [...listener.hosts, { hostname: null, routes: [] }] : listener.hosts) {
      const name = host.hostname ?? '_';
      // On its own address a Gateway shares no host with the Ingress servers: nginx picks the most specific address.
      const owners =
        shared && address === null && ingress !== null
          ? host.hostname === null
            ? ingress.catchAll
            : ingress.hosts.get(name)
          : undefined;
      if (owners !== undefined && owners.length > 0) {
        for (const r of host.routes) {
          if (r.hostname !== host.hostname) continue;
          const set = lost.get(routeKey(r)) ?? new Set();
          lost.set(routeKey(r), set);
          if (!set.has(name)) {
            set.add(name);
            problems.push({
              kind: 'HTTPRoute',
              namespace: r.route.namespace,
              name: r.route.name,
              field: 'spec.hostnames',
              message: `host ${name === '_' ? '(any)' : name} on port ${listener.port} is served by Ingress ${owners.join(', ')}; this route is not served for it`,
            });
          }
        }
        continue;
      }
      for (const r of host.routes) if (r.hostname === host.hostname) kept.add(routeKey(r));
      const key = address === null ? `${port}/${name}` : `${address}:${port}/${name}`;
      const slot = slots.get(key) ?? {
        address,
        port,
        listenerPort: listener.port,
        ssl,
        hostname: host.hostname,
        rank: -2,
        listeners: [],
        routes: [],
      };
      slots.set(key, slot);
      if (slot.clientCa === undefined && listener.clientCa !== undefined) slot.clientCa = listener.clientCa;
      // Listener isolation: a request goes to the most specific listener whose hostname matches it, so a broader
      // listener's routes (through a route hostname) give way here. Listeners as specific as each other have the
      // same hostname: buildGatewayRoutes left only one of them programmed (the oldest Gateway's).
      const rank = listenerRank(listener.hostname);
      if (rank < slot.rank) continue;
      if (rank > slot.rank) {
        slot.rank = rank;
        slot.listeners.length = 0;
        slot.routes.length = 0;
      }
      slot.listeners.push(listener);
      slot.routes.push(...host.routes);
    }
  }
  // On its own address a Gateway's unknown hosts must not fall to one of its hostname servers (nginx's default is
  // the first server of an address): each (address, port) without a catch-all gets one that answers 404.
  for (const slot of [...slots.values()]) {
    if (slot.address === null) continue;
    const key = `${slot.address}:${slot.port}/_`;
    if (!slots.has(key)) slots.set(key, { ...slot, hostname: null, listeners: [], routes: [] });
  }
  const h2c = h2cSockets(model, slots, problems);
  // Slots made from the same listeners twice (a port and hostname two Gateways share) serve each route once.
  const ordered = [...slots.entries()].sort(([a, x], [b, y]) => x.port - y.port || compare(a, b));
  const backends = new UpstreamTable(new TrackedReads(input.lookups), keepEmpty());
  const resolveAll = (bs: readonly (EffectiveBackend | null)[]) => {
    for (const b of bs)
      if (b?.kind === 'service')
        backends.resolve(b.namespace, { service: { name: b.name, port: { number: b.port } } }, 'backendRefs', () => {});
  };
  const servers: GatewayServer[] = [];
  let [defaultHttp, defaultHttps] = [false, false];
  const routeServers: RouteServer[] = [];
  const certificates: Certificate[] = [];
  for (const [key, slot] of ordered) {
    resolveAll(slot.routes.flatMap((r) => [...r.backends, ...r.mirrors]));
    const served = dedupe(slot.routes);
    const host = slot.hostname ?? '_';
    const certificateFile = slot.ssl ? certificateOf(slot, input, problems) : null;
    if (certificateFile) certificates.push(certificateFile);
    const pushed = slot.hostname !== null ? (certificateFile?.file ?? null) : null;
    const backendCert = backendCertificateOf(slot, input, problems);
    if (backendCert && !certificates.some((c) => c.file === backendCert.file)) certificates.push(backendCert);
    // a catch-all on its own address is default_server there only: the Ingress default server keeps the shared one
    if (slot.hostname === null && slot.address === null && slot.port === model.httpPort) defaultHttp = true;
    if (slot.hostname === null && slot.address === null && slot.port === model.httpsPort) defaultHttps = true;
    servers.push({
      listen: listenOf(model, slot),
      ssl: slot.ssl,
      h2c: h2c.sockets.has(listenOf(model, slot)),
      proxyProtocol:
        model.config.useProxyProtocol || (slot.ssl && slot.port === model.httpsPort && !!model.httpsSocket),
      defaultServer: slot.hostname === null,
      host,
      serverName: slot.hostname ?? '',
      key,
      certificateFile: pushed,
      fileCertificate: slot.hostname === null ? (certificateFile?.file ?? null) : null,
      gateways: [...new Set(slot.listeners.map((l) => `${l.gateway.namespace}/${l.gateway.name}`))].sort(compare),
      mirrorSlots: mirrorSlotsOf(served),
      ...backendTlsOf(served, input.backendTls, backendCert, certificates),
      ...clientCaOf(slot, certificates),
    });
    routeServers.push({
      key,
      port: slot.listenerPort,
      routes: pushableEntries(served, problems, { verdicts: input.backendTls, certificate: backendCert?.file }),
      ...(slot.ssl ? tlsOf(slot, tlsListeners, problems) : {}),
    });
  }
  const gateway: GatewayModel = {
    servers,
    routes: routeTableOf(routeServers),
    proxyHeaders: { host: '$ia_gw_host' },
  };
  const known = backends.used.size === 0 ? null : new Set(model.upstreams.map((u) => u.name));
  const added: BalancedUpstream[] = [...backends.used.values()]
    .filter((u: Upstream) => !known?.has(u.name))
    .map((u) => ({ ...u, hashKey: null, leastConn: false }));
  const upstreams =
    added.length === 0 ? model.upstreams : [...model.upstreams, ...added].sort((a, b) => compare(a.name, b.name));
  const files = certificates.length === 0 ? null : new Set(model.certificates.map((c) => c.file));
  const extra = certificates.filter((c) => files !== null && !files.has(c.file) && files.add(c.file));
  return {
    model: {
      ...model,
      gateway,
      gatewayDefault: { http: defaultHttp, https: defaultHttps },
      upstreams,
      certificates: extra.length === 0 ? model.certificates : [...model.certificates, ...extra],
    },
    routes: withLostHosts(routes, goneRoutes(lost, kept, h2c)),
  };
}

/**
 * tlsOf is an HTTPS server's `tls`: its listener's hostname and those of its socket's HTTPS listeners, for the
 * router's 421 (GatewayHTTPSListenerDetectMisdirectedRequests); none when they do not fit the table (a Problem).
 */
function tlsOf(
  slot: Slot,
  sockets: ReadonlyMap<string, ReadonlySet<string>>,
  problems: Problem[],
): { tls?: { listener: string; listeners: string[] } } {
  const listener = slot.listeners[0]?.hostname ?? '';
  const socket = slot.address === null ? `${slot.port}` : `${slot.address}:${slot.port}`;
  const tls = { listener, listeners: [...(sockets.get(socket) ?? [])].sort() };
  const why = tlsListenersProblem(tls);
  if (why === null) return { tls };
  const gateway = slot.listeners[0]?.gateway;
  if (gateway)
    problems.push({
      kind: 'Gateway',
      namespace: gateway.namespace,
      name: gateway.name,
      field: 'spec.listeners',
      message: `${why}: requests whose TLS server name picks another listener are not answered 421`,
    });
  return {};
}

/** Gone is why a route is served nowhere after all, by route key (`kind/namespace/name`). */
type Gone = Map<string, { readonly reason: string; readonly message: string }>;

/**
 * goneRoutes are the routes that lost every hostname to Ingresses (NoMatchingListenerHostname) or, GRPCRoutes,
 * every socket to HTTP/1.1 (NotAllowedByListeners: no listener they attach to can carry gRPC).
 */
function goneRoutes(
  lost: Map<string, Set<string>>,
  kept: Set<string>,
  h2c: { readonly refused: Set<string>; readonly served: Set<string> },
): Gone {
  const gone: Gone = new Map();
  for (const [k, hosts] of lost)
    if (!kept.has(k))
      gone.set(k, {
        reason: 'NoMatchingListenerHostname',
        message: `every hostname is served by an Ingress (${[...hosts].join(', ')})`,
      });
  for (const k of h2c.refused)
    if (!h2c.served.has(k) && !gone.has(k))
      gone.set(k, { reason: 'NotAllowedByListeners', message: `its plaintext listener's port ${NOT_H2C}` });
  return gone;
}

/** NOT_H2C is why a GRPCRoute is not served on a plaintext socket that also speaks HTTP/1.1. */
const NOT_H2C =
  'speaks HTTP/1.1 (an HTTPRoute or Ingress is served there), and nginx cannot serve gRPC without TLS (h2c) beside HTTP/1.1 on one socket: attach the GRPCRoute to an HTTPS listener or to a port where only GRPCRoutes are';

/**
 * h2cSockets decides, per plaintext listen socket, whether it speaks h2c: only when every route its Gateway
 * servers serve is a GRPCRoute and no Ingress server listens there. Elsewhere the GRPCRoutes are taken out of the
 * slots (they could not be reached) with a Problem; `refused` are the routes that lost a socket this way, `served`
 * those still served on some slot.
 */
function h2cSockets(
  model: NginxModel,
  slots: Map<string, Slot>,
  problems: Problem[],
): { sockets: Set<string>; refused: Set<string>; served: Set<string> } {
  const bySocket = new Map<string, Slot[]>();
  for (const slot of slots.values()) {
    if (slot.ssl) continue;
    const listen = listenOf(model, slot);
    bySocket.set(listen, [...(bySocket.get(listen) ?? []), slot]);
  }
  // the Ingress servers' plaintext listen, spelled as server.hbs does (a Gateway slot on its own address differs)
  const ingressSocket = model.listen?.http ?? String(model.httpPort);
  const sockets = new Set<string>();
  const refused = new Set<string>();
  const key = (r: EffectiveRoute) => `GRPCRoute/${r.route.namespace}/${r.route.name}`;
  for (const [listen, list] of bySocket) {
    const all = list.flatMap((s) => s.routes);
    if (listen !== ingressSocket && all.length > 0 && all.every((r) => r.kind === 'GRPCRoute')) {
      sockets.add(listen);
      continue;
    }
    for (const slot of list) {
      const grpc = slot.routes.filter((r) => r.kind === 'GRPCRoute');
      if (grpc.length === 0) continue;
      for (const r of grpc) {
        if (refused.has(`${key(r)}@${listen}`)) continue;
        refused.add(`${key(r)}@${listen}`);
        problems.push({
          kind: 'GRPCRoute',
          namespace: r.route.namespace,
          name: r.route.name,
          field: 'spec.parentRefs',
          message: `port ${slot.listenerPort} ${listen === ingressSocket ? 'is shared with Ingress and ' : ''}${NOT_H2C}`,
        });
      }
      slot.routes.splice(0, slot.routes.length, ...slot.routes.filter((r) => r.kind !== 'GRPCRoute'));
    }
  }
  const served = new Set<string>();
  for (const slot of slots.values()) for (const r of slot.routes) if (r.kind === 'GRPCRoute') served.add(key(r));
  return { sockets, refused: new Set([...refused].map((k) => k.slice(0, k.lastIndexOf('@')))), served };
}

/** keepEmpty: Gateway backends without endpoints are still Backends (the balancer answers 503 for them). */
function keepEmpty(): BuiltUpstreams {
  const built = new BuiltUpstreams();
  built.keepEmpty = true;
  return built;
}

/** listenOf spells a slot's listen address: its Gateway's own, else as the Ingress servers do on the shared ports. */
function listenOf(model: NginxModel, slot: Slot): string {
  if (slot.address !== null)
    return slot.address.includes(':') ? `[${slot.address}]:${slot.port}` : `${slot.address}:${slot.port}`;
  if (slot.ssl && slot.port === model.httpsPort && model.httpsSocket) return `unix:${model.httpsSocket}`;
  if (model.listen === null) return String(slot.port);
  const host = model.listen.http.slice(0, model.listen.http.lastIndexOf(':'));
  return `${host}:${slot.port}`;
}

/**
 * certificateOf is the certificate of the first listener of the slot that names a usable one. A listener serves its
 * certificateRefs for all its hostnames, as the Gateway API says; unlike an Ingress TLS host it does not fall back
 * to the default certificate when the certificate's names do not cover the hostname (by OpenSSL's rules, which
 * refuse wildcards like `*` and `*.org` that the conformance suite's certificates use).
 */
function certificateOf(slot: Slot, input: GatewayNginxInput, problems: Problem[]): Certificate | null {
  for (const listener of slot.listeners) {
    for (const ref of listener.certificates) {
      const found = input.certificates.anyHost(ref.namespace, ref.name);
      if (!('error' in found)) return found;
      problems.push({
        kind: 'Gateway',
        namespace: listener.gateway.namespace,
        name: listener.gateway.name,
        field: `spec.listeners[${listener.listener}].tls.certificateRefs`,
        message: `${found.error}; using the default certificate`,
      });
    }
  }
  return null;
}

/**
 * mirrorSlotsOf: the slots the server's `mirror` directives need. An idle mirror still costs every request two
 * subrequests, so a server gets them only while one of its routes mirrors (its first mirror reloads nginx).
 */
function mirrorSlotsOf(routes: readonly EffectiveRoute[]): number[] {
  return Array.from({ length: mostMirrors(routes) }, (_, i) => i + 1);
}

function dedupe(routes: readonly EffectiveRoute[]): EffectiveRoute[] {
  const seen = new Set<string>();
  return routes.filter((r) => {
    const k = `${r.route.namespace}/${r.route.name}/${r.hostname}/${r.ruleIndex}/${r.matchIndex}`;
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

const withoutUndefined = <T extends object>(o: T): T =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;

function filterOf(f: RouteFilter, mirror: EffectiveBackend | undefined): RouteFilterEntry {
  switch (f.type) {
    case 'RequestHeaderModifier':
    case 'ResponseHeaderModifier':
      return { type: f.type, set: f.modifier.set, add: f.modifier.add, remove: f.modifier.remove };
    case 'RequestRedirect':
      return withoutUndefined({
        type: f.type,
        scheme: f.scheme,
        hostname: f.hostname,
        port: f.port,
        path: f.path,
        statusCode: f.statusCode,
      });
    case 'URLRewrite':
      return withoutUndefined({ type: f.type, hostname: f.hostname, path: f.path });
    case 'CORS':
      return f;
    case 'RequestMirror':
      return mirror?.kind === 'service'
        ? { type: f.type, backend: upstreamName(mirror), percent: f.percent }
        : { type: f.type, percent: f.percent };
  }
}

/** filtersOf gives each RequestMirror its resolved backend (they are in filter order). */
function filtersOf(r: EffectiveRoute): RouteFilterEntry[] {
  let mirror = 0;
  return r.filters.map((f) => filterOf(f, f.type === 'RequestMirror' ? r.mirrors[mirror++] : undefined));
}

/**
 * pushableEntries are the routes' entries nginx's Lua takes (src/model/table-check.ts): one a legal object still makes
 * too long for it is left out, with a problem on its match.
 */
function pushableEntries(
  routes: readonly EffectiveRoute[],
  problems: Problem[],
  tls: BackendTlsOfServer,
): RouteEntry[] {
  return routes.flatMap((r) => {
    const entry = entryOf(r, tls);
    const why = routeEntryProblem(entry);
    if (why === null) return [entry];
    problems.push({
      kind: r.kind ?? 'HTTPRoute',
      namespace: r.route.namespace,
      name: r.route.name,
      field: `spec.rules[${r.ruleIndex}].matches[${r.matchIndex}]`,
      message: `${why}; this match is not served`,
    });
    return [];
  });
}

/**
 * clientCaOf is an HTTPS server's client-certificate check: the CA file (written 0600, named by its digest) and
 * nginx's ssl_verify_client (`on` refuses a request without a valid certificate; AllowInsecureFallback lets every
 * client in, `optional_no_ca`).
 */
function clientCaOf(
  slot: Slot,
  files: Certificate[],
): { clientCa?: { file: string; verify: 'on' | 'optional_no_ca' } } {
  if (!slot.ssl || slot.clientCa === undefined) return {};
  const file = `certificates/client_ca_${caKey(slot.clientCa.pem)}.pem`;
  if (!files.some((f) => f.file === file)) files.push({ id: 'frontend client CA', file, pem: slot.clientCa.pem });
  return { clientCa: { file, verify: slot.clientCa.mode === 'AllowValidOnly' ? 'on' : 'optional_no_ca' } };
}

/**
 * backendTlsOf lists the BackendTLSPolicy profiles a server's routes use (one named location each) and registers
 * their CA files (written 0600 with the certificates).
 */
function backendTlsOf(
  routes: readonly EffectiveRoute[],
  tls: ReadonlyMap<string, BackendTlsVerdict> | undefined,
  clientCertificate: Certificate | null,
  files: Certificate[],
): { backendTls?: { key: string; caFile: string; certificateFile?: string }[] } {
  if (tls === undefined || tls.size === 0) return {};
  const profiles = new Map<string, { key: string; caFile: string; certificateFile?: string }>();
  for (const r of routes)
    for (const b of r.backends) {
      const v = b.kind === 'service' ? tls.get(upstreamName(b)) : undefined;
      if (v === undefined || 'refused' in v) continue;
      const key = profileKey(v.key, clientCertificate?.file);
      if (profiles.has(key)) continue;
      const caFile = v.caPem === null ? SYSTEM_CA : `certificates/btls_${v.key}.pem`;
      if (v.caPem !== null && !files.some((f) => f.file === caFile))
        files.push({ id: `${v.policy} CA`, file: caFile, pem: v.caPem });
      profiles.set(key, { key, caFile, ...(clientCertificate ? { certificateFile: clientCertificate.file } : {}) });
    }
  if (profiles.size === 0) return {};
  return { backendTls: [...profiles.values()].sort((a, b) => compare(a.key, b.key)) };
}

/** profileKey names a backend TLS profile: its CA's key, and with a client certificate a key of both. */
const profileKey = (ca: string, certificateFile: string | undefined) =>
  certificateFile === undefined ? ca : caKey(`${ca} ${certificateFile}`);

/**
 * backendCertificateOf is the client certificate the server's Gateway shows TLS backends
 * (`spec.tls.backend.clientCertificateRef`, resolved by buildGatewayRoutes), as a file of nginx.conf.
 */
function backendCertificateOf(slot: Slot, input: GatewayNginxInput, problems: Problem[]): Certificate | null {
  const listener = slot.listeners.find((l) => l.backendClientCertificate !== undefined);
  const ref = listener?.backendClientCertificate;
  if (listener === undefined || ref === undefined) return null;
  const found = input.certificates.anyHost(ref.namespace, ref.name);
  if (!('error' in found)) return found;
  problems.push({
    kind: 'Gateway',
    namespace: listener.gateway.namespace,
    name: listener.gateway.name,
    field: 'spec.tls.backend.clientCertificateRef',
    message: `${found.error}; TLS backends get no client certificate`,
  });
  return null;
}

/**
 * backendEntry is a backend as the router takes it: with its BackendTLSPolicy's profile and name, or unresolved
 * (answered 500) when its policy is refused or the route is a GRPCRoute (grpcs to a backend is not done here):
 * never plaintext to a Service port a policy asks TLS for.
 */
/** BackendTlsOfServer is what a server's backends need for BackendTLSPolicy: the verdicts, its client certificate. */
interface BackendTlsOfServer {
  readonly verdicts: ReadonlyMap<string, BackendTlsVerdict> | undefined;
  readonly certificate: string | undefined;
}

function backendEntry(r: EffectiveRoute, b: EffectiveBackend, tls: BackendTlsOfServer): RouteEntry['backends'][number] {
  if (b.kind !== 'service') return { weight: b.weight };
  // a backendRef's own RequestHeaderModifier filters ride with it (the router applies them once it picked it)
  const filters = b.requestHeaders?.map((m) => ({
    type: 'RequestHeaderModifier' as const,
    set: m.set,
    add: m.add,
    remove: m.remove,
  }));
  const own = filters ? { filters } : {};
  const v = tls.verdicts?.get(upstreamName(b));
  if (v === undefined) return { backend: upstreamName(b), weight: b.weight, ...own };
  if ('refused' in v || r.kind === 'GRPCRoute') return { weight: b.weight };
  return {
    backend: upstreamName(b),
    weight: b.weight,
    ...own,
    tls: profileKey(v.key, tls.certificate),
    sni: v.hostname,
  };
}

function entryOf(r: EffectiveRoute, tls: BackendTlsOfServer): RouteEntry {
  const values = (list: readonly RouteValueMatch[]) => list.map(({ type, name, value }) => ({ type, name, value }));
  return withoutUndefined({
    route: `${r.route.namespace}/${r.route.name}#${r.ruleIndex}`,
    path: r.match.path,
    grpc: r.kind === 'GRPCRoute' ? true : undefined,
    method: r.match.method,
    headers: values(r.match.headers),
    queryParams: values(r.match.queryParams),
    filters: filtersOf(r),
    backends: r.backends.map((b) => backendEntry(r, b, tls)),
    timeouts: withoutUndefined({ request: r.timeouts.request, backendRequest: r.timeouts.backendRequest }),
  });
}

/**
 * withLostHosts marks a route's parents Accepted=False when it is served nowhere after all (see goneRoutes); a
 * route that keeps any hostname stays accepted (its Problem names the hosts it lost).
 */
function withLostHosts(routes: GatewayRoutes, gone: Gone): GatewayRoutes {
  if (gone.size === 0) return routes;
  const mark = (kind: string, list: readonly RouteStatus[]): RouteStatus[] =>
    list.map((r) => {
      const why = gone.get(`${kind}/${r.namespace}/${r.name}`);
      if (why === undefined) return r;
      const parents: RouteParentStatus[] = r.parents.map((p) => ({
        ...p,
        conditions: p.conditions.map((c) =>
          c.type === 'Accepted' && c.status === 'True'
            ? cond('Accepted', false, why.reason, why.message, c.observedGeneration)
            : c,
        ),
      }));
      return { ...r, parents };
    });
  const status = routes.status;
  return {
    ...routes,
    status: {
      ...status,
      httpRoutes: mark('HTTPRoute', status.httpRoutes),
      ...(status.grpcRoutes ? { grpcRoutes: mark('GRPCRoute', status.grpcRoutes) } : {}),
    },
  };
}
