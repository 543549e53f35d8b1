/**
 * buildGatewayRoutes: Gateway API objects → for each usable (Gateway, listener) the routes it serves,
 * ordered by the spec's precedence, and the status every object should carry, all as data. Pure: the
 * controller feeds it the caches and writes the status; nothing here does I/O or reads the clock.
 */
import type { Problem } from '../nginx-model.js';
import type { ConfigMap, KubeObject, Secret, Service } from '../snapshot.js';
import { checkTlsSecret } from '../tls.js';
import { checkObjectName } from '../validate.js';
import { insecureFallback } from './frontend-tls.js';
import { compareHostnames, coveringHostnames, intersectOne } from './hostnames.js';
import { byAge, comparePrecedence } from './precedence.js';
import {
  type Context,
  cond,
  conflictAcrossGateways,
  judgeListeners,
  key,
  portKey,
  type ListenerState,
  type Socket,
} from './listeners.js';
import { readGateway, readGatewayClass, readGRPCRoute, readHTTPRoute, readMeta, readReferenceGrant } from './read.js';
import { type AddressVerdict, assignAddresses } from './addresses.js';
import {
  classAccepted,
  gatewayAccepted,
  notProgrammed,
  parametersMessage,
  parentAccepted,
  matchParent,
  programmedCondition,
  REF_MESSAGES,
  resolvedRefs,
  withoutAddress,
} from './conditions.js';
import { isGranted } from './refs.js';
import {
  attachListenerSets,
  fromSet,
  type ListenerSetVerdict,
  listenerSetStatus,
  mergedListeners,
} from './listener-sets.js';
import { isL4Kind, type StreamAttachment, type StreamRouteStatus, streamListenerRoutes } from './l4.js';
import { readTCPRoute, readTLSRoute, readUDPRoute } from './read-l4.js';
import { partiallyInvalid, withinRegexBudget } from './regex-bound.js';
import type {
  EffectiveBackend,
  EffectiveRoute,
  GatewayRoutes,
  GatewayStatus,
  ListenerRoutes,
  ListenerSetStatus,
  RouteParentStatus,
  RouteStatus,
  StreamListenerRoutes,
} from './routes.js';
import type {
  BackendRef,
  Gateway,
  GatewayClass,
  HTTPRoute,
  Listener,
  ObjectRef,
  ParentRef,
  ReferenceGrant,
} from './types.js';
import { GATEWAY_GROUP, isL4Protocol } from './types.js';

/** GatewayInput is everything the core reads; objects are untrusted (as the API server serves them). */
export interface GatewayInput {
  /** the GatewayClass controllerName this controller owns */
  readonly controllerName: string;
  readonly gatewayClasses: readonly unknown[];
  readonly gateways: readonly unknown[];
  readonly httpRoutes: readonly unknown[];
  /** GRPCRoutes (absent: none) */
  readonly grpcRoutes?: readonly unknown[];
  readonly referenceGrants: readonly unknown[];
  readonly services: readonly Service[];
  /** Secrets named by HTTPS listeners (only existence and the tls.crt/tls.key keys are checked here) */
  readonly secrets: readonly KubeObject[];
  /** Namespaces, for allowedRoutes `from: Selector` */
  readonly namespaces: readonly KubeObject[];
  /** ConfigMaps, for a Gateway's frontend client-certificate validation (absent: none) */
  readonly configMaps?: readonly ConfigMap[];
  /**
   * why Secret `namespace/name` cannot serve as a listener's certificate (`Secret … not found` among the reasons), or
   * null when it can; a
   * build passes its CertificateTable's verdicts (checked once per Secret). Absent: checkTlsSecret on `secrets`,
   * with the key strength OpenSSL serves (the Gateway API is served by the Lua balancer, which pushes certificates).
   */
  readonly certificateError?: (namespace: string, name: string) => string | null;
  /** `--gateway-addresses`: each accepted Gateway gets one (addresses.ts); absent: all share nginx's address */
  readonly addresses?: readonly string[];
  /**
   * nginx's ports for listener ports 80 and 443 (`--http-port`, `--https-port`), and whether HTTPS on the https port
   * is one shared unix socket (ssl-passthrough); absent: 80 and 443, not shared
   */
  readonly ports?: {
    readonly http: number;
    readonly https: number;
    readonly sharedHttps: boolean;
    /** nginx's own servers listen on one address (listenAddress): a Gateway's own address is free on their ports */
    readonly ownAddressFree?: boolean;
  };
  /** the ports of `--tcp-services-configmap` and `--udp-services-configmap` entries: a listener cannot take them */
  readonly streamPorts?: { readonly tcp: readonly number[]; readonly udp: readonly number[] };
  /** TLSRoutes, TCPRoutes and UDPRoutes (absent: none), served by the stream module (l4.ts) */
  readonly tlsRoutes?: readonly unknown[];
  readonly tcpRoutes?: readonly unknown[];
  readonly udpRoutes?: readonly unknown[];
  /** ListenerSets (absent: none): more listeners of Gateways that allow them (listener-sets.ts) */
  readonly listenerSets?: readonly unknown[];
}

