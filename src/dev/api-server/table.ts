/**
 * Server-side printing: `kubectl get` asks for `as=Table` and prints the columns the server
 * chooses. These follow kube-apiserver's printers (pkg/printers/internalversion) for the served
 * kinds, so `kubectl get ingress` shows CLASS, HOSTS, ADDRESS and PORTS as on a real cluster.
 */
import { evaluateJsonPath, parseJsonPath } from './jsonpath.js';
import { builtinKind, type PrinterColumn, type ResourceDef } from './resources.js';
import type { KubeObject } from './objects.js';

type Obj = Record<string, unknown>;

/** ColumnDefinition is one column of a meta/v1 Table. */
export interface ColumnDefinition {
  name: string;
  type: string;
  format: string;
  description: string;
  priority: number;
}

/** TableObject is the wire form of a meta/v1 Table. */
export interface TableObject {
  kind: 'Table';
  apiVersion: 'meta.k8s.io/v1';
  metadata: { resourceVersion?: string; continue?: string; remainingItemCount?: number };
  columnDefinitions: ColumnDefinition[];
  rows: { cells: unknown[]; object: unknown }[];
}

type Cell = (object: Obj, now: Date) => unknown;

interface Column {
  readonly name: string;
  readonly cell: Cell;
  readonly priority?: number;
  readonly format?: string;
  readonly type?: string;
  readonly description?: string;
}

const get = (object: unknown, ...keys: string[]): unknown => {
  let value = object;
  for (const key of keys) value = value && typeof value === 'object' ? (value as Obj)[key] : undefined;
  return value;
};
const arr = (value: unknown): Obj[] => (Array.isArray(value) ? (value as Obj[]) : []);
const orNone = (value: unknown): string =>
  value === undefined || value === null || value === '' ? '<none>' : String(value);

/** humanDuration formats an age the way kubectl's duration.HumanDuration does. */
export function humanDuration(ms: number): string {
  const seconds = Math.floor(ms / 1000);
  if (seconds < -1) return '<invalid>';
  if (seconds < 0) return '0s';
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 10) return seconds % 60 === 0 ? `${minutes}m` : `${minutes}m${seconds % 60}s`;
  if (minutes < 180) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 8) return minutes % 60 === 0 ? `${hours}h` : `${hours}h${minutes % 60}m`;
  if (hours < 48) return `${hours}h`;
  const days = Math.floor(hours / 24);
  if (hours < 24 * 8) return hours % 24 === 0 ? `${days}d` : `${days}d${hours % 24}h`;
  if (hours < 24 * 365 * 2) return `${days}d`;
  const years = Math.floor(days / 365);
  if (hours < 24 * 365 * 8) return days % 365 === 0 ? `${years}y` : `${years}y${days % 365}d`;
  return `${years}y`;
}

const NAME: Column = { name: 'Name', cell: (o) => get(o, 'metadata', 'name'), format: 'name' };
const AGE: Column = {
  name: 'Age',
  cell: (o, now) => {
    const created = get(o, 'metadata', 'creationTimestamp');
    return typeof created === 'string' ? humanDuration(now.getTime() - Date.parse(created)) : '<unknown>';
  },
};

function firstThree(values: string[]): string {
  if (values.length === 0) return '';
  return values.length > 3 ? `${values.slice(0, 3).join(',')} + ${values.length - 3} more...` : values.join(',');
}

function loadBalancer(o: Obj): string {
  return arr(get(o, 'status', 'loadBalancer', 'ingress'))
    .map((i) => String(i.ip ?? i.hostname ?? ''))
    .filter(Boolean)
    .join(',');
}

function servicePorts(o: Obj): string {
  const ports = arr(get(o, 'spec', 'ports')).map(
    (p) => `${String(p.port)}${p.nodePort ? `:${String(p.nodePort)}` : ''}/${String(p.protocol ?? 'TCP')}`,
  );
  return ports.length ? ports.join(',') : '<none>';
}

function externalIp(o: Obj): string {
  const type = get(o, 'spec', 'type');
  const external = arr(get(o, 'spec', 'externalIPs') as unknown).map(String);
  if (type === 'ExternalName') return String(get(o, 'spec', 'externalName') ?? '<none>');
  if (type === 'LoadBalancer') {
    const lb = [loadBalancer(o), ...external].filter(Boolean).join(',');
    return lb || '<pending>';
  }
  return external.length ? external.join(',') : '<none>';
}

