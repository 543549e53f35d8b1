/**
 * The converted objects against the vendored standard-channel CRDs (deploy/gateway-api/standard-install.yaml, which
 * the test API server serves too; skipped if the file is missing): each object checked against its kind's
 * openAPIV3Schema (types, required fields, enums, patterns, lengths, bounds, item counts, and no field the schema
 * does not know, which the API server would prune). The CEL rules (x-kubernetes-validations) are not evaluated here.
 */
import { GATEWAY_API_INSTALL } from '../../src/dev/api-server/gateway-api.js';
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { describe, expect, it } from 'vitest';
import { loadManifests } from '../../src/manifests/load.js';
import { convertIngresses, defaultConvertOptions } from '../../src/convert/convert.js';

const CRDS = GATEWAY_API_INSTALL;
const CASES = new URL('./cases/', import.meta.url).pathname;

type Schema = {
  type?: string;
  properties?: Record<string, Schema>;
  additionalProperties?: Schema | boolean;
  items?: Schema;
  required?: string[];
  enum?: unknown[];
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  minItems?: number;
  maxItems?: number;
  'x-kubernetes-int-or-string'?: boolean;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
};

/** violations lists where a value breaks the structural schema, as `path: what`. */
function violations(schema: Schema, value: unknown, path: string, out: string[]): string[] {
  const fail = (what: string) => out.push(`${path}: ${what}`);
  if (schema.enum && !schema.enum.includes(value))
    fail(`${JSON.stringify(value)} is not one of ${schema.enum.join(', ')}`);
  if (schema['x-kubernetes-int-or-string']) {
    if (typeof value !== 'string' && !Number.isInteger(value)) fail('must be an integer or a string');
    return out;
  }
  switch (schema.type) {
    case 'object': {
      if (typeof value !== 'object' || value === null || Array.isArray(value)) return (fail('must be an object'), out);
      const record = value as Record<string, unknown>;
      for (const key of schema.required ?? []) if (!(key in record)) fail(`${key} is required`);
      for (const [key, v] of Object.entries(record)) {
        const sub = schema.properties?.[key];
        if (sub) violations(sub, v, `${path}.${key}`, out);
        else if (typeof schema.additionalProperties === 'object')
          violations(schema.additionalProperties, v, `${path}.${key}`, out);
        else if (schema.properties && !schema['x-kubernetes-preserve-unknown-fields']) fail(`unknown field ${key}`);
      }
      return out;
    }
    case 'array': {
      if (!Array.isArray(value)) return (fail('must be an array'), out);
      if (schema.minItems !== undefined && value.length < schema.minItems) fail(`fewer than ${schema.minItems} items`);
      if (schema.maxItems !== undefined && value.length > schema.maxItems) fail(`more than ${schema.maxItems} items`);
      for (const [i, v] of value.entries()) if (schema.items) violations(schema.items, v, `${path}[${i}]`, out);
      return out;
    }
    case 'string':
      if (typeof value !== 'string') return (fail('must be a string'), out);
      if (schema.minLength !== undefined && value.length < schema.minLength) fail(`shorter than ${schema.minLength}`);
      if (schema.maxLength !== undefined && value.length > schema.maxLength) fail(`longer than ${schema.maxLength}`);
      if (schema.pattern !== undefined && !new RegExp(schema.pattern, 'u').test(value))
        fail(`${JSON.stringify(value)} does not match ${schema.pattern}`);
      return out;
    case 'integer':
      if (!Number.isInteger(value)) return (fail('must be an integer'), out);
      if (schema.minimum !== undefined && (value as number) < schema.minimum) fail(`below ${schema.minimum}`);
      if (schema.maximum !== undefined && (value as number) > schema.maximum) fail(`above ${schema.maximum}`);
      return out;
    case 'boolean':
      if (typeof value !== 'boolean') fail('must be a boolean');
      return out;
    default:
      return out;
  }
}

describe.skipIf(!existsSync(CRDS))('converted objects against the vendored CRDs', async () => {
  const schemas = new Map<string, Schema>();
  if (existsSync(CRDS))
    for (const doc of parseAllDocuments(await readFile(CRDS, 'utf8'))) {
      const crd = doc.toJS() as {
        kind?: string;
        spec?: {
          group: string;
          names: { kind: string };
          versions: { name: string; schema: { openAPIV3Schema: Schema } }[];
        };
      } | null;
      if (crd?.kind !== 'CustomResourceDefinition' || !crd.spec) continue;
      for (const v of crd.spec.versions)
        schemas.set(`${crd.spec.group}/${v.name} ${crd.spec.names.kind}`, v.schema.openAPIV3Schema);
    }
  const cases = (await readdir(CASES, { withFileTypes: true })).filter((d) => d.isDirectory()).map((d) => d.name);

  it('finds what the schema refuses (the check can fail)', () => {
    const bad = {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'HTTPRoute',
      metadata: { name: 'bad', namespace: 'default' },
      spec: {
        parentRefs: [{ name: 'gw', sectionName: 'http' }],
        rules: [
          { filters: [{ type: 'RequestRedirect', requestRedirect: { statusCode: 305 } }], frobnicate: true },
          ...Array.from({ length: 16 }, () => ({ backendRefs: [{ name: 'web', port: 80 }] })),
        ],
      },
    };
    const found = violations(schemas.get('gateway.networking.k8s.io/v1 HTTPRoute')!, bad, 'HTTPRoute bad', []);
    expect(found).toEqual([
      'HTTPRoute bad.spec.rules: more than 16 items',
      'HTTPRoute bad.spec.rules[0].filters[0].requestRedirect.statusCode: 305 is not one of 301, 302, 303, 307, 308',
      'HTTPRoute bad.spec.rules[0]: unknown field frobnicate',
    ]);
  });

  it.each(cases.sort())('%s', async (name) => {
    // a case's options.json holds its flags (test/convert/convert.test.ts)
    const options = JSON.parse(await readFile(join(CASES, name, 'options.json'), 'utf8').catch(() => '{}'));
    const { objects } = convertIngresses(await loadManifests([join(CASES, name, 'input.yaml')]), {
      ...defaultConvertOptions,
      ...options,
    });
    // core kinds (a BackendTLSPolicy's CA ConfigMap) have no CRD
    for (const object of objects.filter((o) => o.apiVersion !== 'v1')) {
      const schema = schemas.get(`${object.apiVersion} ${object.kind}`);
      expect(schema, `${object.apiVersion} ${object.kind} in the CRDs`).toBeDefined();
      const found = violations(
        schema!,
        JSON.parse(JSON.stringify(object)),
        `${object.kind} ${object.metadata?.name}`,
        [],
      );
      expect(found).toEqual([]);
    }
  });
});
