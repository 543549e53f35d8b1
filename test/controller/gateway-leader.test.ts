/**
 * Two controllers against one test API server, one Lease: only the leader writes the Gateway API status. The
 * follower holds the same caches and builds the same status, but never writes (its status actor never publishes):
 * every status write the API server receives is one the leader logged.
 */
import { GATEWAY_API_INSTALL } from '../../src/dev/api-server/gateway-api.js';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { pino } from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parseControllerFlags } from '../../src/cli/controller-flags.js';
import { startController, type Controller } from '../../src/main.js';
import { startCluster, waitFor, type Cluster } from '../support/cluster.js';
import { kubectlFor } from '../support/kube-api.js';
import { ingressClass } from '../support/manifests.js';
import { testControllerFlags } from '../support/controller-flags.js';

const GROUP = 'gateway.networking.k8s.io';
const STATUS_UPDATED = 'Gateway API status updated';

let cluster: Cluster;
let second: Controller;
let secondDir: string;
const linesA: Record<string, unknown>[] = [];
const linesB: Record<string, unknown>[] = [];
const writes: string[] = [];

const capture = (lines: Record<string, unknown>[]) =>
  pino(
    { level: 'info' },
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(JSON.parse(chunk.toString('utf8')));
        done();
      },
    }),
  );

beforeAll(async () => {
  cluster = await startCluster([ingressClass()], ['--publish-status-address', '203.0.113.10'], 'info', {
    env: { POD_NAME: 'replica-a', POD_NAMESPACE: 'default' },
    logLines: linesA,
    unservedRecheckMs: 200,
    // the writes that took: a 409 (a status read before the object moved on) is left to the next sync, not logged
    onRequest: ({ method, url, status }) => {
      const taken = status >= 200 && status < 300;
      if (taken && method === 'PUT' && url.includes(`/apis/${GROUP}/`) && url.split('?')[0]!.endsWith('/status'))
        writes.push(url);
    },
  });
  secondDir = await mkdtemp(join(tmpdir(), 'ia-replica-b-'));
  const parsed = parseControllerFlags([
    ...(await testControllerFlags(join(cluster.dir, 'kubeconfig'), join(secondDir, 'nginx'))).flags,
    '--sync-rate-limit',
    '10',
    '--shutdown-timeout',
    '5',
    '--publish-status-address',
    '203.0.113.10',
  ]);
  if (!('config' in parsed)) throw new Error('unexpected --help');
  second = await startController(parsed.config, capture(linesB), {
    env: { POD_NAME: 'replica-b', POD_NAMESPACE: 'default' },
    unservedRecheckMs: 200,
  });
}, 40_000);

afterAll(async () => {
  if (second?.root.getSnapshot().status === 'active') second.stop();
  await second?.exitCode;
  await rm(secondDir, { recursive: true, force: true });
  await cluster?.close();
});

it('only the leader writes the Gateway API status; the follower writes nothing', async () => {
  const kubectl = kubectlFor(join(cluster.dir, 'kubeconfig'), join(cluster.dir, 'kube-cache'));
  await kubectl.run(['apply', '-f', GATEWAY_API_INSTALL]);
  const watching = (c: { root: Controller['root'] }) =>
    JSON.stringify(c.root.system.get('watcher.HTTPRoute')?.getSnapshot().value) === '{"running":"watching"}';
  await waitFor('both replicas watch HTTPRoutes', () => watching(cluster.controller) && watching(second), 15_000);
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
    spec: { gatewayClassName: 'ingress-actors', listeners: [{ name: 'http', port: 80, protocol: 'HTTP' }] },
  });
  const kc = new KubeConfig();
  kc.loadFromString(cluster.api.kubeconfigText);
  const custom = kc.makeApiClient(CustomObjectsApi);
  await waitFor(
    'the Gateway status written',
    async () => {
      const gw = (await custom.getNamespacedCustomObject({
        group: GROUP,
        version: 'v1',
        namespace: 'default',
        plural: 'gateways',
        name: 'web',
      })) as { status?: { addresses?: unknown[] } };
      return (gw.status?.addresses?.length ?? 0) > 0;
    },
    15_000,
  );
  const leads = (c: Controller) => {
    const value = c.root.system.get('status')?.getSnapshot().value;
    return typeof value === 'object' && value !== null && 'leader' in value;
  };
  expect([leads(cluster.controller), leads(second)].filter(Boolean)).toHaveLength(1);
  const [leader, follower] = leads(cluster.controller) ? [linesA, linesB] : [linesB, linesA];
  const followerController = leads(cluster.controller) ? second : cluster.controller;
  // The follower built the same status (its sync.done carried it) but never published it.
  await waitFor('the follower synced the Gateway', () => followerController.cache.list('Gateway').length === 1, 10_000);
  expect(followerController.root.system.get('status')?.getSnapshot().context.gatewayPublishes).toBe(0);
  expect(follower.filter((l) => l.msg === STATUS_UPDATED)).toEqual([]);
  const leaderWrites = () => leader.filter((l) => l.msg === STATUS_UPDATED).length;
  expect(leaderWrites()).toBeGreaterThanOrEqual(2); // the GatewayClass and the Gateway
  // Every write the API server took is one the leader logged (a write in flight is logged once answered).
  await waitFor('every write the leader’s', () => writes.length === leaderWrites(), 5_000);
}, 60_000);