function nodeStatus(o: Obj): string {
  const ready = arr(get(o, 'status', 'conditions')).find((c) => c.type === 'Ready');
  const status = ready
    ? ready.status === 'True'
      ? 'Ready'
      : ready.status === 'False'
        ? 'NotReady'
        : 'Unknown'
    : 'Unknown';
  return get(o, 'spec', 'unschedulable') ? `${status},SchedulingDisabled` : status;
}

function nodeRoles(o: Obj): string {
  const labels = (get(o, 'metadata', 'labels') ?? {}) as Record<string, string>;
  const roles = Object.keys(labels)
    .filter((k) => k.startsWith('node-role.kubernetes.io/'))
    .map((k) => k.slice('node-role.kubernetes.io/'.length))
    .filter(Boolean)
    .sort();
  return roles.length ? roles.join(',') : '<none>';
}

const COLUMNS: Record<string, Column[]> = {
  Namespace: [NAME, { name: 'Status', cell: (o) => get(o, 'status', 'phase') ?? '' }, AGE],
  Service: [
    NAME,
    { name: 'Type', cell: (o) => get(o, 'spec', 'type') },
    { name: 'Cluster-IP', cell: (o) => orNone(get(o, 'spec', 'clusterIP')) },
    { name: 'External-IP', cell: externalIp },
    { name: 'Port(s)', cell: servicePorts },
    AGE,
    {
      name: 'Selector',
      priority: 1,
      cell: (o) =>
        orNone(
          Object.entries((get(o, 'spec', 'selector') ?? {}) as Record<string, string>)
            .map(([k, v]) => `${k}=${v}`)
            .join(','),
        ),
    },
  ],
  Secret: [
    NAME,
    { name: 'Type', cell: (o) => get(o, 'type') },
    { name: 'Data', cell: (o) => Object.keys((o.data ?? {}) as Obj).length },
    AGE,
  ],
  ConfigMap: [
    NAME,
    {
      name: 'Data',
      cell: (o) => Object.keys((o.data ?? {}) as Obj).length + Object.keys((o.binaryData ?? {}) as Obj).length,
    },
    AGE,
  ],
  Node: [
    NAME,
    { name: 'Status', cell: nodeStatus },
    { name: 'Roles', cell: nodeRoles },
    AGE,
    { name: 'Version', cell: (o) => get(o, 'status', 'nodeInfo', 'kubeletVersion') ?? '' },
  ],
  Event: [
    {
      name: 'Last Seen',
      cell: (o, now) =>
        humanDuration(
          now.getTime() - Date.parse(String(o.lastTimestamp ?? o.eventTime ?? get(o, 'metadata', 'creationTimestamp'))),
        ),
    },
    { name: 'Type', cell: (o) => o.type ?? '' },
    { name: 'Reason', cell: (o) => o.reason ?? '' },
    {
      name: 'Object',
      cell: (o) =>
        `${String(get(o, 'involvedObject', 'kind') ?? '').toLowerCase()}/` +
        `${String(get(o, 'involvedObject', 'name') ?? '')}`,
    },
    { name: 'Message', cell: (o) => o.message ?? '' },
  ],
  EndpointSlice: [
    NAME,
    { name: 'AddressType', cell: (o) => o.addressType ?? '' },
    {
      name: 'Ports',
      cell: (o) =>
        arr(o.ports)
          .map((p) => String(p.port ?? ''))
          .join(',') || '<unset>',
    },
    {
      name: 'Endpoints',
      cell: (o) =>
        firstThree(arr(o.endpoints).flatMap((e) => (Array.isArray(e.addresses) ? (e.addresses as string[]) : []))) ||
        '<unset>',
    },
    AGE,
  ],
  Ingress: [
    NAME,
    { name: 'Class', cell: (o) => orNone(get(o, 'spec', 'ingressClassName')) },
    { name: 'Hosts', cell: (o) => firstThree(arr(get(o, 'spec', 'rules')).map((r) => String(r.host ?? '*'))) || '*' },
    { name: 'Address', cell: loadBalancer },
    { name: 'Ports', cell: (o) => (arr(get(o, 'spec', 'tls')).length > 0 ? '80, 443' : '80') },
    AGE,
  ],
  IngressClass: [
    NAME,
    { name: 'Controller', cell: (o) => get(o, 'spec', 'controller') ?? '' },
    {
      name: 'Parameters',
      cell: (o) => {
        const p = get(o, 'spec', 'parameters') as Obj | undefined;
        return p
          ? `${p.apiGroup ? `${String(p.kind)}.${String(p.apiGroup)}` : String(p.kind)}/${String(p.name)}`
          : '<none>';
      },
    },
    AGE,
  ],
  Lease: [NAME, { name: 'Holder', cell: (o) => get(o, 'spec', 'holderIdentity') ?? '' }, AGE],
  CustomResourceDefinition: [
    NAME,
    { name: 'Created At', cell: (o) => get(o, 'metadata', 'creationTimestamp') ?? '', format: 'date' },
  ],
};

