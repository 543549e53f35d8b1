/**
 * Benchmarks through the whole controller (test API server, actors, real nginx on loopback):
 * event to route (3), bursts (4), traffic during reloads (5) and the controller's footprint (6).
 */
import autocannon from 'autocannon';
import { buildModel, defaultBuildOptions } from '../src/model/build.js';
import { loadTemplate } from '../src/render/load.js';
import { render } from '../src/render/render.js';
import { issueCertificate } from '../src/tls/issue.js';
import { generateCluster } from './fixtures.js';
import { ingress, ingressClass, serviceWithEndpoints } from '../test/support/manifests.js';
import { get, startBackend } from '../test/support/net.js';
import { startCluster, waitFor, type Cluster } from '../test/support/cluster.js';

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;

async function withCluster<T>(rateLimit: string, run: (c: Cluster, ports: number[]) => Promise<T>): Promise<T> {
  const backends = [await startBackend('a'), await startBackend('b')];
  const cluster = await startCluster(
    [ingressClass(), ...serviceWithEndpoints('a', [{ port: backends[0]!.port }]), ...serviceWithEndpoints('b', [{ port: backends[1]!.port }]), ingress('web', { 'bench.local': [{ path: '/', service: 'a' }] })],
    ['--sync-rate-limit', rateLimit],
  );
  try {
    await waitFor('first route', async () => (await get({ host: 'bench.local', path: '/', port: cluster.httpPort })).backend === 'a', 15_000);
    return await run(cluster, backends.map((b) => b.port));
  } finally {
    await cluster.close();
    await Promise.all(backends.map((b) => b.close()));
  }
}

const switchTo = (c: Cluster, path: string, service: string) =>
  c.rawPatch('/apis/networking.k8s.io/v1/namespaces/default/ingresses/web', {
    spec: { rules: [{ host: 'bench.local', http: { paths: [{ path, pathType: 'Prefix', backend: { service: { name: service, port: { number: 80 } } } }] } }] },
  });

/** runEventToRoute: API change → first request that reaches the new backend, p50/p99 over 50 changes. */
export async function runEventToRoute(changes = 50): Promise<void> {
  await withCluster('100', async (c) => {
    const latencies: number[] = [];
    for (let i = 1; i <= changes; i++) {
      const path = `/r${i}`;
      const started = performance.now();
      await switchTo(c, path, i % 2 ? 'b' : 'a');
      await waitFor('routed', async () => (await get({ host: 'bench.local', path, port: c.httpPort })).backend === (i % 2 ? 'b' : 'a'), 10_000, 2);
      latencies.push(performance.now() - started);
    }
    const sync = c.actor('syncQueue')!.context as { syncsCompleted: number };
    console.log(`bench event-to-route: changes=${changes} p50_ms=${pct(latencies, 50).toFixed(0)} p99_ms=${pct(latencies, 99).toFixed(0)} syncs=${sync.syncsCompleted} (debounce 100 ms of it)`);
  });
}

/** runBursts: 1,000 changes in about 1 s → how many reloads, and the time until the last state is served. */
export async function runBursts(changes = 1000): Promise<void> {
  await withCluster('0.3', async (c) => {
    const nginx = () => c.actor('nginx')!.context as { reloadsOk: number };
    const before = nginx().reloadsOk;
    const cpuBefore = process.cpuUsage();
    const started = performance.now();
    for (let i = 1; i < changes; i += 50) await Promise.all(Array.from({ length: Math.min(50, changes - i) }, (_, k) => switchTo(c, `/b${i + k}`, 'a')));
    await switchTo(c, `/b${changes}`, 'b');
    const burstMs = performance.now() - started;
    await waitFor('converged', async () => (await get({ host: 'bench.local', path: `/b${changes}`, port: c.httpPort })).backend === 'b', 30_000, 5);
    const convergeMs = performance.now() - started;
    const cpu = process.cpuUsage(cpuBefore);
    console.log(
      `bench bursts: changes=${changes} burst_ms=${burstMs.toFixed(0)} reloads=${nginx().reloadsOk - before} converge_ms=${convergeMs.toFixed(0)} ` +
        `process_cpu_ms=${((cpu.user + cpu.system) / 1000).toFixed(0)} rss_mb=${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} (API server, client and controller in one process)`,
    );
  });
}

/** runTrafficDuringReloads: load through nginx while the controller reloads 50 times, against the same load without reloads. */
export async function runTrafficDuringReloads(reloads = 50): Promise<void> {
  await withCluster('100', async (c) => {
    const load = (seconds: number) =>
      autocannon({ url: `http://127.0.0.1:${c.httpPort}/`, headers: { host: 'bench.local' }, connections: 20, duration: seconds });
    const quiet = await load(5);
    const busyRun = load(10);
    const nginx = () => c.actor('nginx')!.context as { reloadsOk: number };
    const before = nginx().reloadsOk;
    for (let i = 0; i < reloads && nginx().reloadsOk - before < reloads; i++) {
      await switchTo(c, '/', i % 2 ? 'a' : 'b');
      await waitFor('reloaded', () => nginx().reloadsOk - before > i, 5000, 5);
    }
    const busy = await busyRun;
    const errors = (r: autocannon.Result) => `${r.errors + r.timeouts + r.non2xx}(errors=${r.errors},timeouts=${r.timeouts},non2xx=${r.non2xx})`;
    console.log(
      `bench traffic-during-reloads: reloads=${nginx().reloadsOk - before} requests=${busy.requests.total} errors=${errors(busy)} ` +
        `p99_ms=${busy.latency.p99} quiet_p99_ms=${quiet.latency.p99} p99_ratio=${(busy.latency.p99 / Math.max(1, quiet.latency.p99)).toFixed(2)} quiet_errors=${errors(quiet)}`,
    );
  });
}

/** runFootprint: the controller's RSS and CPU when idle (the whole process: API server and client included). */
export async function runFootprint(): Promise<void> {
  await withCluster('0.3', async () => {
    await new Promise((r) => setTimeout(r, 1000));
    const cpuBefore = process.cpuUsage();
    const t = performance.now();
    await new Promise((r) => setTimeout(r, 5000));
    const cpu = process.cpuUsage(cpuBefore);
    console.log(`bench footprint: idle_rss_mb=${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} idle_cpu_pct=${((100 * (cpu.user + cpu.system)) / 1000 / (performance.now() - t)).toFixed(2)}`);
  });
}
