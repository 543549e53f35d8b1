/**
 * CustomResourceDefinitions (apiextensions.k8s.io/v1): what the apiextensions-apiserver inside
 * kube-apiserver does with one, in one synchronous step instead of its controllers. A CRD that is
 * valid and whose names are free is stored Established, NamesAccepted and with its acceptedNames,
 * and from then on each served version is a resource of the server's table (discovery, REST
 * paths, OpenAPI, watches, tables); deleting it deletes its objects, then its resources.
 */
import { DNS_1035_LABEL, DNS_LABEL, DNS_SUBDOMAIN } from './names.js';
import type { ResourceDef, ResourceTable, PrinterColumn } from './resources.js';
import type { StatusCause } from './status.js';
import type { KubeObject } from './objects.js';

type Obj = Record<string, unknown>;

const isObj = (value: unknown): value is Obj => typeof value === 'object' && value !== null && !Array.isArray(value);
const str = (value: unknown): string => (typeof value === 'string' ? value : '');
const strings = (value: unknown): string[] =>
  Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];

/** CRD_CLEANUP_FINALIZER is the finalizer kube-apiserver puts on every CRD: its objects go before it does. */
export const CRD_CLEANUP_FINALIZER = 'customresourcecleanup.apiextensions.k8s.io';

/** CrdNames are a CRD's `spec.names` (and, once accepted, its `status.acceptedNames`). */
interface CrdNames {
  readonly plural: string;
  readonly singular: string;
  readonly kind: string;
  readonly listKind: string;
  readonly shortNames: readonly string[];
  readonly categories: readonly string[];
}

/** namesOf reads `spec.names`, filling singular and listKind as kube-apiserver's defaulting does. */
function namesOf(crd: KubeObject): CrdNames {
  const spec = isObj(crd.spec) ? crd.spec : {};
  const names = isObj(spec.names) ? spec.names : {};
  const kind = str(names.kind);
  return {
    plural: str(names.plural),
    singular: str(names.singular) || kind.toLowerCase(),
    kind,
    listKind: str(names.listKind) || `${kind}List`,
    shortNames: strings(names.shortNames),
    categories: strings(names.categories),
  };
}

interface VersionSpec {
  readonly name: string;
  readonly served: boolean;
  readonly storage: boolean;
  readonly status: boolean;
  readonly schema: unknown;
  readonly printerColumns: PrinterColumn[];
}

function versionsOf(crd: KubeObject): VersionSpec[] {
  const spec = isObj(crd.spec) ? crd.spec : {};
  const versions = Array.isArray(spec.versions) ? spec.versions.filter(isObj) : [];
  return versions.map((v) => {
    const columns = Array.isArray(v.additionalPrinterColumns) ? v.additionalPrinterColumns.filter(isObj) : [];
    return {
      name: str(v.name),
      served: v.served === true,
      storage: v.storage === true,
      status: isObj(v.subresources) && isObj(v.subresources.status),
      schema: isObj(v.schema) ? v.schema.openAPIV3Schema : undefined,
      printerColumns: columns.map((c) => ({
        name: str(c.name),
        type: str(c.type) || 'string',
        ...(typeof c.format === 'string' ? { format: c.format } : {}),
        ...(typeof c.description === 'string' ? { description: c.description } : {}),
        priority: typeof c.priority === 'number' ? c.priority : 0,
        jsonPath: str(c.jsonPath),
      })),
    };
  });
}

const KIND = /^[A-Za-z][A-Za-z0-9]*$/;

/** validateCrd gives the reasons kube-apiserver refuses a CRD (the common ones), empty when it takes it. */
export function validateCrd(crd: KubeObject): StatusCause[] {
  const causes: StatusCause[] = [];
  const spec = isObj(crd.spec) ? crd.spec : {};
  const group = str(spec.group);
  const names = namesOf(crd);
  const bad = (field: string, value: unknown, message: string): void => {
    causes.push({ reason: 'FieldValueInvalid', field, message: `Invalid value: ${JSON.stringify(value)}: ${message}` });
  };
  const required = (field: string): void => {
    causes.push({ reason: 'FieldValueRequired', field, message: 'Required value' });
  };
  if (crd.metadata.name !== `${names.plural}.${group}`)
    bad('metadata.name', crd.metadata.name, 'must be spec.names.plural+"."+spec.group');
  if (!group) required('spec.group');
  else if (!DNS_SUBDOMAIN.test(group) || !group.includes('.'))
    bad('spec.group', group, 'should be a domain with at least one dot');
  if (spec.scope !== 'Namespaced' && spec.scope !== 'Cluster')
    causes.push({
      reason: 'FieldValueNotSupported',
      field: 'spec.scope',
      message: `Unsupported value: ${JSON.stringify(spec.scope ?? '')}: supported values: "Cluster", "Namespaced"`,
    });
  if (!names.plural) required('spec.names.plural');
  else if (!DNS_LABEL.test(names.plural)) bad('spec.names.plural', names.plural, 'a lowercase RFC 1123 label');
  if (!names.kind) required('spec.names.kind');
  else if (!KIND.test(names.kind)) bad('spec.names.kind', names.kind, 'must be a valid kind name');
  if (names.singular && !DNS_LABEL.test(names.singular))
    bad('spec.names.singular', names.singular, 'a lowercase RFC 1123 label');
  const versions = versionsOf(crd);
  if (versions.length === 0) required('spec.versions');
  versions.forEach((v, i) => {
    if (!v.name || !DNS_1035_LABEL.test(v.name)) bad(`spec.versions[${i}].name`, v.name, 'a DNS-1035 label');
  });
  if (versions.length > 0 && versions.filter((v) => v.storage).length !== 1)
    bad('spec.versions', versions.length, 'must have exactly one version marked as storage version');
  if (versions.length > 0 && !versions.some((v) => v.served))
    bad('spec.versions', versions.length, 'must have at least one served version');
  return causes;
}

