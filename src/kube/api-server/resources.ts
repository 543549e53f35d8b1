/**
 * The resource table of the test API server: which kinds it serves, under which group and version,
 * and what discovery says about them. Everything else (routing, discovery documents, table
 * columns) is derived from this one list so that kubectl's RESTMapper and the router agree.
 */

/** Verbs every served resource supports, in the order the real API server lists them. */
const ALL_VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'] as const;

/** ResourceDef describes one served resource, as discovery and the router see it. */
export interface ResourceDef {
  /** API group; '' is the legacy core group served under /api. */
  readonly group: string;
  readonly version: string;
  readonly kind: string;
  /** Lower-case plural used in URLs (`ingresses`). */
  readonly plural: string;
  /** Lower-case singular name kubectl accepts (`ingress`). */
  readonly singular: string;
  readonly namespaced: boolean;
  readonly shortNames: readonly string[];
  readonly categories: readonly string[];
  /** True when the resource has a /status subresource, whose writes only change `status`. */
  readonly hasStatus: boolean;
}

function def(
  group: string,
  version: string,
  kind: string,
  plural: string,
  namespaced: boolean,
  extra: { shortNames?: string[]; hasStatus?: boolean; categories?: string[] } = {},
): ResourceDef {
  return {
    group,
    version,
    kind,
    plural,
    singular: kind.toLowerCase(),
    namespaced,
    shortNames: extra.shortNames ?? [],
    categories: extra.categories ?? [],
    hasStatus: extra.hasStatus ?? false,
  };
}

/** RESOURCES lists what the server serves; short names and status subresources are the real ones. */
export const RESOURCES: readonly ResourceDef[] = [
  def('', 'v1', 'Namespace', 'namespaces', false, { shortNames: ['ns'], hasStatus: true }),
  def('', 'v1', 'Service', 'services', true, { shortNames: ['svc'], hasStatus: true, categories: ['all'] }),
  def('', 'v1', 'Secret', 'secrets', true),
  def('', 'v1', 'ConfigMap', 'configmaps', true, { shortNames: ['cm'] }),
  def('', 'v1', 'Node', 'nodes', false, { shortNames: ['no'], hasStatus: true }),
  def('', 'v1', 'Event', 'events', true, { shortNames: ['ev'] }),
  def('discovery.k8s.io', 'v1', 'EndpointSlice', 'endpointslices', true),
  def('networking.k8s.io', 'v1', 'Ingress', 'ingresses', true, { shortNames: ['ing'], hasStatus: true }),
  def('networking.k8s.io', 'v1', 'IngressClass', 'ingressclasses', false),
  def('coordination.k8s.io', 'v1', 'Lease', 'leases', true),
];

/** VERBS is the verb list discovery advertises for every resource. */
export const VERBS: readonly string[] = ALL_VERBS;

/** apiVersionOf gives the `apiVersion` string of a resource (`v1`, `networking.k8s.io/v1`). */
export function apiVersionOf(resource: ResourceDef): string {
  return resource.group === '' ? resource.version : `${resource.group}/${resource.version}`;
}

/** findResource looks a resource up by the group, version and plural of a request path. */
export function findResource(group: string, version: string, plural: string): ResourceDef | undefined {
  return RESOURCES.find((r) => r.group === group && r.version === version && r.plural === plural);
}

/** findResourceByKind looks a resource up by the apiVersion and kind found in a manifest. */
export function findResourceByKind(apiVersion: string, kind: string): ResourceDef | undefined {
  return RESOURCES.find((r) => apiVersionOf(r) === apiVersion && r.kind === kind);
}

/** GroupVersion is one group/version pair with the resources served under it. */
export interface GroupVersion {
  readonly group: string;
  readonly version: string;
  readonly resources: readonly ResourceDef[];
}

/** groupVersions lists the named API groups (not the core group), each with its resources. */
export function groupVersions(): GroupVersion[] {
  const groups = new Map<string, GroupVersion & { resources: ResourceDef[] }>();
  for (const resource of RESOURCES) {
    if (resource.group === '') continue;
    const key = apiVersionOf(resource);
    const entry = groups.get(key) ?? { group: resource.group, version: resource.version, resources: [] };
    entry.resources.push(resource);
    groups.set(key, entry);
  }
  return [...groups.values()];
}

/** coreResources lists the resources of the legacy core group, served under /api/v1. */
export function coreResources(): ResourceDef[] {
  return RESOURCES.filter((r) => r.group === '');
}
