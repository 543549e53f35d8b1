/**
 * A change costs what changed (issue 29's p50 at 10,000 Ingresses): listChange answers a pair it walked or was told
 * without another walk; a changed Service looks at the plans that read it, not at every plan; the Ingresses in age
 * order are patched, not sorted again; the servers' diff keeps the catch-all apart. Each result is also compared with
 * a build without a memo (test/property/incremental.test.ts does so at random).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { BuildMemo, buildModel } from '../../src/model/build.js';
import { defaultBuildOptions } from '../../src/model/build-types.js';
import { addedAndRemoved, listChange, tellChange } from '../../src/model/incremental/list-diff.js';
import { TrackedReads } from '../../src/model/lookups.js';
import type { Server } from '../../src/model/nginx-model.js';
import { changedModelServers } from '../../src/model/server-diff.js';
import type { Ingress, Snapshot } from '../../src/model/snapshot.js';

afterEach(() => {
  vi.restoreAllMocks();
});

describe('listChange', () => {
  const [a, b, c, d, e] = ['a', 'b', 'c', 'd', 'e'].map((name) => ({ name }));
  it.each([
    { case: 'same list', before: [a, b, c], after: [a, b, c], start: 3, end: 0, gone: [], came: [] },
    { case: 'replaced in place', before: [a, b, c], after: [a, d, c], start: 1, end: 1, gone: [b], came: [d] },
    { case: 'added last', before: [a, b], after: [a, b, c], start: 2, end: 0, gone: [], came: [c] },
    { case: 'removed', before: [a, b, c], after: [a, c], start: 1, end: 1, gone: [b], came: [] },
    { case: 'two apart', before: [a, b, c, d], after: [e, b, c, a], start: 0, end: 0, gone: [a, b, c, d] },
  ])('$case', ({ before, after, start, end, gone, came }) => {
    // copies: a pair walked before (this test's other cases share items) must not answer for these lists
    const change = listChange([...before], [...after]);
    expect(change.start).toBe(start);
    expect(change.end).toBe(end);
    expect(change.gone).toEqual(gone);
    if (came) expect(change.came).toEqual(came);
  });

  it('answers a pair it was told without looking at the items', () => {
    const before = [a, b, c, d];
    const after = [a, b, c, d, e];
    // told wider than the walk would find: the answer is what was told, so no walk happened
    tellChange(before, after, 1, 0);
    expect(listChange(before, after)).toEqual({ start: 1, end: 0, gone: [b, c, d], came: [b, c, d, e] });
    // and addedAndRemoved, on it, still gives what came and went
    expect(addedAndRemoved(before, after)).toEqual({ added: [e], removed: [] });
  });

  it('walks again once newer pairs pushed a pair out', () => {
    const before = [a, b, c];
    const after = [a, d, c];
    tellChange(before, after, 0, 0);
    for (let i = 0; i < 40; i++) listChange([a], [a, b]);
    expect(listChange(before, after)).toMatchObject({ start: 1, end: 1 });
  });
});

/** n Ingresses, each with its Service and EndpointSlice, created a second apart */
function cluster(n: number): Snapshot {
  const ns = 'team';
  const objects = Array.from({ length: n }, (_, i) => ({
    ingress: ingress(`app-${i}`, 1_700_000_000_000 + i * 1000),
    service: { metadata: { namespace: ns, name: `app-${i}` }, spec: { ports: [{ name: 'http', port: 80 }] } },
    slice: {
      metadata: { namespace: ns, name: `app-${i}-x`, labels: { 'kubernetes.io/service-name': `app-${i}` } },
      addressType: 'IPv4',
      ports: [{ name: 'http', port: 8080 }],
      endpoints: [{ addresses: [`10.0.${i >> 8}.${i & 255}`], conditions: { ready: true } }],
    },
  }));
  return {
    ingressClasses: [{ metadata: { name: 'nginx' }, spec: { controller: 'k8s.io/ingress-nginx' } }],
    ingresses: objects.map((o) => o.ingress),
    services: objects.map((o) => o.service),
    endpointSlices: objects.map((o) => o.slice),
    secrets: [],
    configMaps: [],
  } as unknown as Snapshot;
}

