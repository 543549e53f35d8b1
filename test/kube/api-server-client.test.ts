/**
 * The test API server driven by @kubernetes/client-node: lists and selectors, writes and their
 * conflicts, the three patch types, /status, admission, watches with bookmarks and 410, and an
 * informer through watch drops and compaction. Each case asserts on the server's answers.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CoreV1Api,
  KubeConfig,
  KubernetesObjectApi,
  makeInformer,
  NetworkingV1Api,
  PatchStrategy,
  setHeaderOptions,
  Watch,
  type KubernetesObject,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RESOURCES } from '../../src/dev/api-server/resources.js';
import { startApiServer, type ApiServer } from '../../src/dev/api-server/server.js';
import { failure, testIngress as ingress, waitFor } from '../support/kube-api.js';

const INGRESSES = RESOURCES.find((r) => r.kind === 'Ingress')!;

let server: ApiServer;
let dir: string;
let kc: KubeConfig;
let core: CoreV1Api;
let net: NetworkingV1Api;

beforeAll(async () => {
  server = await startApiServer({ port: 0 });
  // Loaded from a file, as the controller's --kubeconfig is.
  dir = await mkdtemp(join(tmpdir(), 'api-server-client-'));
  await server.writeKubeconfig(join(dir, 'kubeconfig'));
  kc = new KubeConfig();
  kc.loadFromFile(join(dir, 'kubeconfig'));
  core = kc.makeApiClient(CoreV1Api);
  net = kc.makeApiClient(NetworkingV1Api);
  for (const name of ['client-test', 'informer-test']) await core.createNamespace({ body: { metadata: { name } } });
});

afterAll(async () => {
  await server?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('@kubernetes/client-node against the API server', () => {
  it('lists with a resourceVersion and label and field selectors', async () => {
    for (const [name, tier] of [
      ['a', 'front'],
      ['b', 'back'],
      ['c', undefined],
    ] as const) {
      await core.createNamespacedConfigMap({
        namespace: 'client-test',
        body: { metadata: { name, labels: tier ? { tier } : {} }, data: { name } },
      });
    }
    const all = await core.listNamespacedConfigMap({ namespace: 'client-test' });
    expect(all.items.map((i) => i.metadata?.name)).toEqual(['a', 'b', 'c']);
    expect(all.metadata?.resourceVersion).toBe(String(server.store.resourceVersion));
    const names = async (options: { labelSelector?: string; fieldSelector?: string }) =>
      (await core.listNamespacedConfigMap({ namespace: 'client-test', ...options })).items.map((i) => i.metadata?.name);
    expect(await names({ labelSelector: 'tier=front' })).toEqual(['a']);
    expect(await names({ labelSelector: 'tier==back' })).toEqual(['b']);
    expect(await names({ labelSelector: 'tier!=front' })).toEqual(['b', 'c']);
    expect(await names({ labelSelector: 'tier in (front, back)' })).toEqual(['a', 'b']);
    expect(await names({ labelSelector: 'tier notin (front)' })).toEqual(['b', 'c']);
    expect(await names({ labelSelector: 'tier' })).toEqual(['a', 'b']);
    expect(await names({ labelSelector: '!tier' })).toEqual(['c']);
    expect(await names({ fieldSelector: 'metadata.name=b' })).toEqual(['b']);
    expect(await names({ fieldSelector: 'metadata.name!=b,metadata.namespace=client-test' })).toEqual(['a', 'c']);
    const everywhere = await core.listConfigMapForAllNamespaces({ fieldSelector: 'metadata.namespace=client-test' });
    expect(everywhere.items).toHaveLength(3);
    expect(
      await failure(core.listNamespacedConfigMap({ namespace: 'client-test', fieldSelector: 'data.name=a' })),
    ).toMatchObject({ code: 400, reason: 'BadRequest' });
    // Paging: limit and continue walk the list without repeating or skipping.
    const page1 = await core.listNamespacedConfigMap({ namespace: 'client-test', limit: 2 });
    expect(page1.items.map((i) => i.metadata?.name)).toEqual(['a', 'b']);
    expect(page1.metadata?.remainingItemCount).toBe(1);
    const page2 = await core.listNamespacedConfigMap({
      namespace: 'client-test',
      limit: 2,
      _continue: page1.metadata!._continue!,
    });
    expect(page2.items.map((i) => i.metadata?.name)).toEqual(['c']);
    expect(page2.metadata?._continue).toBeUndefined();
  });

  it('creates, refuses duplicates and stale writes, patches three ways, and answers 404 with a Status', async () => {
    const created = await net.createNamespacedIngress({
      namespace: 'client-test',
      body: ingress('shop', 'client-test', 'shop.example.com'),
    });
    expect(created.metadata?.uid).toBeTruthy();
    expect(created.metadata?.creationTimestamp).toBeInstanceOf(Date);
    expect(created.metadata?.generation).toBe(1);
    expect(
      await failure(
        net.createNamespacedIngress({
          namespace: 'client-test',
          body: ingress('shop', 'client-test', 'x.example.com'),
        }),
      ),
    ).toEqual({
      code: 409,
      reason: 'AlreadyExists',
      kind: 'Status',
    });

    const fresh = structuredClone(created);
    fresh.spec!.rules![0]!.host = 'shop2.example.com';
    const replaced = await net.replaceNamespacedIngress({ name: 'shop', namespace: 'client-test', body: fresh });
    expect(Number(replaced.metadata?.resourceVersion)).toBeGreaterThan(Number(created.metadata?.resourceVersion));
    expect(replaced.metadata?.generation).toBe(2);
    // `created` still carries the old resourceVersion: optimistic concurrency says no.
    expect(
      await failure(net.replaceNamespacedIngress({ name: 'shop', namespace: 'client-test', body: created })),
    ).toEqual({ code: 409, reason: 'Conflict', kind: 'Status' });

    const merged = await net.patchNamespacedIngress(
      { name: 'shop', namespace: 'client-test', body: { metadata: { labels: { team: 'a' } } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    expect(merged.metadata?.labels).toEqual({ team: 'a' });
    expect(merged.spec?.rules?.[0]?.host).toBe('shop2.example.com');
    expect(merged.metadata?.generation).toBe(2);
    const jsonPatched = await net.patchNamespacedIngress(
      {
        name: 'shop',
        namespace: 'client-test',
        body: [{ op: 'replace', path: '/spec/rules/0/host', value: 'shop3.example.com' }],
      },
      setHeaderOptions('Content-Type', PatchStrategy.JsonPatch),
    );
    expect(jsonPatched.spec?.rules?.[0]?.host).toBe('shop3.example.com');
    expect(jsonPatched.metadata?.generation).toBe(3);
    const stale = await failure(
      net.patchNamespacedIngress(
        {
          name: 'shop',
          namespace: 'client-test',
          body: { metadata: { resourceVersion: created.metadata!.resourceVersion!, labels: { team: 'b' } } },
        },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      ),
    );
    expect(stale).toMatchObject({ code: 409, reason: 'Conflict' });

    expect(await failure(net.readNamespacedIngress({ name: 'nope', namespace: 'client-test' }))).toEqual({
      code: 404,
      reason: 'NotFound',
      kind: 'Status',
    });
    expect(
      await failure(
        net.createNamespacedIngress({
          namespace: 'no-such-namespace',
          body: ingress('x', 'no-such-namespace', 'x.example.com'),
        }),
      ),
    ).toMatchObject({
      code: 404,
      reason: 'NotFound',
    });
  });

  it('keeps spec and status apart through the /status subresource', async () => {
    const base = await net.createNamespacedIngress({
      namespace: 'client-test',
      body: ingress('status', 'client-test', 'status.example.com'),
    });
    const withStatus = { ...base, status: { loadBalancer: { ingress: [{ ip: '10.0.0.7' }] } } };
    withStatus.spec = { ...base.spec, rules: [] };
    const written = await net.replaceNamespacedIngressStatus({
      name: 'status',
      namespace: 'client-test',
      body: withStatus,
    });
    expect(written.status?.loadBalancer?.ingress).toEqual([{ ip: '10.0.0.7' }]);
    expect(written.spec?.rules?.[0]?.host).toBe('status.example.com');
    expect(written.metadata?.generation).toBe(1);
    const main = await net.replaceNamespacedIngress({
      name: 'status',
      namespace: 'client-test',
      body: { ...written, status: { loadBalancer: {} } },
    });
    expect(main.status?.loadBalancer?.ingress).toEqual([{ ip: '10.0.0.7' }]);
  });

  it('folds Secret stringData into base64 data', async () => {
    const secret = await core.createNamespacedSecret({
      namespace: 'client-test',
      body: {
        metadata: { name: 'creds' },
        stringData: { password: 'hunter2' },
        data: { user: Buffer.from('me').toString('base64') },
      },
    });
    expect(secret.data).toEqual({
      user: Buffer.from('me').toString('base64'),
      password: Buffer.from('hunter2').toString('base64'),
    });
    expect(secret.stringData).toBeUndefined();
    expect(secret.type).toBe('Opaque');
  });

  it('gives a classless Ingress the default IngressClass', async () => {
    await net.createIngressClass({
      body: {
        metadata: { name: 'the-default', annotations: { 'ingressclass.kubernetes.io/is-default-class': 'true' } },
        spec: { controller: 'k8s.io/ingress-nginx' },
      },
    });
    const body = ingress('classless', 'client-test', 'classless.example.com');
    delete body.spec!.ingressClassName;
    const created = await net.createNamespacedIngress({ namespace: 'client-test', body });
    expect(created.spec?.ingressClassName).toBe('the-default');
    await net.deleteIngressClass({ name: 'the-default' });
  });

  it('sends bookmarks when allowed, and turns label changes into ADDED and DELETED for a selecting watch', async () => {
    await core.createNamespacedConfigMap({
      namespace: 'client-test',
      body: { metadata: { name: 'sel', labels: { pick: 'no' } } },
    });
    server.watchSettings.bookmarkIntervalMs = 100;
    const events: { type: string; rv?: string; pick?: string }[] = [];
    const controller = await new Watch(kc).watch(
      '/api/v1/namespaces/client-test/configmaps',
      { labelSelector: 'pick=yes', allowWatchBookmarks: true, resourceVersion: String(server.store.resourceVersion) },
      (type, object: { metadata?: { resourceVersion?: string; labels?: Record<string, string> } }) =>
        events.push({ type, rv: object.metadata?.resourceVersion, pick: object.metadata?.labels?.pick }),
      () => {},
    );
    try {
      const label = (pick: string) =>
        core.patchNamespacedConfigMap(
          { name: 'sel', namespace: 'client-test', body: { metadata: { labels: { pick } } } },
          setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
        );
      await waitFor('a bookmark', () => events.some((e) => e.type === 'BOOKMARK'));
      await label('yes');
      await waitFor('ADDED', () => events.some((e) => e.type === 'ADDED'));
      await label('no');
      await waitFor('DELETED', () => events.some((e) => e.type === 'DELETED'));
    } finally {
      controller.abort();
      server.watchSettings.bookmarkIntervalMs = 60_000;
    }
    const changes = events.filter((e) => e.type !== 'BOOKMARK');
    expect(changes.map((e) => `${e.type} ${e.pick}`)).toEqual(['ADDED yes', 'DELETED no']);
    expect(events.find((e) => e.type === 'BOOKMARK')!.rv).toMatch(/^\d+$/);
  });

  it('resumes a watch from a resourceVersion, and answers 410 once that version is compacted', async () => {
    const start = String(server.store.resourceVersion);
    await core.createNamespacedConfigMap({ namespace: 'client-test', body: { metadata: { name: 'w1' } } });
    await core.deleteNamespacedConfigMap({ name: 'w1', namespace: 'client-test' });
    const events: { type: string; name?: string; code?: number }[] = [];
    const done = new Promise<unknown>((resolve) => {
      void new Watch(kc).watch(
        '/api/v1/namespaces/client-test/configmaps',
        { resourceVersion: start, timeoutSeconds: 1 },
        (type, object: { metadata?: { name?: string }; code?: number }) =>
          events.push({ type, name: object.metadata?.name, code: object.code }),
        resolve,
      );
    });
    await done;
    expect(events).toEqual([
      { type: 'ADDED', name: 'w1', code: undefined },
      { type: 'DELETED', name: 'w1', code: undefined },
    ]);

    server.compact();
    const expired: { type: string; code?: number }[] = [];
    await new Promise<unknown>((resolve) => {
      void new Watch(kc).watch(
        '/api/v1/namespaces/client-test/configmaps',
        { resourceVersion: start, timeoutSeconds: 5 },
        (type, object: { code?: number }) => expired.push({ type, code: object.code }),
        resolve,
      );
    });
    expect(expired).toEqual([{ type: 'ERROR', code: 410 }]);
    // A list that insists on the exact old version is refused with an HTTP 410.
    expect(
      await failure(
        core.listNamespacedConfigMap({
          namespace: 'client-test',
          resourceVersion: start,
          resourceVersionMatch: 'Exact',
        }),
      ),
    ).toMatchObject({ code: 410, reason: 'Expired' });
  });
});

describe('KubernetesObjectApi', () => {
  it('serves KubernetesObjectApi, which finds resources through discovery', async () => {
    const objects = kc.makeApiClient(KubernetesObjectApi);
    const created = await objects.create({
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: 'leader', namespace: 'default' },
      spec: { holderIdentity: 'me' },
    } as KubernetesObject);
    expect(created.metadata?.resourceVersion).toBeTruthy();
    const listed = await objects.list('coordination.k8s.io/v1', 'Lease', 'default');
    expect(listed.items.map((i) => i.metadata?.name)).toContain('leader');
    await objects.delete({
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: 'leader', namespace: 'default' },
    });
    expect(
      await failure(
        objects.read({
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: { name: 'leader', namespace: 'default' },
        }),
      ),
    ).toMatchObject({ code: 404 });
  });
});

describe('a client-node informer over ingresses', () => {
  it('sees add, update and delete, keeps going after dropped watches, and relists after a 410', async () => {
    const namespace = 'informer-test';
    let lists = 0;
    const informer = makeInformer(kc, `/apis/networking.k8s.io/v1/namespaces/${namespace}/ingresses`, () => {
      lists++;
      return net.listNamespacedIngress({ namespace });
    });
    const seen: string[] = [];
    const errors: unknown[] = [];
    informer.on('add', (o) => seen.push(`add ${o.metadata?.name} ${o.spec?.rules?.[0]?.host}`));
    informer.on('update', (o) => seen.push(`update ${o.metadata?.name} ${o.spec?.rules?.[0]?.host}`));
    informer.on('delete', (o) => seen.push(`delete ${o.metadata?.name}`));
    informer.on('error', (e) => errors.push(e));
    await net.createNamespacedIngress({ namespace, body: ingress('before', namespace, 'before.example.com') });
    await informer.start();
    try {
      await waitFor('the initial list', () => seen.includes('add before before.example.com'));
      await waitFor('the watch', () => server.openWatches() === 1);

      await net.createNamespacedIngress({ namespace, body: ingress('web', namespace, 'a.example.com') });
      await waitFor('add', () => seen.includes('add web a.example.com'));
      await net.patchNamespacedIngress(
        { name: 'web', namespace, body: [{ op: 'replace', path: '/spec/rules/0/host', value: 'b.example.com' }] },
        setHeaderOptions('Content-Type', PatchStrategy.JsonPatch),
      );
      await waitFor('update', () => seen.includes('update web b.example.com'));
      await net.deleteNamespacedIngress({ name: 'web', namespace });
      await waitFor('delete', () => seen.includes('delete web'));
      expect(lists).toBe(1);

      // A dropped watch resumes from its resourceVersion: no relist, the next change still arrives.
      expect(server.dropWatches()).toBe(1);
      await waitFor('the watch to reconnect', () => server.openWatches() === 1);
      await net.createNamespacedIngress({ namespace, body: ingress('after-drop', namespace, 'c.example.com') });
      await waitFor('add after the drop', () => seen.includes('add after-drop c.example.com'));
      expect(lists).toBe(1);

      // Drop, change while it is away, compact: the resumed watch gets ERROR 410 and the informer relists.
      const before = seen.length;
      server.dropWatches();
      const current = server.registry.get(INGRESSES, namespace, 'after-drop');
      (current.spec as { rules: { host: string }[] }).rules[0]!.host = 'd.example.com';
      server.registry.update(INGRESSES, namespace, 'after-drop', current);
      server.registry.delete(INGRESSES, namespace, 'before');
      server.compact();
      await waitFor('the relist', () => lists === 2, 10_000);
      await waitFor(
        'the changes made while away',
        () => seen.includes('update after-drop d.example.com') && seen.includes('delete before'),
      );
      expect(seen.slice(before).sort()).toEqual(['delete before', 'update after-drop d.example.com']);

      // The same through a plain HTTP 410 on the watch request, the other way client-node handles it.
      server.watchSettings.goneAs = 'http';
      await waitFor('the watch after the relist', () => server.openWatches() === 1);
      server.dropWatches();
      server.registry.delete(INGRESSES, namespace, 'after-drop');
      server.compact();
      await waitFor('the second relist', () => lists === 3, 10_000);
      await waitFor('the delete made while away', () => seen.includes('delete after-drop'));
      expect(errors).toEqual([]);
    } finally {
      server.watchSettings.goneAs = 'event';
      await informer.stop();
    }
  });
});
