/**
 * kill -9 of the nginx master while it serves: the nginx actor goes died → draining →
 * restarting → running, a new master serves, no orphan of the old one is left, and a request
 * in flight when the master died still succeeds. Twenty times in a row.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { liveGroupMembers } from '../../src/nginx/master.js';
import { ingress, ingressClass, serviceWithEndpoints } from '../support/manifests.js';
import { get } from '../support/net.js';
import { startSlowBackend, type SlowBackend } from '../support/slow-backend.js';
import { queueIdle, startCluster, waitFor, type Cluster } from '../support/cluster.js';

let cluster: Cluster;
let backend: SlowBackend;

const nginxState = () => JSON.stringify(cluster.actor('nginx')?.value);
const pid = () => cluster.actor('nginx')?.context.pid as number | null;
const request = (path = '/') => get({ host: 'crash.example.com', path, port: cluster.httpPort });

beforeAll(async () => {
  backend = await startSlowBackend('app');
  cluster = await startCluster([
    ingressClass(),
    ...serviceWithEndpoints('app', [{ port: backend.port }]),
    ingress('app', { 'crash.example.com': [{ path: '/', service: 'app' }] }),
  ]);
  await waitFor('the app to be served', async () => (await request()).backend === 'app', 15_000);
}, 30_000);

afterAll(async () => {
  await cluster?.close();
  await backend?.close();
});

it('restarts a killed master within the drain timeout + 3 s, keeping the in-flight request', async () => {
  // Settled first: a reload still being confirmed would add its own `running` to the states below.
  await waitFor(
    'nginx running, no sync pending',
    () => nginxState() === '{"alive":"running"}' && queueIdle(cluster.actor('syncQueue')?.value),
    10_000,
  );
  const old = pid()!;
  const before = cluster.visited('nginx').length;
  const inFlight = request('/?delay=400');
  await new Promise((r) => setTimeout(r, 100));
  const started = Date.now();
  process.kill(old, 'SIGKILL');
  await waitFor(
    'a new master serving',
    async () => pid() !== old && nginxState() === '{"alive":"running"}' && (await request()).backend === 'app',
    1000 + 3000,
  );
  expect(Date.now() - started).toBeLessThan(1000 + 3000);
  expect((await inFlight).status).toBe(200);
  expect(cluster.visited('nginx').slice(before)).toEqual([
    '"died"',
    '"draining"',
    '"restarting"',
    '{"alive":"starting"}',
    '{"alive":"running"}',
    // The new master starts without the Lua balancer's tables: they are pushed before anything else.
    '{"alive":"pushing"}',
    '{"alive":"running"}',
  ]);
  expect(cluster.actor('nginx')?.context.pushed).not.toBeNull();
  expect(liveGroupMembers(old)).toEqual([]);
  expect(cluster.actor('nginx')?.context.restarts).toBe(1);
});

it('survives 20 crash cycles in a row', async () => {
  for (let cycle = 0; cycle < 20; cycle++) {
    const old = pid()!;
    process.kill(old, 'SIGKILL');
    await waitFor(
      `cycle ${cycle}: a new master serving`,
      async () => pid() !== old && nginxState() === '{"alive":"running"}' && (await request()).status === 200,
      4000,
    );
    expect(liveGroupMembers(old)).toEqual([]);
  }
  expect(cluster.actor('nginx')?.context.restarts).toBe(21);
}, 120_000);
