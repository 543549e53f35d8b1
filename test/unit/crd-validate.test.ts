/** The test API server's CustomResourceDefinition checks (src/dev/api-server/crd.ts), table-driven: the names as kube-apiserver takes them. */
import { describe, expect, it } from 'vitest';
import { validateCrd } from '../../src/dev/api-server/crd.js';
import type { KubeObject } from '../../src/dev/api-server/objects.js';

const crd = (versions: string[], plural = 'widgets'): KubeObject =>
  ({
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${plural}.example.com` },
    spec: {
      group: 'example.com',
      scope: 'Namespaced',
      names: { plural, kind: 'Widget' },
      versions: versions.map((name, i) => ({ name, served: true, storage: i === 0 })),
    },
  }) as KubeObject;

describe('validateCrd', () => {
  it.each([['v1'], ['v1beta1'], ['v2alpha3'], ['a-b1']])('takes the version name %j', (name) => {
    expect(validateCrd(crd([name]))).toEqual([]);
  });

  // DNS-1035: a letter first (kube-apiserver refuses `1beta`, which an RFC 1123 label would allow)
  it.each([['1beta'], ['V1'], ['v1-'], ['-v1'], ['v1.0']])('refuses the version name %j, naming the field', (name) => {
    expect(validateCrd(crd([name])).map((c) => c.field)).toEqual(['spec.versions[0].name']);
  });

  it.each([['Widgets'], ['wid_gets']])('refuses the plural %j', (plural) => {
    expect(validateCrd(crd(['v1'], plural)).map((c) => c.field)).toContain('spec.names.plural');
  });
});
