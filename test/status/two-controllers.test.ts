/**
 * Two real controller processes (the CLI, as a Deployment with 2 replicas runs it) against one
 * test API server: exactly one leads; SIGKILL it and the other takes over once the Lease has
 * expired, within the lease duration plus one retry period; the status addresses are written
 * once per Ingress and not fought over (the server counts the writes). SIGTERM of the leader
 * hands over at once (the Lease is released) and leaves the addresses; the last replica's
 * SIGTERM clears them.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1Ingress, V1Lease } from '@kubernetes/client-node';
import { execa, type ResultPromise } from 'execa';
import { afterEach, expect, it } from 'vitest';
import { findResourceByKind } from '../../src/dev/api-server/resources.js';
import { startApiServer, type ApiServer } from '../../src/dev/api-server/server.js';
import { signalGroup } from '../../src/nginx/master.js';
import { waitFor } from '../support/cluster.js';
import { ingress, ingressClass, serviceWithEndpoints } from '../support/manifests.js';
import { testControllerFlags } from '../support/controller-flags.js';
import { healthz, scrape } from '../http/prometheus.js';

const CLI = new URL('../../bin/ingress-actors', import.meta.url).pathname;
const NS = 'ingress-actors';
const TTL_S = 3;
const RETRY_MS = (TTL_S * 1000) / 7.5;
const ADDRESS = '203.0.113.10';
const INGRESSES = findResourceByKind('networking.k8s.io/v1', 'Ingress')!;
const LEASES = findResourceByKind('coordination.k8s.io/v1', 'Lease')!;
const SLICES = findResourceByKind('discovery.k8s.io/v1', 'EndpointSlice')!;

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

/** The controller Service's EndpointSlice, as the EndpointSlice controller would keep it for the two pods. */
function controllerSlice(ready: Record<string, boolean>) {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name: 'ingress-actors-x1', namespace: NS, labels: { 'kubernetes.io/service-name': 'ingress-actors' } },
    addressType: 'IPv4',
    ports: [{ name: 'http', port: 80 }],
    endpoints: Object.entries(ready).map(([pod, isReady], i) => ({
      addresses: [`10.0.0.${i + 1}`],
      targetRef: { kind: 'Pod', namespace: NS, name: pod },
      conditions: { ready: isReady },
    })),
  };
}

interface Replica {
  readonly pod: string;
  readonly healthzPort: number;
  readonly dir: string;
  readonly child: ResultPromise;
  /** /metrics: 1 when leader, 0 when follower, NaN when it does not answer */
  leader(): Promise<number>;
}

async function startReplica(_api: ApiServer, kubeconfig: string, pod: string): Promise<Replica> {
  const dir = await mkdtemp(join(tmpdir(), `ia-${pod}-`));
  const { flags, healthzPort } = await testControllerFlags(kubeconfig, join(dir, 'nginx'));
  const child = execa(
    CLI,
    [
      'controller',
      ...flags,
      '--publish-status-address',
      ADDRESS,
      '--election-ttl',
      String(TTL_S),
      '--sync-rate-limit',
      '10',
      '--shutdown-timeout',
      '2',
      '--drain-timeout',
      '1',
      '--log-level',
      'warn',
    ],
    { reject: false, env: { POD_NAME: pod, POD_NAMESPACE: NS } },
  );
  cleanups.push(async () => {
    child.kill('SIGKILL');
    await child;
    // A SIGKILLed controller leaves its nginx (a process group of its own) behind.
    const pid = Number(await readFile(join(dir, 'nginx', 'nginx.pid'), 'utf8').catch(() => '0'));
    if (pid > 0) signalGroup(pid, 'SIGKILL');
    await rm(dir, { recursive: true, force: true });
  });
  const leader = async () =>
    (await scrape(healthzPort).catch(() => null))?.value('nginx_ingress_controller_leader_election_status', {
      name: 'ingress-controller-leader',
    }) ?? Number.NaN;
  await waitFor(
    `${pod} healthy`,
    async () => (await healthz(healthzPort).catch(() => ({ status: 0 }))).status === 200,
    20_000,
    50,
  );
  return { pod, healthzPort, dir, child, leader };
}

