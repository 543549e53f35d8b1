/**
 * buildGatewayRoutes: Gateway API objects → for each usable (Gateway, listener) the routes it serves,
 * ordered by the spec's precedence, and the status every object should carry, all as data. Pure: the
 * controller feeds it the caches and writes the status; nothing here does I/O or reads the clock.
 */
import type { Problem } from '../nginx-model.js';
import type { KubeObject, Secret, Service } from '../snapshot.js';
import { checkTlsSecret } from '../tls.js';
import { compareHostnames, coveringHostnames, intersectHostnames, intersectOne } from './hostnames.js';
import { byAge, comparePrecedence } from './precedence.js';
import {
  type Context,
  cond,
  conflictAcrossGateways,
  judgeListeners,
  key,
  type ListenerState,
  namespaceAllowed,
  type Socket,
} from './listeners.js';
import { readGateway, readGatewayClass, readGRPCRoute, readHTTPRoute, readMeta, readReferenceGrant } from './read.js';
import { type AddressVerdict, assignAddresses } from './addresses.js';
import { isGranted } from './refs.js';
import { partiallyInvalid, withinRegexBudget } from './regex-bound.js';
import type {
  EffectiveBackend,
  EffectiveRoute,
  GatewayRoutes,
  GatewayStatus,
  ListenerRoutes,
  RouteParentStatus,
  RouteStatus,
} from './routes.js';
import type { BackendRef, Condition, Gateway, GatewayClass, HTTPRoute, Listener, ReferenceGrant } from './types.js';
import { GATEWAY_GROUP } from './types.js';

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
  readonly ports?: { readonly http: number; readonly https: number; readonly sharedHttps: boolean };
}

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
  if (!service || port === undefined || !(service.spec?.ports ?? []).some((p) => p.port === port))
    return unresolved('BackendNotFound');
  return { kind: 'service', namespace: ref.namespace, name: ref.name, port, weight: ref.weight };
}

const REF_MESSAGES: Record<string, string> = {
  InvalidKind: 'is not a core Service',
  RefNotPermitted: 'is in another namespace and no ReferenceGrant allows it',
  BackendNotFound: 'names a Service or port that does not exist',
};

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

/** parametersMessage says why a Gateway with `spec.infrastructure.parametersRef` is not accepted. */
const parametersMessage = (g: Gateway) =>
  `spec.infrastructure.parametersRef names ${g.parametersRef}: this controller supports no parameters kind, ` +
  'so the Gateway is not accepted and none of its listeners is served';

/** notProgrammed turns a listener's Programmed condition False: its Gateway is not accepted. */
const notProgrammed = (c: Condition): Condition =>
  c.type === 'Programmed'
    ? { ...c, status: 'False', reason: 'Invalid', message: 'the Gateway is not accepted (InvalidParameters)' }
    : c;

/** programmedCondition is a Gateway's Programmed: served, or why not (its listeners first, then its address). */
function programmedCondition(
  programmed: boolean,
  listenersProgrammed: boolean,
  verdict: AddressVerdict | undefined,
  gen: number,
): Condition {
  if (programmed) return cond('Programmed', true, 'Programmed', 'gateway is served', gen);
  if (!listenersProgrammed || verdict === undefined || verdict.kind === 'assigned')
    return cond('Programmed', false, 'Invalid', 'no listener is served', gen);
  if (verdict.kind === 'unsupported') return cond('Programmed', false, 'Invalid', verdict.message, gen);
  const reason = verdict.kind === 'unusable' ? 'AddressNotUsable' : 'AddressNotAssigned';
  return cond('Programmed', false, reason, verdict.message, gen);
}

/** withoutAddress: a listener of a Gateway without an address is not served, whatever else holds. */
const withoutAddress = (c: Condition, gen: number): Condition =>
  c.type === 'Programmed' && c.status === 'True'
    ? cond('Programmed', false, 'Pending', 'the Gateway has no address to be served on', gen)
    : c;

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

