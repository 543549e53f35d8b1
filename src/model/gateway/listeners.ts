/**
 * Listener verdicts: each listener of one of our Gateways judged on its own fields, its conflicts with
 * the Gateway's other listeners, its route kinds and its certificate references. Pure.
 */
import type { ConfigMap, Service } from '../snapshot.js';
import { type ClientCa, clientCaOf } from './frontend-tls.js';
import type { Problem } from '../nginx-model.js';
import { byAge } from './precedence.js';
import { isGranted, selectorMatches } from './refs.js';
import {
  type Condition,
  GATEWAY_GROUP,
  type Gateway,
  type Listener,
  type ObjectRef,
  type ReferenceGrant,
  type RouteGroupKind,
} from './types.js';

/** HTTPROUTE_KIND and GRPCROUTE_KIND are the route kinds served. */
export const HTTPROUTE_KIND: RouteGroupKind = { group: GATEWAY_GROUP, kind: 'HTTPRoute' };
export const GRPCROUTE_KIND: RouteGroupKind = { group: GATEWAY_GROUP, kind: 'GRPCRoute' };
/** ROUTE_KINDS is an HTTP or HTTPS listener's default (the spec's, for an implementation that supports GRPCRoute). */
const ROUTE_KINDS: readonly RouteGroupKind[] = [HTTPROUTE_KIND, GRPCROUTE_KIND];
/** KINDS_BY_PROTOCOL: the route kinds each listener protocol serves (the stream ones one kind each, l4.ts). */
const KINDS_BY_PROTOCOL: Readonly<Record<string, readonly RouteGroupKind[]>> = {
  HTTP: ROUTE_KINDS,
  HTTPS: ROUTE_KINDS,
  TLS: [{ group: GATEWAY_GROUP, kind: 'TLSRoute' }],
  TCP: [{ group: GATEWAY_GROUP, kind: 'TCPRoute' }],
  UDP: [{ group: GATEWAY_GROUP, kind: 'UDPRoute' }],
};

/**
 * portKey is the socket a listener takes on its port: UDP is its own, the rest share the TCP port. HTTPS and TLS may
 * share one (SNI tells them apart), any other pair of protocols not.
 */
export const portKey = (port: number, protocol: string) => (protocol === 'UDP' ? `${port}/udp` : `${port}`);
export const compatibleProtocols = (a: string, b: string) =>
  a === b || (a === 'HTTPS' && b === 'TLS') || (a === 'TLS' && b === 'HTTPS');
/** hostnameKey: TCP and UDP listeners have no hostname to tell them apart (a TCP port has one owner) */
const hostnameKey = (l: Listener) => (l.protocol === 'TCP' || l.protocol === 'UDP' ? '' : (l.hostname ?? ''));

/** cond builds a condition. */
export const cond = (
  type: string,
  ok: boolean,
  reason: string,
  message: string,
  observedGeneration: number,
): Condition => ({
  type,
  status: ok ? 'True' : 'False',
  reason,
  message,
  observedGeneration,
});

/** key is `namespace/name`. */
export const key = (ref: ObjectRef) => `${ref.namespace}/${ref.name}`;

/** ListenerState is a listener's verdict: its conditions and whether routes may attach / it is served. */
export interface ListenerState {
  readonly listener: Listener;
  readonly accepted: boolean;
  readonly conflicted: boolean;
  /** served: accepted, not conflicted, certificates resolved and at least one route kind supported */
  readonly programmed: boolean;
  readonly supportedKinds: readonly RouteGroupKind[];
  readonly certificates: readonly ObjectRef[];
  /** an HTTPS listener's client-certificate validation (`spec.tls.frontend`); null: none */
  readonly clientCa: ClientCa | null;
  readonly conditions: (gen: number) => Condition[];
  /** the ListenerSet this listener comes from (listener-sets.ts); absent: the Gateway's own */
  readonly listenerSet?: ObjectRef;
}

/**
 * ListenerOrigin is the object a listener is written in: its Gateway, or a ListenerSet merged into it. Problems name
 * it, its namespace is a certificateRef's default, and ReferenceGrants are checked from its kind and namespace.
 */
export interface ListenerOrigin {
  readonly kind: 'Gateway' | 'ListenerSet';
  readonly namespace: string;
  readonly name: string;
  /** the listener's index in that object's `spec.listeners` */
  readonly index: number;
}