async function startTwo() {
  const statusWrites: string[] = [];
  const api = await startApiServer({
    seed: [
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } },
      ingressClass(),
      ...serviceWithEndpoints('web', [{ port: 9 }]),
      ingress('a', { 'a.example.com': [{ path: '/', service: 'web' }] }),
      ingress('b', { 'b.example.com': [{ path: '/', service: 'web' }] }),
      controllerSlice({ 'ctrl-a': true, 'ctrl-b': true }),
    ] as never,
    onRequest: ({ method, url, status }) =>
      method === 'PUT' &&
      /\/ingresses\/[^/]+\/status/.test(url) &&
      status === 200 &&
      statusWrites.push(url.replace(/^.*ingresses\//, '')),
  });
  const dir = await mkdtemp(join(tmpdir(), 'ia-two-'));
  cleanups.push(async () => (await api.close(), await rm(dir, { recursive: true, force: true })));
  await api.writeKubeconfig(join(dir, 'kubeconfig'));
  const replicas = await Promise.all(
    ['ctrl-a', 'ctrl-b'].map((pod) => startReplica(api, join(dir, 'kubeconfig'), pod)),
  );
  const holder = () =>
    (api.registry.get(LEASES, NS, 'ingress-controller-leader') as V1Lease).spec?.holderIdentity ?? null;
  const addresses = (name: string) =>
    ((api.registry.get(INGRESSES, 'default', name) as V1Ingress).status?.loadBalancer?.ingress ?? []).map((a) => a.ip);
  const leaders = async () => Promise.all(replicas.map((r) => r.leader()));
  await waitFor(
    'one leader',
    async () => (await leaders()).join() === (holder() === 'ctrl-a' ? '1,0' : '0,1'),
    10_000,
    50,
  );
  await waitFor(
    'the addresses written',
    () => addresses('a').join() === ADDRESS && addresses('b').join() === ADDRESS,
    10_000,
  );
  return { api, replicas, holder, addresses, leaders, statusWrites };
}

it('exactly one leads; SIGKILL it and the other takes over ' +
  'once the Lease expires; the addresses are written once', async () => {
  const { replicas, holder, addresses, leaders, statusWrites } = await startTwo();
  const leader = replicas.find((r) => r.pod === holder())!;
  const follower = replicas.find((r) => r !== leader)!;
  expect(await leaders()).toEqual(replicas.map((r) => (r === leader ? 1 : 0)));
  // Let both run a while: the follower never writes, the leader never writes again.
  await new Promise((r) => setTimeout(r, 1_500));
  expect(statusWrites.sort()).toEqual(['a/status', 'b/status']);

  const killed = Date.now();
  leader.child.kill('SIGKILL');
  await waitFor('the follower to lead', async () => (await follower.leader()) === 1, 10_000, 25);
  const tookMs = Date.now() - killed;
  expect(holder()).toBe(follower.pod);
  // Not before the dead leader's Lease could have expired, and within lease duration + a retry.
  expect(tookMs).toBeGreaterThan(TTL_S * 1000 - RETRY_MS - 200);
  expect(tookMs).toBeLessThan(TTL_S * 1000 + RETRY_MS + 1_500);

  // The new leader finds the addresses already right: no write, no fight.
  await new Promise((r) => setTimeout(r, 1_500));
  expect(statusWrites).toHaveLength(2);
  expect(addresses('a')).toEqual([ADDRESS]);
  expect((await healthz(follower.healthzPort)).status).toBe(200);
}, 60_000);

it('SIGTERM of the leader hands the Lease over at once and keeps the addresses; the last one clears them', async () => {
  const { api, replicas, holder, addresses, statusWrites } = await startTwo();
  const first = replicas.find((r) => r.pod === holder())!;
  const second = replicas.find((r) => r !== first)!;

  const stopped = Date.now();
  first.child.kill('SIGTERM');
  expect((await first.child).exitCode).toBe(0);
  await waitFor('the second to lead', async () => (await second.leader()) === 1, 5_000, 25);
  // Released on stop: no waiting for the TTL.
  expect(Date.now() - stopped).toBeLessThan(TTL_S * 1000);
  expect(addresses('a')).toEqual([ADDRESS]); // another replica runs: the status stays
  expect(statusWrites).toHaveLength(2);

  // The first pod is gone from the controller Service, as the EndpointSlice controller would show it.
  const slice = api.registry.get(SLICES, NS, 'ingress-actors-x1');
  api.registry.update(SLICES, NS, 'ingress-actors-x1', {
    ...slice,
    ...controllerSlice({ [second.pod]: true }),
    metadata: slice.metadata,
  });
  await new Promise((r) => setTimeout(r, 300)); // the watch brings it
  second.child.kill('SIGTERM');
  expect((await second.child).exitCode).toBe(0);
  expect(addresses('a')).toEqual([]);
  expect(addresses('b')).toEqual([]);
  expect(statusWrites).toHaveLength(4);
  expect(holder()).toBeNull(); // released
}, 60_000);
