/**
 * StatusWriter against the test API server: where the addresses come from (each flag, each
 * Service type, the nodes of the ready replicas), that a publish writes each served Ingress once
 * and then nothing, that a 409 is retried from the newer object, that an Ingress no longer
 * served loses the addresses it got from us, and whether another replica will take over.
 */
import {
  CoreV1Api,
  KubeConfig,
  KubernetesObjectApi,
  NetworkingV1Api,
  type KubernetesObject,
  type V1Ingress,
} from '@kubernetes/client-node';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { findResourceByKind } from '../../src/dev/api-server/resources.js';
import { startApiServer, type ApiServer } from '../../src/dev/api-server/server.js';
import { ClusterCache } from '../../src/kube/cache.js';
import { WATCHED_KINDS, type WatchedKind } from '../../src/kube/kinds.js';
import { nextServedList, servedLookup, StatusWriter, type AddressSource, type PodInfo } from '../../src/kube/status.js';
import { ingress, serviceWithEndpoints } from '../support/manifests.js';

const NS = 'ingress-actors';
const NO_POD: PodInfo = { name: null, namespace: null, nodeName: null };
const INGRESSES = networking('Ingress');
let api: ApiServer | undefined;
afterEach(async () => api?.close());

function networking(kind: string) {
  const resource = findResourceByKind(
    kind === 'Ingress' ? 'networking.k8s.io/v1' : kind === 'EndpointSlice' ? 'discovery.k8s.io/v1' : 'v1',
    kind,
  );
  if (!resource) throw new Error(kind);
  return resource;
}

function node(name: string, addresses: Record<string, string>) {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name },
    status: { addresses: Object.entries(addresses).map(([type, address]) => ({ type, address })) },
  };
}

/**
 * controllerSlice lists controller pods as endpoints of the Service `ingress-actors` (what the EndpointSlice controller
 * writes).
 */
function controllerSlice(pods: { name: string; node: string; ready?: boolean; terminating?: boolean }[]) {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name: 'ingress-actors-abc', namespace: NS, labels: { 'kubernetes.io/service-name': 'ingress-actors' } },
    addressType: 'IPv4',
    ports: [{ name: 'http', port: 80 }],
    endpoints: pods.map((p, i) => ({
      addresses: [`10.0.0.${i + 1}`],
      nodeName: p.node,
      targetRef: { kind: 'Pod', namespace: NS, name: p.name },
      conditions: { ready: p.ready ?? true, terminating: p.terminating ?? false },
    })),
  };
}

async function setup(
  seed: object[],
  source: Partial<AddressSource>,
  served: string[] | null = ['default/a', 'default/b'],
) {
  const writes: string[] = [];
  api = await startApiServer({
    seed: [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } }, ...seed] as never,
    onRequest: ({ method, url, status }) =>
      url.includes('/status') && method === 'PUT' && writes.push(`${status} ${url.replace(/^.*ingresses\//, '')}`),
  });
  const kc = new KubeConfig();
  kc.loadFromString(api.kubeconfigText);
  const objects = kc.makeApiClient(KubernetesObjectApi);
  const cache = new ClusterCache();
  const refill = async () => {
    for (const kind of WATCHED_KINDS) {
      const group =
        kind === 'Ingress' || kind === 'IngressClass'
          ? 'networking.k8s.io/v1'
          : kind === 'EndpointSlice'
            ? 'discovery.k8s.io/v1'
            : 'v1';
      for (const item of (await objects.list(group, kind)).items)
        cache.upsert(kind as WatchedKind, { ...item, apiVersion: group, kind } as KubernetesObject);
    }
  };
  await refill();
  const writer = new StatusWriter({
    networking: kc.makeApiClient(NetworkingV1Api),
    core: kc.makeApiClient(CoreV1Api),
    cache,
    log: pino({ level: 'silent' }),
    source: { publishStatusAddress: [], publishService: null, pod: NO_POD, watchNamespace: null, ...source },
    conflictWaitMs: 1_000,
  });
  const status = (name: string) =>
    (api!.registry.get(INGRESSES, 'default', name) as V1Ingress).status?.loadBalancer?.ingress ?? [];
  return { writer, served: served ? new Set(served) : null, cache, refill, writes, status, objects };
}

