import { readFile, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { emptySnapshot, type KubeObject, type Snapshot } from '../model/snapshot.js';

/** ManifestError is a manifest file that is not valid YAML, with its file and line. */
export class ManifestError extends Error {
  override name = 'ManifestError';
}

const KINDS: Record<string, keyof Snapshot> = {
  Ingress: 'ingresses',
  IngressClass: 'ingressClasses',
  Service: 'services',
  EndpointSlice: 'endpointSlices',
  Secret: 'secrets',
  ConfigMap: 'configMaps',
};

const CLUSTER_SCOPED = new Set(['IngressClass']);

async function yamlFiles(path: string): Promise<string[]> {
  if (!(await stat(path)).isDirectory()) return [path];
  const entries = await readdir(path, { withFileTypes: true });
  const nested = await Promise.all(
    entries
      .sort((a, b) => (a.name < b.name ? -1 : 1))
      .filter((e) => e.isDirectory() || /\.ya?ml$/.test(e.name))
      .map((e) => yamlFiles(join(path, e.name))),
  );
  return nested.flat();
}

/** parseManifests parses multi-document YAML text into objects; `List` kinds are unpacked. */
export function parseManifests(text: string, file = '<input>'): KubeObject[] {
  const objects: KubeObject[] = [];
  for (const doc of parseAllDocuments(text, { prettyErrors: true })) {
    const error = doc.errors[0];
    if (error) {
      const line = error.linePos?.[0].line ?? '?';
      throw new ManifestError(`${file}:${line}: ${error.message.split('\n')[0]}`);
    }
    const value: unknown = doc.toJS();
    if (value === null || value === undefined) continue;
    if (typeof value !== 'object' || Array.isArray(value)) {
      throw new ManifestError(`${file}:${doc.range[0] ? lineOf(text, doc.range[0]) : 1}: a manifest must be a mapping`);
    }
    const obj = value as KubeObject & { items?: KubeObject[] };
    if (obj.kind?.endsWith('List') && Array.isArray(obj.items)) objects.push(...obj.items);
    else objects.push(obj);
  }
  return objects;
}

function lineOf(text: string, offset: number): number {
  return text.slice(0, offset).split('\n').length;
}

/**
 * toSnapshot sorts objects into a Snapshot by kind, giving namespaced objects without a
 * namespace `default`, as kubectl apply does. Kinds buildModel does not read are skipped.
 */
export function toSnapshot(objects: readonly KubeObject[]): Snapshot {
  const snapshot = Object.fromEntries(Object.keys(emptySnapshot).map((k) => [k, []])) as unknown as Record<
    keyof Snapshot,
    KubeObject[]
  >;
  for (const obj of objects) {
    const slot = obj.kind ? KINDS[obj.kind] : undefined;
    if (!slot) continue;
    const namespaced = !CLUSTER_SCOPED.has(obj.kind!) && !obj.metadata?.namespace;
    snapshot[slot].push(namespaced ? { ...obj, metadata: { ...obj.metadata, namespace: 'default' } } : obj);
  }
  return snapshot as unknown as Snapshot;
}

/** loadManifests reads YAML files and folders (recursively, in name order) into a Snapshot. */
export async function loadManifests(paths: readonly string[]): Promise<Snapshot> {
  const objects: KubeObject[] = [];
  for (const path of paths) {
    for (const file of await yamlFiles(path)) objects.push(...parseManifests(await readFile(file, 'utf8'), file));
  }
  return toSnapshot(objects);
}
