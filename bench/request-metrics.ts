/**
 * What counting requests costs (issue 18): two controllers side by side, the same Ingress and backend, one with request
 * metrics (the default) and one with `--enable-metrics=false`; autocannon through each nginx in interleaved rounds
 * (the order flips every round), requests/s compared. The backend is a stock nginx answering 200 itself, so the figure
 * is nginx's proxying with and without the Lua monitor, not a Node backend's. Then the controller's CPU for /metrics:
 * process.cpuUsage around a scrape that drains what nginx counted since the last one, per 1,000 requests counted.
 */
import autocannon from 'autocannon';
import { startStaticNginx, timeInLuaWorker } from './bare-nginx.js';
import { startCluster, waitFor, type Cluster } from '../test/support/cluster.js';
import { ingress, ingressClass, serviceWithEndpoints } from '../test/support/manifests.js';
import { get } from '../test/support/net.js';

const HOST = 'metrics.bench';
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 6);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 4);
const CONNECTIONS = 16;

/** load runs autocannon through nginx on `port` for SECONDS; its result and its failed requests by error code. */
async function load(port: number): Promise<{ result: autocannon.Result; codes: Map<string, number> }> {
  const codes = new Map<string, number>();
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const run = autocannon(
      {
        url: `http://127.0.0.1:${port}/bench`,
        headers: { host: HOST },
        connections: CONNECTIONS,
        duration: SECONDS,
      },
      (err, r) => (err ? reject(err) : resolve(r)),
    );
    run.on('reqError', (e: NodeJS.ErrnoException) =>
      codes.set(e.code ?? e.message, (codes.get(e.code ?? e.message) ?? 0) + 1),
    );
  });
  return { result, codes };
}

/**
 * perCall times monitor.log() itself inside a real nginx worker (a content handler calling it 200,000 times with the
 * request's variables, as the log phase would): the Lua side of the cost, without the machine's noise.
 */
function perCall(): Promise<string> {
  return timeInLuaWorker({
    http: `    lua_shared_dict ia_metrics 1m;
    init_by_lua_block { require("ingress_actors.monitor").configure(nil) }`,
    server: '        set $ia_host "metrics.bench";',
    lua: `                local monitor, n = require("ingress_actors.monitor"), 200000
                ngx.update_time()
                local t0 = ngx.now()
                for _ = 1, n do monitor.log() end
                ngx.update_time()
                ngx.say((ngx.now() - t0) / n * 1e6)`,
  });
}

/**
 * scrapeCpu scrapes the controller in-process as /metrics does (its sliced text), with no load running: its CPU ms
 * (user + system) and the requests the scrape's drain brought (the 10 s drains in between bring others, which this
 * leaves out of both).
 */
async function scrapeCpu(cluster: Cluster): Promise<{ cpuMs: number; requests: number }> {
  const drained = cluster.controller.requestMetrics?.drained ?? 0;
  const before = process.cpuUsage();
  await cluster.controller.metrics.render();
  const used = process.cpuUsage(before);
  return {
    cpuMs: (used.user + used.system) / 1000,
    requests: (cluster.controller.requestMetrics?.drained ?? 0) - drained,
  };
}

/** runRequestMetrics prints requests/s with request metrics on and off, and the controller's CPU per 1,000 requests. */
export async function runRequestMetrics(): Promise<void> {
  const backend = await startStaticNginx();
  const scene = [
    ingressClass(),
    ...serviceWithEndpoints('bench', [{ ip: '127.0.0.2', port: backend.port }]),
    ingress('bench', { [HOST]: [{ path: '/', service: 'bench' }] }),
  ];
  const on = await startCluster(scene);
  const off = await startCluster(scene, ['--enable-metrics=false']);
  try {
    for (const c of [on, off])
      await waitFor(
        'the bench Ingress served',
        async () =>
          (await get({ host: HOST, path: '/', port: c.httpPort }).catch(() => ({ status: 0 }))).status === 200,
        20_000,
      );
    await Promise.all([load(on.httpPort), load(off.httpPort)]); // warm both (JIT, connections)
    await scrapeCpu(on);
    const rates = { on: [] as number[], off: [] as number[] };
    const scrapes: { cpuMs: number; requests: number }[] = [];
    const failures = { on: 0, off: 0, codes: new Map<string, number>() };
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? (['on', 'off'] as const) : (['off', 'on'] as const);
      for (const mode of order) {
        const { result: r, codes } = await load(mode === 'on' ? on.httpPort : off.httpPort);
        rates[mode].push(r.requests.average);
        failures[mode] += r.errors + r.non2xx;
        for (const [code, n] of codes) failures.codes.set(code, (failures.codes.get(code) ?? 0) + n);
        if (mode === 'on') {
          await new Promise((resolve) => setTimeout(resolve, 1_200)); // the workers' last second handed over
          scrapes.push(await scrapeCpu(on));
        }
      }
    }
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    const ratios = rates.on.map((r, i) => r / rates.off[i]!);
    const cpu = scrapes.reduce((a, s) => a + s.cpuMs, 0);
    const requests = scrapes.reduce((a, s) => a + s.requests, 0);
    console.log(
      `bench request-metrics: ${ROUNDS} rounds of ${SECONDS} s, ${CONNECTIONS} connections, interleaved; requests/s ` +
        `on ${mean(rates.on).toFixed(0)} [${rates.on.map((r) => r.toFixed(0)).join(' ')}], off ` +
        `${mean(rates.off).toFixed(0)} [${rates.off.map((r) => r.toFixed(0)).join(' ')}]; ratio on/off ` +
        `${(mean(rates.on) / mean(rates.off)).toFixed(3)} (per round ${ratios.map((r) => r.toFixed(2)).join(' ')}; ` +
        `target >= 0.9); controller CPU at scrape ${cpu.toFixed(1)} ms for ${requests} requests = ` +
        `${((cpu / requests) * 1000).toFixed(3)} ms per 1,000 requests (${scrapes.length} scrapes, ` +
        `${(cpu / scrapes.length).toFixed(2)} ms each); failed requests on ${failures.on}, off ${failures.off} ` +
        `(${[...failures.codes].map(([c, n]) => `${c}=${n}`).join(',')}); monitor.log() in a worker: ` +
        `${await perCall()} us per call (5 runs)`,
    );
  } finally {
    await on.close();
    await off.close();
    await backend.close();
  }
}
