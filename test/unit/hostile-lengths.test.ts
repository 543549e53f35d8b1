/**
 * Finding 1 of issue 14: one tenant's annotation value must not stall the controller for all.
 * Every annotation in the registry, every ConfigMap key and the path fields get values of 10 000
 * and 100 000 characters shaped to trip backtracking (runs a pattern almost matches, then a
 * character it refuses): buildModel must finish (the vitest timeout is the bound; the old
 * upstream-hash-by check alone took minutes on 101 characters) and report a problem for that field.
 */
import { describe, expect, it } from 'vitest';
import { supportedKeys } from '../../src/model/annotations/registry.js';
import { ANNOTATION_PREFIX } from '../../src/model/annotations/types.js';
import { buildModel } from '../../src/model/build.js';
import { defaultBuildOptions } from '../../src/model/build-types.js';
import { configKeys } from '../../src/model/config-map/registry.js';
import type { Snapshot } from '../../src/model/snapshot.js';
import { ingress, ingressClass, serviceWithEndpoints } from '../support/manifests.js';

const options = { ...defaultBuildOptions, configMap: 'ingress/config' };
/** Everything a validator may be handed, so the value reaches the validator rather than the risk gate. */
const permissive = { 'annotations-risk-level': 'Critical', 'allow-snippet-annotations': 'true' };

/** shapes of hostile values, each n characters or so: almost valid for some validator, then not. */
const shapes: Record<string, (n: number) => string> = {
  'letters then !': (n) => `${'a'.repeat(n)}!`,
  '$name then !': (n) => `$${'a'.repeat(n)}!`,
  '$a$a… then !': (n) => `${'$a'.repeat(n / 2)}!`,
  'slashes then x': (n) => `/${'/'.repeat(n)}x`,
  'digits then x': (n) => `${'1'.repeat(n)}x`,
  'spaces then x': (n) => `a${' '.repeat(n)}x`,
  'list items then ;': (n) => `${'a,'.repeat(n / 2)};`,
  'nested groups': (n) => `/${'(a'.repeat(n / 4)}${'a)'.repeat(n / 4)}!`,
  'class runs': (n) => `/${'[a-z]+'.repeat(n / 6)}"`,
  'url then space': (n) => `http://a.example.com/${'a/'.repeat(n / 2)} x`,
};

function snapshot(
  annotations: Record<string, string>,
  data: Record<string, string> = {},
  path = '/api',
  pathType: 'Prefix' | 'ImplementationSpecific' = 'Prefix',
): Snapshot {
  const [service, ...slices] = serviceWithEndpoints('web', [{ port: 9000 }]);
  const canary = Object.keys(annotations).some((k) => k.startsWith('canary'));
  const prefixed = Object.fromEntries(
    Object.entries({ ...(canary ? { canary: 'true' } : {}), ...annotations }).map(([k, v]) => [
      `${ANNOTATION_PREFIX}${k}`,
      v,
    ]),
  );
  return {
    ingressClasses: [ingressClass()],
    ingresses: [
      ingress('hostile', { 'a.example.com': [{ path, pathType, service: 'web' }] }, { annotations: prefixed }),
    ],
    services: [service],
    endpointSlices: slices,
    secrets: [],
    configMaps: [{ metadata: { namespace: 'ingress', name: 'config' }, data: { ...permissive, ...data } }],
  } as unknown as Snapshot;
}

const sizes = [10_000, 100_000];
const annotationKeys = supportedKeys.map(({ key }) => key.key);

describe('finding 1: hostile lengths', () => {
  it('covers the whole registry', () => {
    expect(annotationKeys).toContain('upstream-hash-by');
    expect(annotationKeys.length).toBeGreaterThan(60);
  });

  it('finding 1: a 100 000-character upstream-hash-by value is refused fast', () => {
    for (const value of [`$${'a'.repeat(100_000)}!`, `${'$a'.repeat(50_000)}!`, `$${'a'.repeat(100)}!`]) {
      const { problems } = buildModel(snapshot({ 'upstream-hash-by': value }), options);
      expect(problems.map((p) => p.field)).toContain(`metadata.annotations.${ANNOTATION_PREFIX}upstream-hash-by`);
    }
  });

  it.each(annotationKeys)(
    'finding 1: hostile 10k and 100k values of %s are refused, each within the test timeout',
    (key) => {
      for (const n of sizes) {
        for (const [shape, make] of Object.entries(shapes)) {
          const { problems } = buildModel(snapshot({ [key]: make(n) }), options);
          const fields = problems.map((p) => p.field);
          expect(fields, `${key} = ${shape} (${n})`).toContain(`metadata.annotations.${ANNOTATION_PREFIX}${key}`);
        }
      }
    },
  );

  it.each(configKeys.map((k) => k.key))('finding 1: hostile 10k and 100k values of ConfigMap %s are refused', (key) => {
    for (const n of sizes) {
      for (const [shape, make] of Object.entries(shapes)) {
        const { problems } = buildModel(snapshot({}, { [key]: make(n) }), options);
        expect(
          problems.map((p) => p.field),
          `${key} = ${shape} (${n})`,
        ).toContain(`data.${key}`);
      }
    }
  });

  it.each([
    ['a Prefix path', 'Prefix', {}],
    ['a regex path', 'ImplementationSpecific', { 'use-regex': 'true' }],
  ] as const)('finding 1: hostile 10k and 100k values of %s are refused', (_, pathType, annotations) => {
    for (const n of sizes) {
      for (const [shape, make] of Object.entries(shapes)) {
        const path = make(n).startsWith('/') ? make(n) : `/${make(n)}`;
        const { problems } = buildModel(snapshot(annotations, {}, path, pathType), options);
        expect(
          problems.map((p) => p.field),
          `${shape} (${n})`,
        ).toContain('spec.rules[0].http.paths[0].path');
      }
    }
  });
});