function ingress(name: string, created: number, host = `${name}.example.com`): Ingress {
  return {
    metadata: { namespace: 'team', name, creationTimestamp: new Date(created).toISOString() },
    spec: {
      ingressClassName: 'nginx',
      rules: [
        {
          host,
          http: {
            paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name, port: { name: 'http' } } } }],
          },
        },
      ],
    },
  } as unknown as Ingress;
}

const options = { ...defaultBuildOptions };

describe('a change among 1,000 Ingresses', () => {
  it('a changed Service looks at the plan that reads it, and the model is a fresh build’s', () => {
    let snapshot = cluster(1000);
    const memo = new BuildMemo();
    buildModel(snapshot, options, memo);
    const before = memo.planList;
    const checks = vi.spyOn(TrackedReads.prototype, 'unchangedIn');
    const services = [...snapshot.services];
    services[500] = { ...services[500]!, spec: { ports: [{ name: 'http', port: 8080 }] } } as (typeof services)[number];
    snapshot = { ...snapshot, services };
    const { model } = buildModel(snapshot, options, memo);
    // one plan read that Service (the walk of every plan made 1,000 checks)
    expect(checks.mock.calls.length).toBeLessThanOrEqual(1);
    const changed = memo.planList.flatMap((plan, i) => (plan === before[i] ? [] : [i]));
    expect(changed).toEqual([500]);
    expect(model).toEqual(buildModel(snapshot, options).model);
  });

  it('an Ingress older than the rest, one deleted and one replaced keep the age order of a fresh build', () => {
    let snapshot = cluster(1000);
    const memo = new BuildMemo();
    buildModel(snapshot, options, memo);
    const ingresses = [...snapshot.ingresses];
    // the oldest now claims app-700's host: it wins the host, as in a fresh build
    ingresses.push(ingress('older', 1_600_000_000_000, 'app-700.example.com'));
    ingresses.splice(300, 1);
    ingresses[10] = { ...ingresses[10]!, metadata: { ...ingresses[10]!.metadata, labels: { changed: 'yes' } } };
    snapshot = { ...snapshot, ingresses };
    const { model, problems } = buildModel(snapshot, options, memo);
    const fresh = buildModel(snapshot, options);
    expect(model).toEqual(fresh.model);
    expect(problems).toEqual(fresh.problems);
    expect(memo.ours?.list[0]?.metadata?.name).toBe('older');
    expect(memo.ours?.list.map((i) => i.metadata?.name)).not.toContain('app-300');
  });

  it('a change to no Ingress of ours hands the same list of ours back', () => {
    let snapshot = cluster(50);
    const memo = new BuildMemo();
    buildModel(snapshot, options, memo);
    const ours = memo.ours?.list;
    const other = { ...ingress('other', 1), spec: { ingressClassName: 'another', rules: [] } } as unknown as Ingress;
    snapshot = { ...snapshot, ingresses: [...snapshot.ingresses, other] };
    buildModel(snapshot, options, memo);
    expect(memo.ours?.list).toBe(ours);
  });
});

describe('changedModelServers', () => {
  const server = (host: string) => ({ host }) as unknown as Server;
  const [catchAll, x, y, z, otherCatchAll] = [server('_'), server('x'), server('y'), server('z'), server('_')];
  it.each([
    { case: 'no model before', before: null, after: [catchAll, [x, y]], added: [x, y, catchAll], removed: [] },
    { case: 'a server replaced', before: [catchAll, [x, y]], after: [catchAll, [x, z]], added: [z], removed: [y] },
    {
      case: 'the catch-all replaced',
      before: [catchAll, [x]],
      after: [otherCatchAll, [x]],
      added: [otherCatchAll],
      removed: [catchAll],
    },
    { case: 'nothing', before: [catchAll, [x]], after: [catchAll, [x]], added: [], removed: [] },
  ] as const)('$case', ({ before, after, added, removed }) => {
    const model = (m: readonly [Server, readonly Server[]]) => ({ defaultServer: m[0], servers: [...m[1]] });
    const change = changedModelServers(before && model(before), model(after));
    expect(change.added).toEqual(added);
    expect(change.removed).toEqual(removed);
  });
});
