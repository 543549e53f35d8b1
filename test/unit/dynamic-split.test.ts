/**
 * DynamicSplit across syncs (src/sync/dynamic-split.ts): the tables split from an incremental build equal a fresh
 * split of the same model, and the entries no change touched are the same objects, so their JSON and digests are made
 * once (a change at 10,000 Ingresses costs what it changed). Table-driven over one-object changes.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { backendEntries, certificateEntries, type KeyedEntries, keyedBody } from '../../src/model/dynamic-tables.js';
import type { BalancedUpstream } from '../../src/model/nginx-model.js';
import { buildModel } from '../../src/model/build.js';
import { defaultBuildOptions } from '../../src/model/build-types.js';
import { BuildMemo } from '../../src/model/incremental/memo.js';
import type { Snapshot } from '../../src/model/snapshot.js';
import { DynamicSplit } from '../../src/sync/dynamic-split.js';
import { issueCertificate, type KeyPair } from '../../src/tls/issue.js';
import { ingress, ingressClass, serviceWithEndpoints, snapshotOf, tlsSecret } from '../support/manifests.js';

const LUA = { modules: [], packagePath: '/lua/?.lua;;', controlSocket: '/run/ia/control.sock', requestMetrics: false };
const options = { ...defaultBuildOptions, dynamic: LUA };

/** objects of a small cluster; a change replaces some of them, the others stay the same objects (as the cache keeps) */
function objectsOf(pair: KeyPair): Record<string, unknown>[] {
  return [
    ingressClass(),
    ...serviceWithEndpoints('a', [{ ip: '127.0.0.2', port: 8080 }]),
    ...serviceWithEndpoints('b', [{ ip: '127.0.0.3', port: 8080 }]),
    tlsSecret('one', pair.certPem, pair.keyPem),
    tlsSecret('two', pair.certPem, pair.keyPem),
    ingress('a', { 'a.test': [{ path: '/', service: 'a' }] }, { tls: [{ hosts: ['a.test'], secretName: 'one' }] }),
    ingress('b', { 'b.test': [{ path: '/', service: 'b' }] }, { tls: [{ hosts: ['b.test'], secretName: 'two' }] }),
  ];
}

/** nginxAfter is what nginx holds once the delta pushed on `held` (keyedBody) is applied to it, entries by `key` */
function nginxAfter(held: KeyedEntries | null, next: KeyedEntries, key: (entry: Record<string, unknown>) => string) {
  const body = JSON.parse(keyedBody(next, held)) as { set: Record<string, unknown>[]; remove: string[] };
  const nginx = new Map(held === null ? [] : held.entries);
  for (const k of body.remove) nginx.delete(k);
  for (const entry of body.set) nginx.set(key(entry), JSON.stringify(entry));
  return nginx;
}

function cluster(
  objects: Record<string, unknown>[],
  change: (o: Record<string, unknown>[]) => void = () => {},
): Snapshot {
  const changed = [...objects];
  change(changed);
  return snapshotOf(changed as { kind?: string }[]);
}

describe('DynamicSplit after a change equals a fresh split, and keeps what the change did not touch', async () => {
  const pair = await issueCertificate({ commonName: 'test', dnsNames: ['a.test', 'b.test', 'c.test'] });
  /** replace puts `by` in the place of the object of its kind and name */
  const replace = (objects: Record<string, unknown>[], by: Record<string, unknown>) => {
    const name = (o: Record<string, unknown>) => (o.metadata as { name: string }).name;
    const i = objects.findIndex((o) => o.kind === by.kind && name(o) === name(by));
    if (i < 0) throw new Error(`no ${String(by.kind)} ${name(by)} to replace`);
    objects.splice(i, 1, by);
  };
  it.each([
    ['nothing', () => {}, ['a', 'b'], ['default/one', 'default/two']],
    [
      "service b's endpoint moves",
      (o: Record<string, unknown>[]) => {
        const [, slice] = serviceWithEndpoints('b', [{ ip: '127.0.0.4', port: 8080 }]);
        replace(o, slice as Record<string, unknown>);
      },
      ['a'],
      ['default/one', 'default/two'],
    ],
    [
      'a TLS host joins Secret two',
      (o: Record<string, unknown>[]) =>
        o.push(
          ingress(
            'c',
            { 'c.test': [{ path: '/', service: 'b' }] },
            { tls: [{ hosts: ['c.test'], secretName: 'two' }] },
          ),
        ),
      ['a', 'b'],
      ['default/one'],
    ],
  ] as const)('%s', (_what, change, keptBackends, keptCertificates) => {
    const memo = new BuildMemo();
    const split = new DynamicSplit();
    const objects = objectsOf(pair);
    const before = split.split(buildModel(cluster(objects), options, memo).model).tables;
    const model = buildModel(cluster(objects, change), options, memo).model;
    const after = split.split(model).tables;
    const fresh = new DynamicSplit().split(model).tables;
    expect(after.backends).toEqual(fresh.backends);
    expect(after.certificates).toEqual(fresh.certificates);
    const kept = <T extends object>(a: readonly T[], b: readonly T[], key: (x: T) => string) =>
      a.filter((x) => b.some((y) => y === x)).map(key);
    expect(kept(after.backends.backends, before.backends.backends, (b) => b.name.split('_')[1]!)).toEqual(keptBackends);
    expect(kept(after.certificates.certificates, before.certificates.certificates, (c) => c.secret)).toEqual(
      keptCertificates,
    );
  });
});

