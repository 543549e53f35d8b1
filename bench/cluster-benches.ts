/**
 * Benchmarks through the whole controller (test API server, actors, real nginx on loopback):
 * event to route (3), bursts (4), traffic during reloads (5) and the controller's footprint (6).
 * Event to route and footprint run the controller in its own process, as in production; the
 * others keep it in this one, where its actors can be read directly.
 */
import autocannon from 'autocannon';
import { startChildController, type ChildController } from './child-controller.js';
import { retryingLoad } from './retrying-load.js';
import { startBareNginx } from './bare-nginx.js';
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
async function withController<C extends Changeable, T>(
  start: (seed: object[]) => Promise<C>,
  run: (c: C) => Promise<T>,
): Promise<T> {
  const backends = [await startBackend('a'), await startBackend('b')];
  const c = await start([
    ingressClass(),
    ...serviceWithEndpoints('a', [{ port: backends[0]!.port }]),
    ...serviceWithEndpoints('b', [{ port: backends[1]!.port }]),
    ingress('web', { 'bench.local': [{ path: '/', service: 'a' }] }),
  ]);
  try {
    await waitFor(
      'first route',
      async () => (await get({ host: 'bench.local', path: '/', port: c.httpPort })).backend === 'a',
      15_000,
    );
    return await run(c);
  } finally {
    await c.close();
    await Promise.all(backends.map((b) => b.close()));
  }
}

/** withCluster: the controller in this process, its actors in reach. */
const withCluster = <T>(rateLimit: string, run: (c: Cluster) => Promise<T>) =>
  withController((seed) => startCluster(seed, ['--sync-rate-limit', rateLimit]), run);

/** withChild: the controller in a process of its own, seen through its log lines and /proc. */
const withChild = <T>(rateLimit: string, run: (c: ChildController) => Promise<T>) =>
  withController((seed) => startChildController(seed, ['--sync-rate-limit', rateLimit]), run);

const switchTo = (c: Changeable, path: string, service: string) =>
  c.rawPatch('/apis/networking.k8s.io/v1/namespaces/default/ingresses/web', {
    spec: {
      rules: [
        {
          host: 'bench.local',
          http: {
            paths: [{ path, pathType: 'Prefix', backend: { service: { name: service, port: { number: 80 } } } }],
          },
        },
      ],
    },
  });

/** burst sends `changes` patches, 50 at a time, the last one to b on /b<changes>; the time until the last is served. */
async function burst(c: Changeable, changes: number): Promise<{ burstMs: number; convergeMs: number }> {
  const started = performance.now();
  for (let i = 1; i < changes; i += 50)
    await Promise.all(Array.from({ length: Math.min(50, changes - i) }, (_, k) => switchTo(c, `/b${i + k}`, 'a')));
  await switchTo(c, `/b${changes}`, 'b');
  const burstMs = performance.now() - started;
  await waitFor(
    'converged',
    async () => (await get({ host: 'bench.local', path: `/b${changes}`, port: c.httpPort })).backend === 'b',
    30_000,
    5,
  );
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
      await waitFor(
        'routed',
        async () => (await get({ host: 'bench.local', path, port: c.httpPort })).backend === backend,
        10_000,
        2,
      );
      const routed = Date.now();
      samples.push(
        (await waitFor('the sync and reload log lines', () => attribute(c.logs, written, routed), 5000, 5))!,
      );
    }
    const syncs = c.logs.filter((l) => l.msg === 'sync done').length - syncsBefore;
    console.log(
      `bench event-to-route: changes=${changes} ${summarize(samples)}` +
        ` syncs=${syncs} reloads=${reloads(c) - reloadsBefore}`,
    );
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
      `bench bursts: changes=${changes} burst_ms=${burstMs.toFixed(0)} reloads=${nginx().reloadsOk - before} ` +
        `converge_ms=${convergeMs.toFixed(0)} process_cpu_ms=${((cpu.user + cpu.system) / 1000).toFixed(0)} rss_mb=` +
        `${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} (API server, client and controller in one process)`,
    );
  });
}

/** LoadRun is one autocannon run through nginx, with its failed requests tallied by error code. */
interface LoadRun {
  readonly result: autocannon.Result;
  readonly errorCodes: Map<string, number>;
}

const LOAD_CONNECTIONS = 20;

/**
 * load sends as many requests as 20 keep-alive connections carry for `seconds` to bench.local through nginx on `port`.
 */
async function load(port: number, seconds: number): Promise<LoadRun> {
  const errorCodes = new Map<string, number>();
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const run = autocannon(
      {
        url: `http://127.0.0.1:${port}/`,
        headers: { host: 'bench.local' },
        connections: LOAD_CONNECTIONS,
        duration: seconds,
      },
      (err, r) => (err ? reject(err) : resolve(r)),
    );
    run.on('reqError', (e: NodeJS.ErrnoException) =>
      errorCodes.set(e.code ?? e.message, (errorCodes.get(e.code ?? e.message) ?? 0) + 1),
    );
  });
  return { result, errorCodes };
}

const tally = (codes: ReadonlyMap<string, number>, extra = '') =>
  codes.size || extra
    ? `(${[...[...codes].map(([code, n]) => `${code}=${n}`), ...(extra ? [extra] : [])].join(',')})`
    : '';