const SERVICES_TCP = 'TCP for --tcp-services-configmap';
const SERVICES_UDP = 'UDP for --udp-services-configmap';

type ByHost = Map<string | null, (EffectiveRoute & { readonly meta: HTTPRoute['meta'] })[]>;

/** resolveBackend checks one backendRef: kind, ReferenceGrant, Service and port. */
function resolveBackend(route: HTTPRoute, ref: BackendRef, ctx: Context): EffectiveBackend & { reason?: string } {
  const unresolved = (reason: string) => ({ kind: 'unresolved' as const, weight: ref.weight, reason });
  if (ref.group !== '' || ref.kind !== 'Service') return unresolved('InvalidKind');
  const granted = isGranted(ctx.grants, {
    fromGroup: GATEWAY_GROUP,
    fromKind: route.kind,
    fromNamespace: route.meta.namespace,
    toGroup: '',
    toKind: 'Service',
    toNamespace: ref.namespace,
    toName: ref.name,
  });
  if (!granted) return unresolved('RefNotPermitted');
  const service = ctx.services.get(`${ref.namespace}/${ref.name}`);
  const port = ref.port;
  // a UDPRoute needs a UDP Service port, every other kind a TCP one
  const protocol = route.kind === 'UDPRoute' ? 'UDP' : 'TCP';
  if (
    !service ||
    port === undefined ||
    !(service.spec?.ports ?? []).some((p) => p.port === port && (p.protocol ?? 'TCP') === protocol)
  )
    return unresolved('BackendNotFound');
  return {
    kind: 'service',
    namespace: ref.namespace,
    name: ref.name,
    port,
    weight: ref.weight,
    ...(ref.requestHeaders ? { requestHeaders: ref.requestHeaders } : {}),
  };
}

/** Attachment is a route attached to one listener, through one or more of its parentRefs. */
interface Attachment {
  readonly route: HTTPRoute;
  readonly s: ListenerState;
  /** the effective hostnames (null: any) */
  readonly hosts: readonly (string | null)[];
  /** the route's parents status, and the entries of the parentRefs that select this listener */
  readonly parents: RouteParentStatus[];
  readonly parentIndexes: number[];
  readonly backends: readonly (readonly EffectiveBackend[])[];
  readonly mirrors: readonly (readonly EffectiveBackend[])[];
  /** the route of the other kind it lost this listener to */
  lostTo: HTTPRoute | null;
}

const overlaps = (a: string | null, b: string | null) => a === null || b === null || intersectOne(a, b) !== undefined;
const routeName = (r: HTTPRoute) => `${r.kind} ${r.meta.namespace}/${r.meta.name}`;

/**
 * resolveKindConflicts applies the spec's rule for an HTTPRoute and a GRPCRoute on one listener with hostnames in
 * common: exactly one is accepted there, the oldest (then the first by "{namespace}/{name}"). A parentRef whose every
 * listener went to the other kind gets Accepted=False. Returns the attachments that stand.
 */