const two = [
  ingress('a', { 'a.example.com': [{ path: '/', service: 'web' }] }),
  ingress('b', { 'b.example.com': [{ path: '/', service: 'web' }] }),
];

describe('StatusWriter.addresses', () => {
  it('--publish-status-address: IPs and host names, sorted', async () => {
    const { writer } = await setup([], { publishStatusAddress: ['203.0.113.9', 'lb.example.com', '2001:db8::1'] });
    expect(await writer.addresses()).toEqual([
      { ip: '2001:db8::1' },
      { ip: '203.0.113.9' },
      { hostname: 'lb.example.com' },
    ]);
  });

  it('--publish-service: every Service type as ingress-nginx reads it', async () => {
    const services = [
      {
        metadata: { name: 'lb', namespace: NS },
        spec: { type: 'LoadBalancer', ports: [{ port: 80 }], externalIPs: ['198.51.100.2'] },
      },
      {
        metadata: { name: 'cip', namespace: NS },
        spec: { type: 'ClusterIP', clusterIP: '10.96.0.10', ports: [{ port: 80 }] },
      },
      {
        metadata: { name: 'np', namespace: NS },
        spec: { type: 'NodePort', ports: [{ port: 80 }], externalIPs: ['198.51.100.3'] },
      },
      { metadata: { name: 'ext', namespace: NS }, spec: { type: 'ExternalName', externalName: 'edge.example.net' } },
    ].map((s) => ({ apiVersion: 'v1', kind: 'Service', ...s }));
    const { writer, cache, refill } = await setup(services, { publishService: `${NS}/lb` });
    api!.registry.update(
      networking('Service'),
      NS,
      'lb',
      {
        ...api!.registry.get(networking('Service'), NS, 'lb'),
        status: { loadBalancer: { ingress: [{ ip: '192.0.2.1' }, { hostname: 'elb.example.com' }] } },
      },
      { subresource: 'status' },
    );
    await refill();
    expect(await writer.addresses()).toEqual([
      { ip: '192.0.2.1' },
      { ip: '198.51.100.2' },
      { hostname: 'elb.example.com' },
    ]);
    const other = (ref: string) =>
      new StatusWriter({
        ...(writer as unknown as { options: object }).options,
        source: { publishStatusAddress: [], publishService: ref, pod: NO_POD, watchNamespace: null },
      } as never);
    expect(await other(`${NS}/cip`).addresses()).toEqual([{ ip: '10.96.0.10' }]);
    expect(await other(`${NS}/np`).addresses()).toEqual([{ ip: '198.51.100.3' }]);
    expect(await other(`${NS}/ext`).addresses()).toEqual([{ hostname: 'edge.example.net' }]);
    await expect(other(`${NS}/missing`).addresses()).rejects.toThrow(/no such Service/);
    expect(cache.list('Service').length).toBeGreaterThan(3);
  });

  it('without either flag: the nodes of the ready replicas, ExternalIP before InternalIP', async () => {
    const seed = [
      node('n1', { InternalIP: '10.1.0.1', ExternalIP: '203.0.113.1' }),
      node('n2', { InternalIP: '10.1.0.2' }),
      node('n3', { InternalIP: '10.1.0.3' }),
      controllerSlice([
        { name: 'ctrl-a', node: 'n1' },
        { name: 'ctrl-b', node: 'n2' },
        { name: 'ctrl-c', node: 'n3', ready: false },
      ]),
    ];
    const { writer } = await setup(seed, { pod: { name: 'ctrl-a', namespace: NS, nodeName: 'n1' } });
    expect(await writer.addresses()).toEqual([{ ip: '10.1.0.2' }, { ip: '203.0.113.1' }]);
    const alone = await setup([node('n9', { InternalIP: '10.1.0.9' })], {
      pod: { name: null, namespace: null, nodeName: 'n9' },
    });
    expect(await alone.writer.addresses()).toEqual([{ ip: '10.1.0.9' }]);
  });
});

