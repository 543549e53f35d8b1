/**
 * End to end through the API: an Ingress created, changed and deleted with client-node, and an
 * EndpointSlice scaled, each reach real HTTP requests through the controller's real nginx.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ingress, ingressClass, serviceWithEndpoints } from '../support/manifests.js';
import { get, startBackend, type Backend } from '../support/net.js';
import { startCluster, waitFor, type Cluster } from '../support/cluster.js';

let cluster: Cluster;
const backends: Backend[] = [];
const request = (path: string) => get({ host: 'live.example.com', path, port: cluster.httpPort });

beforeAll(async () => {
  for (const name of ['a', 'b', 'c']) backends.push(await startBackend(name));
  cluster = await startCluster([ingressClass(), ...serviceWithEndpoints('web', [{ port: backends[0]!.port }])]);
  await waitFor('the first sync', () => (cluster.actor('nginx')?.context.reloadsOk as number) >= 1, 15_000);
}, 30_000);

afterAll(async () => {
  await cluster?.close();
  await Promise.all(backends.map((b) => b.close()));
});

it('routes a new Ingress within 2 s, follows a path change, and stops routing once deleted', async () => {
  expect((await request('/shop')).status).toBe(404);
  let started = Date.now();
  await cluster.apply(ingress('live', { 'live.example.com': [{ path: '/shop', service: 'web' }] }));
  await waitFor('the new Ingress routed', async () => (await request('/shop')).backend === 'a', 2000, 20);
  expect(Date.now() - started).toBeLessThan(2000);

  started = Date.now();
  await cluster.apply(ingress('live', { 'live.example.com': [{ path: '/store', service: 'web' }] }));
  await waitFor(
    'the changed path routed',
    async () => (await request('/store')).backend === 'a' && (await request('/shop')).status === 404,
    3000,
    20,
  );
  expect(Date.now() - started).toBeLessThan(3000);

  await cluster.remove(ingress('live', {}));
  await waitFor('the deleted Ingress gone', async () => (await request('/store')).status === 404, 3000, 20);
});

it('follows an EndpointSlice as it scales out and in', async () => {
  await cluster.apply(ingress('live', { 'live.example.com': [{ path: '/', service: 'web' }] }));
  await waitFor('routed to a', async () => (await request('/')).backend === 'a', 3000, 20);
  const sliceOf = (i: number) => serviceWithEndpoints('web', [{ port: backends[i]!.port }])[1]!;
  const answers = async () =>
    new Set((await Promise.all(Array.from({ length: 12 }, () => request('/')))).map((r) => r.backend));

  await cluster.apply(sliceOf(2)); // scale out: a second slice with endpoint c
  await waitFor(
    'a and c both answering',
    async () => {
      const seen = await answers();
      return seen.has('a') && seen.has('c') && seen.size === 2;
    },
    5000,
    20,
  );

  await cluster.remove(sliceOf(0)); // scale in: a's slice goes away
  await waitFor(
    'only c answering',
    async () => {
      const seen = await answers();
      return seen.size === 1 && seen.has('c');
    },
    5000,
    20,
  );
});