function resolveKindConflicts(attachments: readonly Attachment[]): Attachment[] {
  const byListener = new Map<ListenerState, Attachment[]>();
  for (const at of attachments) {
    const list = byListener.get(at.s);
    if (list) list.push(at);
    else byListener.set(at.s, [at]);
  }
  for (const list of byListener.values()) {
    const kinds = new Set(list.map((at) => at.route.kind));
    if (kinds.size < 2) continue;
    const ordered = [...list].sort((a, b) => byAge(a.route.meta, b.route.meta));
    const standing: Attachment[] = [];
    for (const at of ordered) {
      const rival = standing.find(
        (o) => o.route.kind !== at.route.kind && o.hosts.some((h) => at.hosts.some((g) => overlaps(h, g))),
      );
      if (rival) at.lostTo = rival.route;
      else standing.push(at);
    }
  }
  for (const at of attachments) {
    if (!at.lostTo) continue;
    for (const i of at.parentIndexes) {
      const stillServed = attachments.some((o) => o.parents === at.parents && !o.lostTo && o.parentIndexes.includes(i));
      const parent = at.parents[i];
      if (stillServed || !parent) continue;
      at.parents[i] = {
        ...parent,
        conditions: parent.conditions.map((c) =>
          c.type === 'Accepted'
            ? cond(
                'Accepted',
                false,
                'NotAllowedByListeners',
                `${routeName(at.lostTo!)} is older and has hostnames in common on listener ${at.s.listener.name}: a listener takes one of HTTPRoute and GRPCRoute per hostname`,
                c.observedGeneration,
              )
            : c,
        ),
      };
    }
  }
  return attachments.filter((at) => !at.lostTo);
}

/** serve adds an attachment's rules to its listener's routes by hostname and counts it. */
function serve(at: Attachment, served: Map<ListenerState, ByHost>, attached: Map<ListenerState, number>): void {
  const { route, s } = at;
  attached.set(s, (attached.get(s) ?? 0) + 1);
  const byHost = served.get(s) ?? (new Map() as ByHost);
  served.set(s, byHost);
  for (const hostname of at.hosts) {
    const list = byHost.get(hostname) ?? [];
    byHost.set(hostname, list);
    for (const [ruleIndex, rule] of route.rules.entries()) {
      for (const [matchIndex, match] of rule.matches.entries()) {
        list.push({
          meta: route.meta,
          route: { namespace: route.meta.namespace, name: route.meta.name },
          ...(route.kind === 'GRPCRoute' ? { kind: 'GRPCRoute' as const } : {}),
          hostname,
          ruleIndex,
          matchIndex,
          match,
          filters: rule.filters,
          backends: at.backends[ruleIndex] ?? [],
          mirrors: at.mirrors[ruleIndex] ?? [],
          timeouts: rule.timeouts,
        });
      }
    }
  }
}

/**
 * certificateErrorOf judges a Secret as the Ingress TLS path does, for callers without the build's CertificateTable
 * (convert, the core's own tests); the controller passes the build's verdicts instead.
 */
function certificateErrorOf(secrets: readonly KubeObject[]): (namespace: string, name: string) => string | null {
  const byKey = new Map(secrets.map((s) => [`${s.metadata?.namespace ?? 'default'}/${s.metadata?.name}`, s]));
  return (namespace, name) => {
    const key = `${namespace}/${name}`;
    const secret = byKey.get(key);
    const verdict = secret ? checkTlsSecret(key, secret as Secret, true) : { error: `Secret ${key} not found` };
    return 'error' in verdict ? verdict.error : null;
  };
}

/**
 * buildGatewayRoutes turns Gateway API objects into served routes and status; see the module comment. The steps: the
 * classes and Gateways this controller owns, their listeners judged, their addresses and sockets, the routes attached
 * to their listeners, and each Gateway's served listeners and status.
 */