describe('StatusWriter.publish', () => {
  it(
    'writes each served Ingress once, then nothing while ' + 'nothing changes; does nothing before the first sync',
    async () => {
      const before = await setup(two, { publishStatusAddress: ['203.0.113.9'] }, null);
      expect(await before.writer.publish(before.served)).toEqual({ written: 0, unchanged: 0 });
      await api!.close();

      const { writer, served, refill, writes, status } = await setup(two, { publishStatusAddress: ['203.0.113.9'] });
      expect(await writer.publish(served)).toEqual({ written: 2, unchanged: 0 });
      expect(status('a')).toEqual([{ ip: '203.0.113.9' }]);
      await refill();
      expect(await writer.publish(served)).toEqual({ written: 0, unchanged: 2 });
      expect(writes).toEqual(['200 a/status', '200 b/status']);
    },
  );

  it('after a publish, looks again only at the Ingresses that changed, and puts back a status someone else changed', async () => {
    const { writer, served, refill, writes, status } = await setup(two, { publishStatusAddress: ['203.0.113.9'] });
    expect(await writer.publish(served)).toEqual({ written: 2, unchanged: 0 });
    await refill();
    expect(await writer.publish(served)).toEqual({ written: 0, unchanged: 2 });
    // Another writer sets a's status; the watch brings the new object; b is the same object and is not looked at.
    const kc = new KubeConfig();
    kc.loadFromString(api!.kubeconfigText);
    const a = api!.registry.get(INGRESSES, 'default', 'a') as V1Ingress;
    await kc.makeApiClient(NetworkingV1Api).replaceNamespacedIngressStatus({
      name: 'a',
      namespace: 'default',
      body: { ...a, status: { loadBalancer: { ingress: [{ ip: '198.51.100.1' }] } } },
    });
    await refill();
    expect(await writer.publish(served)).toEqual({ written: 1, unchanged: 0 });
    expect(status('a')).toEqual([{ ip: '203.0.113.9' }]);
    expect(writes).toEqual(['200 a/status', '200 b/status', '200 a/status', '200 a/status']);
  });

  it('retries a 409 from the newer object the watch brings', async () => {
    const { writer, served, cache, objects, writes, status } = await setup(
      two,
      { publishStatusAddress: ['203.0.113.9'] },
      ['default/a'],
    );
    // Someone else changes the Ingress after the cache saw it: the write's resourceVersion is stale.
    const fresh = await objects.patch(
      {
        apiVersion: 'networking.k8s.io/v1',
        kind: 'Ingress',
        metadata: { name: 'a', namespace: 'default', labels: { touched: 'yes' } },
      },
      undefined,
      undefined,
      undefined,
      undefined,
      'application/merge-patch+json',
    );
    setTimeout(() => cache.upsert('Ingress', { ...fresh, apiVersion: 'networking.k8s.io/v1', kind: 'Ingress' }), 200);
    expect(await writer.publish(served)).toEqual({ written: 1, unchanged: 0 });
    expect(writes).toEqual(['409 a/status', '200 a/status']);
    expect(status('a')).toEqual([{ ip: '203.0.113.9' }]);
  });

  it('clears the addresses of an Ingress it no longer serves, but only if they are ours', async () => {
    const seed = [...two, ingress('other', { 'o.example.com': [{ path: '/', service: 'web' }] })];
    const { writer, served, refill, status } = await setup(seed, { publishStatusAddress: ['203.0.113.9'] }, [
      'default/a',
      'default/b',
    ]);
    await writer.publish(served);
    api!.registry.update(
      INGRESSES,
      'default',
      'other',
      {
        ...api!.registry.get(INGRESSES, 'default', 'other'),
        status: { loadBalancer: { ingress: [{ ip: '198.51.100.77' }] } },
      },
      { subresource: 'status' },
    );
    await refill();
    expect(await writer.publish(new Set(['default/a']))).toEqual({ written: 1, unchanged: 1 });
    expect(status('b')).toEqual([]);
    expect(status('other')).toEqual([{ ip: '198.51.100.77' }]);
  });

  it('when Ingresses come or go from the served ones, looks only at them (the served list knows its step)', async () => {
    const host = (name: string) => ({ [`${name}.example.com`]: [{ path: '/', service: 'web' }] });
    const four = [...two, ingress('c', host('c')), ingress('d', host('d'))];
    const { writer, refill, status } = await setup(four, { publishStatusAddress: ['203.0.113.9'] });
    const ab = nextServedList([], new Set(['default/a', 'default/b']), new Set());
    expect(await writer.publish(servedLookup(ab))).toEqual({ written: 2, unchanged: 0 });
    await refill();
    // the written statuses came back as new objects: looked at once more
    expect(await writer.publish(servedLookup(ab))).toEqual({ written: 0, unchanged: 2 });
    // c comes, a goes: only they are looked at (a walk of every Ingress would count b unchanged)
    const bc = nextServedList(ab, new Set(['default/c']), new Set(['default/a']));
    expect(await writer.publish(servedLookup(bc))).toEqual({ written: 2, unchanged: 0 });
    expect([status('a'), status('b'), status('c'), status('d')]).toEqual([
      [],
      [{ ip: '203.0.113.9' }],
      [{ ip: '203.0.113.9' }],
      [],
    ]);
    await refill();
    // two steps on, one of them never published (the status actor keeps the latest sync only): every Ingress looked at,
    // so b too (the step alone would name c and d, and the watch's new objects a and c)
    const b = nextServedList(bc, new Set(), new Set(['default/c']));
    const bd = nextServedList(b, new Set(['default/d']), new Set());
    expect(await writer.publish(servedLookup(bd))).toEqual({ written: 2, unchanged: 1 });
    expect([status('a'), status('b'), status('c'), status('d')]).toEqual([
      [],
      [{ ip: '203.0.113.9' }],
      [],
      [{ ip: '203.0.113.9' }],
    ]);
  });

  it('servedLookup: a binary search of a sorted list, a Set of any other', () => {
    const sorted = servedLookup(['default/a', 'default/c', 'team/b']);
    expect(['default/a', 'default/b', 'default/c', 'team/b', 'team/c', ''].map((k) => sorted.has(k))).toEqual([
      true,
      false,
      true,
      true,
      false,
      false,
    ]);
    const unsorted = servedLookup(['team/b', 'default/a']);
    expect(unsorted).toBeInstanceOf(Set);
    expect(['default/a', 'team/b', 'default/b'].map((k) => unsorted.has(k))).toEqual([true, true, false]);
  });

  it('clear() empties the served Ingresses (the last replica’s shutdown)', async () => {
    const { writer, served, refill, status } = await setup(two, { publishStatusAddress: ['203.0.113.9'] });
    await writer.publish(served);
    await refill();
    expect(await writer.clear(served!)).toBe(2);
    expect(status('a')).toEqual([]);
  });
});

