/**
 * Issue 16's acceptance, short form: a Service of 3 pods (loopback addresses on one port) rolled as a
 * Deployment does it (one new pod first, then the old one terminating, then gone and stopped), under
 * keep-alive clients that never retry, through the real controller at default flags: no request fails,
 * nginx never reloads, and every pod of every generation answers. The long form is `bench rolling-updates`.
 */
import { createServer as createHttpServer, request, Agent, type Server } from 'node:http';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ingress, ingressClass } from '../support/manifests.js';
import { freePort } from '../support/net.js';
import { nginxSettled, startCluster, waitFor, type Cluster } from '../support/cluster.js';

const ROLLS = 4;
const CLIENTS = 6;
let cluster: Cluster;
let port: number;
const pods = new Map<string, Server>();
const answered = new Set<string>();

async function startPod(ip: string): Promise<void> {
  const server = createHttpServer((_req, res) => res.end(ip));
  await new Promise<void>((resolve) => server.listen(port, ip, resolve));
  pods.set(ip, server);
}

async function stopPod(ip: string): Promise<void> {
  const server = pods.get(ip)!;
  pods.delete(ip);
  server.closeIdleConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

type Condition = 'ready' | 'terminating';
const slice = (endpoints: [string, Condition][]) => ({
  apiVersion: 'discovery.k8s.io/v1',
  kind: 'EndpointSlice',
  metadata: { name: 'app-1', namespace: 'default', labels: { 'kubernetes.io/service-name': 'app' } },
  addressType: 'IPv4',
  ports: [{ name: 'http', port, protocol: 'TCP' }],
  endpoints: endpoints.map(([ip, c]) => ({
    addresses: [ip],
    conditions: c === 'ready' ? { ready: true } : { ready: false, serving: true, terminating: true },
  })),
});

const reloads = () => Number(cluster.actor('nginx')?.context.reloadsOk ?? 0);
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

beforeAll(async () => {
  port = await freePort();
  for (const ip of ['127.0.0.2', '127.0.0.3', '127.0.0.4']) await startPod(ip);
  cluster = await startCluster(
    [
      ingressClass(),
      {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'app', namespace: 'default' },
        spec: { ports: [{ name: 'http', port: 80, targetPort: 'http' }] },
      },
      slice([
        ['127.0.0.2', 'ready'],
        ['127.0.0.3', 'ready'],
        ['127.0.0.4', 'ready'],
      ]),
      ingress('app', { 'roll.example.com': [{ path: '/', service: 'app' }] }),
      // startCluster's own rate (10) would hide a push that waits for the reload rate token: the default's is 0.3.
    ],
    ['--sync-rate-limit', '0.3'],
  );
  await waitFor('the tables pushed', async () => cluster.actor('nginx')?.context.pushed != null, 15_000);
}, 30_000);

afterAll(async () => {
  await cluster?.close();
  for (const ip of [...pods.keys()]) await stopPod(ip);
});

/** client sends requests one after another on one keep-alive connection until `stop`, never retrying. */
async function client(stop: () => boolean, counts: { ok: number; failed: number }): Promise<void> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  while (!stop()) {
    const body = await new Promise<string | null>((resolve) => {
      const req = request(
        { host: '127.0.0.1', port: cluster.httpPort, path: '/', headers: { host: 'roll.example.com' }, agent },
        (res) => {
          let text = '';
          res.on('data', (c: Buffer) => (text += c.toString()));
          res.on('end', () => resolve(res.statusCode === 200 ? text : null));
        },
      );
      req.on('error', () => resolve(null));
      req.end();
    });
    if (body === null) counts.failed++;
    else {
      counts.ok++;
      answered.add(body);
    }
  }
  agent.destroy();
}

it('rolls a Service 4 times under keep-alive load: 0 failed requests, 0 reloads, every pod answered', async () => {
  await waitFor('nginx to be done reloading', () => nginxSettled(cluster.actor('nginx')));
  const before = reloads();
  const counts = { ok: 0, failed: 0 };
  let done = false;
  const load = Promise.all(Array.from({ length: CLIENTS }, () => client(() => done, counts)));
  let live = ['127.0.0.2', '127.0.0.3', '127.0.0.4'];
  let next = 5;
  const expected = new Set(live);
  for (let roll = 0; roll < ROLLS; roll++) {
    for (let i = 0; i < 3; i++) {
      const old = live[0]!;
      const fresh = `127.0.0.${next++}`;
      expected.add(fresh);
      await startPod(fresh);
      // maxSurge 1: the new pod is ready beside the old ones.
      await cluster.apply(slice([...live.map((ip) => [ip, 'ready'] as [string, Condition]), [fresh, 'ready']]));
      await pause(300);
      // The old pod terminates: still serving, no longer ready (its preStop wait).
      live = [...live.slice(1), fresh];
      await cluster.apply(slice([[old, 'terminating'], ...live.map((ip) => [ip, 'ready'] as [string, Condition])]));
      await pause(300);
      await cluster.apply(slice(live.map((ip) => [ip, 'ready'] as [string, Condition])));
      await pause(200);
      await stopPod(old);
    }
  }
  await pause(300);
  done = true;
  await load;
  expect(counts.failed).toBe(0);
  expect(counts.ok).toBeGreaterThan(100);
  expect(reloads() - before).toBe(0);
  expect([...expected].filter((ip) => !answered.has(ip))).toEqual([]);
  expect(Number(cluster.actor('nginx')?.context.pushesOk)).toBeGreaterThan(ROLLS * 3);
}, 120_000);