export function buildGatewayRoutes(input: GatewayInput): GatewayRoutes {
  const problems: Problem[] = [];
  const classes = input.gatewayClasses
    .map(readGatewayClass)
    .filter((c): c is GatewayClass => c !== null && c.controllerName === input.controllerName);
  const ctx = contextOf(input, problems);
  const gateways = ownGateways(input, classes);
  // each Gateway's listeners, then those of the ListenerSets it admits, judged as one list (the spec's merge order)
  const sets = attachListenerSets(gateways, input.listenerSets ?? [], ctx.namespaceLabels);
  const states = new Map(
    gateways.map((g) => {
      const merged = mergedListeners(g, sets.byGateway.get(key(g.meta)) ?? []);
      return [key(g.meta), judgeListeners(merged.gateway, ctx, merged.origins)];
    }),
  );
  const setVerdicts = new Map(sets.verdicts.map((v) => [key(v.set.meta), v]));
  reportParameters(gateways, problems);
  const verdicts =
    input.addresses === undefined
      ? null
      : assignAddresses(
          gateways,
          (g) => g.parametersRef === undefined && (states.get(key(g.meta)) ?? []).some((s) => s.accepted),
          input.addresses,
        );
  conflictOnSockets(input, gateways, states, verdicts);
  const { attachments, routeStatus, grpcStatus, streamStatus } = attachRoutes(
    input,
    gateways,
    states,
    ctx,
    setVerdicts,
  );
  const attached = new Map<ListenerState, number>();
  // listener state → hostname → entries (each with its route's metadata, for the precedence order)
  const served = new Map<ListenerState, ByHost>();
  const streamAttached: StreamAttachment[] = [];
  for (const at of resolveKindConflicts(attachments))
    if (isL4Kind(at.route.kind)) {
      attached.set(at.s, (attached.get(at.s) ?? 0) + 1);
      streamAttached.push(at);
    } else serve(at, served, attached);
  const streams: StreamListenerRoutes[] = [];

  const listeners: ListenerRoutes[] = [];
  const reportedRegexes = new Map<string, string>();
  const gatewayStatus: GatewayStatus['gateways'][number][] = [];
  const listenerSetStatuses: ListenerSetStatus[] = [];
  for (const gateway of gateways) {
    const merged = states.get(key(gateway.meta)) ?? [];
    const list = merged.filter((s) => s.listenerSet === undefined);
    const verdict = verdicts?.get(key(gateway.meta));
    // with the pool, a Gateway is served only on its own address
    const address = verdict?.kind === 'assigned' ? verdict.address : undefined;
    const hasAddress = verdicts === null || address !== undefined;
    const backendCert = backendClientCertificate(gateway, ctx);
    if (gateway.parametersRef === undefined && hasAddress)
      for (const s of merged)
        if (s.programmed && isL4Protocol(s.listener.protocol))
          streams.push(streamListenerRoutes(gateway, s, streamAttached, address));
        else if (s.programmed)
          listeners.push({
            ...listenerRoutes(gateway, s, served, address, { problems, reportedRegexes }),
            ...(backendCert.ok && backendCert.secret ? { backendClientCertificate: backendCert.secret } : {}),
          });
    const status = gatewayStatusOf(gateway, list, verdict, hasAddress, attached);
    const setStatuses = sets.verdicts
      .filter((v) => v.gateway === gateway)
      .map((v) => {
        const entries = merged.filter((s) => fromSet(s, v.set.meta));
        const holds = (type: string) => status.conditions.some((c) => c.type === type && c.status === 'True');
        return listenerSetStatus(
          v,
          holds('Accepted'),
          holds('Programmed'),
          gatewayStatusOf(gateway, entries, verdict, hasAddress, attached).listeners,
        );
      });
    listenerSetStatuses.push(...setStatuses);
    for (const v of sets.verdicts)
      if (v.gateway === gateway && v.kind === 'notAllowed')
        problems.push({
          kind: 'ListenerSet',
          namespace: v.set.meta.namespace,
          name: v.set.meta.name,
          field: 'spec.parentRef',
          message: `Gateway ${key(gateway.meta)} does not admit ListenerSets of this namespace (spec.allowedListeners)`,
        });
    const attachedSets = setStatuses.filter((st) =>
      st.conditions.some((c) => c.type === 'Accepted' && c.status === 'True'),
    ).length;
    gatewayStatus.push({
      ...(gateway.allowedListeners === undefined && attachedSets === 0 ? {} : { attachedListenerSets: attachedSets }),
      ...status,
      // ResolvedRefs (the spec's, for spec.tls.backend): only when the Gateway names a client certificate
      ...(gateway.backendClientCertificate === undefined
        ? {}
        : {
            conditions: [
              ...status.conditions,
              backendCert.ok
                ? cond('ResolvedRefs', true, 'ResolvedRefs', 'all references resolved', gateway.meta.generation)
                : cond('ResolvedRefs', false, backendCert.reason, backendCert.message, gateway.meta.generation),
            ],
          }),
      ...(verdicts === null ? {} : { addresses: address === undefined ? [] : [address] }),
    });
  }

  return {
    listeners,
    streams,
    status: {
      gatewayClasses: classes.map((c) => ({
        name: c.meta.name,
        conditions: [classAccepted(c.hasParameters, input.controllerName, c.meta.generation)],
      })),
      gateways: gatewayStatus,
      httpRoutes: partiallyInvalid('HTTPRoute', routeStatus, reportedRegexes),
      grpcRoutes: partiallyInvalid('GRPCRoute', grpcStatus, reportedRegexes),
      tlsRoutes: streamStatus.TLSRoute,
      tcpRoutes: streamStatus.TCPRoute,
      udpRoutes: streamStatus.UDPRoute,
      ...(listenerSetStatuses.length === 0 ? {} : { listenerSets: listenerSetStatuses }),
    },
    problems,
  };
}

