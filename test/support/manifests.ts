/** Small builders for the manifests tests write, in the API's own shapes. */
import type { ConfigMap, Snapshot } from '../../src/model/snapshot.js';

export function ingressClass(name = 'nginx', controller = 'k8s.io/ingress-nginx') {
  return { apiVersion: 'networking.k8s.io/v1', kind: 'IngressClass', metadata: { name }, spec: { controller } };
}

export interface PathSpec {
  path: string;
  pathType?: 'Exact' | 'Prefix' | 'ImplementationSpecific';
  service: string;
  port?: number | string;
}

export function ingress(
  name: string,
  rules: Record<string, PathSpec[]>,
  extra: {
    namespace?: string;
    tls?: { hosts: string[]; secretName?: string }[];
    annotations?: Record<string, string>;
  } = {},
) {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'Ingress',
    metadata: {
      name,
      namespace: extra.namespace ?? 'default',
      ...(extra.annotations ? { annotations: extra.annotations } : {}),
    },
    spec: {
      ingressClassName: 'nginx',
      ...(extra.tls ? { tls: extra.tls } : {}),
      rules: Object.entries(rules).map(([host, paths]) => ({
        ...(host === '' ? {} : { host }),
        http: {
          paths: paths.map((p) => ({
            path: p.path,
            pathType: p.pathType ?? 'Prefix',
            backend: {
              service: {
                name: p.service,
                port: typeof p.port === 'string' ? { name: p.port } : { number: p.port ?? 80 },
              },
            },
          })),
        },
      })),
    },
  };
}

/** service makes a Service with one port 80 named http, and its EndpointSlice pointing at loopback ports. */
export function serviceWithEndpoints(
  name: string,
  targets: { ip?: string; port: number; ready?: boolean }[],
  namespace = 'default',
) {
  const service = {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace },
    spec: { ports: [{ name: 'http', port: 80, targetPort: 'http' }] },
  };
  // One slice per target port: an EndpointSlice carries one port set for all its endpoints.
  const slices = [...new Set(targets.map((t) => t.port))].map((port) => ({
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name: `${name}-${port}`, namespace, labels: { 'kubernetes.io/service-name': name } },
    addressType: 'IPv4',
    ports: [{ name: 'http', port, protocol: 'TCP' }],
    endpoints: targets
      .filter((t) => t.port === port)
      .map((t) => ({ addresses: [t.ip ?? '127.0.0.1'], conditions: { ready: t.ready ?? true } })),
  }));
  return [service, ...slices];
}

export function tlsSecret(name: string, certPem: string, keyPem: string, namespace = 'default') {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'kubernetes.io/tls',
    metadata: { name, namespace },
    data: { 'tls.crt': Buffer.from(certPem).toString('base64'), 'tls.key': Buffer.from(keyPem).toString('base64') },
  };
}

/**
 * snapshotOf sorts manifests by kind into the model's Snapshot (what the watchers would have listed), the Gateway
 * API's kinds and Namespaces included.
 */
export function snapshotOf(objects: { kind?: string }[]): Snapshot {
  const of = <T>(kind: string) => objects.filter((o) => o.kind === kind) as T[];
  return {
    ingresses: of('Ingress'),
    ingressClasses: of('IngressClass'),
    services: of('Service'),
    endpointSlices: of('EndpointSlice'),
    secrets: of('Secret'),
    configMaps: of<ConfigMap>('ConfigMap'),
    gatewayClasses: of('GatewayClass'),
    gateways: of('Gateway'),
    httpRoutes: of('HTTPRoute'),
    grpcRoutes: of('GRPCRoute'),
    tlsRoutes: of('TLSRoute'),
    tcpRoutes: of('TCPRoute'),
    udpRoutes: of('UDPRoute'),
    listenerSets: of('ListenerSet'),
    referenceGrants: of('ReferenceGrant'),
    backendTLSPolicies: of('BackendTLSPolicy'),
    namespaces: of('Namespace'),
  };
}
