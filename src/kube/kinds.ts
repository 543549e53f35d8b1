/** The kinds the controller watches, one watcher actor each. */
export const WATCHED_KINDS = [
  'Ingress',
  'IngressClass',
  'Service',
  'EndpointSlice',
  'Secret',
  'ConfigMap',
  'Node',
] as const;

/** WatchedKind is one of WATCHED_KINDS. */
export type WatchedKind = (typeof WATCHED_KINDS)[number];

/** KindInfo is where a kind lives in the API. */
export interface KindInfo {
  readonly group: string;
  readonly version: string;
  readonly plural: string;
  readonly namespaced: boolean;
}

/** KIND_INFO maps each watched kind to its API group, version and plural. */
export const KIND_INFO: Readonly<Record<WatchedKind, KindInfo>> = {
  Ingress: { group: 'networking.k8s.io', version: 'v1', plural: 'ingresses', namespaced: true },
  IngressClass: { group: 'networking.k8s.io', version: 'v1', plural: 'ingressclasses', namespaced: false },
  Service: { group: '', version: 'v1', plural: 'services', namespaced: true },
  EndpointSlice: { group: 'discovery.k8s.io', version: 'v1', plural: 'endpointslices', namespaced: true },
  Secret: { group: '', version: 'v1', plural: 'secrets', namespaced: true },
  ConfigMap: { group: '', version: 'v1', plural: 'configmaps', namespaced: true },
  Node: { group: '', version: 'v1', plural: 'nodes', namespaced: false },
};

/** apiPath is the collection URL of a kind, in one namespace or across all. */
export function apiPath(kind: WatchedKind, namespace: string | null): string {
  const info = KIND_INFO[kind];
  const base = info.group ? `/apis/${info.group}/${info.version}` : `/api/${info.version}`;
  return info.namespaced && namespace ? `${base}/namespaces/${namespace}/${info.plural}` : `${base}/${info.plural}`;
}