/** contextOf is the lookups listeners and routes share (grants, Services, certificates, namespaces), and where problems go. */
function contextOf(input: GatewayInput, problems: Problem[]): Context {
  return {
    grants: input.referenceGrants.map(readReferenceGrant).filter((g): g is ReferenceGrant => g !== null),
    services: serviceLookup(input.services),
    certificateError: input.certificateError ?? certificateErrorOf(input.secrets),
    ...(input.configMaps === undefined ? {} : { configMaps: input.configMaps }),
    namespaceLabels: new Map(
      input.namespaces.flatMap((n) => {
        const meta = readMeta(n, false);
        return meta ? [[meta.name, meta.labels] as const] : [];
      }),
    ),
    problems,
  };
}

/** Services by `namespace/name`, per Services list: a build's list is the cache's, the same while no Service changed */
const servicesByKey = new WeakMap<readonly Service[], ReadonlyMap<string, Service>>();

/**
 * serviceLookup finds Services by `namespace/name`, indexing the list only when a route first asks: a cluster without
 * Gateway routes (10,000 Ingresses, say) does not index its Services on every build.
 */
function serviceLookup(services: readonly Service[]): Context['services'] {
  return {
    get: (key) => {
      let byKey = servicesByKey.get(services);
      if (byKey === undefined) {
        byKey = new Map(services.map((s) => [`${s.metadata?.namespace ?? 'default'}/${s.metadata?.name}`, s]));
        servicesByKey.set(services, byKey);
      }
      return byKey.get(key);
    },
  };
}

/** ownGateways are the readable Gateways of this controller's accepted classes (without parameters), by key. */
function ownGateways(input: GatewayInput, classes: readonly GatewayClass[]): Gateway[] {
  const acceptedClasses = new Set(classes.filter((c) => !c.hasParameters).map((c) => c.meta.name));
  return input.gateways
    .map(readGateway)
    .filter((g): g is Gateway => g !== null && acceptedClasses.has(g.gatewayClassName))
    .sort((a, b) => (key(a.meta) < key(b.meta) ? -1 : 1));
}

/** reportParameters: a Gateway with infrastructure parameters is not accepted (no parameters kind is supported). */
function reportParameters(gateways: readonly Gateway[], problems: Problem[]): void {
  for (const g of gateways)
    if (g.parametersRef !== undefined)
      problems.push({
        kind: 'Gateway',
        namespace: g.meta.namespace,
        name: g.meta.name,
        field: 'spec.infrastructure.parametersRef',
        message: parametersMessage(g),
      });
}

/**
 * conflictOnSockets: listeners of different Gateways on one socket (address and nginx port): the oldest keeps its
 * protocol and hostname, the others are Conflicted. A Gateway refused or without its address has no socket.
 */