/** A printer column's cell: `date` as an age, a string (several values joined by spaces), or a plain value. */
function printerCell(column: PrinterColumn): Cell {
  const steps = parseJsonPath(column.jsonPath);
  return (o, now) => {
    const values = steps ? evaluateJsonPath(steps, o) : [];
    if (values.length === 0) return null;
    const text = values.map((v) => (typeof v === 'string' ? v : JSON.stringify(v))).join(' ');
    if (column.type === 'date') {
      const time = Date.parse(String(values[0]));
      return Number.isNaN(time) ? text : humanDuration(now.getTime() - time);
    }
    if (column.type === 'string') return text;
    return values.length === 1 ? values[0] : text;
  };
}

/** A CRD version's columns, built (JSONPaths parsed) once per definition: not for every table or watch event. */
const CUSTOM_COLUMNS = new WeakMap<ResourceDef, readonly Column[]>();

/** columnsOf gives a resource's columns: a CRD version's printer columns after Name (or Name and Age). */
function columnsOf(resource: ResourceDef): readonly Column[] {
  const kind = builtinKind(resource);
  if (kind !== undefined) return COLUMNS[kind] ?? [NAME, AGE];
  let columns = CUSTOM_COLUMNS.get(resource);
  if (!columns) {
    columns = customColumns(resource.crd?.printerColumns ?? []);
    CUSTOM_COLUMNS.set(resource, columns);
  }
  return columns;
}

function customColumns(printer: readonly PrinterColumn[]): readonly Column[] {
  if (printer.length === 0) return [NAME, AGE];
  return [
    NAME,
    ...printer.map((c) => ({
      name: c.name,
      cell: printerCell(c),
      priority: c.priority ?? 0,
      format: c.format ?? '',
      type: c.type,
      ...(c.description ? { description: c.description } : {}),
    })),
  ];
}

/** RowObject chooses what each row carries: `includeObject=None|Object|PartialObjectMetadata`. */
export type RowObject = 'None' | 'Object' | 'PartialObjectMetadata';

function rowObject(object: KubeObject, include: RowObject): unknown {
  if (include === 'None') return null;
  if (include === 'Object') return object;
  return { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: object.metadata };
}

/**
 * toTable renders objects as a Table; `headers: false` leaves out the column definitions, which a
 * watch sends only with its first event.
 */
export function toTable(
  resource: ResourceDef,
  objects: KubeObject[],
  options: { include?: RowObject; headers?: boolean; now?: Date; metadata?: TableObject['metadata'] } = {},
): TableObject {
  const columns = columnsOf(resource);
  const now = options.now ?? new Date();
  return {
    kind: 'Table',
    apiVersion: 'meta.k8s.io/v1',
    metadata: options.metadata ?? {},
    columnDefinitions:
      options.headers === false
        ? []
        : columns.map((c) => ({
            name: c.name,
            type: c.type ?? 'string',
            format: c.format ?? '',
            description: c.description ?? `${c.name} of the ${resource.kind}`,
            priority: c.priority ?? 0,
          })),
    rows: objects.map((object) => ({
      cells: columns.map((c) => c.cell(object as Obj, now) ?? ''),
      object: rowObject(object, options.include ?? 'PartialObjectMetadata'),
    })),
  };
}
