/**
 * The structural-schema steps of the test API server's CRDs (src/dev/api-server/schema.ts) and the
 * printer columns' JSONPath (jsonpath.ts), case by case, then through a Registry: defaults on
 * read, a CRD whose names are taken, a CRD refused, and the namespace of custom objects.
 */
import { describe, expect, it } from 'vitest';
import { evaluateJsonPath, parseJsonPath } from '../../src/dev/api-server/jsonpath.js';
import { Registry } from '../../src/dev/api-server/registry.js';
import { RESOURCES } from '../../src/dev/api-server/resources.js';
import { applyDefaults, pruneUnknown, validateCustom } from '../../src/dev/api-server/schema.js';
import { ApiError } from '../../src/dev/api-server/status.js';
import { toTable } from '../../src/dev/api-server/table.js';

const SCHEMA = {
  type: 'object',
  properties: {
    spec: {
      type: 'object',
      required: ['size'],
      properties: {
        size: { type: 'integer', minimum: 1, maximum: 10 },
        mode: { type: 'string', enum: ['A', 'B'], default: 'A' },
        name: { type: 'string', maxLength: 3, minLength: 1, pattern: '^[a-z]+$' },
        port: { 'x-kubernetes-int-or-string': true },
        labels: { type: 'object', additionalProperties: { type: 'string' }, maxProperties: 2 },
        items: {
          type: 'array',
          maxItems: 2,
          items: { type: 'object', properties: { weight: { type: 'integer', default: 1 } } },
        },
        free: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true, properties: { a: { type: 'string' } } },
        nested: {
          type: 'object',
          default: {},
          properties: { from: { type: 'string', default: 'Same' } },
        },
        maybe: { type: 'string', nullable: true },
        template: { type: 'object', 'x-kubernetes-embedded-resource': true, properties: {} },
      },
    },
    status: { type: 'object', properties: { ready: { type: 'boolean' } } },
  },
};

