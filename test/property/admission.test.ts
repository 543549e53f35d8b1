/**
 * The admission judge keeps one BuildMemo across reviews, each of which builds a state that may
 * never exist (the snapshot with one candidate in it). Whatever the order of snapshots and
 * candidates, its verdict must be the one a fresh judge gives.
 */
import fc from 'fast-check';
import { expect, it } from 'vitest';
import { AdmissionJudge, type AdmissionOperation } from '../../src/model/admission.js';
import { defaultBuildOptions } from '../../src/model/build-types.js';
import type { Ingress, Snapshot } from '../../src/model/snapshot.js';
import { ingress, ingressClass, serviceWithEndpoints } from '../support/manifests.js';

const at = (i: Ingress, t: string): Ingress => ({ ...i, metadata: { ...i.metadata, creationTimestamp: t } });
const route = (name: string, host: string, path = '/', service = 'app') =>
  ingress(name, { [host]: [{ path, service }] }) as Ingress;

const existing = [
  at(route('first', 'a.example.com'), '2024-01-01T00:00:00Z'),
  at(route('second', 'b.example.com', '/api'), '2024-02-01T00:00:00Z'),
  at(route('third', 'c.example.com', '/', 'gone'), '2024-03-01T00:00:00Z'),
];
const [service, slice] = serviceWithEndpoints('app', [{ port: 8081 }]);
const snapshots: Snapshot[] = [
  existing,
  existing.slice(1),
  [...existing, at(route('late', 'd.example.com'), '2025-01-01T00:00:00Z')],
].map(
  (ingresses) =>
    ({
      ingresses,
      ingressClasses: [ingressClass()],
      services: [service],
      endpointSlices: [slice],
      secrets: [],
      configMaps: [],
    }) as unknown as Snapshot,
);

const candidates: [AdmissionOperation, Ingress][] = [
  ['CREATE', route('new', 'a.example.com')],
  ['CREATE', route('new', 'z.example.com')],
  ['CREATE', route('new', 'b.example.com', '/api')],
  ['CREATE', route('new', 'd.example.com')],
  [
    'CREATE',
    ingress(
      'bad',
      { 'e.example.com': [{ path: '/', service: 'app' }] },
      {
        annotations: { 'nginx.ingress.kubernetes.io/proxy-read-timeout': 'soon' },
      },
    ) as Ingress,
  ],
  ['UPDATE', at(route('first', 'b.example.com', '/api'), '2024-01-01T00:00:00Z')],
  ['UPDATE', at(route('second', 'a.example.com'), '2024-02-01T00:00:00Z')],
  ['UPDATE', at(route('third', 'c.example.com', '/', 'app'), '2024-03-01T00:00:00Z')],
];

it('a judge with its memo gives the verdicts of a fresh judge, in any order of reviews', () => {
  fc.assert(
    fc.property(
      fc.array(fc.tuple(fc.nat(snapshots.length - 1), fc.nat(candidates.length - 1)), { minLength: 1, maxLength: 12 }),
      (reviews) => {
        const kept = new AdmissionJudge();
        for (const [s, c] of reviews) {
          const [operation, candidate] = candidates[c]!;
          const options = { build: defaultBuildOptions };
          const verdict = kept.judge(snapshots[s]!, options, operation, candidate);
          expect(verdict).toEqual(new AdmissionJudge().judge(snapshots[s]!, options, operation, candidate));
        }
      },
    ),
    { numRuns: 60 },
  );
});