describe('StatusWriter.checkPeers', () => {
  const pod = { name: 'ctrl-a', namespace: NS, nodeName: 'n1' };
  const peers = async (pods: Parameters<typeof controllerSlice>[0], source: Partial<AddressSource>) =>
    (await setup([controllerSlice(pods)], source)).writer.checkPeers();

  it('another ready replica in the controller Service’s EndpointSlices will take over', async () => {
    expect(
      (
        await peers(
          [
            { name: 'ctrl-a', node: 'n1' },
            { name: 'ctrl-b', node: 'n2' },
          ],
          { pod },
        )
      ).othersWillTakeOver,
    ).toBe(true);
    expect(
      (
        await peers(
          [
            { name: 'ctrl-a', node: 'n1' },
            { name: 'ctrl-b', node: 'n2' },
          ],
          { pod, publishService: `${NS}/ingress-actors` },
        )
      ).othersWillTakeOver,
    ).toBe(true);
  });

  it('not when the others are not ready or terminating, or there are none, or nothing is known', async () => {
    const notReady = [
      { name: 'ctrl-a', node: 'n1' },
      { name: 'ctrl-b', node: 'n2', ready: false },
      { name: 'ctrl-c', node: 'n3', terminating: true },
    ];
    expect(await peers(notReady, { pod })).toEqual({
      othersWillTakeOver: false,
      reason: '0 other ready replica endpoint(s)',
    });
    expect((await peers([{ name: 'ctrl-a', node: 'n1' }], { pod })).othersWillTakeOver).toBe(false);
    expect((await peers([{ name: 'ctrl-b', node: 'n1' }], { pod: NO_POD })).reason).toMatch(/^no peer information/);
  });

  it('serviceWithEndpoints slices of applications are not mistaken for peers', async () => {
    const { writer } = await setup(
      [...serviceWithEndpoints('web', [{ port: 8080 }], NS), controllerSlice([{ name: 'ctrl-a', node: 'n1' }])],
      { pod },
    );
    expect(writer.checkPeers().othersWillTakeOver).toBe(false);
  });
});