describe('DynamicSplit backends through any changes', () => {
  // Upstream lists as builds hand them over: sorted by name, unchanged upstreams the same objects, a change replacing,
  // adding or removing some. The table equals a fresh split's, and the delta pushed on the last table, applied to
  // what nginx held, gives the new table's entries.
  const upstream = (name: number, ip: number): BalancedUpstream => ({
    name: `default_svc${name}_80`,
    service: `default/svc${name}`,
    servicePort: '80',
    endpoints: [{ address: `127.0.0.${2 + ip}:8080` }],
    hashKey: null,
    leastConn: false,
  });
  const step = fc.array(fc.record({ name: fc.nat(40), ip: fc.nat(3), remove: fc.boolean() }), { maxLength: 6 });
  it('equals a fresh split, and its delta brings nginx to the new entries', () => {
    const base = buildModel(snapshotOf([]), options).model;
    fc.assert(
      fc.property(fc.array(step, { minLength: 1, maxLength: 12 }), (steps) => {
        const split = new DynamicSplit();
        let list: BalancedUpstream[] = [];
        let held: ReturnType<typeof backendEntries> | null = null;
        for (const changes of steps) {
          const byName = new Map(list.map((u) => [u.name, u]));
          for (const c of changes) {
            const u = upstream(c.name, c.ip);
            if (c.remove) byName.delete(u.name);
            else byName.set(u.name, u);
          }
          list = [...byName.values()].sort((a, b) => (a.name < b.name ? -1 : 1));
          const model = { ...base, upstreams: list };
          const tables = split.split(model).tables;
          expect(tables.backends).toEqual(new DynamicSplit().split(model).tables.backends);
          const next = backendEntries(tables.backends);
          expect([...next.entries.keys()].sort()).toEqual(list.map((u) => u.name));
          expect(nginxAfter(held, next, (e) => e.name as string)).toEqual(new Map(next.entries));
          held = next;
        }
      }),
      { numRuns: 200 },
    );
  });
});

describe('DynamicSplit certificates through any changes', async () => {
  // TLS Ingresses come, go and switch Secrets one build after another; Secrets are renewed. The table (by Secret, and
  // its version) and the files nginx.conf names equal a fresh split's, and the delta pushed on the last table, applied
  // to what nginx held, gives the new table's entries.
  const dnsNames = Array.from({ length: 9 }, (_, h) => `h${h}.test`);
  const pairs = [
    await issueCertificate({ commonName: 'one', dnsNames }),
    await issueCertificate({ commonName: 'two', dnsNames }),
  ];
  const step = fc.array(fc.record({ host: fc.nat(8), secret: fc.option(fc.nat(2), { nil: null }), renew: fc.nat(2) }), {
    maxLength: 4,
  });
  const bySecret = (c: { readonly certificates: readonly { secret: string }[] }) =>
    [...c.certificates].sort((a, b) => (a.secret < b.secret ? -1 : 1));
  it('equals a fresh split, and its delta brings nginx to the new entries', () => {
    fc.assert(
      fc.property(fc.array(step, { minLength: 1, maxLength: 8 }), (steps) => {
        const memo = new BuildMemo();
        const split = new DynamicSplit();
        const tlsOf = new Map<number, number>();
        const renewed = [0, 0, 0];
        let held: ReturnType<typeof certificateEntries> | null = null;
        for (const changes of steps) {
          for (const c of changes) {
            if (c.secret === null) tlsOf.delete(c.host);
            else tlsOf.set(c.host, c.secret);
            renewed[c.renew] = (renewed[c.renew]! + 1) % 2;
          }
          const objects = [
            ingressClass(),
            ...serviceWithEndpoints('a', [{ ip: '127.0.0.2', port: 8080 }]),
            ...[0, 1, 2].map((s) => tlsSecret(`s${s}`, pairs[renewed[s]!]!.certPem, pairs[renewed[s]!]!.keyPem)),
            ...[...tlsOf].map(([h, s]) =>
              ingress(
                `h${h}`,
                { [`h${h}.test`]: [{ path: '/', service: 'a' }] },
                { tls: [{ hosts: [`h${h}.test`], secretName: `s${s}` }] },
              ),
            ),
          ];
          const model = buildModel(snapshotOf(objects as { kind?: string }[]), options, memo).model;
          const after = split.split(model);
          const fresh = new DynamicSplit().split(model);
          // every TLS host is served by its Secret's entry (none falls back to the default certificate)
          expect(after.tables.certificates.certificates.flatMap((c) => c.hosts).length).toBe(tlsOf.size);
          expect(after.tables.certificates.version).toBe(fresh.tables.certificates.version);
          expect(bySecret(after.tables.certificates)).toEqual(bySecret(fresh.tables.certificates));
          expect(after.model.certificates).toEqual(fresh.model.certificates);
          expect(after.model.filesDigest).toBe(fresh.model.filesDigest);
          const next = certificateEntries(after.tables.certificates);
          expect(nginxAfter(held, next, (e) => e.secret as string)).toEqual(new Map(next.entries));
          held = next;
        }
      }),
      { numRuns: 60 },
    );
  });
});