const failed = ({ result: r, errorCodes }: LoadRun) =>
  `${r.errors + r.non2xx}${tally(errorCodes, r.non2xx ? `non2xx=${r.non2xx}` : '')}`;

/** Reloader makes nginx reload once per call and says how many reloads it has seen. */
interface Reloader {
  readonly port: number;
  reload(i: number): Promise<void>;
  reloads(): number;
}

/**
 * whileReloading reloads `count` times while `load` runs: the load's result, the reloads done and the mean time between
 * them.
 */
async function whileReloading<T>(
  r: Reloader,
  count: number,
  load: Promise<T>,
): Promise<{ result: T; reloads: number; paceMs: number }> {
  const [before, started] = [r.reloads(), performance.now()];
  for (let i = 0; i < count && r.reloads() - before < count; i++) await r.reload(i);
  const done = r.reloads() - before;
  return { paceMs: (performance.now() - started) / Math.max(1, done), result: await load, reloads: done };
}

/**
 * compare runs both clients through `r`'s nginx, quiet and then during `count` reloads, prints a line per client, and
 * returns the reload pace.
 */
async function compare(driver: string, r: Reloader, count: number): Promise<number> {
  const quiet = await load(r.port, 5);
  const busy = await whileReloading(r, count, load(r.port, 10));
  const p99 = (l: LoadRun) => l.result.latency.p99;
  console.log(
    `bench traffic-during-reloads: driver=${driver} client=autocannon reloads=${busy.reloads} requests=` +
      `${busy.result.result.requests.total} errors=${failed(busy.result)} ` +
      `p99_ms=${p99(busy.result)} quiet_p99_ms=${p99(quiet)} p99_ratio=` +
      `${(p99(busy.result) / Math.max(1, p99(quiet))).toFixed(2)} quiet_errors=${failed(quiet)}`,
  );
  const retryingQuiet = await retryingLoad(r.port, 'bench.local', LOAD_CONNECTIONS, 5);
  const retrying = await whileReloading(r, count, retryingLoad(r.port, 'bench.local', LOAD_CONNECTIONS, 10));
  const { result: busyRetrying } = retrying;
  console.log(
    `bench traffic-during-reloads: driver=${driver} client=retrying reloads=${retrying.reloads} requests=` +
      `${busyRetrying.requests} retried=${busyRetrying.retried} ` +
      `errors=${busyRetrying.errors}${tally(busyRetrying.errorCodes)} p99_ms=${busyRetrying.p99Ms.toFixed(1)} ` +
      `quiet_p99_ms=${retryingQuiet.p99Ms.toFixed(1)} ` +
      `p99_ratio=${(busyRetrying.p99Ms / retryingQuiet.p99Ms).toFixed(2)} quiet_errors=` +
      `${retryingQuiet.errors}${tally(retryingQuiet.errorCodes)}`,
  );
  return (busy.paceMs + retrying.paceMs) / 2;
}

/**
 * runTrafficDuringReloads: load through nginx while the controller, in its own process, reloads
 * it 50 times, against the same load without reloads. Two clients: autocannon, which never
 * retries, and one that retries a GET its reused keep-alive connection lost (retrying-load.ts).
 * Then the same against a stock nginx reloaded by SIGHUP at the controller's pace: nginx's floor.
 */
export async function runTrafficDuringReloads(reloadCount = 50): Promise<void> {
  const paceMs = await withChild('100', (c) =>
    compare(
      'controller',
      {
        port: c.httpPort,
        reloads: () => reloads(c),
        reload: async (i) => {
          const before = reloads(c);
          await switchTo(c, '/', i % 2 ? 'a' : 'b');
          await waitFor('reloaded', async () => reloads(c) > before, 5000, 5);
        },
      },
      reloadCount,
    ),
  );
  const backend = await startBackend('a');
  const nginx = await startBareNginx(backend.port);
  try {
    const pace = Math.round(paceMs);
    console.log(
      `bench traffic-during-reloads: stock nginx, minimal config, SIGHUP every ${pace} ms (the controller's pace)`,
    );
    let sent = 0;
    const reload = async () => {
      nginx.reload();
      sent++;
      await sleep(pace);
    };
    await compare('sighup', { port: nginx.httpPort, reloads: () => sent, reload }, reloadCount);
  } finally {
    await nginx.close();
    await backend.close();
  }
}

/** nginxPgid: nginx's master leads its own process group; the last one the controller started. */
const nginxPgid = (c: ChildController) => Number(c.logs.findLast((l) => l.msg === 'nginx master started')?.nginxPid);

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
      `bench footprint: idle_rss_mb=${mb(idle.rss)} idle_cpu_pct=${idle.cpu.toFixed(2)} burst_rss_mb=${mb(peak.rss)} ` +
        `burst_cpu_pct=${cpu.toFixed(1)} ` +
        `burst_reloads=${reloads(c) - before} burst_converge_ms=${convergeMs.toFixed(0)} nginx_idle_pss_mb=` +
        `${mb(idle.nginx)} nginx_burst_pss_mb=${mb(peak.nginx)}`,
    );
  });
}
