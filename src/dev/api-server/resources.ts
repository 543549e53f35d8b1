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
  /** Set for a served version of a CustomResourceDefinition (crd.ts); built-in kinds have none. */
  readonly crd?: CustomVersion;
}

/**
 * CustomVersion is what a served version of a CustomResourceDefinition adds to its ResourceDef:
 * the CRD's name, which keys the storage every version of the CRD shares (objects are kept once,
 * in the storage version, and served in each version by changing only `apiVersion`, as conversion
 * strategy None does), the version's schema and its printer columns.
 */
export interface CustomVersion {
  /** The CRD's name (`<plural>.<group>`): also the store's key for the objects of all its versions. */
  readonly name: string;
  /** The apiVersion objects are stored in (the CRD's storage version). */
  readonly storageApiVersion: string;
  /** The version's openAPIV3Schema (structural, as the CRD gives it); undefined accepts anything. */
  readonly schema: unknown;
  /** The version's additionalPrinterColumns (name, type, jsonPath, priority, …), as written. */
  readonly printerColumns: readonly PrinterColumn[];
}

/** PrinterColumn is one additionalPrinterColumns entry of a CRD version. */
export interface PrinterColumn {
  readonly name: string;
  readonly type: string;
  readonly format?: string;
  readonly description?: string;
  readonly priority?: number;
  readonly jsonPath: string;
}

/**
 * builtinKind is the kind to look up in a per-kind table of built-in behaviour (field selectors,
 * defaults, printer columns, …): undefined for a custom resource, whatever its kind is called, so
 * a CRD whose kind is `Secret` in its own group never gets what the core Secret has.
 */
export function builtinKind(resource: ResourceDef): string | undefined {
  return resource.crd ? undefined : resource.kind;
}

/**
 * storageOf is the key the store keeps a resource's objects under: a built-in resource's own
 * definition, or the CRD's name, which all its versions share (a string, so never a definition).
 */
export function storageOf(resource: ResourceDef): object | string {
  return resource.crd?.name ?? resource;
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

/** RESOURCES lists what every server serves; short names and status subresources are the real ones. */
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
  // Called on writes (admission.ts): how `kubectl apply` of a bad Ingress meets the controller's webhook.
  def('admissionregistration.k8s.io', 'v1', 'ValidatingWebhookConfiguration', 'validatingwebhookconfigurations', false),
  // Stored, never evaluated (no CEL here): the Gateway API's standard-install.yaml brings one.
  def('admissionregistration.k8s.io', 'v1', 'ValidatingAdmissionPolicy', 'validatingadmissionpolicies', false, {
    hasStatus: true,
    categories: ['api-extensions'],
  }),
  def(
    'admissionregistration.k8s.io',
    'v1',
    'ValidatingAdmissionPolicyBinding',
    'validatingadmissionpolicybindings',
    false,
    { categories: ['api-extensions'] },
  ),
  // Each CRD's served versions are added to a server's table while it exists (crd.ts).
  def('apiextensions.k8s.io', 'v1', 'CustomResourceDefinition', 'customresourcedefinitions', false, {
    shortNames: ['crd', 'crds'],
    hasStatus: true,
    categories: ['api-extensions'],
  }),
];

/**
 * DEPLOY_RESOURCES are the kinds of deploy/kubernetes/ that the controller never reads, for a
 * server that must take `kubectl apply -f deploy/kubernetes/` (the `extraKinds` server option):
 * ServiceAccount, the RBAC kinds, Deployment, PodDisruptionBudget, NetworkPolicy and cert-manager's
 * Issuer and Certificate (deploy/kustomize/'s webhook components). They are stored and watched
 * like any other kind, with their top-level fields checked; nothing acts on them (no pods, no
 * authorization).
 */
export const DEPLOY_RESOURCES: readonly ResourceDef[] = [
  def('', 'v1', 'ServiceAccount', 'serviceaccounts', true, { shortNames: ['sa'] }),
  def('apps', 'v1', 'Deployment', 'deployments', true, {
    shortNames: ['deploy'],
    hasStatus: true,
    categories: ['all'],
  }),
  def('policy', 'v1', 'PodDisruptionBudget', 'poddisruptionbudgets', true, { shortNames: ['pdb'], hasStatus: true }),
  def('rbac.authorization.k8s.io', 'v1', 'ClusterRole', 'clusterroles', false),
  def('rbac.authorization.k8s.io', 'v1', 'ClusterRoleBinding', 'clusterrolebindings', false),
  def('rbac.authorization.k8s.io', 'v1', 'Role', 'roles', true),
  def('rbac.authorization.k8s.io', 'v1', 'RoleBinding', 'rolebindings', true),
  def('networking.k8s.io', 'v1', 'NetworkPolicy', 'networkpolicies', true, { shortNames: ['netpol'] }),
  // cert-manager's CRDs, as cert-manager registers them.
  def('cert-manager.io', 'v1', 'Issuer', 'issuers', true, { hasStatus: true, categories: ['cert-manager'] }),
  def('cert-manager.io', 'v1', 'Certificate', 'certificates', true, {
    shortNames: ['cert', 'certs'],
    hasStatus: true,
    categories: ['cert-manager'],
  }),
];