function conflictOnSockets(
  input: GatewayInput,
  gateways: readonly Gateway[],
  states: Map<string, ListenerState[]>,
  verdicts: ReadonlyMap<string, AddressVerdict> | null,
): void {
  const ports = input.ports ?? { http: 80, https: 443, sharedHttps: false };
  const socketOf =
    (address: string | undefined) =>
    (l: Listener): Socket => {
      const port = l.port === 80 ? ports.http : l.port === 443 ? ports.https : l.port;
      // under ssl-passthrough, HTTPS on the https port is one unix socket whatever the Gateway's address (nginx.ts)
      // TLS there too: the stream module's SNI map is the port's, whatever the address
      const shared = ports.sharedHttps && (l.protocol === 'HTTPS' || l.protocol === 'TLS') && port === ports.https;
      if (shared) return { address: '', port };
      // Without ssl-passthrough, TLS on the https port is a stream server of the Gateway's own address alone: only
      // while nginx's own servers listen on one address (a wildcard listen of the http module takes the port).
      const own = address !== undefined && port === ports.https && ports.ownAddressFree === true;
      if (own && l.protocol === 'TLS') return { address, port, key: `${address}|${port}` };
      if (own && l.protocol === 'HTTPS') return { address, port, claim: `${address}|${port}` };
      return { address: address ?? '', port };
    };
  conflictAcrossGateways(
    gateways,
    states,
    (g) => {
      if (g.parametersRef !== undefined) return undefined;
      if (verdicts === null) return socketOf(undefined);
      const verdict = verdicts.get(key(g.meta));
      return verdict?.kind === 'assigned' ? socketOf(verdict.address) : undefined;
    },
    // nginx serves its http and https ports so (nginx.ts drops a listener of the other protocol there), and the
    // TCP and UDP services ConfigMaps' ports are theirs
    new Map([
      [portKey(ports.http, 'HTTP'), 'HTTP'],
      [portKey(ports.https, 'HTTPS'), 'HTTPS'],
      ...(input.streamPorts?.tcp ?? []).map((p) => [portKey(p, 'TCP'), SERVICES_TCP] as const),
      ...(input.streamPorts?.udp ?? []).map((p) => [portKey(p, 'UDP'), SERVICES_UDP] as const),
    ]),
    // under ssl-passthrough the stream module reads SNI on the https port first: TLS passthrough beside HTTPS there
    new Set(ports.sharedHttps ? [ports.https] : []),
  );
}

/**
 * attachRoutes reads every HTTPRoute and GRPCRoute, resolves its references, judges each of its parentRefs naming one
 * of our Gateways, and attaches it to the listeners it is accepted on. A route none of whose parents is ours is
 * another controller's: no status, no problems.
 */
function attachRoutes(
  input: GatewayInput,
  gateways: readonly Gateway[],
  states: ReadonlyMap<string, readonly ListenerState[]>,
  ctx: Context,
  /** the ListenerSets naming a Gateway of ours, by `namespace/name` */
  listenerSets: ReadonlyMap<string, ListenerSetVerdict> = new Map(),
): {
  attachments: Attachment[];
  routeStatus: RouteStatus[];
  grpcStatus: RouteStatus[];
  streamStatus: StreamRouteStatus;
} {
  const gatewayByKey = new Map(gateways.map((g) => [key(g.meta), g]));
  const routes = [
    ...input.httpRoutes.map(readHTTPRoute),
    ...(input.grpcRoutes ?? []).map(readGRPCRoute),
    ...(input.tlsRoutes ?? []).map(readTLSRoute),
    ...(input.tcpRoutes ?? []).map(readTCPRoute),
    ...(input.udpRoutes ?? []).map(readUDPRoute),
  ].filter((r): r is HTTPRoute => r !== null);
  const routeStatus: RouteStatus[] = [];
  const grpcStatus: RouteStatus[] = [];
  const streamStatus: StreamRouteStatus = { TLSRoute: [], TCPRoute: [], UDPRoute: [] };
  const attachments: Attachment[] = [];
  for (const route of routes) {
    const gen = route.meta.generation;
    const routeProblems: Problem[] = [];
    const fail = (field: string, message: string) =>
      routeProblems.push({ kind: route.kind, namespace: route.meta.namespace, name: route.meta.name, field, message });
    for (const i of route.invalid) fail(i.field, i.message);
    const { backends, mirrors, firstUnresolved } = resolveReferences(route, ctx, fail);
    // Two parentRefs may select one listener (by name and by port): it counts and serves the route once.
    const attachedHere = new Map<ListenerState, Attachment>();
    const parents: RouteParentStatus[] = [];
    for (const parentRef of route.parentRefs) {
      const parent = parentOf(parentRef, gatewayByKey, states, listenerSets);
      if (!parent) continue; // not ours (or not there): another controller's business
      const { gateway, listeners } = parent;
      const match = matchParent(route, parentRef, gateway, listeners, ctx);
      const accepted = parentAccepted(match, route.invalid, gen);
      parents.push({
        parentRef,
        controllerName: input.controllerName,
        conditions: [accepted, resolvedRefs(firstUnresolved, gen)],
      });
      if (accepted.status !== 'True') continue;
      const parentIndex = parents.length - 1;
      for (const { s, hosts } of match.matching) {
        const already = attachedHere.get(s);
        if (already) {
          already.parentIndexes.push(parentIndex);
          continue;
        }
        const at: Attachment = {
          route,
          s,
          hosts,
          parents,
          parentIndexes: [parentIndex],
          backends,
          mirrors,
          lostTo: null,
        };
        attachedHere.set(s, at);
        attachments.push(at);
      }
    }
    if (parents.length === 0) continue;
    const status = { namespace: route.meta.namespace, name: route.meta.name, parents };
    if (isL4Kind(route.kind)) streamStatus[route.kind].push(status);
    else (route.kind === 'GRPCRoute' ? grpcStatus : routeStatus).push(status);
    ctx.problems.push(...routeProblems);
  }
  return { attachments, routeStatus, grpcStatus, streamStatus };
}

