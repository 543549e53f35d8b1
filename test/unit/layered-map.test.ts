/**
 * LayeredMapWriter (src/model/incremental/layered-map.ts), differential against a Map: random sets and deletes on a few hundred
 * keys (enough to make the base again several times), a view taken now and then; every view keeps answering as the
 * Map did when it was taken, whatever the writer did after.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { changedKeys, LayeredMapWriter } from '../../src/model/incremental/layered-map.js';

type Op = { set: number; value: number } | { delete: number } | { view: true };

const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ set: fc.nat(600), value: fc.nat(3) }) },
  { weight: 3, arbitrary: fc.record({ delete: fc.nat(600) }) },
  { weight: 1, arbitrary: fc.constant({ view: true as const }) },
);

describe('LayeredMapWriter', () => {
  it('every view answers as the map it was taken from, whatever comes after', () => {
    let compared = 0;
    fc.assert(
      fc.property(fc.array(op, { minLength: 1, maxLength: 3000 }), (ops) => {
        const writer = new LayeredMapWriter<string, string>();
        const map = new Map<string, string>();
        const views: [ReturnType<typeof writer.view>, Map<string, string>][] = [];
        for (const o of ops) {
          if ('set' in o) {
            writer.set(`k${o.set}`, `v${o.value}`);
            map.set(`k${o.set}`, `v${o.value}`);
          } else if ('delete' in o) {
            writer.delete(`k${o.delete}`);
            map.delete(`k${o.delete}`);
          } else views.push([writer.view(), new Map(map)]);
          expect(writer.size).toBe(map.size);
        }
        views.push([writer.view(), new Map(map)]);
        // between any two views, the keys whose values differ are among changedKeys' (when it can tell)
        for (let i = 1; i < views.length; i++) {
          const [[held, was], [next, is]] = [views[i - 1]!, views[i]!];
          const candidates = changedKeys(next, held);
          if (candidates === null) continue;
          compared++;
          const named = new Set(candidates);
          for (const k of new Set([...was.keys(), ...is.keys()]))
            if (was.get(k) !== is.get(k)) expect(named.has(k), `k${k} changed`).toBe(true);
        }
        for (const [view, expected] of views) {
          expect(view.size).toBe(expected.size);
          expect(new Map(view)).toEqual(expected);
          expect([...view.keys()].sort()).toEqual([...expected.keys()].sort());
          for (const k of [0, 1, 17, 300, 599, 600]) {
            expect(view.get(`k${k}`)).toBe(expected.get(`k${k}`));
            expect(view.has(`k${k}`)).toBe(expected.has(`k${k}`));
          }
        }
      }),
      { seed: 29, numRuns: 60 },
    );
    expect(compared).toBeGreaterThan(20);
  });

  it('names a key added after the base and deleted again among the changed ones', () => {
    const writer = new LayeredMapWriter<string, string>();
    writer.set('a', '1');
    writer.set('b', '1');
    const held = writer.view();
    writer.delete('a');
    writer.set('c', '1');
    const next = writer.view();
    expect(new Set(changedKeys(next, held))).toEqual(new Set(['a', 'c', 'b']));
    expect(changedKeys(next, new Map(held))).toBeNull();
  });
});