/** Version order in discovery, as kube-apiserver sorts them: GA, then beta, then alpha, then others. */
export function compareVersions(a: string, b: string): number {
  const rank = (v: string): [number, number, number, string] => {
    const m = /^v(\d+)(?:(alpha|beta)(\d+))?$/.exec(v);
    if (!m) return [3, 0, 0, v];
    const level = m[2] === undefined ? 0 : m[2] === 'beta' ? 1 : 2;
    return [level, -Number(m[1]), -Number(m[3] ?? 0), v];
  };
  const [x, y] = [rank(a), rank(b)];
  for (let i = 0; i < 3; i++) if (x[i] !== y[i]) return (x[i] as number) - (y[i] as number);
  return x[3] < y[3] ? -1 : x[3] > y[3] ? 1 : 0;
}

function namesCondition(crd: KubeObject, table: ResourceTable): { ok: boolean; reason: string; message: string } {
  const spec = (crd.spec ?? {}) as Obj;
  const group = str(spec.group);
  const names = namesOf(crd);
  const others = table.resources.filter((r) => r.group === group && r.crd?.name !== crd.metadata.name);
  if (others.some((r) => r.plural === names.plural))
    return { ok: false, reason: 'PluralConflict', message: `"${names.plural}" is already in use` };
  if (others.some((r) => r.singular === names.singular))
    return { ok: false, reason: 'SingularConflict', message: `"${names.singular}" is already in use` };
  if (others.some((r) => r.kind === names.kind))
    return { ok: false, reason: 'KindConflict', message: `"${names.kind}" is already in use` };
  const short = names.shortNames.find((s) => others.some((r) => r.shortNames.includes(s)));
  if (short) return { ok: false, reason: 'ShortNamesConflict', message: `"${short}" is already in use` };
  return { ok: true, reason: 'NoConflicts', message: 'no conflicts found' };
}

interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
  lastTransitionTime: string;
}

function condition(
  old: unknown,
  type: string,
  status: string,
  reason: string,
  message: string,
  now: string,
): Condition {
  const before = (Array.isArray(old) ? old.filter(isObj) : []).find((c) => c.type === type);
  const since =
    before?.status === status && typeof before.lastTransitionTime === 'string' ? before.lastTransitionTime : now;
  return { type, status, reason, message, lastTransitionTime: since };
}

/**
 * establish sets a CRD's status as the naming and establishing controllers would, and returns the
 * definitions of its served versions when its names are accepted (none otherwise).
 */
export function establish(crd: KubeObject, table: ResourceTable, now: string): ResourceDef[] {
  const spec = (crd.spec ?? {}) as Obj;
  const status = isObj(crd.status) ? crd.status : {};
  const names = namesOf(crd);
  const accepted = namesCondition(crd, table);
  const versions = versionsOf(crd);
  const storageVersion = versions.find((v) => v.storage)?.name ?? '';
  const stored = strings(status.storedVersions);
  const conditions = [
    condition(
      status.conditions,
      'NamesAccepted',
      accepted.ok ? 'True' : 'False',
      accepted.reason,
      accepted.message,
      now,
    ),
    accepted.ok
      ? condition(
          status.conditions,
          'Established',
          'True',
          'InitialNamesAccepted',
          'the initial names have been accepted',
          now,
        )
      : condition(status.conditions, 'Established', 'False', 'NotAccepted', 'not all names are accepted', now),
  ];
  crd.status = {
    conditions,
    acceptedNames: accepted.ok
      ? {
          plural: names.plural,
          singular: names.singular,
          ...(names.shortNames.length > 0 ? { shortNames: [...names.shortNames] } : {}),
          kind: names.kind,
          listKind: names.listKind,
          ...(names.categories.length > 0 ? { categories: [...names.categories] } : {}),
        }
      : isObj(status.acceptedNames)
        ? status.acceptedNames
        : { plural: '', kind: '' },
    storedVersions: stored.includes(storageVersion) ? stored : [...stored, storageVersion],
  };
  if (!accepted.ok) return [];
  const group = str(spec.group);
  return versions
    .filter((v) => v.served)
    .sort((a, b) => compareVersions(a.name, b.name))
    .map((v) => ({
      group,
      version: v.name,
      kind: names.kind,
      plural: names.plural,
      singular: names.singular,
      namespaced: spec.scope === 'Namespaced',
      shortNames: names.shortNames,
      categories: names.categories,
      hasStatus: v.status,
      crd: {
        name: crd.metadata.name,
        storageApiVersion: `${group}/${storageVersion}`,
        schema: v.schema,
        printerColumns: v.printerColumns,
      },
    }));
}