/** Context is the lookups both listeners and routes need, and where problems go. */
export interface Context {
  readonly grants: readonly ReferenceGrant[];
  /** Services by `namespace/name` */
  readonly services: { get(key: string): Service | undefined };
  readonly namespaceLabels: ReadonlyMap<string, Readonly<Record<string, string>>>;
  /** why Secret `namespace/name` cannot serve as a certificate (`Secret … not found` included), or null when it can */
  readonly certificateError: (namespace: string, name: string) => string | null;
  /** ConfigMaps, for frontend client-certificate validation's CA refs (absent: none) */
  readonly configMaps?: readonly ConfigMap[];
  readonly problems: Problem[];
}

/** judgeListeners gives each listener of a Gateway its verdict (validity, conflicts, refs). */
export function judgeListeners(
  gateway: Gateway,
  ctx: Context,
  /** where each listener is written (absent: all in the Gateway, in order) */
  origins?: readonly ListenerOrigin[],
): ListenerState[] {
  const firstProtocol = new Map<string, string>();
  const seenHost = new Set<string>();
  return gateway.listeners.map((listener, at) => {
    const origin = origins?.[at] ?? {
      kind: 'Gateway' as const,
      namespace: gateway.meta.namespace,
      name: gateway.meta.name,
      index: at,
    };
    const index = origin.index;
    const fail = (field: string, message: string) =>
      ctx.problems.push({
        kind: origin.kind,
        namespace: origin.namespace,
        name: origin.name,
        field,
        message,
      });
    let accepted = true;
    let acceptReason = 'Accepted';
    let acceptMessage = 'listener is valid';
    if (listener.invalid.length > 0) {
      accepted = false;
      acceptReason = 'UnsupportedValue';
      acceptMessage = listener.invalid.map((i) => `${i.field}: ${i.message}`).join('; ');
      for (const i of listener.invalid) fail(i.field, i.message);
    } else if (KINDS_BY_PROTOCOL[listener.protocol] === undefined) {
      accepted = false;
      acceptReason = 'UnsupportedProtocol';
      acceptMessage = `protocol ${JSON.stringify(listener.protocol)} is not supported (HTTP, HTTPS, TLS, TCP, UDP)`;
      fail(`spec.listeners[${index}].protocol`, acceptMessage);
    }
    // Conflicts: the first listener on a port fixes its protocol; a later one with the same hostname loses.
    let conflict: string | undefined;
    if (accepted) {
      const socket = portKey(listener.port, listener.protocol);
      const first = firstProtocol.get(socket);
      const hostKey = `${socket}/${hostnameKey(listener)}`;
      if (first !== undefined && !compatibleProtocols(first, listener.protocol)) conflict = 'ProtocolConflict';
      else if (seenHost.has(hostKey)) conflict = 'HostnameConflict';
      if (first === undefined) firstProtocol.set(socket, listener.protocol);
      if (conflict === undefined) seenHost.add(hostKey);
    }
    // Route kinds: HTTPRoute and GRPCRoute on HTTP and HTTPS, one stream kind on TLS, TCP and UDP.
    // A listener of a protocol we do not serve supports no kinds (the conformance suite expects []).
    // a TLS listener whose mode is refused takes no route of any kind (the conformance suite expects none listed)
    const refusedMode = listener.protocol === 'TLS' && listener.invalid.some((i) => i.field.endsWith('.tls.mode'));
    const protocolKinds = refusedMode ? [] : (KINDS_BY_PROTOCOL[listener.protocol] ?? []);
    const kinds = listener.allowedKinds ?? protocolKinds;
    const supportedKinds = protocolKinds.filter((r) => kinds.some((k) => k.group === r.group && k.kind === r.kind));
    let resolved = true;
    let refReason = 'ResolvedRefs';
    let refMessage = 'all references resolved';
    if (
      protocolKinds.length > 0 &&
      kinds.some((k) => !protocolKinds.some((r) => r.group === k.group && r.kind === k.kind))
    ) {
      resolved = false;
      refReason = 'InvalidRouteKinds';
      refMessage = `a ${listener.protocol} listener serves only ${protocolKinds.map((k) => k.kind).join(' and ')} (gateway.networking.k8s.io)`;
    }
    // HTTPS and TLS Terminate need certificates; a Passthrough listener never reads its certificateRefs.
    const terminates =
      listener.protocol === 'HTTPS' || (listener.protocol === 'TLS' && listener.tlsMode === 'Terminate');
    const certificates: ObjectRef[] = [];
    if (accepted && terminates) {
      if (listener.certificateRefs.length === 0) {
        resolved = false;
        refReason = 'InvalidCertificateRef';
        refMessage = `an ${listener.protocol} listener that terminates TLS needs tls.certificateRefs`;
      }
      for (const ref of listener.certificateRefs) {
        const namespace = ref.namespace || origin.namespace;
        let why: [string, string] | undefined;
        if (ref.group !== '' || ref.kind !== 'Secret')
          why = ['InvalidCertificateRef', `${ref.kind} ${ref.name} is not a core Secret`];
        else if (
          !isGranted(ctx.grants, {
            fromGroup: GATEWAY_GROUP,
            fromKind: origin.kind,
            fromNamespace: origin.namespace,
            toGroup: '',
            toKind: 'Secret',
            toNamespace: namespace,
            toName: ref.name,
          })
        )
          why = ['RefNotPermitted', `no ReferenceGrant in ${namespace} allows Secret ${ref.name}`];
        else {
          const error = ctx.certificateError(namespace, ref.name);
          if (error !== null) why = ['InvalidCertificateRef', error];
        }
        if (why) {
          resolved = false;
          [refReason, refMessage] = why;
          fail(`spec.listeners[${index}].tls.certificateRefs`, why[1]);
        } else certificates.push({ namespace, name: ref.name });
      }
    }
    // Frontend client-certificate validation: a CA that does not resolve takes the HTTPS listener down (served without
    // it, clients the Gateway means to refuse would get in)
    let clientCa: ClientCa | null = null;
    if (accepted && listener.protocol === 'HTTPS') {
      const verdict = clientCaOf(
        gateway.frontend,
        listener.port,
        gateway.meta.namespace,
        ctx.configMaps ?? [],
        ctx.grants,
      );
      if (verdict.ok) clientCa = verdict.ca;
      else {
        accepted = false;
        acceptReason = 'NoValidCACertificate';
        acceptMessage = verdict.message;
        resolved = false;
        [refReason, refMessage] = [verdict.reason, verdict.message];
        fail('spec.tls.frontend', verdict.message);
      }
    }
    // Unsupported kinds beside HTTPRoute fail ResolvedRefs but leave HTTPRoute served; a missing certificate does not.
    const certificatesOk = terminates
      ? listener.certificateRefs.length === certificates.length && certificates.length > 0
      : true;
    const programmed = accepted && conflict === undefined && certificatesOk && supportedKinds.length > 0;
    return {
      listener,
      accepted,
      conflicted: conflict !== undefined,
      programmed,
      supportedKinds,
      certificates,
      clientCa,
      ...(origin.kind === 'ListenerSet' ? { listenerSet: { namespace: origin.namespace, name: origin.name } } : {}),
      conditions: (gen: number) => [
        cond('Accepted', accepted, acceptReason, acceptMessage, gen),
        cond('ResolvedRefs', resolved, refReason, refMessage, gen),
        conflict === undefined
          ? cond('Conflicted', false, 'NoConflicts', 'no conflicts', gen)
          : cond('Conflicted', true, conflict, `another listener on port ${listener.port} comes first`, gen),
        cond(
          'Programmed',
          programmed,
          programmed ? 'Programmed' : 'Invalid',
          programmed ? 'listener is served' : 'listener is not served',
          gen,
        ),
      ],
    };
  });
}

