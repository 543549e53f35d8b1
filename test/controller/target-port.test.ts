/**
 * Issue 16's acceptance: a Service's pods move to another target port. The pods open the new port,
 * the Service's targetPort changes, then its EndpointSlice's port (as the endpoints controller
 * rewrites it), and the old port closes. Under keep-alive clients that never retry, through the real
 * controller at default flags: nginx serves the new port without a reload (the same workers), no
 * request fails, and once the old port is closed every answer comes from the new one.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ingress, ingressClass } from '../support/manifests.js';
import { freePort, get } from '../support/net.js';
import { nginxSettled, startCluster, waitFor, type Cluster } from '../support/cluster.js';
import { nginxProcesses, podAddress, Pods, pushedPeers, service, SliceWriter, startLoad } from '../support/rollout.js';

const REPLICAS = 3;
const UPSTREAM = 'default_move_80';
const addresses = Array.from({ length: REPLICAS }, (_, n) => podAddress(n));

let cluster: Cluster;
let oldPort: number;
let newPort: number;
let slice: SliceWriter;
const pods = new Pods();

const reloads = () => Number(cluster.actor('nginx')?.context.reloadsOk ?? 0);
const peers = (port: number) => addresses.map((ip) => `${ip}:${port}`);

beforeAll(async () => {
  [oldPort, newPort] = [await freePort(), await freePort()];
  slice = new SliceWriter({ apply: (o) => cluster.apply(o) }, 'move', oldPort);
  for (const ip of addresses) {
    await pods.start(ip, oldPort);
    slice.seed(ip, 'ready');
  }
  cluster = await startCluster([
    ingressClass(),
    service('move', oldPort),
    slice.manifest(),
    ingress('move', { 'move.example.com': [{ path: '/', service: 'move' }] }),
  ]);
  await waitFor('the tables pushed', () => pushedPeers(cluster, UPSTREAM).length === REPLICAS, 15_000);
}, 30_000);

afterAll(async () => {
  await cluster?.close();
  await pods.stopAll();
});

it("serves a Service's pods on their new target port without a reload", async () => {
  await waitFor('nginx to be done reloading', () => nginxSettled(cluster.actor('nginx')));
  const reloadsBefore = reloads();
  const processes = nginxProcesses(cluster);
  const load = startLoad({ port: cluster.httpPort, host: 'move.example.com', clients: 6 });
  for (const ip of addresses) await pods.start(ip, newPort);
  await cluster.apply(service('move', newPort));
  slice.port = newPort;
  await slice.write();
  await waitFor('nginx to balance to the new port', () =>
    pushedPeers(cluster, UPSTREAM).every((peer) => peer.endsWith(`:${newPort}`)),
  );
  expect(pushedPeers(cluster, UPSTREAM).sort()).toEqual(peers(newPort).sort());
  for (const ip of addresses) await pods.stop(ip, oldPort);
  const during = await load.stop();

  // Old port closed: 30 requests, each worker's round robin cycling through the 3 pods, all on the new port.
  const answers: string[] = [];
  for (let i = 0; i < 30; i++) {
    const reply = await get({ host: 'move.example.com', path: '/', port: cluster.httpPort });
    answers.push(`${reply.status} ${reply.body}`);
  }
  console.log(
    `target port move: ${during.ok} requests answered during it, ${during.failures.length} failed, ` +
      `answers by pod ${JSON.stringify(Object.fromEntries(during.answeredBy))}`,
  );
  expect(during.failures).toEqual([]);
  // The clients ran across the switch: the old port answered them before it.
  expect(peers(oldPort).filter((peer) => during.answeredBy.has(peer)).length).toBeGreaterThan(0);
  expect(answers.filter((a) => !a.startsWith('200 ') || !a.endsWith(`:${newPort}`))).toEqual([]);
  expect(new Set(answers)).toEqual(new Set(peers(newPort).map((peer) => `200 ${peer}`)));
  expect(reloads() - reloadsBefore).toBe(0);
  expect(nginxProcesses(cluster)).toEqual(processes);
});
