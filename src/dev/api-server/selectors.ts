/**
 * Label and field selectors with the grammar of k8s.io/apimachinery: `a=b`, `a==b`, `a!=b`,
 * `a in (x,y)`, `a notin (x)`, `a`, `!a`, `a>1`, `a<1` for labels; `=`, `==`, `!=` on a fixed set
 * of fields for fields. A selector that does not parse is a 400, as on the real server.
 */
import { badRequest } from './status.js';
import type { KubeObject } from './objects.js';

/** Selector decides whether an object is in a list or watch. */
export type Selector = (object: KubeObject) => boolean;

const KEY = String.raw`(?:[a-z0-9](?:[-a-z0-9.]*[a-z0-9])?\/)?[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?`;
const VALUE = '(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?)?';
const EXISTS = new RegExp(`^(!?)\\s*(${KEY})$`);
const EQUALITY = new RegExp(`^(${KEY})\\s*(==|=|!=)\\s*(${VALUE})$`);
const SET = new RegExp(`^(${KEY})\\s+(in|notin)\\s*\\(([^()]*)\\)$`);
const COMPARE = new RegExp(`^(${KEY})\\s*(<|>)\\s*([0-9]+)$`);

/** splitRequirements splits on the commas that are not inside `in (…)` parentheses. */
function splitRequirements(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let current = '';
  for (const ch of text) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      parts.push(current);
      current = '';
    } else {
      current += ch;
    }
  }
  parts.push(current);
  return parts.map((p) => p.trim());
}

type LabelTest = (labels: Record<string, string>) => boolean;

function labelRequirement(text: string): LabelTest {
  let m = EXISTS.exec(text);
  if (m) {
    const [, not, key] = m as unknown as [string, string, string];
    return not ? (labels) => !(key in labels) : (labels) => key in labels;
  }
  m = EQUALITY.exec(text);
  if (m) {
    const [, key, op, value] = m as unknown as [string, string, string, string];
    // `!=` also selects objects that lack the key, as in apimachinery.
    return op === '!=' ? (labels) => labels[key] !== value : (labels) => labels[key] === value;
  }
  m = SET.exec(text);
  if (m) {
    const [, key, op, list] = m as unknown as [string, string, string, string];
    const values = list.split(',').map((v) => v.trim());
    if (values.some((v) => !new RegExp(`^${VALUE}$`).test(v)))
      throw badRequest(`unable to parse requirement: invalid label value in "${text}"`);
    const set = new Set(values);
    return op === 'in'
      ? (labels) => key in labels && set.has(labels[key]!)
      : (labels) => !(key in labels) || !set.has(labels[key]!);
  }
  m = COMPARE.exec(text);
  if (m) {
    const [, key, op, bound] = m as unknown as [string, string, string, string];
    const limit = Number(bound);
    return (labels) => {
      const raw = labels[key];
      if (raw === undefined || !/^-?[0-9]+$/.test(raw)) return false;
      return op === '<' ? Number(raw) < limit : Number(raw) > limit;
    };
  }
  throw badRequest(`unable to parse requirement: ${JSON.stringify(text)}`);
}

/** parseLabelSelector compiles a `labelSelector` query value; empty selects everything. */
export function parseLabelSelector(text: string | null | undefined): Selector {
  if (!text || text.trim() === '') return () => true;
  const tests = splitRequirements(text).map(labelRequirement);
  return (object) => {
    const labels = object.metadata.labels ?? {};
    return tests.every((test) => test(labels));
  };
}

type FieldGetter = (object: KubeObject) => string;

const META_FIELDS: Record<string, FieldGetter> = {
  'metadata.name': (o) => o.metadata.name,
  'metadata.namespace': (o) => o.metadata.namespace ?? '',
};

function path(...keys: string[]): FieldGetter {
  return (o) => {
    let value: unknown = o;
    for (const key of keys)
      value = value && typeof value === 'object' ? (value as Record<string, unknown>)[key] : undefined;
    return value === undefined || value === null ? '' : String(value);
  };
}

/** Extra field labels the real server registers per kind (beyond metadata.name/namespace). */
const KIND_FIELDS: Record<string, Record<string, FieldGetter>> = {
  Secret: { type: path('type') },
  Namespace: { 'status.phase': path('status', 'phase') },
  Node: { 'spec.unschedulable': path('spec', 'unschedulable') },
  Event: {
    'involvedObject.kind': path('involvedObject', 'kind'),
    'involvedObject.namespace': path('involvedObject', 'namespace'),
    'involvedObject.name': path('involvedObject', 'name'),
    'involvedObject.uid': path('involvedObject', 'uid'),
    'involvedObject.apiVersion': path('involvedObject', 'apiVersion'),
    'involvedObject.resourceVersion': path('involvedObject', 'resourceVersion'),
    'involvedObject.fieldPath': path('involvedObject', 'fieldPath'),
    reason: path('reason'),
    reportingComponent: path('reportingComponent'),
    source: path('source', 'component'),
    type: path('type'),
  },
};

// The value's leading blanks are trimmed after the match: `\s*(.*)` would be quadratic (both take blanks).
const FIELD_REQUIREMENT = /^([A-Za-z0-9_.]+)\s*(==|=|!=)(.*)$/;

/**
 * parseFieldSelector compiles a `fieldSelector` for a built-in `kind` (undefined for a custom
 * resource, which has metadata.name/namespace only); an unknown field is a 400.
 */
export function parseFieldSelector(text: string | null | undefined, kind: string | undefined): Selector {
  if (!text || text.trim() === '') return () => true;
  const fields = { ...META_FIELDS, ...((kind && KIND_FIELDS[kind]) ?? {}) };
  const tests = text.split(',').map((part) => {
    const m = FIELD_REQUIREMENT.exec(part.trim());
    if (!m) throw badRequest(`invalid selector: '${text}'; can't understand '${part}'`);
    const [, field, op, spaced] = m as unknown as [string, string, string, string];
    const value = spaced.trimStart();
    const get = fields[field];
    if (!get) throw badRequest(`field label not supported: ${field}`);
    return op === '!=' ? (o: KubeObject) => get(o) !== value : (o: KubeObject) => get(o) === value;
  });
  return (object) => tests.every((test) => test(object));
}