/** Socket is where nginx serves a listener: the Gateway's address ('' for nginx's shared one) and nginx's port. */
export interface Socket {
  readonly address: string;
  readonly port: number;
  /**
   * the key its port's protocol is judged under instead of the port's: a TLS listener on a Gateway's own address and
   * the https port, where the stream module binds that address alone (`address|port`)
   */
  readonly key?: string;
  /** an HTTPS listener on its own address and the https port also claims `address|port` from such a TLS listener */
  readonly claim?: string;
}

/**
 * conflictAcrossGateways judges listeners of different Gateways against each other, the oldest Gateway first (then
 * by namespace/name), so a newer Gateway never changes what an older one serves:
 * - a port's protocol is fixed by nginx (`fixed`: the http and https ports) or by the oldest Gateway's listener on it
 *   (nginx serves a port as HTTP or HTTPS, whatever the address); a newer Gateway's listener of the other protocol is
 *   `Conflicted=True/ProtocolConflict` (before, the first Gateway by name won and the other's listener vanished);
 * - listeners on one socket and hostname (both without one included) would be one nginx server, their routes merged:
 *   a tenant's `/` would get every request the other tenant's routes leave, cookies and all. The oldest keeps it; a
 *   newer Gateway's is `Conflicted=True/HostnameConflict`.
 * Either way not programmed, so no route attaches to it. Listeners of one Gateway were judged by judgeListeners;
 * other hostnames keep the spec's precedence (the most specific listener). `socketOf` is undefined for a Gateway that
 * is not served (no address, not accepted): it holds nothing.
 */
