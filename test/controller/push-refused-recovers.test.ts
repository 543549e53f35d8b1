/**
 * Issue 27, "pushes must never wedge", through the real controller and real nginx with the Lua balancer (default
 * flags): a tenant's HTTPRoute whose label nginx's Lua refuses (`<namespace>/<name>#<rule>` over 300 characters,
 * legal names) makes nginx refuse the pushed routes table. The tenant deletes it, and an Ingress change reloads
 * nginx. Then an EndpointSlice moves to another port: nginx must send the app's traffic to the new port, without
 * another change, and /healthz must be 200 again. Before the fix, the failed push was never forgotten: no table was
 * pushed again, the app stayed on its old port, and /healthz stayed 500.
 *
 * While nginx refuses the table it still holds the earlier one and serves everyone: /healthz is 200 then too, with
 * the refusal as a warning in its detail (readiness is the replica's, not a tenant's).
 */
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { GATEWAY_API_INSTALL } from '../../src/api-server/gateway-api.js';
import { GATEWAY_KINDS } from '../../src/kube/kinds.js';
import { nginxSettled, startCluster, waitFor, type Cluster } from '../support/cluster.js';
import { kubectlFor } from '../support/kube-api.js';
import { ingress, ingressClass, serviceWithEndpoints } from '../support/manifests.js';
import { get, startBackend, type Backend } from '../support/net.js';
import { healthz } from '../support/rollout.js';

const GROUP = 'gateway.networking.k8s.io';
// Legal names: a 63-character namespace and a 253-character route name (DNS subdomain), 319 characters of label.
const TENANT = `tenant-${'x'.repeat(56)}`;
const LONG_NAME = ['a'.repeat(63), 'b'.repeat(63), 'c'.repeat(63), 'd'.repeat(61)].join('.');

let cluster: Cluster;
let oldPods: Backend;
let newPods: Backend;
let gatewayBackend: Backend;

/** appSlice is the app's EndpointSlice, its one endpoint on `port`. */
const appSlice = (port: number) => ({
  apiVersion: 'discovery.k8s.io/v1',
  kind: 'EndpointSlice',
  metadata: { name: 'app-slice', namespace: 'default', labels: { 'kubernetes.io/service-name': 'app' } },
  addressType: 'IPv4',
  ports: [{ name: 'http', port, protocol: 'TCP' }],
  endpoints: [{ addresses: ['127.0.0.1'], conditions: { ready: true } }],
});

const route = (namespace: string, name: string, path: string) => ({
  apiVersion: `${GROUP}/v1`,
  kind: 'HTTPRoute',
  metadata: { name, namespace },
  spec: {
    parentRefs: [{ name: 'web', namespace: 'default' }],
    hostnames: ['gw.example.com'],
    rules: [{ matches: [{ path: { type: 'PathPrefix', value: path } }], backendRefs: [{ name: 'gw', port: 80 }] }],
  },
});

const answer = async (host: string, path = '/') => (await get({ host, path, port: cluster.httpPort })).backend;
const nginx = () => cluster.actor('nginx')!.context;

beforeAll(async () => {
  oldPods = await startBackend('old-port');
  newPods = await startBackend('new-port');
  gatewayBackend = await startBackend('gateway');
  const app = serviceWithEndpoints('app', [])[0]!;
  cluster = await startCluster([
    ingressClass(),
    app,
    appSlice(oldPods.port),
    ingress('app', { 'app.example.com': [{ path: '/', service: 'app' }] }),
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: TENANT } },
    ...serviceWithEndpoints('gw', [{ port: gatewayBackend.port }]),
    ...serviceWithEndpoints('gw', [{ port: gatewayBackend.port }], TENANT),
  ]);
  const kubectl = kubectlFor(join(cluster.dir, 'kubeconfig'), join(cluster.dir, 'kube-cache'));
  await kubectl.run(['apply', '-f', GATEWAY_API_INSTALL]);
  for (const kind of GATEWAY_KINDS)
    await waitFor(
      `${kind} watched`,
      () => JSON.stringify(cluster.actor(`watcher.${kind}`)?.value) === '{"running":"watching"}',
      10_000,
    );
  await cluster.apply({
    apiVersion: `${GROUP}/v1`,
    kind: 'GatewayClass',
    metadata: { name: 'ingress-actors' },
    spec: { controllerName: 'ingress-actors.io/gateway-controller' },
  });
  await cluster.apply({
    apiVersion: `${GROUP}/v1`,
    kind: 'Gateway',
    metadata: { name: 'web', namespace: 'default' },
    spec: {
      gatewayClassName: 'ingress-actors',
      listeners: [{ name: 'http', port: 80, protocol: 'HTTP', allowedRoutes: { namespaces: { from: 'All' } } }],
    },
  });
  await cluster.apply(route('default', 'good', '/good'));
  await waitFor('the app and the good route served', async () => {
    return (await answer('app.example.com')) === 'old-port' && (await answer('gw.example.com', '/good')) === 'gateway';
  });
  await waitFor('/healthz 200', async () => (await healthz(cluster.healthzPort)).status === 200);
}, 60_000);

afterAll(async () => {
  await cluster?.close();
  await Promise.all([oldPods?.close(), newPods?.close(), gatewayBackend?.close()]);
});

it('after a push nginx refused and a reload that succeeded, an EndpointSlice moved to another port is served there', async () => {
  await waitFor('nginx settled', () => nginxSettled(cluster.actor('nginx')));
  const failedBefore = Number(nginx().pushesFailed);

  // The tenant's route: its label is longer than nginx's Lua takes, and nginx refuses the routes table.
  await cluster.apply(route(TENANT, LONG_NAME, '/bad'));
  await waitFor('nginx to refuse the pushed routes', () => Number(nginx().pushesFailed) > failedBefore, 15_000);
  expect(String(nginx().lastPushError)).toContain('POST /routes: nginx answered 400');
  // nginx still holds the earlier tables and serves everyone: ready, the refusal a warning.
  const whileRefused = await healthz(cluster.healthzPort);
  expect(await answer('app.example.com')).toBe('old-port');
  expect(await answer('gw.example.com', '/good')).toBe('gateway');

  // The tenant deletes its route; another Ingress changes nginx.conf, and the reload succeeds.
  const reloadsBefore = Number(nginx().reloadsOk);
  await cluster.remove(route(TENANT, LONG_NAME, '/bad'));
  await cluster.apply(ingress('other', { 'other.example.com': [{ path: '/', service: 'gw' }] }));
  await waitFor('the reload', async () => Number(nginx().reloadsOk) > reloadsBefore, 15_000);
  await waitFor('the other Ingress served', async () => (await answer('other.example.com')) === 'gateway', 15_000);

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

  expect(whileRefused.status).toBe(200);
  expect(whileRefused.body).toMatch(
    /^ok\nwarning: the last push of the tables failed: POST \/routes: nginx answered 400/,
  );
}, 90_000);
