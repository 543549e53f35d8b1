/**
 * unknownFields: the fields of a manifest that its Kubernetes type does not have, found by
 * walking the object alongside client-node's generated model types (the attribute maps of
 * V1Deployment, V1PodSpec, …). kubernetes-models checks types, required fields and formats but
 * accepts unknown keys; a misspelt `readinessProbe` would pass it and be dropped by the server.
 */
import * as k8s from '@kubernetes/client-node';

type Attribute = { baseName: string; type: string };
type ModelClass = { getAttributeTypeMap(): Attribute[] };

const OPEN = new Set(['any', 'object', 'string', 'number', 'boolean', 'Date', 'V1MicroTime', 'IntOrString']);

function model(type: string): ModelClass | undefined {
  const candidate = (k8s as unknown as Record<string, unknown>)[type];
  return typeof candidate === 'function' && 'getAttributeTypeMap' in candidate
    ? (candidate as unknown as ModelClass)
    : undefined;
}

function walk(value: unknown, type: string, path: string, out: string[]): void {
  if (value === null || value === undefined || OPEN.has(type)) return;
  const array = /^Array<(.+)>$/.exec(type);
  if (array) {
    if (Array.isArray(value)) for (const [i, v] of value.entries()) walk(v, array[1]!, `${path}[${i}]`, out);
    return;
  }
  const map = /^\{ \[key: string\]: (.+); \}$/.exec(type);
  if (map) {
    for (const [k, v] of Object.entries(value as object)) walk(v, map[1]!, `${path}.${k}`, out);
    return;
  }
  const cls = model(type);
  if (!cls || typeof value !== 'object') return;
  const attributes = new Map(cls.getAttributeTypeMap().map((a) => [a.baseName, a.type]));
  for (const [key, child] of Object.entries(value as object)) {
    const childType = attributes.get(key);
    if (childType === undefined) out.push(`${path}.${key}`);
    else walk(child, childType, `${path}.${key}`, out);
  }
}

/** unknownFields lists the paths of fields the manifest's kind (client-node's `V1<Kind>`) does not define. */
export function unknownFields(manifest: { apiVersion: string; kind: string }): string[] {
  const version = manifest.apiVersion.split('/').pop()!;
  const type = `${version.charAt(0).toUpperCase()}${version.slice(1)}${manifest.kind}`;
  if (!model(type)) throw new Error(`no client-node model ${type}`);
  const out: string[] = [];
  walk(manifest, type, manifest.kind, out);
  return out;
}
