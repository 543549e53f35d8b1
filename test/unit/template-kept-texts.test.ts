/**
 * compileTemplate's kept texts (src/render/render.ts): an upstream handed back as the same object is not formatted again,
 * and `keepTexts: false` (the tests' from-scratch oracle) keeps nothing. Shown by changing an upstream in place
 * between two renders, which no build does.
 */
import { describe, expect, it } from 'vitest';
import { toSnapshot } from '../../src/manifests/load.js';
import { buildModel } from '../../src/model/build.js';
import { defaultBuildOptions } from '../../src/model/build-types.js';
import type { KubeObject } from '../../src/model/snapshot.js';
import { DEFAULT_TEMPLATE, readTemplateSources } from '../../src/render/load.js';
import { compileTemplate, render } from '../../src/render/render.js';
import { ingress, ingressClass, serviceWithEndpoints } from '../support/manifests.js';

const sources = await readTemplateSources(DEFAULT_TEMPLATE);

function model() {
  const objects = [
    ingressClass(),
    ...serviceWithEndpoints('api', [{ ip: '10.0.0.1', port: 8080 }]),
    ingress('shop', { 'shop.example.com': [{ path: '/api', service: 'api' }] }),
  ] as unknown as KubeObject[];
  return buildModel(toSnapshot(objects), defaultBuildOptions).model;
}

describe('compileTemplate', () => {
  it.each([
    ['keeps an upstream object’s text', {}, false],
    ['with keepTexts: false, formats it again', { keepTexts: false }, true],
  ])('%s', (_, options, again) => {
    const m = model();
    const template = compileTemplate(sources, options);
    const before = render(m, template);
    expect(before).toContain('server "10.0.0.1:8080"');
    (m.upstreams[0]!.endpoints as { address: string }[])[0]!.address = '10.9.9.9:8080';
    const after = render(m, template);
    expect(after.includes('server "10.9.9.9:8080"')).toBe(again);
  });
});