/**
 * parentOf is the Gateway a parentRef names and the listeners it selects from: a Gateway's own listeners, or one
 * attached ListenerSet's (none while the set is not allowed). Undefined: not ours.
 */
function parentOf(
  parentRef: ParentRef,
  gatewayByKey: ReadonlyMap<string, Gateway>,
  states: ReadonlyMap<string, readonly ListenerState[]>,
  listenerSets: ReadonlyMap<string, ListenerSetVerdict>,
): { gateway: Gateway; listeners: readonly ListenerState[] } | undefined {
  if (parentRef.group !== GATEWAY_GROUP) return undefined;
  if (parentRef.kind === 'Gateway') {
    const gateway = gatewayByKey.get(key(parentRef));
    if (gateway === undefined) return undefined;
    const listeners = (states.get(key(gateway.meta)) ?? []).filter((s) => s.listenerSet === undefined);
    return { gateway, listeners };
  }
  if (parentRef.kind !== 'ListenerSet') return undefined;
  const verdict = listenerSets.get(key(parentRef));
  if (verdict === undefined) return undefined;
  const all = verdict.kind === 'attached' ? (states.get(key(verdict.gateway.meta)) ?? []) : [];
  return { gateway: verdict.gateway, listeners: all.filter((s) => fromSet(s, parentRef)) };
}

/** resolveReferences resolves each backendRef and mirror of a route once, a problem on its field when it does not. */
function resolveReferences(route: HTTPRoute, ctx: Context, fail: (field: string, message: string) => void) {
  const resolve = (ref: BackendRef, field: string) => {
    const resolved = resolveBackend(route, ref, ctx);
    if (resolved.kind === 'unresolved')
      fail(field, `${ref.kind} ${ref.namespace}/${ref.name} ${REF_MESSAGES[resolved.reason]}`);
    return resolved;
  };
  const backends = route.rules.map((rule, r) =>
    rule.backendRefs.map((ref, b) => resolve(ref, `spec.rules[${r}].backendRefs[${b}]`)),
  );
  const mirrors = route.rules.map((rule, r) =>
    rule.filters.flatMap((filter, at) =>
      filter.type === 'RequestMirror'
        ? [resolve(filter.backendRef, `spec.rules[${r}].filters[${at}].requestMirror.backendRef`)]
        : [],
    ),
  );
  const firstUnresolved = [...backends.flat(), ...mirrors.flat()].find(
    (b): b is EffectiveBackend & { kind: 'unresolved'; reason: string } => b.kind === 'unresolved',
  );
  return { backends, mirrors, firstUnresolved };
}

