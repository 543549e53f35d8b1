/**
 * What the real API server does to an object of each kind on its way into storage, beyond the
 * generic metadata handling: defaulting (Service ports, cluster IPs, Secret `stringData`), the
 * admission plugins a default cluster runs (DefaultIngressClass), and the validation rules
 * clients most often trip over. Only rules the real server has; never stricter than it.
 */
import { validateCrd } from './crd.js';
import { DNS_1035_LABEL, DNS_LABEL, DNS_SUBDOMAIN } from './names.js';
import { builtinKind, type ResourceDef } from './resources.js';
import { applyDefaults, validateCustom } from './schema.js';
import type { StatusCause } from './status.js';
import type { KubeObject } from './objects.js';

type Obj = Record<string, unknown>;

function isObj(value: unknown): value is Obj {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function record(parent: Obj, key: string): Obj {
  if (!isObj(parent[key])) parent[key] = {};
  return parent[key] as Obj;
}

function list(parent: Obj, key: string): Obj[] {
  const value = parent[key];
  return Array.isArray(value) ? (value.filter(isObj) as Obj[]) : [];
}

/** DEFAULT_CLASS_ANNOTATION marks the IngressClass that DefaultIngressClass admission assigns. */
export const DEFAULT_CLASS_ANNOTATION = 'ingressclass.kubernetes.io/is-default-class';

/** Ingresses naming a class through this legacy annotation are left alone by admission. */
const LEGACY_CLASS_ANNOTATION = 'kubernetes.io/ingress.class';

/** Allocator hands out Service cluster IPs (10.96.0.0/12) and node ports (30000-32767), as a default cluster does. */
export class Allocator {
  private nextIp = 1;
  private nextPort = 30000;
  private readonly used = new Set<string>(['10.96.0.1']);
  private readonly ports = new Set<number>();

  /** clusterIp returns a free address and marks it used. */
  clusterIp(): string {
    for (;;) {
      const n = ++this.nextIp;
      const ip = `10.96.${Math.floor(n / 254) % 256}.${(n % 254) + 1}`;
      if (!this.used.has(ip)) {
        this.used.add(ip);
        return ip;
      }
    }
  }

  /** nodePort returns a free node port and marks it used. */
  nodePort(): number {
    while (this.ports.has(this.nextPort)) this.nextPort = this.nextPort >= 32767 ? 30000 : this.nextPort + 1;
    this.ports.add(this.nextPort);
    return this.nextPort;
  }

  /** reserve marks an address or port chosen by the client as taken. */
  reserve(value: string | number): void {
    if (typeof value === 'number') this.ports.add(value);
    else this.used.add(value);
  }
}

/** StrategyContext is what the hooks may look at besides the object: other objects, IP allocation. */
export interface StrategyContext {
  readonly ingressClasses: () => KubeObject[];
  readonly allocator: Allocator;
}

function defaultService(object: Obj, ctx: StrategyContext, old: Obj | undefined): void {
  const spec = record(object, 'spec');
  const oldSpec = old && isObj(old.spec) ? old.spec : undefined;
  spec.type ??= 'ClusterIP';
  spec.sessionAffinity ??= 'None';
  if (spec.type !== 'ExternalName') {
    spec.internalTrafficPolicy ??= 'Cluster';
    // The cluster IP is immutable: keep the allocated one when an update (or apply) leaves it out.
    if (!spec.clusterIP && typeof oldSpec?.clusterIP === 'string') spec.clusterIP = oldSpec.clusterIP;
    if (!spec.clusterIP) spec.clusterIP = ctx.allocator.clusterIp();
    else if (spec.clusterIP !== 'None' && !oldSpec) ctx.allocator.reserve(String(spec.clusterIP));
    spec.clusterIPs ??= [spec.clusterIP];
    if (spec.clusterIP !== 'None') {
      spec.ipFamilies ??= ['IPv4'];
      spec.ipFamilyPolicy ??= 'SingleStack';
    }
  }
  const external = spec.type === 'NodePort' || spec.type === 'LoadBalancer';
  if (external) spec.externalTrafficPolicy ??= 'Cluster';
  if (spec.type === 'LoadBalancer') spec.allocateLoadBalancerNodePorts ??= true;
  const oldPorts = oldSpec ? list(oldSpec, 'ports') : [];
  for (const port of list(spec, 'ports')) {
    port.protocol ??= 'TCP';
    if (spec.type !== 'ExternalName') port.targetPort ??= port.port;
    if (external && port.nodePort === undefined) {
      const kept = oldPorts.find((p) => p.port === port.port && (p.protocol ?? 'TCP') === port.protocol)?.nodePort;
      port.nodePort = kept ?? ctx.allocator.nodePort();
    } else if (external && !oldSpec) {
      ctx.allocator.reserve(Number(port.nodePort));
    }
  }
  object.status ??= { loadBalancer: {} };
}

function defaultSecret(object: Obj): void {
  object.type ??= 'Opaque';
  // stringData is write-only: folded into base64 data (winning over data) and never stored.
  if (isObj(object.stringData)) {
    const data = record(object, 'data');
    for (const [key, value] of Object.entries(object.stringData))
      data[key] = Buffer.from(String(value), 'utf8').toString('base64');
  }
  delete object.stringData;
}

function defaultNamespace(object: KubeObject): void {
  const obj = object as Obj;
  record(obj, 'spec').finalizers ??= ['kubernetes'];
  record(obj, 'status').phase ??= 'Active';
  // Set since 1.21 by the NamespaceDefaultLabelName feature; selectors rely on it.
  object.metadata.labels = { ...object.metadata.labels, 'kubernetes.io/metadata.name': object.metadata.name };
}

function defaultEndpointSlice(object: Obj): void {
  for (const port of list(object, 'ports')) port.protocol ??= 'TCP';
}

/** defaultObject applies the kind's defaults, on create and on every update, as decoding does. */
export function defaultObject(resource: ResourceDef, object: KubeObject, ctx: StrategyContext, old?: KubeObject): void {
  const obj = object as Obj;
  // A custom resource has its schema's defaults only, whatever its kind is called.
  if (resource.crd) {
    applyDefaults(obj, resource.crd.schema);
    return;
  }
  switch (builtinKind(resource)) {
    case 'Service':
      defaultService(obj, ctx, old as Obj | undefined);
      return;
    case 'Secret':
      defaultSecret(obj);
      return;
    case 'Namespace':
      defaultNamespace(object);
      return;
    case 'EndpointSlice':
      defaultEndpointSlice(obj);
      return;
    case 'Ingress':
      obj.status ??= { loadBalancer: {} };
      return;
  }
}

/**
 * admitCreate runs the mutating admission a default cluster has on create: DefaultIngressClass
 * gives a classless Ingress the default IngressClass (the newest one, when several claim it).
 */
export function admitCreate(resource: ResourceDef, object: KubeObject, ctx: StrategyContext): void {
  if (builtinKind(resource) !== 'Ingress') return;
  const spec = record(object as Obj, 'spec');
  if (typeof spec.ingressClassName === 'string') return;
  if (object.metadata.annotations?.[LEGACY_CLASS_ANNOTATION] !== undefined) return;
  const defaults = ctx
    .ingressClasses()
    .filter((c) => c.metadata.annotations?.[DEFAULT_CLASS_ANNOTATION] === 'true')
    .sort(
      (a, b) =>
        String(b.metadata.creationTimestamp).localeCompare(String(a.metadata.creationTimestamp)) ||
        Number(b.metadata.resourceVersion) - Number(a.metadata.resourceVersion),
    );
  if (defaults[0]) spec.ingressClassName = defaults[0].metadata.name;
}

/** Kinds whose create strategy drops a client-sent status. */
const STATUS_CLEARED_ON_CREATE = new Set<string | undefined>([
  'Ingress',
  'Service',
  'Deployment',
  'PodDisruptionBudget',
  'CustomResourceDefinition',
]);

/** prepareForCreate clears what clients may not set on create (status of kinds that have /status). */
export function prepareForCreate(resource: ResourceDef, object: KubeObject): void {
  // A custom resource drops a client-sent status when it has a status subresource.
  if (resource.crd ? resource.hasStatus : STATUS_CLEARED_ON_CREATE.has(builtinKind(resource)))
    delete (object as Obj).status;
}

/** isCrd says whether a resource is apiextensions.k8s.io's CustomResourceDefinition itself. */
export function isCrd(resource: ResourceDef): boolean {
  return resource.group === 'apiextensions.k8s.io' && resource.kind === 'CustomResourceDefinition';
}

function validateName(resource: ResourceDef, name: string): StatusCause[] {
  const field = 'metadata.name';
  const kind = builtinKind(resource);
  if (kind === 'Namespace' && (!DNS_LABEL.test(name) || name.length > 63)) {
    return [
      {
        reason: 'FieldValueInvalid',
        field,
        message:
          `Invalid value: "${name}": a lowercase RFC 1123 label must consist of lower case alphanumeric ` +
          `characters or '-', and must start and end with an alphanumeric character`,
      },
    ];
  }
  if (kind === 'Service' && (!DNS_1035_LABEL.test(name) || name.length > 63)) {
    return [
      {
        reason: 'FieldValueInvalid',
        field,
        message:
          `Invalid value: "${name}": a DNS-1035 label must consist of lower case alphanumeric characters or ` +
          `'-', start with an alphabetic character, and end with an alphanumeric character`,
      },
    ];
  }
  return validateSubdomain(name);
}

function validateSubdomain(name: string): StatusCause[] {
  const field = 'metadata.name';
  if (!DNS_SUBDOMAIN.test(name) || name.length > 253) {
    return [
      {
        reason: 'FieldValueInvalid',
        field,
        message:
          `Invalid value: "${name}": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric ` +
          `characters, '-' or '.', and must start and end with an alphanumeric character`,
      },
    ];
  }
  return [];
}

const PATH_TYPES = ['Exact', 'Prefix', 'ImplementationSpecific'];

function validateIngress(object: Obj): StatusCause[] {
  const causes: StatusCause[] = [];
  const spec = isObj(object.spec) ? object.spec : {};
  list(spec, 'rules').forEach((rule, r) => {
    const http = isObj(rule.http) ? rule.http : undefined;
    if (!http) return;
    list(http, 'paths').forEach((p, i) => {
      const field = `spec.rules[${r}].http.paths[${i}]`;
      if (p.pathType === undefined)
        causes.push({
          reason: 'FieldValueRequired',
          field: `${field}.pathType`,
          message: 'Required value: pathType must be specified',
        });
      else if (!PATH_TYPES.includes(String(p.pathType))) {
        causes.push({
          reason: 'FieldValueNotSupported',
          field: `${field}.pathType`,
          message:
            `Unsupported value: "${String(p.pathType)}": ` +
            'supported values: "Exact", "ImplementationSpecific", "Prefix"',
        });
      } else if (p.pathType !== 'ImplementationSpecific' && !String(p.path ?? '').startsWith('/')) {
        causes.push({
          reason: 'FieldValueInvalid',
          field: `${field}.path`,
          message: `Invalid value: "${String(p.path ?? '')}": must be an absolute path`,
        });
      }
    });
  });
  return causes;
}

/** validate returns the reasons the server refuses an object (422 Invalid); empty means valid. */
export function validate(resource: ResourceDef, object: KubeObject): StatusCause[] {
  const causes = validateName(resource, object.metadata.name);
  if (resource.crd) causes.push(...validateCustom(object as Obj, resource.crd.schema));
  else if (builtinKind(resource) === 'Ingress') causes.push(...validateIngress(object as Obj));
  else if (isCrd(resource)) causes.push(...validateCrd(object));
  return causes;
}

/** Kinds whose registry strategy keeps metadata.generation (1 on create, +1 per spec change). */
const GENERATION = new Set<string | undefined>([
  'Ingress',
  'IngressClass',
  'EndpointSlice',
  'Deployment',
  'PodDisruptionBudget',
  'CustomResourceDefinition',
]);

/** tracksGeneration says whether the server maintains metadata.generation for a kind (every custom resource). */
export function tracksGeneration(resource: ResourceDef): boolean {
  return resource.crd !== undefined || GENERATION.has(builtinKind(resource));
}

/** Kinds whose PUT creates a missing object (AllowCreateOnUpdate in their registry strategy). */
const CREATE_ON_UPDATE = new Set<string | undefined>(['Event', 'Lease', 'EndpointSlice']);

/** allowsCreateOnUpdate says whether PUT of a missing object creates it instead of 404. */
export function allowsCreateOnUpdate(resource: ResourceDef): boolean {
  return CREATE_ON_UPDATE.has(builtinKind(resource));
}

/** Kinds whose DELETE answers with the deleted object instead of a Success Status. */
const RETURNS_DELETED = new Set<string | undefined>(['Service']);

/** returnsDeletedObject says what a successful immediate DELETE answers with. */
export function returnsDeletedObject(resource: ResourceDef): boolean {
  return RETURNS_DELETED.has(builtinKind(resource));
}