/** buildGatewayRoutes turns Gateway API objects into served routes and status; see the module comment. */
export function buildGatewayRoutes(input: GatewayInput): GatewayRoutes {
  const problems: Problem[] = [];
  const classes = input.gatewayClasses
    .map(readGatewayClass)
    .filter((c): c is GatewayClass => c !== null && c.controllerName === input.controllerName);
  const acceptedClasses = new Set(classes.filter((c) => !c.hasParameters).map((c) => c.meta.name));
  const ctx: Context = {
    grants: input.referenceGrants.map(readReferenceGrant).filter((g): g is ReferenceGrant => g !== null),
    services: new Map(input.services.map((s) => [`${s.metadata?.namespace ?? 'default'}/${s.metadata?.name}`, s])),
    certificateError: input.certificateError ?? certificateErrorOf(input.secrets),
    namespaceLabels: new Map(
      input.namespaces.flatMap((n) => {
        const meta = readMeta(n, false);
        return meta ? [[meta.name, meta.labels] as const] : [];
      }),
    ),
    problems,
  };
  const gateways = input.gateways
    .map(readGateway)
    .filter((g): g is Gateway => g !== null && acceptedClasses.has(g.gatewayClassName))
    .sort((a, b) => (key(a.meta) < key(b.meta) ? -1 : 1));
  const states = new Map(gateways.map((g) => [key(g.meta), judgeListeners(g, ctx)]));
  // A Gateway with infrastructure parameters is not accepted: no parameters kind is supported, so nothing of it is served.
  for (const g of gateways)
    if (g.parametersRef !== undefined)
      problems.push({
        kind: 'Gateway',
        namespace: g.meta.namespace,
        name: g.meta.name,
        field: 'spec.infrastructure.parametersRef',
        message: parametersMessage(g),
      });
  const verdicts =
    input.addresses === undefined
      ? null
      : assignAddresses(
          gateways,
          (g) => g.parametersRef === undefined && (states.get(key(g.meta)) ?? []).some((s) => s.accepted),
          input.addresses,
        );
  // Listeners of different Gateways on one socket: the oldest keeps its protocol and hostname (the others Conflicted).
  const ports = input.ports ?? { http: 80, https: 443, sharedHttps: false };
  const socketOf =
    (address: string | undefined) =>
    (l: Listener): Socket => {
      const port = l.port === 80 ? ports.http : l.port === 443 ? ports.https : l.port;
      // under ssl-passthrough, HTTPS on the https port is one unix socket whatever the Gateway's address (nginx.ts)
      const shared = ports.sharedHttps && l.protocol === 'HTTPS' && port === ports.https;
      return { address: shared ? '' : (address ?? ''), port };
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
    // nginx serves its http and https ports so (nginx.ts drops a listener of the other protocol there)
    new Map([
      [ports.http, 'HTTP'],
      [ports.https, 'HTTPS'],
    ]),
  );
  const gatewayByKey = new Map(gateways.map((g) => [key(g.meta), g]));
  const attached = new Map<ListenerState, number>();
  // listener state → hostname → entries (each with its route's metadata, for the precedence order)
  const served = new Map<ListenerState, ByHost>();

  const routes = [...input.httpRoutes.map(readHTTPRoute), ...(input.grpcRoutes ?? []).map(readGRPCRoute)].filter(
    (r): r is HTTPRoute => r !== null,
  );
  const routeStatus: RouteStatus[] = [];
  const grpcStatus: RouteStatus[] = [];
  const attachments: Attachment[] = [];
  for (const route of routes) {
    const gen = route.meta.generation;
    const kind = route.kind;
    const routeProblems: Problem[] = [];
    const fail = (field: string, message: string) =>
      routeProblems.push({ kind, namespace: route.meta.namespace, name: route.meta.name, field, message });
    for (const i of route.invalid) fail(i.field, i.message);
    // each reference resolved once, a problem on its field when it does not
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
    // Two parentRefs may select one listener (by name and by port): it counts and serves the route once.
    const attachedHere = new Map<ListenerState, Attachment>();
    const parents: RouteParentStatus[] = [];
    for (const parentRef of route.parentRefs) {
      if (parentRef.group !== GATEWAY_GROUP || parentRef.kind !== 'Gateway') continue;
      const gateway = gatewayByKey.get(key(parentRef));
      if (!gateway) continue; // not ours (or not there): another controller's business
      const listenerStates = states.get(key(gateway.meta)) ?? [];
      const candidates = listenerStates.filter(
        (s) =>
          (parentRef.sectionName === undefined || s.listener.name === parentRef.sectionName) &&
          (parentRef.port === undefined || s.listener.port === parentRef.port),
      );
      const usable = gateway.parametersRef !== undefined ? [] : candidates.filter((s) => s.accepted && !s.conflicted);
      const allowed = usable.filter(
        (s) => s.supportedKinds.some((k) => k.kind === kind) && namespaceAllowed(s, gateway, route.meta.namespace, ctx),
      );
      const matching = allowed
        .map((s) => ({ s, hosts: intersectHostnames(s.listener.hostname, route.hostnames) }))
        .filter((x) => x.hosts.length > 0);
      let accepted: Condition;
      if (usable.length === 0)
        accepted = cond(
          'Accepted',
          false,
          'NoMatchingParent',
          gateway.parametersRef !== undefined
            ? 'the Gateway is not accepted (InvalidParameters)'
            : candidates.some((s) => s.accepted && s.conflicted)
              ? 'every listener matching sectionName and port is Conflicted (see the Gateway’s listener status)'
              : 'no accepted listener matches sectionName and port',
          gen,
        );
      else if (allowed.length === 0)
        accepted = cond(
          'Accepted',
          false,
          'NotAllowedByListeners',
          'no listener allows this route (namespace or kind)',
          gen,
        );
      else if (matching.length === 0)
        accepted = cond(
          'Accepted',
          false,
          'NoMatchingListenerHostname',
          'no hostname in common with any listener',
          gen,
        );
      else if (route.invalid.length > 0)
        accepted = cond(
          'Accepted',
          false,
          'UnsupportedValue',
          route.invalid.map((i) => `${i.field}: ${i.message}`).join('; '),
          gen,
        );
      else accepted = cond('Accepted', true, 'Accepted', 'route is accepted', gen);
      const resolvedRefs = firstUnresolved
        ? cond(
            'ResolvedRefs',
            false,
            firstUnresolved.reason,
            `a backendRef ${REF_MESSAGES[firstUnresolved.reason]}`,
            gen,
          )
        : cond('ResolvedRefs', true, 'ResolvedRefs', 'all references resolved', gen);
      parents.push({ parentRef, controllerName: input.controllerName, conditions: [accepted, resolvedRefs] });
      if (accepted.status !== 'True') continue;
      const parentIndex = parents.length - 1;
      for (const { s, hosts } of matching) {
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
    // A route none of whose parents is ours is another controller's: no status, no problems.
    if (parents.length === 0) continue;
    (kind === 'GRPCRoute' ? grpcStatus : routeStatus).push({
      namespace: route.meta.namespace,
      name: route.meta.name,
      parents,
    });
    problems.push(...routeProblems);
  }

  for (const at of resolveKindConflicts(attachments)) serve(at, served, attached);

  const listeners: ListenerRoutes[] = [];
  const reportedRegexes = new Map<string, string>();
  const gatewayStatus: GatewayStatus['gateways'][number][] = [];
  for (const gateway of gateways) {
    const gen = gateway.meta.generation;
    const list = states.get(key(gateway.meta)) ?? [];
    const refused = gateway.parametersRef !== undefined;
    const verdict = verdicts?.get(key(gateway.meta));
    // with the pool, a Gateway is served only on its own address
    const address = verdict?.kind === 'assigned' ? verdict.address : undefined;
    const hasAddress = verdicts === null || address !== undefined;
    for (const s of list) {
      if (!s.programmed || refused || !hasAddress) continue;
      const byHost = served.get(s) ?? (new Map() as ByHost);
      for (const entries of byHost.values())
        entries.sort((a, b) => comparePrecedence({ ...a, route: a.meta }, { ...b, route: b.meta }));
      const names = [...byHost.keys()].sort(compareHostnames);
      const hosts = names.map((hostname) => ({
        hostname,
        routes: withinRegexBudget(
          hostname,
          coveringHostnames(hostname, names).flatMap((by) => byHost.get(by) ?? []),
          problems,
          reportedRegexes,
        ).map(({ meta: _meta, ...rest }) => rest),
      }));
      listeners.push({
        gateway: { namespace: gateway.meta.namespace, name: gateway.meta.name },
        listener: s.listener.name,
        port: s.listener.port,
        protocol: s.listener.protocol as 'HTTP' | 'HTTPS',
        hostname: s.listener.hostname,
        certificates: s.certificates,
        hosts,
        ...(address === undefined ? {} : { address }),
      });
    }
    const acceptedCount = list.filter((s) => s.accepted).length;
    const listenersProgrammed = !refused && list.some((s) => s.programmed);
    const programmed = listenersProgrammed && hasAddress;
    const accepted = refused
      ? cond('Accepted', false, 'InvalidParameters', parametersMessage(gateway), gen)
      : verdict?.kind === 'unsupported'
        ? cond('Accepted', false, 'UnsupportedAddress', verdict.message, gen)
        : acceptedCount === list.length && list.length > 0
          ? cond('Accepted', true, 'Accepted', 'gateway is accepted', gen)
          : cond(
              'Accepted',
              acceptedCount > 0,
              'ListenersNotValid',
              `${list.length - acceptedCount} listener(s) are not valid`,
              gen,
            );
    gatewayStatus.push({
      namespace: gateway.meta.namespace,
      name: gateway.meta.name,
      conditions: [accepted, programmedCondition(programmed, listenersProgrammed, verdict, gen)],
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
      ...(verdicts === null ? {} : { addresses: address === undefined ? [] : [address] }),
    });
  }

  const gatewayClasses = classes.map((c) => ({
    name: c.meta.name,
    conditions: [
      c.hasParameters
        ? cond('Accepted', false, 'InvalidParameters', 'parametersRef is not supported', c.meta.generation)
        : cond('Accepted', true, 'Accepted', `handled by ${input.controllerName}`, c.meta.generation),
    ],
  }));
  return {
    listeners,
    status: {
      gatewayClasses,
      gateways: gatewayStatus,
      httpRoutes: partiallyInvalid('HTTPRoute', routeStatus, reportedRegexes),
      grpcRoutes: partiallyInvalid('GRPCRoute', grpcStatus, reportedRegexes),
    },
    problems,
  };
}