/** listenerRoutes is a served listener's routes by hostname, in precedence order and within the regex budget. */
function listenerRoutes(
  gateway: Gateway,
  s: ListenerState,
  served: ReadonlyMap<ListenerState, ByHost>,
  address: string | undefined,
  regexes: { problems: Problem[]; reportedRegexes: Map<string, string> },
): ListenerRoutes {
  const byHost = served.get(s) ?? (new Map() as ByHost);
  for (const entries of byHost.values())
    entries.sort((a, b) => comparePrecedence({ ...a, route: a.meta }, { ...b, route: b.meta }));
  const names = [...byHost.keys()].sort(compareHostnames);
  const hosts = names.map((hostname) => ({
    hostname,
    routes: withinRegexBudget(
      hostname,
      coveringHostnames(hostname, names).flatMap((by) => byHost.get(by) ?? []),
      regexes.problems,
      regexes.reportedRegexes,
    ).map(({ meta: _meta, ...rest }) => rest),
  }));
  return {
    gateway: { namespace: gateway.meta.namespace, name: gateway.meta.name },
    listener: s.listener.name,
    port: s.listener.port,
    protocol: s.listener.protocol as 'HTTP' | 'HTTPS',
    hostname: s.listener.hostname,
    certificates: s.certificates,
    hosts,
    ...(address === undefined ? {} : { address }),
    ...(s.clientCa === null ? {} : { clientCa: s.clientCa }),
  };
}

/**
 * backendClientCertificate judges a Gateway's `spec.tls.backend.clientCertificateRef`: a core Secret (another
 * namespace's with a ReferenceGrant) that the listener certificates' check takes. A refused one leaves the Gateway
 * accepted, its TLS backends reached without a client certificate (they refuse what they must).
 */
function backendClientCertificate(
  gateway: Gateway,
  ctx: Context,
): { ok: true; secret: ObjectRef | null } | { ok: false; reason: string; message: string } {
  const ref = gateway.backendClientCertificate;
  if (ref === undefined) return { ok: true, secret: null };
  if (ref.group !== '' || ref.kind !== 'Secret')
    return {
      ok: false,
      reason: 'InvalidClientCertificateRef',
      message: `${ref.group}/${ref.kind} is not a core Secret`,
    };
  const name = checkObjectName(ref.name);
  if (!name.ok)
    return { ok: false, reason: 'InvalidClientCertificateRef', message: `the Secret's name ${name.message}` };
  const granted = isGranted(ctx.grants, {
    fromGroup: GATEWAY_GROUP,
    fromKind: 'Gateway',
    fromNamespace: gateway.meta.namespace,
    toGroup: '',
    toKind: 'Secret',
    toNamespace: ref.namespace,
    toName: name.value,
  });
  if (!granted)
    return {
      ok: false,
      reason: 'RefNotPermitted',
      message: `no ReferenceGrant in ${ref.namespace} allows Secret ${name.value}`,
    };
  const error = ctx.certificateError(ref.namespace, name.value);
  if (error !== null) return { ok: false, reason: 'InvalidClientCertificateRef', message: error };
  return { ok: true, secret: { namespace: ref.namespace, name: name.value } };
}

/** gatewayStatusOf is a Gateway's conditions and its listeners' (without its addresses, which the caller adds). */
function gatewayStatusOf(
  gateway: Gateway,
  list: readonly ListenerState[],
  verdict: AddressVerdict | undefined,
  hasAddress: boolean,
  attached: ReadonlyMap<ListenerState, number>,
): GatewayStatus['gateways'][number] {
  const gen = gateway.meta.generation;
  const refused = gateway.parametersRef !== undefined;
  const listenersProgrammed = !refused && list.some((s) => s.programmed);
  const programmed = listenersProgrammed && hasAddress;
  return {
    namespace: gateway.meta.namespace,
    name: gateway.meta.name,
    conditions: [
      gatewayAccepted(gateway, list, verdict),
      programmedCondition(programmed, listenersProgrammed, verdict, gen),
      // the spec's warning that some listener lets clients in without a valid certificate
      ...(gateway.frontend === undefined
        ? []
        : [
            cond(
              'InsecureFrontendValidationMode',
              insecureFallback(gateway.frontend),
              'ConfigurationChanged',
              insecureFallback(gateway.frontend)
                ? 'a client-certificate validation lets clients in without a valid certificate (AllowInsecureFallback)'
                : 'every client-certificate validation is AllowValidOnly',
              gen,
            ),
          ]),
    ],
    listeners: list.map((s) => ({
      name: s.listener.name,
      supportedKinds: s.supportedKinds,
      attachedRoutes: attached.get(s) ?? 0,
      conditions: refused
        ? s.conditions(gen).map(notProgrammed)
        : hasAddress
          ? s.conditions(gen)
          : s.conditions(gen).map((c) => withoutAddress(c, gen)),
    })),
  };
}
