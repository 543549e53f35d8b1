/**
 * Issue 27, "pushes must never wedge", through the real controller and real nginx with the Lua balancer (default
 * flags). A tenant's entry no longer fails a push (nginx applies the rest and names it: refused-entry.test.ts), but a
 * push can still fail whole: nginx's control socket unreachable (here: moved away, as a stuck or restarting nginx
 * leaves it), a timeout under load. While it fails, the app's EndpointSlice moves and moves back, so the tables the
 * controller wants are again the ones nginx holds; the socket comes back, and an Ingress change reloads nginx. Then the
 * EndpointSlice moves to another port: nginx must send the app's traffic to the new port, without another change, and
 * /healthz must be 200 and plain again. Before the fix, a failed push was forgotten only by a later successful push,
 * and pushes waited for that: once the tables reached nginx another way (changed back, or taken by a reload's push),
 * no table was pushed again, the app stayed on its old port, and /healthz stayed 500.
 *
 * While the pushes fail nginx still holds the earlier tables and serves everyone: /healthz is 200 then too, with the
 * failure as a warning in its detail (readiness is the replica's, not a tenant's).
 */
import { rename } from 'node:fs/promises';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { nginxSettled, startCluster, waitFor, type Cluster } from '../support/cluster.js';
import { ingress, ingressClass, serviceWithEndpoints } from '../support/manifests.js';
import { get, startBackend, type Backend } from '../support/net.js';
import { healthz } from '../support/rollout.js';

let cluster: Cluster;
let oldPods: Backend;
let midPods: Backend;
let newPods: Backend;

/** appSlice is the app's EndpointSlice, its one endpoint on `port`. */
const appSlice = (port: number) => ({
  apiVersion: 'discovery.k8s.io/v1',
  kind: 'EndpointSlice',
  metadata: { name: 'app-slice', namespace: 'default', labels: { 'kubernetes.io/service-name': 'app' } },
  addressType: 'IPv4',
  ports: [{ name: 'http', port, protocol: 'TCP' }],
  endpoints: [{ addresses: ['127.0.0.1'], conditions: { ready: true } }],
});

const answer = async (host: string, path = '/') => (await get({ host, path, port: cluster.httpPort })).backend;
const nginx = () => cluster.actor('nginx')!.context;
const heldBackends = () => (nginx().pushed as { backends?: { version?: string } } | null)?.backends?.version;
const wantedBackends = () => (nginx().tables as { backends?: { version?: string } } | null)?.backends?.version;

beforeAll(async () => {
  oldPods = await startBackend('old-port');
  midPods = await startBackend('mid-port');
  newPods = await startBackend('new-port');
  const app = serviceWithEndpoints('app', [])[0]!;
  const other = serviceWithEndpoints('other', [{ port: midPods.port }]);
  cluster = await startCluster([
    ingressClass(),
    app,
    appSlice(oldPods.port),
    ...other,
    ingress('app', { 'app.example.com': [{ path: '/', service: 'app' }] }),
  ]);
  await waitFor('the app served', async () => (await answer('app.example.com')) === 'old-port');
  await waitFor('/healthz 200', async () => (await healthz(cluster.healthzPort)).status === 200);
}, 60_000);

afterAll(async () => {
  await cluster?.close();
  await Promise.all([oldPods?.close(), midPods?.close(), newPods?.close()]);
});

it('after pushes that failed and a reload that succeeded, an EndpointSlice moved to another port is served there', async () => {
  await waitFor('nginx settled', () => nginxSettled(cluster.actor('nginx')));
  const socket = cluster.controller.build.dynamic?.controlSocket;
  if (!socket) throw new Error('the controller found no Lua balancer');
  const failedBefore = Number(nginx().pushesFailed);
  const held = heldBackends();

  // nginx's control socket is away: the push of the app's moved endpoints fails whole.
  await rename(socket, `${socket}.away`);
  try {
    await cluster.apply(appSlice(midPods.port));
    await waitFor('a push to fail', () => Number(nginx().pushesFailed) > failedBefore, 15_000);
    expect(String(nginx().lastPushError)).toMatch(/ENOENT|ECONNREFUSED|no socket/);
    // nginx still holds the earlier tables and serves everyone: ready, the failure a warning.
    const whileFailing = await healthz(cluster.healthzPort);
    expect(whileFailing.status).toBe(200);
    expect(whileFailing.body).toMatch(/^ok\nwarning: the last push of the tables failed: /);
    expect(await answer('app.example.com')).toBe('old-port');
    // The slice moves back: the tables the controller wants are those nginx holds again.
    await cluster.apply(appSlice(oldPods.port));
    await waitFor('the tables wanted to be those nginx holds', () => wantedBackends() === held, 15_000);
  } finally {
    await rename(`${socket}.away`, socket);
  }

  // Another Ingress changes nginx.conf (a setting no other path has: a new location profile), and the reload succeeds.
  const reloadsBefore = Number(nginx().reloadsOk);
  await cluster.apply(
    ingress(
      'other',
      { 'other.example.com': [{ path: '/', service: 'other' }] },
      { annotations: { 'nginx.ingress.kubernetes.io/proxy-read-timeout': '93' } },
    ),
  );
  await waitFor('the reload', async () => Number(nginx().reloadsOk) > reloadsBefore, 15_000);
  await waitFor('the other Ingress served', async () => (await answer('other.example.com')) === 'mid-port', 15_000);

  // Later (the issue saw it 10 minutes on): longer than the longest delay before a failed push is retried (10 s), so
  // that a retry pending from before is over, and only what the machine does after it counts.
  await new Promise((r) => setTimeout(r, 10_500));
  // The app's pods move: the EndpointSlice names the new port, and nothing else changes.
  await cluster.apply(appSlice(newPods.port));
  await waitFor('the app served at its new port', async () => (await answer('app.example.com')) === 'new-port', 15_000);
  for (let i = 0; i < 10; i++) expect(await answer('app.example.com')).toBe('new-port');
  await waitFor(
    '/healthz 200 with the tables applied',
    async () => (await healthz(cluster.healthzPort)).status === 200,
  );
  expect((await healthz(cluster.healthzPort)).body).toBe('ok\n');
  expect(nginx()).toMatchObject({ pushFailuresInRow: 0, lastPushError: null });
}, 90_000);