export function conflictAcrossGateways(
  gateways: readonly Gateway[],
  states: Map<string, ListenerState[]>,
  socketOf: (g: Gateway) => ((l: Listener) => Socket) | undefined,
  fixed: ReadonlyMap<string, string>,
  /** nginx ports where HTTPS and TLS listeners can share the socket (SNI read by the stream module first) */
  mixedPorts: ReadonlySet<number> = new Set(),
): void {
  const owner = new Map<string, Gateway>();
  // by portKey: nginx's own ports (`fixed`, the http and https ports and the TCP/UDP services ConfigMaps'), then the
  // oldest Gateway's listener
  const protocols = new Map<string, { readonly protocol: string; readonly by: Gateway | null }>(
    [...fixed].map(([port, protocol]) => [port, { protocol, by: null }]),
  );
  for (const g of [...gateways].sort((a, b) => byAge(a.meta, b.meta))) {
    const socketFor = socketOf(g);
    const list = states.get(key(g.meta));
    if (socketFor === undefined || list === undefined) continue;
    // another namespace's Gateway is not named: a tenant learns no other tenant's objects from its status
    // the same Gateway only through nginx's port (80 → --http-port): judgeListeners compared the listeners' ports
    const who = (other: Gateway) =>
      other === g
        ? 'another listener of this Gateway'
        : other.meta.namespace === g.meta.namespace
          ? `Gateway ${key(other.meta)}, which is older,`
          : 'a Gateway of another namespace, which is older,';
    const conflicted = (s: ListenerState, reason: string, message: string): ListenerState => ({
      ...s,
      conflicted: true,
      programmed: false,
      conditions: (gen: number) =>
        s
          .conditions(gen)
          .map((c) =>
            c.type === 'Conflicted'
              ? cond('Conflicted', true, reason, message, gen)
              : c.type === 'Programmed'
                ? cond('Programmed', false, 'Invalid', 'listener is not served', gen)
                : c,
          ),
    });
    const judged = list.map((s) => {
      if (!s.accepted || s.conflicted) return s;
      const socket = socketFor(s.listener);
      const socketKey = socket.key ?? portKey(socket.port, s.listener.protocol);
      const claimed = socket.claim === undefined ? undefined : protocols.get(socket.claim);
      if (claimed !== undefined && claimed.protocol !== s.listener.protocol) {
        const by = claimed.by === null ? 'nginx' : who(claimed.by);
        return conflicted(
          s,
          'ProtocolConflict',
          `${by} serves port ${s.listener.port} of this address as ${claimed.protocol}`,
        );
      }
      if (socket.claim !== undefined && claimed === undefined)
        protocols.set(socket.claim, { protocol: s.listener.protocol, by: g });
      const port = protocols.get(socketKey);
      const mixes = port !== undefined && port.protocol !== s.listener.protocol;
      if (
        port !== undefined &&
        (!compatibleProtocols(port.protocol, s.listener.protocol) || (mixes && !mixedPorts.has(socket.port)))
      ) {
        const by = port.by === null ? 'nginx' : who(port.by);
        const hint = compatibleProtocols(port.protocol, s.listener.protocol)
          ? ' (HTTPS and TLS share a port only on the https port under --enable-ssl-passthrough)'
          : '';
        return conflicted(s, 'ProtocolConflict', `${by} serves port ${s.listener.port} as ${port.protocol}${hint}`);
      }
      if (port === undefined) protocols.set(socketKey, { protocol: s.listener.protocol, by: g });
      const slot = `${socket.address}|${socketKey}|${hostnameKey(s.listener)}`;
      const first = owner.get(slot);
      if (first === undefined) {
        owner.set(slot, g);
        return s;
      }
      const host = s.listener.hostname === undefined ? 'no hostname' : `hostname ${s.listener.hostname}`;
      return conflicted(
        s,
        'HostnameConflict',
        `${who(first)} has a listener on port ${s.listener.port} with ${host} on the same address, and keeps it`,
      );
    });
    states.set(key(g.meta), judged);
  }
}

/** namespaceAllowed applies a listener's allowedRoutes.namespaces to a route's namespace. */
export function namespaceAllowed(
  state: ListenerState,
  gateway: Gateway,
  routeNamespace: string,
  ctx: Context,
): boolean {
  const from = state.listener.allowedNamespaces;
  if (from.from === 'All') return true;
  // a ListenerSet's listener: `Same` is the ListenerSet's namespace
  if (from.from === 'Same') return routeNamespace === (state.listenerSet?.namespace ?? gateway.meta.namespace);
  return selectorMatches(from.selector, ctx.namespaceLabels.get(routeNamespace) ?? {});
}
