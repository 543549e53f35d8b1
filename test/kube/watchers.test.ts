/**
 * The watcher actors against the test API server through real client-node informers: initial
 * sync, add/update/delete, dropped watches, 410 Gone, an API server that goes away and comes
 * back, and (fast-check) random changes and faults after which every cache equals the server.
 */
import { KubeConfig, KubernetesObjectApi, type KubernetesObject } from '@kubernetes/client-node';
import fc from 'fast-check';
import { pino } from 'pino';
import { createActor, type Actor } from 'xstate';
import { afterEach, describe, expect, it } from 'vitest';
import { resourceWatcherMachine } from '../../machines/resourceWatcher.machine.js';
import { watcherActors, watcherLogActions, type WatchScope } from '../../src/actors/watcher.js';
import { startApiServer, type ApiServer, type ApiServerOptions } from '../../src/dev/api-server/server.js';
import { ClusterCache } from '../../src/kube/cache.js';
import type { WatchedKind } from '../../src/kube/kinds.js';
import { GATEWAY_RESOURCES } from '../support/gateway-kinds.js';
import { ingress, serviceWithEndpoints } from '../support/manifests.js';
import { waitFor } from '../support/cluster.js';

const open: { api: ApiServer; watchers: Actor<typeof resourceWatcherMachine>[] }[] = [];
afterEach(async () => {
  for (const { api, watchers } of open.splice(0)) {
    for (const w of watchers) w.stop();
    await api.close();
  }
});

/** LogLine is one JSON line the watchers' logger wrote. */
interface LogLine {
  level: number;
  msg: string;
  kind?: string;
  error?: string;
  retryInMs?: number;
  idleMs?: number;
  staleSince?: string;
  recheckInMs?: number;
}

interface SetupOptions {
  readonly scope?: Partial<WatchScope>;
  readonly api?: ApiServerOptions;
  /** extra watcher input: the informer's timeouts */
  readonly timeouts?: { requestTimeoutMs?: number; watchIdleTimeoutMs?: number };
}

async function setup(seed: object[], kinds: WatchedKind[], scopeOrOptions: Partial<WatchScope> | SetupOptions = {}) {
  const options: SetupOptions =
    'scope' in scopeOrOptions || 'api' in scopeOrOptions || 'timeouts' in scopeOrOptions
      ? scopeOrOptions
      : { scope: scopeOrOptions as Partial<WatchScope> };
  const scope = options.scope ?? {};
  const api = await startApiServer({ ...options.api, seed: seed as never });
  const logs: LogLine[] = [];
  const log = pino({ level: 'info' }, { write: (line: string) => void logs.push(JSON.parse(line) as LogLine) });
  const kc = new KubeConfig();
  kc.loadFromString(api.kubeconfigText);
  const client = kc.makeApiClient(KubernetesObjectApi);
  const cache = new ClusterCache();
  const reports: string[] = [];
  const logic = resourceWatcherMachine.provide({
    actors: watcherActors(kc, cache, { namespace: null, configMap: null, ...scope }, log),
    actions: {
      reportSynced: (_, { kind }) => void reports.push(`synced ${kind}`),
      reportChanged: (_, { kind, key }) => void reports.push(`changed ${kind} ${key}`),
      ...watcherLogActions(log),
    },
  });
  const watchers = kinds.map((kind) =>
    createActor(logic, {
      input: { kind, baseBackoffMs: 50, maxBackoffMs: 400, unservedRecheckMs: 100, ...options.timeouts },
    }).start(),
  );
  open.push({ api, watchers });
  await waitFor('every watcher synced', () => kinds.every((k) => reports.includes(`synced ${k}`)), 10_000);
  const serverState = async (apiVersion: string, kind: WatchedKind) =>
    (await client.list(apiVersion, kind)).items
      .map((o) => `${o.metadata?.namespace}/${o.metadata?.name}@${o.metadata?.resourceVersion}`)
      .sort();
  const cacheState = (kind: WatchedKind) =>
    cache
      .list(kind)
      .map((o) => `${o.metadata?.namespace}/${o.metadata?.name}@${o.metadata?.resourceVersion}`)
      .sort();
  const ingressesAgree = async () =>
    JSON.stringify(await serverState('networking.k8s.io/v1', 'Ingress')) === JSON.stringify(cacheState('Ingress'));
  return { api, client, cache, reports, watchers, ingressesAgree, cacheState, logs };
}

