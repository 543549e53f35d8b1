/** Small builders for Gateway API objects, as the API server would serve them. */
import { type BuildOptions, defaultBuildOptions } from '../../src/model/build-types.js';
import type { GatewayInput } from '../../src/model/gateway/index.js';
import { issueCertificate } from '../../src/tls/issue.js';

export const CONTROLLER = 'ingress-actors.io/gateway-controller';
const GROUP = 'gateway.networking.k8s.io';

type Obj = Record<string, unknown>;

/** GATEWAY_OPTIONS build Ingresses and Gateway routes for the Lua router (a build only: no nginx reads the paths). */
export const GATEWAY_OPTIONS: BuildOptions = {
  ...defaultBuildOptions,
  dynamic: { modules: [], packagePath: '/lua/?.lua;;', controlSocket: '/run/ia/control.sock', requestMetrics: false },
  gateway: { controllerName: CONTROLLER },
};

export function gatewayClass(name = 'ours', controllerName = CONTROLLER, spec: Obj = {}): Obj {
  return {
    apiVersion: `${GROUP}/v1`,
    kind: 'GatewayClass',
    metadata: { name, generation: 1 },
    spec: { controllerName, ...spec },
  };
}

export function listener(name: string, extra: Obj = {}): Obj {
  return { name, port: 80, protocol: 'HTTP', ...extra };
}

export function gateway(
  listeners: Obj[] = [listener('http')],
  name = 'gw',
  namespace = 'default',
  extra: Obj = {},
): Obj {
  return {
    apiVersion: `${GROUP}/v1`,
    kind: 'Gateway',
    metadata: { name, namespace, generation: 3 },
    spec: { gatewayClassName: 'ours', listeners, ...extra },
  };
}

export interface RouteOptions {
  namespace?: string;
  created?: string;
  generation?: number;
  hostnames?: string[];
  parentRefs?: Obj[];
  rules?: Obj[];
}

export function route(name: string, o: RouteOptions = {}): Obj {
  return {
    apiVersion: `${GROUP}/v1`,
    kind: 'HTTPRoute',
    metadata: {
      name,
      namespace: o.namespace ?? 'default',
      generation: o.generation ?? 1,
      creationTimestamp: o.created ?? '2026-01-01T00:00:00Z',
    },
    spec: {
      parentRefs: o.parentRefs ?? [{ name: 'gw', namespace: 'default' }],
      ...(o.hostnames ? { hostnames: o.hostnames } : {}),
      rules: o.rules ?? [{ backendRefs: [{ name: 'web', port: 80 }] }],
    },
  };
}

/** grpcRoute is a GRPCRoute, as `route` builds an HTTPRoute (rules default to one rule to `web`). */
export function grpcRoute(name: string, o: RouteOptions = {}): Obj {
  return { ...route(name, o), kind: 'GRPCRoute' };
}

/** rule is one rule with the given matches and the default backend. */
export function rule(matches: Obj[], extra: Obj = {}): Obj {
  return { matches, backendRefs: [{ name: 'web', port: 80 }], ...extra };
}

export function service(name: string, namespace = 'default', ports: number[] = [80]): Obj {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace },
    spec: { ports: ports.map((port) => ({ port })) },
  };
}

export function namespace(name: string, labels: Record<string, string> = {}): Obj {
  return { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels } };
}

export function grant(namespace: string, from: Obj[], to: Obj[]): Obj {
  return {
    apiVersion: `${GROUP}/v1beta1`,
    kind: 'ReferenceGrant',
    metadata: { name: 'g', namespace },
    spec: { from, to },
  };
}

/** one real certificate and key for every fixture Secret (the core checks them as the Ingress TLS path does) */
const PAIR = await issueCertificate({ commonName: 'gateway', dnsNames: ['*.example.com'] });
/** a private key that matches no fixture certificate */
export const OTHER_KEY = (await issueCertificate({ commonName: 'other' })).keyPem;
export const CERTIFICATE = PAIR.certPem;
const base64 = (text: string) => Buffer.from(text).toString('base64');

/** tlsSecret is a kubernetes.io/tls Secret; `data` replaces its tls.crt and tls.key (base64 of text). */
export function tlsSecret(
  name: string,
  namespace = 'default',
  data: { crt: string; key: string } = { crt: PAIR.certPem, key: PAIR.keyPem },
): Obj {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace },
    type: 'kubernetes.io/tls',
    data: { 'tls.crt': base64(data.crt), 'tls.key': base64(data.key) },
  };
}

/** input fills a GatewayInput: our class, one Gateway `default/gw` with an HTTP listener, Service `default/web`. */
export function input(parts: Partial<Record<Exclude<keyof GatewayInput, 'controllerName'>, Obj[]>> = {}): GatewayInput {
  return {
    controllerName: CONTROLLER,
    gatewayClasses: parts.gatewayClasses ?? [gatewayClass()],
    gateways: parts.gateways ?? [gateway()],
    httpRoutes: parts.httpRoutes ?? [],
    grpcRoutes: parts.grpcRoutes ?? [],
    tlsRoutes: parts.tlsRoutes ?? [],
    tcpRoutes: parts.tcpRoutes ?? [],
    udpRoutes: parts.udpRoutes ?? [],
    referenceGrants: parts.referenceGrants ?? [],
    services: (parts.services ?? [service('web')]) as GatewayInput['services'],
    secrets: parts.secrets ?? [],
    namespaces: parts.namespaces ?? [namespace('default'), namespace('other')],
    ...(parts.listenerSets ? { listenerSets: parts.listenerSets } : {}),
  };
}

/** listenerSet is a ListenerSet of `listeners` whose parentRef names Gateway `default/gw` unless `parent` says. */
export function listenerSet(
  name: string,
  listeners: Obj[],
  o: { namespace?: string; created?: string; parent?: Obj } = {},
): Obj {
  return {
    apiVersion: `${GROUP}/v1`,
    kind: 'ListenerSet',
    metadata: {
      name,
      namespace: o.namespace ?? 'default',
      generation: 2,
      creationTimestamp: o.created ?? '2026-01-01T00:00:00Z',
    },
    spec: { parentRef: o.parent ?? { name: 'gw', namespace: 'default' }, listeners },
  };
}
