/** The kinds the controller always watches, one watcher actor each. */
export const WATCHED_KINDS = [
  'Ingress',
  'IngressClass',
  'Service',
  'EndpointSlice',
  'Secret',
  'ConfigMap',
  'Node',
] as const;

/**
 * The Gateway API kinds (and Namespace, for allowedRoutes `from: Selector`), watched only with
 * `--enable-gateway-api`; a kind whose CRD the API server does not serve is its watcher's `unserved` state.
 */
export const GATEWAY_KINDS = [
  'GatewayClass',
  'Gateway',
  'HTTPRoute',
  'GRPCRoute',
  'TLSRoute',
  'TCPRoute',
  'UDPRoute',
  'ListenerSet',
  'ReferenceGrant',
  'BackendTLSPolicy',
  'Namespace',
] as const;

/** WatchedKind is one of WATCHED_KINDS or GATEWAY_KINDS. */
export type WatchedKind = (typeof WATCHED_KINDS)[number] | (typeof GATEWAY_KINDS)[number];

/** watchedKinds lists the kinds to watch, the Gateway API's after the others when it is enabled. */
export function watchedKinds(gatewayApi: boolean): WatchedKind[] {
  return [...WATCHED_KINDS, ...(gatewayApi ? GATEWAY_KINDS : [])];
}

/** KindInfo is where a kind lives in the API. */
export interface KindInfo {
  readonly group: string;
  readonly version: string;
  readonly plural: string;
  readonly namespaced: boolean;
  /**
   * served only once its CRD is installed: a 404 on its list is the watcher's `unserved` state. A built-in kind's 404
   * (a proxy or an aggregation layer in the way) is a failure like any other, retried with the cache kept.
   */
  readonly crd?: true;
}

const GATEWAY_API = 'gateway.networking.k8s.io';

/** KIND_INFO maps each watched kind to its API group, version and plural. */
export const KIND_INFO: Readonly<Record<WatchedKind, KindInfo>> = {
  Ingress: { group: 'networking.k8s.io', version: 'v1', plural: 'ingresses', namespaced: true },
  IngressClass: { group: 'networking.k8s.io', version: 'v1', plural: 'ingressclasses', namespaced: false },
  Service: { group: '', version: 'v1', plural: 'services', namespaced: true },
  EndpointSlice: { group: 'discovery.k8s.io', version: 'v1', plural: 'endpointslices', namespaced: true },
  Secret: { group: '', version: 'v1', plural: 'secrets', namespaced: true },
  ConfigMap: { group: '', version: 'v1', plural: 'configmaps', namespaced: true },
  Node: { group: '', version: 'v1', plural: 'nodes', namespaced: false },
  GatewayClass: { group: GATEWAY_API, version: 'v1', plural: 'gatewayclasses', namespaced: false, crd: true },
  Gateway: { group: GATEWAY_API, version: 'v1', plural: 'gateways', namespaced: true, crd: true },
  HTTPRoute: { group: GATEWAY_API, version: 'v1', plural: 'httproutes', namespaced: true, crd: true },
  GRPCRoute: { group: GATEWAY_API, version: 'v1', plural: 'grpcroutes', namespaced: true, crd: true },
  TLSRoute: { group: GATEWAY_API, version: 'v1', plural: 'tlsroutes', namespaced: true, crd: true },
  TCPRoute: { group: GATEWAY_API, version: 'v1', plural: 'tcproutes', namespaced: true, crd: true },
  UDPRoute: { group: GATEWAY_API, version: 'v1', plural: 'udproutes', namespaced: true, crd: true },
  ListenerSet: { group: GATEWAY_API, version: 'v1', plural: 'listenersets', namespaced: true, crd: true },
  ReferenceGrant: { group: GATEWAY_API, version: 'v1beta1', plural: 'referencegrants', namespaced: true, crd: true },
  BackendTLSPolicy: { group: GATEWAY_API, version: 'v1', plural: 'backendtlspolicies', namespaced: true, crd: true },
  Namespace: { group: '', version: 'v1', plural: 'namespaces', namespaced: false },
};

/** apiPath is the collection URL of a kind, in one namespace or across all. */
export function apiPath(kind: WatchedKind, namespace: string | null): string {
  const info = KIND_INFO[kind];
  const base = info.group ? `/apis/${info.group}/${info.version}` : `/api/${info.version}`;
  return info.namespaced && namespace ? `${base}/namespaces/${namespace}/${info.plural}` : `${base}/${info.plural}`;
}
