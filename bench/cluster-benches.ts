/**
 * Benchmarks through the whole controller (test API server, actors, real nginx on loopback):
 * event to route (3), bursts (4), traffic during reloads (5) and the controller's footprint (6).
 * Event to route and footprint run the controller in its own process, as in production; the
 * others keep it in this one, where its actors can be read directly.
 */
import autocannon from 'autocannon';
import { startChildController, type ChildController } from './child-controller.js';
import { attribute, summarize, type Phases } from './event-phases.js';
import { cpuMeter, groupPssBytes, mb, rssBytes } from './proc.js';
import { ingress, ingressClass, serviceWithEndpoints } from '../test/support/manifests.js';
import { get, startBackend } from '../test/support/net.js';
import { startCluster, waitFor, type Cluster } from '../test/support/cluster.js';

/** Changeable is what the benchmarks need of a controller under test, in this process or its own. */
interface Changeable {
  readonly httpPort: number;
  rawPatch(path: string, body: object): Promise<number>;
  close(): Promise<void>;
}

/** withController runs `run` on a controller that serves Ingress `web` (bench.local → a), with backends a and b. */
async function withController<C extends Changeable, T>(start: (seed: object[]) => Promise<C>, run: (c: C) => Promise<T>): Promise<T> {
  const backends = [await startBackend('a'), await startBackend('b')];
  const c = await start([
    ingressClass(), ...serviceWithEndpoints('a', [{ port: backends[0]!.port }]), ...serviceWithEndpoints('b', [{ port: backends[1]!.port }]),
    ingress('web', { 'bench.local': [{ path: '/', service: 'a' }] }),
  ]);
  try {
    await waitFor('first route', async () => (await get({ host: 'bench.local', path: '/', port: c.httpPort })).backend === 'a', 15_000);
    return await run(c);
  } finally {
    await c.close();
    await Promise.all(backends.map((b) => b.close()));
  }
}

/** withCluster: the controller in this process, its actors in reach. */
const withCluster = <T>(rateLimit: string, run: (c: Cluster) => Promise<T>) => withController((seed) => startCluster(seed, ['--sync-rate-limit', rateLimit]), run);

/** withChild: the controller in a process of its own, seen through its log lines and /proc. */
const withChild = <T>(rateLimit: string, run: (c: ChildController) => Promise<T>) => withController((seed) => startChildController(seed, ['--sync-rate-limit', rateLimit]), run);

const switchTo = (c: Changeable, path: string, service: string) =>
  c.rawPatch('/apis/networking.k8s.io/v1/namespaces/default/ingresses/web', {
    spec: { rules: [{ host: 'bench.local', http: { paths: [{ path, pathType: 'Prefix', backend: { service: { name: service, port: { number: 80 } } } }] } }] },
  });

/** burst sends `changes` patches, 50 at a time, the last one to b on /b<changes>; the time until the last is served. */
async function burst(c: Changeable, changes: number): Promise<{ burstMs: number; convergeMs: number }> {
  const started = performance.now();
  for (let i = 1; i < changes; i += 50) await Promise.all(Array.from({ length: Math.min(50, changes - i) }, (_, k) => switchTo(c, `/b${i + k}`, 'a')));
  await switchTo(c, `/b${changes}`, 'b');
  const burstMs = performance.now() - started;
  await waitFor('converged', async () => (await get({ host: 'bench.local', path: `/b${changes}`, port: c.httpPort })).backend === 'b', 30_000, 5);
  return { burstMs, convergeMs: performance.now() - started };
}

const reloads = (c: ChildController) => c.logs.filter((l) => l.msg === 'nginx reloaded').length;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * runEventToRoute: API change → first request that reaches the new backend, p50/p99 over 50
 * changes, split into phases by the controller's own log lines (see event-phases.ts).
 */
export async function runEventToRoute(changes = 50): Promise<void> {
  await withChild('100', async (c) => {
    const samples: Phases[] = [];
    const [syncsBefore, reloadsBefore] = [c.logs.filter((l) => l.msg === 'sync done').length, reloads(c)];
    for (let i = 1; i <= changes; i++) {
      const [path, backend] = [`/r${i}`, i % 2 ? 'b' : 'a'];
      const written = Date.now();
      await switchTo(c, path, backend);
      await waitFor('routed', async () => (await get({ host: 'bench.local', path, port: c.httpPort })).backend === backend, 10_000, 2);
      const routed = Date.now();
      samples.push((await waitFor('the sync and reload log lines', () => attribute(c.logs, written, routed), 5000, 5))!);
    }
    const syncs = c.logs.filter((l) => l.msg === 'sync done').length - syncsBefore;
    console.log(`bench event-to-route: changes=${changes} ${summarize(samples)} syncs=${syncs} reloads=${reloads(c) - reloadsBefore}`);
  });
}

/** runBursts: 1,000 changes in about 1 s → how many reloads, and the time until the last state is served. */
export async function runBursts(changes = 1000): Promise<void> {
  await withCluster('0.3', async (c) => {
    const nginx = () => c.actor('nginx')!.context as { reloadsOk: number };
    const before = nginx().reloadsOk;
    const cpuBefore = process.cpuUsage();
    const { burstMs, convergeMs } = await burst(c, changes);
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

/** nginxPgid: nginx's master leads its own process group; the last one the controller started. */
const nginxPgid = (c: ChildController) => Number(c.logs.findLast((l) => l.msg === 'nginx master started')?.pid);

/**
 * runFootprint: the controller process's RSS and CPU, idle for 5 s, then during bench 4's burst
 * (1,000 changes) until the last change is served. nginx (master and workers) is reported apart.
 */
export async function runFootprint(changes = 1000): Promise<void> {
  await withChild('0.3', async (c) => {
    await sleep(1000);
    const idleCpu = cpuMeter(c.pid);
    await sleep(5000);
    const idle = { cpu: idleCpu(), rss: rssBytes(c.pid), nginx: groupPssBytes(nginxPgid(c)) };
    const before = reloads(c);
    const peak = { rss: 0, nginx: 0 };
    // RSS moves during the burst: keep the highest sample.
    const sample = () => {
      peak.rss = Math.max(peak.rss, rssBytes(c.pid));
      peak.nginx = Math.max(peak.nginx, groupPssBytes(nginxPgid(c)));
    };
    const sampler = setInterval(sample, 100);
    const burstCpu = cpuMeter(c.pid);
    const { convergeMs } = await burst(c, changes);
    const cpu = burstCpu();
    clearInterval(sampler);
    sample();
    console.log(
      `bench footprint: idle_rss_mb=${mb(idle.rss)} idle_cpu_pct=${idle.cpu.toFixed(2)} burst_rss_mb=${mb(peak.rss)} burst_cpu_pct=${cpu.toFixed(1)} ` +
        `burst_reloads=${reloads(c) - before} burst_converge_ms=${convergeMs.toFixed(0)} nginx_idle_pss_mb=${mb(idle.nginx)} nginx_burst_pss_mb=${mb(peak.nginx)}`,
    );
  });
}
