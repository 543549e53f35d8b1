/**
 * Unknown-field handling, as kube-apiserver's typed decoding does it: a field the kind's schema
 * lacks is dropped (`fieldValidation=Ignore`), dropped with a warning (`Warn`, the default), or
 * refused with 400 (`Strict`, what kubectl sends unless `--validate=false`). The schemas here
 * cover the top level and metadata of every served kind (DEPLOY_RESOURCES too), and IngressClass
 * and Ingress in full; where a schema says `ANY`, everything is accepted, so this is never stricter than the real one.
 */
import { apiVersionOf, builtinKind, type ResourceDef } from './resources.js';
import { badRequest } from './status.js';
import { type KubeObject, OBJECT_META_FIELDS } from './objects.js';

/** Shape is a known-fields schema: ANY, an object of shapes, or a one-element array of a shape. */
type Shape = typeof ANY | { readonly [field: string]: Shape } | readonly [Shape];

const ANY = 'any' as const;

const META: Shape = Object.fromEntries(OBJECT_META_FIELDS.map((field) => [field, ANY]));

const TOP = { apiVersion: ANY, kind: ANY, metadata: META } as const;

const BACKEND: Shape = {
  service: { name: ANY, port: { name: ANY, number: ANY } },
  resource: { apiGroup: ANY, kind: ANY, name: ANY },
};

const INGRESS: Shape = {
  ...TOP,
  spec: {
    ingressClassName: ANY,
    defaultBackend: BACKEND,
    tls: [{ hosts: ANY, secretName: ANY }],
    rules: [{ host: ANY, http: { paths: [{ path: ANY, pathType: ANY, backend: BACKEND }] } }],
  },
  status: {
    loadBalancer: { ingress: [{ ip: ANY, hostname: ANY, ports: [{ port: ANY, protocol: ANY, error: ANY }] }] },
  },
};

const SHAPES: Record<string, Shape> = {
  Namespace: { ...TOP, spec: ANY, status: ANY },
  Service: { ...TOP, spec: ANY, status: ANY },
  Node: { ...TOP, spec: ANY, status: ANY },
  Secret: { ...TOP, data: ANY, stringData: ANY, type: ANY, immutable: ANY },
  ConfigMap: { ...TOP, data: ANY, binaryData: ANY, immutable: ANY },
  Event: {
    ...TOP,
    ...Object.fromEntries(
      [
        'involvedObject',
        'reason',
        'message',
        'source',
        'firstTimestamp',
        'lastTimestamp',
        'count',
        'type',
        'eventTime',
        'series',
        'action',
        'related',
        'reportingComponent',
        'reportingInstance',
      ].map((field) => [field, ANY]),
    ),
  },
  EndpointSlice: { ...TOP, addressType: ANY, endpoints: ANY, ports: ANY },
  Ingress: INGRESS,
  IngressClass: {
    ...TOP,
    spec: { controller: ANY, parameters: { apiGroup: ANY, kind: ANY, name: ANY, namespace: ANY, scope: ANY } },
  },
  Lease: { ...TOP, spec: ANY },
  ValidatingWebhookConfiguration: { ...TOP, webhooks: ANY },
  // DEPLOY_RESOURCES, top level only
  ServiceAccount: { ...TOP, secrets: ANY, imagePullSecrets: ANY, automountServiceAccountToken: ANY },
  Deployment: { ...TOP, spec: ANY, status: ANY },
  PodDisruptionBudget: { ...TOP, spec: ANY, status: ANY },
  ClusterRole: { ...TOP, rules: ANY, aggregationRule: ANY },
  ClusterRoleBinding: { ...TOP, subjects: ANY, roleRef: ANY },
  Role: { ...TOP, rules: ANY },
  RoleBinding: { ...TOP, subjects: ANY, roleRef: ANY },
};

/** prune removes the fields `shape` lacks from `value` in place and returns their paths. */
function prune(value: unknown, shape: Shape, path: string): string[] {
  if (shape === ANY || value === null || typeof value !== 'object') return [];
  if (Array.isArray(shape)) {
    if (!Array.isArray(value)) return [];
    return value.flatMap((item, i) => prune(item, shape[0] as Shape, `${path}[${i}]`));
  }
  if (Array.isArray(value)) return [];
  const fields = shape as { readonly [field: string]: Shape };
  const object = value as Record<string, unknown>;
  const unknown: string[] = [];
  for (const key of Object.keys(object)) {
    const at = path ? `${path}.${key}` : key;
    const inner = fields[key];
    if (inner === undefined) {
      unknown.push(at);
      delete object[key];
    } else {
      unknown.push(...prune(object[key], inner, at));
    }
  }
  return unknown;
}

/** FieldValidation is the `fieldValidation` query parameter of a write. */
export type FieldValidation = 'Strict' | 'Warn' | 'Ignore';

/** parseFieldValidation reads the parameter; absent means Warn, the server default since 1.27. */
export function parseFieldValidation(value: string | null | undefined): FieldValidation {
  if (value === null || value === undefined || value === '') return 'Warn';
  if (value === 'Strict' || value === 'Warn' || value === 'Ignore') return value;
  throw badRequest(`fieldValidation parameter unsupported: ${value}`);
}

/**
 * checkFields drops unknown fields from `object` (in place) according to `mode`: returns the
 * warnings to send (`Warn`), or throws the 400 a strict decoder gives (`Strict`).
 */
export function checkFields(resource: ResourceDef, object: KubeObject, mode: FieldValidation): string[] {
  const kind = builtinKind(resource);
  const shape = kind === undefined ? undefined : SHAPES[kind];
  if (!shape) return [];
  return reportUnknown(resource.kind, apiVersionOf(resource), prune(object, shape, ''), mode);
}

/**
 * reportUnknown turns the paths of pruned unknown fields into what `mode` asks for: nothing
 * (`Ignore`), warnings (`Warn`), or the 400 of a strict decoder (`Strict`).
 */
export function reportUnknown(kind: string, apiVersion: string, unknown: string[], mode: FieldValidation): string[] {
  if (unknown.length === 0 || mode === 'Ignore') return [];
  const messages = unknown.map((path) => `unknown field "${path}"`);
  if (mode === 'Strict') {
    const version = apiVersion.split('/').pop();
    throw badRequest(
      `${kind} in version "${version}" cannot be handled as a ${kind}: strict decoding error: ${messages.join(', ')}`,
    );
  }
  return messages;
}