describe('pruneUnknown', () => {
  it('drops undeclared fields and reports their paths; keeps what preserve-unknown-fields and maps allow', () => {
    const object = {
      apiVersion: 'x.io/v1',
      kind: 'Thing',
      metadata: { name: 'a', bogus: 1 },
      spec: {
        size: 1,
        colour: 'red',
        labels: { any: 'thing' },
        items: [{ weight: 2, extra: true }],
        free: { a: 'x', b: { c: 1 } },
        template: { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', junk: 1 }, spec: {} },
      },
      top: 1,
    };
    expect(pruneUnknown(object, SCHEMA).sort()).toEqual(
      [
        'metadata.bogus',
        'spec.colour',
        'spec.items[0].extra',
        'spec.template.metadata.junk',
        'spec.template.spec',
        'top',
      ].sort(),
    );
    expect(object).toEqual({
      apiVersion: 'x.io/v1',
      kind: 'Thing',
      metadata: { name: 'a' },
      spec: {
        size: 1,
        labels: { any: 'thing' },
        items: [{ weight: 2 }],
        free: { a: 'x', b: { c: 1 } },
        template: { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' } },
      },
    });
  });

  it("keeps the root's undeclared fields when its additionalProperties is true, as at any depth", () => {
    const schema = { type: 'object', additionalProperties: true, properties: { spec: { type: 'object' } } };
    const object = { apiVersion: 'x.io/v1', kind: 'Thing', metadata: { name: 'a', bogus: 1 }, spec: {}, top: 1 };
    expect(pruneUnknown(object, schema)).toEqual(['metadata.bogus']);
    expect(object).toEqual({ apiVersion: 'x.io/v1', kind: 'Thing', metadata: { name: 'a' }, spec: {}, top: 1 });
  });
});

describe('applyDefaults', () => {
  it('fills defaults, inside defaulted values too, and replaces a null that is not nullable', () => {
    const object: Record<string, unknown> = {
      metadata: { name: 'a' },
      spec: { size: 2, mode: null, maybe: null, items: [{}, { weight: 5 }] },
    };
    applyDefaults(object, SCHEMA);
    expect(object.spec).toEqual({
      size: 2,
      mode: 'A',
      maybe: null,
      items: [{ weight: 1 }, { weight: 5 }],
      nested: { from: 'Same' },
    });
  });
});

describe('validateCustom', () => {
  const causes = (spec: Record<string, unknown>) =>
    validateCustom({ spec }, SCHEMA).map((c) => `${c.reason} ${c.field}: ${c.message}`);

  it('accepts a valid object', () => {
    expect(causes({ size: 3, name: 'ab', port: 'http', maybe: null })).toEqual([]);
    expect(causes({ size: 3, port: 8080 })).toEqual([]);
  });

  it('names each bad field as kube-apiserver does', () => {
    expect(causes({})).toEqual(['FieldValueRequired spec.size: Required value']);
    expect(causes({ size: 'big' })).toEqual([
      'FieldValueTypeInvalid spec.size: Invalid value: "string": spec.size in body must be of type integer: "string"',
    ]);
    expect(causes({ size: 11, mode: 'C' })).toEqual([
      'FieldValueInvalid spec.size: Invalid value: 11: spec.size in body should be less than or equal to 10',
      'FieldValueNotSupported spec.mode: Unsupported value: "C": supported values: "A", "B"',
    ]);
    expect(causes({ size: 1, name: 'ABCD' })).toEqual([
      'FieldValueTooLong spec.name: Too long: may not be more than 3 bytes',
      'FieldValueInvalid spec.name: Invalid value: "ABCD": spec.name in body should match \'^[a-z]+$\'',
    ]);
    expect(causes({ size: 1, items: [{}, {}, { weight: 'x' }], port: 1.5 })).toEqual([
      'FieldValueTooMany spec.items: Too many: 3: must have at most 2 items',
      'FieldValueTypeInvalid spec.items[2].weight: Invalid value: "string": spec.items[2].weight in body must be of type integer: "string"',
      'FieldValueTypeInvalid spec.port: Invalid value: "number": spec.port in body must be of type integer,string: "number"',
    ]);
    expect(causes({ size: 1, labels: { a: '1', b: '2', c: 3 } })).toEqual([
      'FieldValueTooMany spec.labels: Too many: 3: must have at most 2 items',
      'FieldValueTypeInvalid spec.labels.c: Invalid value: "integer": spec.labels.c in body must be of type string: "integer"',
    ]);
    expect(causes({ size: 1, mode: null })).toEqual([
      'FieldValueTypeInvalid spec.mode: Invalid value: "null": spec.mode in body must be of type string: "null"',
    ]);
  });

  it("checks the root's required list against the whole object: apiVersion and kind may be required", () => {
    const schema = {
      type: 'object',
      required: ['apiVersion', 'kind', 'spec'],
      properties: { spec: { type: 'object' } },
    };
    const object = { apiVersion: 'x.io/v1', kind: 'Thing', metadata: { name: 'a' } };
    expect(validateCustom({ ...object, spec: {} }, schema)).toEqual([]);
    expect(validateCustom(object, schema)).toEqual([
      { reason: 'FieldValueRequired', field: 'spec', message: 'Required value' },
    ]);
    expect(validateCustom({ metadata: { name: 'a' }, spec: {} }, schema).map((c) => c.field)).toEqual([
      'apiVersion',
      'kind',
    ]);
  });

  it('skips a pattern outside the safe regex subset', () => {
    const schema = { type: 'object', properties: { v: { type: 'string', pattern: '^(?=a)b' } } };
    expect(validateCustom({ v: 'zzz' }, schema)).toEqual([]);
  });

  it('runs patterns without backtracking: a nested repeat meets a long non-matching value', () => {
    const schema = { type: 'object', properties: { v: { type: 'string', pattern: '^(a+)+$' } } };
    // Backtracking would try 2^50000 ways; the linear engine reads the value once.
    expect(validateCustom({ v: `${'a'.repeat(50_000)}!` }, schema).map((c) => c.reason)).toEqual(['FieldValueInvalid']);
    expect(validateCustom({ v: 'aaa' }, schema)).toEqual([]);
  });
});

describe('printer column JSONPath', () => {
  const object = {
    spec: { hostnames: ['a', 'b'], 'dotted.key': 'd' },
    status: {
      conditions: [
        { type: 'Accepted', status: 'True' },
        { type: 'Programmed', status: 'False' },
      ],
      addresses: [{ value: '10.0.0.1' }, { value: '10.0.0.2' }],
    },
  };
  const at = (path: string) => evaluateJsonPath(parseJsonPath(path)!, object);

  it('reads fields, indexes, wildcards and filters', () => {
    expect(at('.spec.hostnames')).toEqual([['a', 'b']]);
    expect(at('.spec.hostnames[1]')).toEqual(['b']);
    expect(at(".spec['dotted.key']")).toEqual(['d']);
    expect(at('.status.addresses[*].value')).toEqual(['10.0.0.1', '10.0.0.2']);
    expect(at('.status.conditions[?(@.type=="Programmed")].status')).toEqual(['False']);
    expect(at('{.status.conditions[?(@.type!="Programmed")].type}')).toEqual(['Accepted']);
    expect(at('.missing.field')).toEqual([]);
    expect(parseJsonPath('.a[?(@.b~"x")]')).toBeUndefined();
  });
});

const CRDS = RESOURCES.find((r) => r.kind === 'CustomResourceDefinition')!;

function crd(extra: Record<string, unknown> = {}, names: Record<string, unknown> = {}) {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'widgets.example.io' },
    spec: {
      group: 'example.io',
      scope: 'Namespaced',
      names: { plural: 'widgets', kind: 'Widget', ...names },
      versions: [
        {
          name: 'v1',
          served: true,
          storage: true,
          schema: { openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object', ...extra } } } },
        },
      ],
    },
  };
}

function thrown(call: () => unknown): ApiError {
  try {
    call();
  } catch (error) {
    if (error instanceof ApiError) return error;
    throw error;
  }
  throw new Error('expected an ApiError');
}

describe('CRDs in a Registry', () => {
  it('applies a default added to the CRD later to objects stored before it, on read', () => {
    const registry = new Registry();
    registry.apply(crd({ properties: { size: { type: 'integer' } } }));
    const widgets = registry.resources.find('example.io', 'v1', 'widgets')!;
    expect(widgets).toMatchObject({ kind: 'Widget', namespaced: true, hasStatus: false });
    registry.apply({
      apiVersion: 'example.io/v1',
      kind: 'Widget',
      metadata: { name: 'w', namespace: 'default' },
      spec: {},
    } as never);
    expect(registry.get(widgets, 'default', 'w').spec).toEqual({});
    registry.apply(crd({ properties: { size: { type: 'integer', default: 3 } } }));
    const again = registry.resources.find('example.io', 'v1', 'widgets')!;
    expect(registry.get(again, 'default', 'w').spec).toEqual({ size: 3 });
    expect(registry.list(again, { namespace: 'default' }).items[0]?.spec).toEqual({ size: 3 });
  });

  it('refuses a CRD whose name is not plural.group, and does not serve one whose names are taken', () => {
    const registry = new Registry();
    const bad = thrown(() => registry.create(CRDS, undefined, { ...crd(), metadata: { name: 'other.example.io' } }));
    expect(bad.code).toBe(422);
    expect(bad.message).toContain(
      'metadata.name: Invalid value: "other.example.io": must be spec.names.plural+"."+spec.group',
    );
    registry.create(CRDS, undefined, crd());
    const twin = {
      ...crd({}, { plural: 'widgets2', singular: 'widget2', kind: 'Widget' }),
      metadata: { name: 'widgets2.example.io' },
    };
    const stored = registry.create(CRDS, undefined, twin);
    expect((stored.status as { conditions: unknown[] }).conditions).toContainEqual(
      expect.objectContaining({ type: 'NamesAccepted', status: 'False', reason: 'KindConflict' }),
    );
    expect(registry.resources.find('example.io', 'v1', 'widgets2')).toBeUndefined();
    expect(registry.resources.find('example.io', 'v1', 'widgets')).toBeDefined();
  });

  it("gives a custom kind named like a built-in one (Secret) none of the built-in kind's field selectors or columns", () => {
    const registry = new Registry();
    registry.apply({
      ...crd({}, { plural: 'secrets', singular: 'secret', kind: 'Secret' }),
      metadata: { name: 'secrets.example.io' },
    });
    const secrets = registry.resources.find('example.io', 'v1', 'secrets')!;
    expect(secrets.kind).toBe('Secret');
    registry.apply({
      apiVersion: 'example.io/v1',
      kind: 'Secret',
      metadata: { name: 's', namespace: 'default' },
      type: 'Opaque',
    } as never);
    const named = registry.list(secrets, { namespace: 'default', fieldSelector: 'metadata.name=s' });
    expect(named.items.map((o) => o.metadata.name)).toEqual(['s']);
    expect(registry.list(secrets, { fieldSelector: 'metadata.namespace=default' }).items).toHaveLength(1);
    const byType = thrown(() => registry.list(secrets, { fieldSelector: 'type=Opaque' }));
    expect(byType.code).toBe(400);
    expect(byType.message).toBe('field label not supported: type');
    // The core Secret still has it.
    const core = RESOURCES.find((r) => r.kind === 'Secret' && r.group === '')!;
    expect(registry.list(core, { fieldSelector: 'type=Opaque' }).items).toEqual([]);
    const table = toTable(secrets, registry.list(secrets).items, { now: new Date() });
    expect(table.columnDefinitions.map((c) => c.name)).toEqual(['Name', 'Age']);
  });

  it('deletes custom objects with their namespace, and keeps each server table its own', async () => {
    const registry = new Registry(undefined, { namespaceDeletionDelayMs: 0 });
    registry.apply(crd());
    const widgets = registry.resources.find('example.io', 'v1', 'widgets')!;
    registry.apply({
      apiVersion: 'example.io/v1',
      kind: 'Widget',
      metadata: { name: 'w', namespace: 'gone' },
    } as never);
    registry.delete(RESOURCES.find((r) => r.kind === 'Namespace')!, undefined, 'gone');
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(registry.list(widgets).items).toEqual([]);
    expect(new Registry().resources.find('example.io', 'v1', 'widgets')).toBeUndefined();
  });
});
