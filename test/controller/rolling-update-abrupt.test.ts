/**
 * Issue 16's acceptance, pods killed: the rolling update of rolling-update.test.ts, but each old pod
 * dies with no preStop (its listener and open connections closed at once, answered or not), and
 * only some tens of ms later, as the endpoints controller would, its endpoint leaves the slice.
 *
 * What nginx makes of a request that meets the dead pod while it is still listed: a refused
 * connection, a reset cached keep-alive connection, and a GET already sent whose connection closed
 * before any answer are all `error` for proxy_next_upstream (`error timeout`, 3 tries), and the
 * balancer hands the retry an untried peer; nginx gives up only once it has passed part of the
 * answer on, or on a non-idempotent request. These clients send GETs and each pod writes its whole
 * answer at once, so no request should fail: the test asserts that, prints the counts, and checks
 * from nginx's access log that requests did meet dead pods (the retries), so the window was there.
 * The second test pins the in-flight case down with a pod that holds its requests: a GET it had
 * received when it died is answered by the other pod, a POST is not (502).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ingress } from '../support/manifests.js';
import { freePort, get } from '../support/net.js';
import { nginxSettled, waitFor, type Cluster } from '../support/cluster.js';
import {
  nginxProcesses,
  podAddress,
  Pods,
  pushedPeers,
  service,
  SliceWriter,
  startLoad,
  startRollout,
} from '../support/rollout.js';

const ROLLS = 20;
const REPLICAS = 3;
const CLIENTS = 6;
/** how long after the pod died its endpoint leaves the slice (the endpoints controller's lag) */
const ENDPOINTS_LAG_MS = 30;
const UPSTREAM = 'default_kill_80';

let cluster: Cluster;
let port: number;
let slice: SliceWriter;
const pods = new Pods();

const reloads = () => Number(cluster.actor('nginx')?.context.reloadsOk ?? 0);
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** retriedRequests counts the access log's requests to the upstream that nginx passed to more than one peer. */
async function retriedRequests(): Promise<number> {
  const log = await readFile(join(cluster.dir, 'nginx', 'logs', 'access.log'), 'utf8');
  // upstreaminfo: … [$proxy_upstream_name] [$proxy_alternative_upstream_name] $upstream_addr …
  const peers = new RegExp(`\\[${UPSTREAM}\\] \\[[^\\]]*\\] ((?:\\S+, )*\\S+) `);
  return log.split('\n').filter((line) => (peers.exec(line)?.[1] ?? '').includes(', ')).length;
}

beforeAll(async () => {
  ({ cluster, slice, port } = await startRollout(pods, 'kill', 'kill.example.com', REPLICAS));
}, 30_000);

afterAll(async () => {
  await cluster?.close();
  await pods.stopAll();
});

it('rolls a Service 20 times killing each old pod: no failed request, 0 reloads, every pod answered', async () => {
  await waitFor('nginx to be done reloading', () => nginxSettled(cluster.actor('nginx')));
  const reloadsBefore = reloads();
  const processes = nginxProcesses(cluster);
  const retriedBefore = await retriedRequests();
  const load = startLoad({ port: cluster.httpPort, host: 'kill.example.com', clients: CLIENTS });
  const live = Array.from({ length: REPLICAS }, (_, n) => podAddress(n));
  const expected = new Set(live.map((ip) => `${ip}:${port}`));
  // From each kill until nginx's table no longer lists the dead pod.
  const listedDead: { from: number; to: number }[] = [];
  for (let step = 0; step < ROLLS * REPLICAS; step++) {
    const fresh = podAddress(REPLICAS + step);
    await pods.start(fresh, port);
    expected.add(`${fresh}:${port}`);
    await slice.set(fresh, 'ready');
    await waitFor(`nginx to balance to ${fresh}`, () => pushedPeers(cluster, UPSTREAM).includes(`${fresh}:${port}`));
    const old = live.shift()!;
    live.push(fresh);
    const from = performance.now();
    pods.kill(old, port);
    await pause(ENDPOINTS_LAG_MS);
    await slice.delete(old);
    await waitFor(`nginx to drop ${old}`, () => !pushedPeers(cluster, UPSTREAM).includes(`${old}:${port}`));
    listedDead.push({ from, to: performance.now() });
  }
  const result = await load.stop();
  const retried = (await retriedRequests()) - retriedBefore;
  const listedMs = listedDead.reduce((sum, w) => sum + (w.to - w.from), 0);
  const outside = result.failures.filter((f) => !listedDead.some((w) => f.ended >= w.from && f.started <= w.to));
  console.log(
    `abrupt kills: ${listedDead.length} pods killed, dead pods listed ${Math.round(listedMs)} ms in all, ` +
      `${result.ok} requests answered, ${result.failures.length} failed (${outside.length} outside those windows), ` +
      `${retried} retried by nginx on another peer; failures: ${JSON.stringify(result.failures.map((f) => f.what))}`,
  );
  expect(outside).toEqual([]);
  expect(result.failures).toEqual([]);
  // Requests did meet dead pods: nginx passed them on to a live one.
  expect(retried).toBeGreaterThan(0);
  expect(reloads() - reloadsBefore).toBe(0);
  expect(nginxProcesses(cluster)).toEqual(processes);
  expect([...expected].filter((pod) => !result.answeredBy.has(pod))).toEqual([]);
}, 90_000);

it('retries a GET the pod had received when it died on another peer, and not a POST', async () => {
  // Two pods of their own Service: one that holds every request, and one that answers.
  const heldPort = await freePort();
  const [holder, answerer] = [podAddress(250), podAddress(251)];
  const held = new SliceWriter({ apply: (o) => cluster.apply(o) }, 'held', heldPort);
  let received = 0;
  const startHolder = () => pods.start(holder, heldPort, () => void received++);
  await pods.start(answerer, heldPort);
  await cluster.apply(service('held', heldPort));
  await held.set(answerer, 'ready');
  await cluster.apply(ingress('held', { 'held.example.com': [{ path: '/', service: 'held' }] }));
  await waitFor('the route served', async () => (await send('GET')).status === 200, 15_000);
  await startHolder();
  await held.set(holder, 'ready');
  await waitFor('nginx to balance to both pods', () => pushedPeers(cluster, 'default_held_80').length === 2);

  for (const [method, status, body] of [
    ['GET', 200, `${answerer}:${heldPort}`],
    ['POST', 502, undefined],
  ] as const) {
    // Round robin: within a few requests one goes to the holder and waits there.
    let pending: Promise<{ status: number; body: string }> | undefined;
    const before = received;
    for (let i = 0; i < 20 && pending === undefined; i++) {
      let settled = false;
      const reply = send(method).finally(() => (settled = true));
      await waitFor(`the ${method} answered or held`, () => settled || received > before, 5_000);
      if (received > before) pending = reply;
    }
    expect(pending, `a ${method} reached the holder`).toBeDefined();
    pods.kill(holder, heldPort);
    const reply = await pending!;
    expect(reply.status).toBe(status);
    if (body) expect(reply.body).toBe(body);
    await startHolder();
  }
});

const send = (method: string) =>
  get({ host: 'held.example.com', path: '/', port: cluster.httpPort, method }).then((r) => ({
    status: r.status,
    body: r.body,
  }));
