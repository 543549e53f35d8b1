/**
 * A minimal OpenAPI v3 for kubectl. kubectl's default `--validate=strict` first asks /openapi/v3
 * whether the server validates fields itself: it looks for a PATCH operation carrying the kind's
 * `x-kubernetes-group-version-kind` and a `fieldValidation` query parameter. If it finds one it
 * sends `fieldValidation=Strict` and leaves validation to the server (fields.ts); without it,
 * kubectl wants the full /openapi/v2 schema and fails. The documents hold only those operations,
 * no schemas, and do not list strategic merge patch, so kubectl apply builds its patch from its
 * own compiled-in types (the same result as from a full schema for the served kinds).
 */
import { createHash } from 'node:crypto';
import { apiVersionOf, DEFAULT_TABLE, type ResourceDef, type ResourceTable } from './resources.js';

function collectionPath(resource: ResourceDef): string {
  const base = resource.group === '' ? `/api/${resource.version}` : `/apis/${resource.group}/${resource.version}`;
  return resource.namespaced ? `${base}/namespaces/{namespace}/${resource.plural}` : `${base}/${resource.plural}`;
}

const query = (name: string): object => ({ name, in: 'query', schema: { type: 'string', uniqueItems: true } });

function operationId(resource: ResourceDef): string {
  const group = resource.group === '' ? 'Core' : resource.group.split('.')[0]!.replace(/^./, (c) => c.toUpperCase());
  const version = resource.version.replace(/^./, (c) => c.toUpperCase());
  return `patch${group}${version}${resource.namespaced ? 'Namespaced' : ''}${resource.kind}`;
}

function groupVersionDoc(resources: readonly ResourceDef[]): object {
  const paths: Record<string, object> = {};
  for (const resource of resources) {
    paths[`${collectionPath(resource)}/{name}`] = {
      patch: {
        operationId: operationId(resource),
        'x-kubernetes-action': 'patch',
        'x-kubernetes-group-version-kind': { group: resource.group, version: resource.version, kind: resource.kind },
        parameters: [query('dryRun'), query('fieldManager'), query('fieldValidation'), query('force')],
        requestBody: {
          content: {
            'application/json-patch+json': { schema: { type: 'object' } },
            'application/merge-patch+json': { schema: { type: 'object' } },
          },
          required: true,
        },
        responses: { '200': { description: 'OK' } },
      },
    };
  }
  return { openapi: '3.0.0', info: { title: 'Kubernetes', version: 'v1.32.4' }, paths, components: { schemas: {} } };
}

interface Published {
  readonly index: object;
  readonly documents: ReadonlyMap<string, object>;
}

function publish(table: ResourceTable): Published {
  const byGroupVersion = new Map<string, ResourceDef[]>();
  for (const resource of table.resources) {
    const key = resource.group === '' ? `api/${resource.version}` : `apis/${apiVersionOf(resource)}`;
    byGroupVersion.set(key, [...(byGroupVersion.get(key) ?? []), resource]);
  }
  const documents = new Map<string, object>();
  const paths: Record<string, { serverRelativeURL: string }> = {};
  for (const [key, resources] of byGroupVersion) {
    const doc = groupVersionDoc(resources);
    documents.set(key, doc);
    const hash = createHash('sha512').update(JSON.stringify(doc)).digest('hex').toUpperCase();
    paths[key] = { serverRelativeURL: `/openapi/v3/${key}?hash=${hash}` };
  }
  return { index: { paths }, documents };
}

/** The documents of each table, made again when the table changed (a CRD came or went). */
const PUBLISHED = new WeakMap<ResourceTable, Published & { readonly generation: number }>();

/**
 * openApiDocument answers /openapi/v3 and /openapi/v3/<group-version> for a table's kinds; undefined elsewhere (v2 is
 * 404).
 */
export function openApiDocument(path: string, table: ResourceTable = DEFAULT_TABLE): object | undefined {
  let end = path.length;
  while (end > 0 && path[end - 1] === '/') end--; // not /\/+$/, which is quadratic on `////…x`
  const trimmed = path.slice(0, end);
  if (trimmed !== '/openapi/v3' && !trimmed.startsWith('/openapi/v3/')) return undefined;
  let published = PUBLISHED.get(table);
  if (published?.generation !== table.generation)
    PUBLISHED.set(table, (published = { ...publish(table), generation: table.generation }));
  if (trimmed === '/openapi/v3') return published.index;
  return published.documents.get(trimmed.slice('/openapi/v3/'.length));
}
