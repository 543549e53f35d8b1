/**
 * The judge worker's mirror of the cache, fed by changesSince: a real ClusterCache changes (add, replace, remove), only
 * the changed objects travel (through a structured clone, as to a worker), and the mirror's snapshot holds what the
 * cache holds; an unchanged list costs no message and keeps its identity in the mirror (the judge's memo needs it).
 */
import { describe, expect, it } from 'vitest';
import { changesSince, Mirror, type SnapshotField } from '../../src/http/judge-mirror.js';
import { ClusterCache } from '../../src/kube/cache.js';
import type { KubeObject } from '../../src/model/snapshot.js';
import { ingress, ingressClass } from '../support/manifests.js';

const versioned = (o: KubeObject, rv: string): KubeObject => ({
  ...o,
  metadata: { ...o.metadata, resourceVersion: rv },
});
const names = (list: readonly KubeObject[] | undefined) => (list ?? []).map((o) => o.metadata?.name).sort();

describe('changesSince and Mirror', () => {
  it('send only what changed, and mirror the cache', () => {
    const cache = new ClusterCache();
    const sent = new Map<SnapshotField, readonly KubeObject[]>();
    const mirror = new Mirror();
    const send = () => {
      const changes = changesSince(sent, cache.snapshot());
      if (changes.length > 0) mirror.apply(structuredClone(changes));
      return changes;
    };
    cache.upsert('IngressClass', ingressClass() as KubeObject);
    cache.upsert('Ingress', versioned(ingress('a', {}) as KubeObject, '1'));
    cache.upsert('Ingress', versioned(ingress('b', {}) as KubeObject, '1'));
    expect(send().map((c) => [c.field, c.upserts.length, c.removes.length])).toEqual([
      ['ingresses', 2, 0],
      ['ingressClasses', 1, 0],
    ]);
    const classes = mirror.snapshot().ingressClasses;

    cache.upsert('Ingress', versioned(ingress('b', { 'b.example.com': [] }) as KubeObject, '2'));
    cache.remove('Ingress', ingress('a', {}) as KubeObject);
    cache.upsert('Ingress', versioned(ingress('c', {}) as KubeObject, '1'));
    const changes = send();
    expect(changes).toHaveLength(1);
    expect(changes[0]?.field).toBe('ingresses');
    expect(names(changes[0]?.upserts)).toEqual(['b', 'c']);
    expect(changes[0]?.removes).toEqual(['default/a']);

    const snapshot = mirror.snapshot();
    expect(names(snapshot.ingresses)).toEqual(['b', 'c']);
    expect(snapshot.ingresses.find((i) => i.metadata?.name === 'b')?.spec?.rules?.[0]?.host).toBe('b.example.com');
    // the unchanged list is the same array, and nothing is sent when nothing changed
    expect(snapshot.ingressClasses).toBe(classes);
    expect(send()).toEqual([]);
    expect(mirror.snapshot()).toBe(snapshot);
  });
});
