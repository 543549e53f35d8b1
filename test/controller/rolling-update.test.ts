/**
 * Issue 16's acceptance: a Service of 3 pods (loopback addresses on one port) rolled 20 times as a
 * Deployment with maxSurge 1 and maxUnavailable 0 does it, under keep-alive clients that never retry,
 * through the real controller at default flags: no request fails, nginx never reloads (the same
 * workers serve throughout), every pod of every generation answers, and /healthz stays 200.
 *
 * Each step surges a new pod; once it is ready (here: once nginx balances to it) an old pod
 * terminates: its endpoint turns terminating at once, it serves through a 5 s preStop wait, and then
 * it leaves the slice and stops. Terminating pods do not count against maxSurge, so the next step
 * starts while the old pod still waits: the 5 s waits overlap, as in a Deployment.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { nginxSettled, waitFor, type Cluster } from '../support/cluster.js';
import {
  nginxProcesses,
  podAddress,
  Pods,
  pushedPeers,
  type SliceWriter,
  startLoad,
  watchHealthz,
  startRollout,
} from '../support/rollout.js';

const ROLLS = 20;
const REPLICAS = 3;
const CLIENTS = 6;
const PRE_STOP_MS = 5_000;
const UPSTREAM = 'default_app_80';

let cluster: Cluster;
let port: number;
let slice: SliceWriter;
const pods = new Pods();

const reloads = () => Number(cluster.actor('nginx')?.context.reloadsOk ?? 0);
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

beforeAll(async () => {
  ({ cluster, slice, port } = await startRollout(pods, 'app', 'roll.example.com', REPLICAS));
}, 30_000);

afterAll(async () => {
  await cluster?.close();
  await pods.stopAll();
});

it('rolls a Service 20 times under keep-alive load: 0 failed requests, 0 reloads, every pod answered', async () => {
  await waitFor('nginx to be done reloading', () => nginxSettled(cluster.actor('nginx')));
  const reloadsBefore = reloads();
  const pushesBefore = Number(cluster.actor('nginx')?.context.pushesOk);
  const processes = nginxProcesses(cluster);
  const started = performance.now();
  const load = startLoad({ port: cluster.httpPort, host: 'roll.example.com', clients: CLIENTS });
  const health = watchHealthz(cluster.healthzPort);
  const live = Array.from({ length: REPLICAS }, (_, n) => podAddress(n));
  const expected = new Set(live.map((ip) => `${ip}:${port}`));
  const terminations: Promise<void>[] = [];
  const listedAtStop: string[] = [];
  for (let step = 0; step < ROLLS * REPLICAS; step++) {
    const fresh = podAddress(REPLICAS + step);
    await pods.start(fresh, port);
    expected.add(`${fresh}:${port}`);
    await slice.set(fresh, 'ready');
    // The Deployment takes an old pod down once the new one is available: here, once nginx balances to it.
    await waitFor(`nginx to balance to ${fresh}`, () => pushedPeers(cluster, UPSTREAM).includes(`${fresh}:${port}`));
    const old = live.shift()!;
    live.push(fresh);
    await slice.set(old, 'terminating');
    terminations.push(
      (async () => {
        await pause(PRE_STOP_MS);
        // A listed pod that stops costs refused connections, which nginx retries unseen: check the table itself.
        if (pushedPeers(cluster, UPSTREAM).includes(`${old}:${port}`)) listedAtStop.push(old);
        // The pod is about to stop: the endpoints controller drops it from the slice.
        await slice.delete(old);
        await pods.stop(old, port);
      })(),
    );
  }
  await Promise.all(terminations);
  const result = await load.stop();
  const healthz = await health.stop();
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  console.log(
    `rolling update: ${ROLLS} rolls in ${seconds} s, ${result.ok} requests answered, ` +
      `${result.failures.length} failed, ${Number(cluster.actor('nginx')?.context.pushesOk) - pushesBefore} pushes, ` +
      `${healthz.polls} /healthz polls`,
  );
  expect(result.failures).toEqual([]);
  expect(listedAtStop).toEqual([]);
  expect(reloads() - reloadsBefore).toBe(0);
  expect(nginxProcesses(cluster)).toEqual(processes);
  expect([...expected].filter((pod) => !result.answeredBy.has(pod))).toEqual([]);
  expect([...result.answeredBy.keys()].filter((pod) => !expected.has(pod))).toEqual([]);
  expect(healthz.bad).toEqual([]);
  expect(pushedPeers(cluster, UPSTREAM).sort()).toEqual(live.map((ip) => `${ip}:${port}`).sort());
}, 90_000);