const ing = (name: string, host = `${name}.example.com`, namespace = 'default') =>
  ({ ...ingress(name, { [host]: [{ path: '/', service: 'web' }] }, { namespace }) }) as KubernetesObject;

describe('watchers', () => {
  it('sync the first list, then follow adds, updates and deletes', async () => {
    const w = await setup(
      [ing('a'), ing('b'), ...serviceWithEndpoints('web', [{ port: 9000 }])],
      ['Ingress', 'Service', 'EndpointSlice'],
    );
    expect(
      w.cache
        .list('Ingress')
        .map((i) => i.metadata?.name)
        .sort(),
    ).toEqual(['a', 'b']);
    expect(w.cache.list('EndpointSlice')).toHaveLength(1);
    await w.client.create(ing('c'));
    await w.client.patch(
      { ...ing('a'), spec: { rules: [{ host: 'moved.example.com' }] } } as KubernetesObject,
      undefined,
      undefined,
      undefined,
      undefined,
      'application/merge-patch+json' as never,
    );
    await w.client.delete(ing('b'));
    await waitFor('the cache to follow', w.ingressesAgree);
    expect(w.reports).toEqual(
      expect.arrayContaining(['changed Ingress default/c', 'changed Ingress default/a', 'changed Ingress default/b']),
    );
    expect(w.watchers[0]!.getSnapshot().value).toEqual({ running: 'watching' });
  });

  it('resume after every watch is dropped, without a relist', async () => {
    const w = await setup([ing('a')], ['Ingress']);
    for (const abrupt of [false, true]) {
      w.api.dropWatches({ abrupt });
      await w.client.create(ing(`after-${abrupt}`));
      await waitFor(
        `the change after a ${abrupt ? 'cut' : 'closed'} watch`,
        () => w.reports.includes(`changed Ingress default/after-${abrupt}`),
        10_000,
      );
    }
    expect(await w.ingressesAgree()).toBe(true);
    expect(w.reports.filter((r) => r === 'changed Ingress default/a')).toHaveLength(1); // seen once: no relist
  });

  it('relist on 410 Gone, dropping what was deleted meanwhile', async () => {
    const w = await setup([ing('a'), ing('b')], ['Ingress']);
    w.api.dropWatches();
    await w.client.delete(ing('b'));
    await w.client.create(ing('c'));
    w.api.compact();
    await waitFor('the relist', w.ingressesAgree, 10_000);
    expect(
      w.cache
        .list('Ingress')
        .map((i) => i.metadata?.name)
        .sort(),
    ).toEqual(['a', 'c']);
  });

  it('back off while the API server is down and catch up when it returns', async () => {
    const w = await setup([ing('a')], ['Ingress']);
    await w.api.pause();
    await waitFor('backoff', () => w.watchers[0]!.getSnapshot().value === 'backoff', 10_000);
    w.api.registry.apply(ing('while-down') as never); // written while no client can see it
    await new Promise((r) => setTimeout(r, 600));
    expect(w.watchers[0]!.getSnapshot().context.failures).toBeGreaterThanOrEqual(2);
    await w.api.resume();
    await waitFor(
      'watching again',
      () => JSON.stringify(w.watchers[0]!.getSnapshot().value) === '{"running":"watching"}',
      10_000,
    );
    await waitFor('the missed change', w.ingressesAgree, 10_000);
    expect(
      w.cache
        .list('Ingress')
        .map((i) => i.metadata?.name)
        .sort(),
    ).toEqual(['a', 'while-down']);
  });

  it(
    'honour --watch-namespace; every Secret change counts until secrets.relevant says which do, then only theirs ' +
      '(issue 15)',
    async () => {
      const secret = (name: string, namespace: string) => ({
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name, namespace },
        stringData: { x: 'y' },
      });
      const change = (name: string, x: string) =>
        w.client.patch(
          { ...secret(name, 'team-a'), stringData: { x } } as KubernetesObject,
          undefined,
          undefined,
          undefined,
          undefined,
          'application/merge-patch+json' as never,
        );
      const w = await setup(
        [
          { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'team-a' } },
          ing('mine', 'mine.example.com', 'team-a'),
          ing('theirs'),
          secret('cert', 'team-a'),
        ],
        ['Ingress', 'Secret'],
        { namespace: 'team-a' },
      );
      expect(w.cacheState('Ingress').map((k) => k.split('@')[0])).toEqual(['team-a/mine']);
      // Before the first build said what it read, every Secret counts.
      await w.client.create(secret('unrelated', 'team-a') as KubernetesObject);
      await waitFor('the new Secret reported', () => w.reports.includes('changed Secret team-a/unrelated'));
      const secrets = w.watchers[1]!;
      secrets.send({ type: 'secrets.relevant', keys: ['team-a/cert'], namespaces: [] });
      const changed = await change('unrelated', 'changed');
      await change('cert', 'changed');
      await waitFor(
        'the read Secret reported',
        () => w.reports.filter((r) => r === 'changed Secret team-a/cert').length === 2,
      );
      const cached = () =>
        w.cache.list('Secret').find((s) => s.metadata?.name === 'unrelated')?.metadata?.resourceVersion;
      await waitFor('the other Secret cached', () => cached() === changed.metadata?.resourceVersion);
      // only its creation, before the set came
      expect(w.reports.filter((r) => r === 'changed Secret team-a/unrelated')).toHaveLength(1);
      // A namespace named whole (an Ingress of it held out of the build) counts every Secret in it.
      secrets.send({ type: 'secrets.relevant', keys: [], namespaces: ['team-a'] });
      await change('unrelated', 'again');
      await waitFor(
        'a Secret of the named namespace reported',
        () => w.reports.filter((r) => r === 'changed Secret team-a/unrelated').length === 2,
      );
    },
  );

  it('finding 7: a hanging API server is noticed within the timeout and logged', async () => {
    const w = await setup([ing('a')], ['Ingress'], { timeouts: { requestTimeoutMs: 300, watchIdleTimeoutMs: 5_000 } });
    const watcher = w.watchers[0]!;
    // Every request from now on is read and never answered; the open watch is closed, so the
    // informer's reopened watch (and, after it fails, its relist) hang.
    w.api.failRequests({ hang: true });
    const hungAt = Date.now();
    w.api.dropWatches();
    await waitFor('the watch failure logged', () => w.logs.some((l) => l.level === 40 && l.kind === 'Ingress'), 3_000);
    const warn = w.logs.find((l) => l.level === 40)!;
    expect(Date.now() - hungAt).toBeLessThan(2_000); // noticed within the timeout (300 ms), not minutes later
    expect(warn).toMatchObject({
      msg: 'watch failed; serving what was last seen of this kind until it lists again',
      kind: 'Ingress',
    });
    expect(warn.error).toMatch(/did not answer within 300 ms/);
    expect(warn.retryInMs).toBeGreaterThanOrEqual(25);
    expect(Date.parse(warn.staleSince!)).toBeGreaterThanOrEqual(hungAt - 1_000);
    expect(watcher.getSnapshot().context.staleSince).toBe(Date.parse(warn.staleSince!));
    // The relist after the backoff hangs too: it is cut at the timeout and logged as well.
    await waitFor(
      'the hanging list logged',
      () =>
        w.logs.some(
          (l) => l.level === 40 && /^list Ingress: the API server did not answer within 300 ms/.test(l.error ?? ''),
        ),
      3_000,
    );

    w.api.registry.apply(ing('while-hung') as never);
    w.api.failRequests(null);
    await waitFor(
      'watching again',
      () => JSON.stringify(watcher.getSnapshot().value) === '{"running":"watching"}',
      5_000,
    );
    await waitFor('the missed change', w.ingressesAgree, 5_000);
    expect(watcher.getSnapshot().context.staleSince).toBeNull();
    expect(w.logs.some((l) => l.level === 30 && l.msg === 'watching again' && l.kind === 'Ingress')).toBe(true);
  });

  it(
    'finding 7: a watch that receives nothing, not even a bookmark, is reopened after its idle timeout; bookmarks ' +
      'keep a quiet one open',
    async () => {
      const silent = await setup([ing('a')], ['Ingress'], {
        api: { bookmarkIntervalMs: 60_000 },
        timeouts: { requestTimeoutMs: 1_000, watchIdleTimeoutMs: 300 },
      });
      await waitFor(
        'the idle watch reopened',
        () => silent.logs.some((l) => l.idleMs === 300 && l.kind === 'Ingress'),
        3_000,
      );
      await silent.client.create(ing('after-idle'));
      await waitFor(
        'a change after the reopen',
        () => silent.reports.includes('changed Ingress default/after-idle'),
        3_000,
      );
      expect(silent.logs.filter((l) => l.level >= 40)).toEqual([]); // a reopened watch is no failure

      const quiet = await setup([ing('a')], ['Ingress'], {
        api: { bookmarkIntervalMs: 100 },
        timeouts: { requestTimeoutMs: 1_000, watchIdleTimeoutMs: 300 },
      });
      await new Promise((r) => setTimeout(r, 1_000));
      expect(quiet.logs.filter((l) => l.idleMs !== undefined)).toEqual([]);
    },
  );

  it('end equal to the server after random changes and faults', async () => {
    const op = fc.oneof(
      fc.record({ kind: fc.constant('create' as const), name: fc.constantFrom('a', 'b', 'c', 'd', 'e') }),
      fc.record({
        kind: fc.constant('update' as const),
        name: fc.constantFrom('a', 'b', 'c', 'd', 'e'),
        host: fc.constantFrom('x.example.com', 'y.example.com'),
      }),
      fc.record({ kind: fc.constant('delete' as const), name: fc.constantFrom('a', 'b', 'c', 'd', 'e') }),
      fc.constantFrom(
        { kind: 'drop' as const },
        { kind: 'cut' as const },
        { kind: 'compact' as const },
        { kind: 'outage' as const },
      ),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 5, maxLength: 15 }), async (ops) => {
        const w = await setup([ing('a')], ['Ingress']);
        for (const o of ops) {
          try {
            if (o.kind === 'create') await w.client.create(ing(o.name));
            else if (o.kind === 'update')
              await w.client.patch(
                { ...ing(o.name), spec: { rules: [{ host: o.host }] } } as KubernetesObject,
                undefined,
                undefined,
                undefined,
                undefined,
                'application/merge-patch+json' as never,
              );
            else if (o.kind === 'delete') await w.client.delete(ing(o.name));
            else if (o.kind === 'drop') w.api.dropWatches();
            else if (o.kind === 'cut') w.api.dropWatches({ abrupt: true });
            else if (o.kind === 'compact') w.api.compact();
            else {
              await w.api.pause();
              await new Promise((r) => setTimeout(r, 100));
              await w.api.resume();
            }
          } catch (error) {
            // 404 on update/delete of a missing object, 409 on a duplicate create: the server said no.
            const code = (error as { code?: number }).code;
            if (code !== 404 && code !== 409) throw error;
          }
        }
        await waitFor('the cache to equal the server', w.ingressesAgree, 15_000, 50);
        for (const watcher of open.pop()!.watchers) watcher.stop();
        await w.api.close();
      }),
      { numRuns: 8 },
    );
  }, 180_000);

  it('a kind the API server does not serve (no CRD) is unserved: synced for the sync queue, said once, rechecked', async () => {
    const kinds: WatchedKind[] = ['GatewayClass', 'Gateway', 'HTTPRoute', 'GRPCRoute', 'ReferenceGrant', 'Namespace'];
    const w = await setup([ing('a')], ['Ingress', ...kinds]);
    for (const [i, kind] of kinds.entries()) {
      const expected = kind === 'Namespace' ? { running: 'watching' } : 'unserved';
      await waitFor(`${kind} ${JSON.stringify(expected)}`, () => {
        const value = w.watchers[i + 1]!.getSnapshot().value;
        return JSON.stringify(value) === JSON.stringify(expected);
      });
    }
    expect(w.reports.filter((r) => r.startsWith('synced')).sort()).toEqual(
      ['Ingress', ...kinds].map((k) => `synced ${k}`).sort(),
    );
    // Rechecked every 100 ms here, still unserved: said once, not at every recheck, and no failure.
    await new Promise((r) => setTimeout(r, 500));
    const unserved = w.logs.filter((l) => l.msg.startsWith('the API server does not serve this kind'));
    expect(unserved.map((l) => l.kind).sort()).toEqual([
      'GRPCRoute',
      'Gateway',
      'GatewayClass',
      'HTTPRoute',
      'ReferenceGrant',
    ]);
    expect(unserved[0]!.recheckInMs).toBe(100);
    expect(unserved[0]!.error).toMatch(/does not serve/);
    expect(w.logs.filter((l) => l.level >= 40)).toEqual([]);
    expect(w.watchers[3]!.getSnapshot().context.failures).toBe(0);
  });

  it('a kind served from the start (the Gateway API kinds as extra kinds) is listed and watched', async () => {
    const route = {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'HTTPRoute',
      metadata: { name: 'r', namespace: 'default' },
      spec: { hostnames: ['r.example.com'] },
    };
    const w = await setup([route], ['HTTPRoute', 'GatewayClass', 'ReferenceGrant'], {
      api: { extraKinds: GATEWAY_RESOURCES },
    });
    for (const watcher of w.watchers) expect(watcher.getSnapshot().value).toEqual({ running: 'watching' });
    expect(w.cacheState('HTTPRoute').map((k) => k.split('@')[0])).toEqual(['default/r']);
    await w.client.create({ ...route, metadata: { name: 'r2', namespace: 'default' } } as KubernetesObject);
    await waitFor('the new route cached', () => w.reports.includes('changed HTTPRoute default/r2'));
  });

  it('a CRD kind that stops being served (404) empties its cache and waits unserved; served again, it lists', async () => {
    const route = (name: string) => ({
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'HTTPRoute',
      metadata: { name, namespace: 'default' },
      spec: { hostnames: [`${name}.example.com`] },
    });
    const w = await setup([route('a'), route('b')], ['HTTPRoute'], { api: { extraKinds: GATEWAY_RESOURCES } });
    const cached = () => w.cacheState('HTTPRoute').map((k) => k.split('@')[0]);
    w.api.failRequests({ status: 404 });
    w.api.dropWatches();
    await waitFor('unserved', () => w.watchers[0]!.getSnapshot().value === 'unserved', 10_000);
    expect(cached()).toEqual([]);
    expect(w.reports).toEqual(expect.arrayContaining(['changed HTTPRoute default/a', 'changed HTTPRoute default/b']));
    expect(w.reports.filter((r) => r.startsWith('synced'))).toEqual(['synced HTTPRoute']);
    const before = w.reports.length;
    w.api.failRequests(null);
    await waitFor(
      'watching again',
      () => JSON.stringify(w.watchers[0]!.getSnapshot().value) === '{"running":"watching"}',
      10_000,
    );
    expect(cached()).toEqual(['default/a', 'default/b']);
    expect(w.reports.slice(before).sort()).toEqual(['changed HTTPRoute default/a', 'changed HTTPRoute default/b']);
    expect(
      w.logs.some((l) => l.msg === 'the API server serves this kind now; watching it' && l.kind === 'HTTPRoute'),
    ).toBe(true);
    expect(w.watchers[0]!.getSnapshot().context.unservedSince).toBeNull();
  });

  it('a built-in kind’s 404 (a proxy in the way, say) is a failure, not unserved: its cache is kept', async () => {
    const w = await setup([ing('a')], ['Ingress']);
    w.api.failRequests({ status: 404 });
    w.api.dropWatches();
    await waitFor('backoff', () => w.watchers[0]!.getSnapshot().value === 'backoff', 10_000);
    expect(w.watchers[0]!.getSnapshot().context.lastError).toMatch(/404|Not ?Found/i);
    expect(w.cacheState('Ingress').map((k) => k.split('@')[0])).toEqual(['default/a']);
    w.api.failRequests(null);
  });

  it('a 403 (RBAC) is a failure as before, not unserved', async () => {
    const w = await setup([ing('a')], ['Ingress']);
    w.api.failRequests({ status: 403 });
    w.api.dropWatches();
    await waitFor('backoff', () => w.watchers[0]!.getSnapshot().value === 'backoff', 10_000);
    expect(w.watchers[0]!.getSnapshot().context.lastError).toMatch(/403|Forbidden/);
    expect(w.cacheState('Ingress').map((k) => k.split('@')[0])).toEqual(['default/a']);
    w.api.failRequests(null);
  });
});