/** VERBS is the verb list discovery advertises for every resource. */
export const VERBS: readonly string[] = ALL_VERBS;

/** apiVersionOf gives the `apiVersion` string of a resource (`v1`, `networking.k8s.io/v1`). */
export function apiVersionOf(resource: ResourceDef): string {
  return resource.group === '' ? resource.version : `${resource.group}/${resource.version}`;
}

/** GroupVersion is one group/version pair with the resources served under it. */
export interface GroupVersion {
  readonly group: string;
  readonly version: string;
  readonly resources: readonly ResourceDef[];
}

/**
 * ResourceTable is what one server serves: RESOURCES, then the extra kinds it was started with.
 * The router, discovery, OpenAPI and the registry all read the same table, so kubectl's
 * RESTMapper and the router agree. The store keys objects by ResourceDef identity: look
 * resources up here (or in the arrays above), never build an equal copy.
 */
export class ResourceTable {
  private list: ResourceDef[];
  private readonly removedListeners = new Set<(removed: readonly ResourceDef[]) => void>();
  /** Counts changes (CRDs added or removed), so documents built from the table know when to rebuild. */
  private changes = 0;

  constructor(extraKinds: readonly ResourceDef[] = []) {
    const resources = [...RESOURCES];
    for (const extra of extraKinds) {
      const same = resources.find((r) => r.group === extra.group && r.kind === extra.kind);
      if (same === extra) continue;
      if (same) throw new Error(`the test API server already serves ${apiVersionOf(same)} ${same.kind}`);
      const clash = resources.find(
        (r) => r.group === extra.group && r.version === extra.version && r.plural === extra.plural,
      );
      if (clash) throw new Error(`${apiVersionOf(extra)} ${extra.plural} is already the resource of ${clash.kind}`);
      resources.push(extra);
    }
    this.list = resources;
  }

  /** resources is what is served now: RESOURCES, the extra kinds, then the served versions of each CRD. */
  get resources(): readonly ResourceDef[] {
    return this.list;
  }

  /** generation changes whenever the table does. */
  get generation(): number {
    return this.changes;
  }

  /**
   * replaceCustom serves `added` instead of the versions of CRD `name` served so far (crd.ts calls it when a
   * CRD is established, changed or deleted); listeners hear of the definitions no longer served.
   */
  replaceCustom(name: string, added: readonly ResourceDef[]): void {
    const removed = this.list.filter((r) => r.crd?.name === name);
    this.list = [...this.list.filter((r) => r.crd?.name !== name), ...added];
    this.changes++;
    if (removed.length > 0) for (const listener of [...this.removedListeners]) listener(removed);
  }

  /** onRemoved calls `listener` with the definitions a CRD change stopped serving (watches end then). */
  onRemoved(listener: (removed: readonly ResourceDef[]) => void): () => void {
    this.removedListeners.add(listener);
    return () => this.removedListeners.delete(listener);
  }

  /** find looks a resource up by the group, version and plural of a request path. */
  find(group: string, version: string, plural: string): ResourceDef | undefined {
    return this.resources.find((r) => r.group === group && r.version === version && r.plural === plural);
  }

  /** findByKind looks a resource up by the apiVersion and kind found in a manifest. */
  findByKind(apiVersion: string, kind: string): ResourceDef | undefined {
    return this.resources.find((r) => apiVersionOf(r) === apiVersion && r.kind === kind);
  }

  /** groupVersions lists the named API groups' versions (not the core group), each with its resources. */
  groupVersions(): GroupVersion[] {
    const groups = new Map<string, GroupVersion & { resources: ResourceDef[] }>();
    for (const resource of this.resources) {
      if (resource.group === '') continue;
      const key = apiVersionOf(resource);
      const entry = groups.get(key) ?? { group: resource.group, version: resource.version, resources: [] };
      entry.resources.push(resource);
      groups.set(key, entry);
    }
    return [...groups.values()];
  }

  /** coreResources lists the resources of the legacy core group, served under /api/v1. */
  coreResources(): ResourceDef[] {
    return this.resources.filter((r) => r.group === '');
  }
}

/** DEFAULT_TABLE is the table of a server started without extra kinds. */
export const DEFAULT_TABLE = new ResourceTable();

/** findResource looks a resource of RESOURCES up by the group, version and plural of a request path. */
export function findResource(group: string, version: string, plural: string): ResourceDef | undefined {
  return DEFAULT_TABLE.find(group, version, plural);
}

/** findResourceByKind looks a resource of RESOURCES up by the apiVersion and kind found in a manifest. */
export function findResourceByKind(apiVersion: string, kind: string): ResourceDef | undefined {
  return DEFAULT_TABLE.findByKind(apiVersion, kind);
}

/** groupVersions lists the named API groups of RESOURCES, each with its resources. */
export function groupVersions(): GroupVersion[] {
  return DEFAULT_TABLE.groupVersions();
}

/** coreResources lists the resources of RESOURCES in the legacy core group. */
export function coreResources(): ResourceDef[] {
  return DEFAULT_TABLE.coreResources();
}
