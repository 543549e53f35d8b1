/**
 * Issue 16's acceptance: after kill -9 of the nginx master, /healthz turns 200 again only once the
 * new master holds its Lua balancer tables. A new master serves 503 for every backend until its
 * first push, so a replica that reported ready earlier would take traffic it cannot serve. From the
 * kill, /healthz is polled until it has failed and then answers 200; from that answer on, every
 * request to the app (keep-alive clients that never retry, and fresh connections) must succeed.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ingress, ingressClass, serviceWithEndpoints } from '../support/manifests.js';
import { get, startBackend, type Backend } from '../support/net.js';
import { nginxSettled, startCluster, waitFor, type Cluster } from '../support/cluster.js';
import { healthz, startLoad } from '../support/rollout.js';

const CYCLES = 5;
let cluster: Cluster;
let backend: Backend;

const request = () => get({ host: 'crash.example.com', path: '/', port: cluster.httpPort });
const nginx = () => cluster.actor('nginx');

beforeAll(async () => {
  backend = await startBackend('app');
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

it('turns /healthz 200 after kill -9 only with the tables pushed: every request from then on succeeds', async () => {
  for (let cycle = 0; cycle < CYCLES; cycle++) {
    await waitFor('nginx settled', () => nginxSettled(nginx()));
    await waitFor('/healthz 200', async () => (await healthz(cluster.healthzPort)).status === 200);
    const load = startLoad({ port: cluster.httpPort, host: 'crash.example.com', clients: 6 });
    const old = nginx()?.context.pid as number;
    process.kill(old, 'SIGKILL');
    // Until the controller has seen the death, /healthz may still say 200; after a failure, the first 200 counts.
    const seen: string[] = [];
    let failed = false;
    let healthy = Number.NaN;
    await waitFor(
      `cycle ${cycle}: /healthz to fail and then answer 200`,
      async () => {
        const answer = await healthz(cluster.healthzPort);
        if (answer.status !== 200) failed = true;
        else if (failed) healthy = performance.now();
        const line = `${answer.status} ${answer.body.trim().split('\n')[0]}`;
        if (seen.at(-1) !== line) seen.push(line);
        return Number.isFinite(healthy);
      },
      15_000,
      5,
    );
    // At that first 200, the new master holds the tables the controller would push now.
    const context = nginx()?.context as Record<string, unknown>;
    expect(context.pid).not.toBe(old);
    expect(context.pushed).not.toBeNull();
    expect(JSON.stringify(context.pushed)).toBe(JSON.stringify(context.tables));
    // A burst on fresh connections (what a load balancer sends a replica it just found ready), then more load.
    const burst = await Promise.all(Array.from({ length: 20 }, () => request().catch((e: Error) => e.message)));
    // The clients keep going a little longer on their new connections.
    await new Promise((r) => setTimeout(r, 300));
    const result = await load.stop();
    const late = result.failures.filter((f) => f.started >= healthy);
    const early = result.failures.filter((f) => f.started < healthy);
    console.log(
      `cycle ${cycle}: /healthz went ${seen.join(' → ')}; before its 200 the clients saw ${early.length} failures ` +
        `(${[...new Set(early.map((f) => f.what.replace(/\s+/g, ' ').slice(0, 24)))].join(', ')}), after it ${late.length}`,
    );
    expect(late).toEqual([]);
    expect(burst.filter((reply) => typeof reply === 'string' || reply.backend !== 'app')).toEqual([]);
  }
}, 90_000);
