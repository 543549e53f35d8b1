/**
 * What tracing costs (issue 33): two controllers side by side, each in its own process as in production, the same
 * Ingress and backend, one with enable-opentelemetry and otel-sampler AlwaysOn (every request a span, exported to a
 * collector) and one without; autocannon through each nginx in interleaved rounds (the order flips every round),
 * requests/s compared. The backend is a stock nginx answering 200 itself, and the collector a stock nginx answering
 * 200 to POST /v1/traces. Then the controller's CPU per 1,000 spans exported, with a controller in this process: its
 * periodic drain paused, a fixed number of requests leaves their spans in nginx, and process.cpuUsage is taken around
 * draining, turning them into spans and exporting them (OTLP/HTTP protobuf) until the collector accepted them all.
 */
import autocannon from 'autocannon';
import { startStaticNginx, timeInLuaWorker } from './bare-nginx.js';
import { startCluster, waitFor, type Cluster } from '../test/support/cluster.js';
import { startChildController } from './child-controller.js';
import { ingress, ingressClass, serviceWithEndpoints } from '../test/support/manifests.js';
import { get } from '../test/support/net.js';

const HOST = 'tracing.bench';
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 6);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 4);
const CPU_REQUESTS = Number(process.env.BENCH_CPU_REQUESTS ?? 20_000);
const CONNECTIONS = 16;

/** load runs autocannon through nginx on `port` for SECONDS (or `amount` requests); its result. */
function load(port: number, amount?: number): Promise<autocannon.Result> {
  return new Promise<autocannon.Result>((resolve, reject) => {
    autocannon(
      {
        url: `http://127.0.0.1:${port}/bench`,
        headers: { host: HOST },
        connections: CONNECTIONS,
        ...(amount ? { amount } : { duration: SECONDS }),
      },
      (err, r) => (err ? reject(err) : resolve(r)),
    );
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * exportCpu sends `requests` requests with the periodic drain paused, waits for nginx's workers to hand the spans over,
 * then drains and exports them by hand: the controller's CPU ms and the spans the collector accepted.
 */
async function exportCpu(cluster: Cluster, requests: number): Promise<{ cpuMs: number; spans: number }> {
  const spans = cluster.controller.spans!;
  spans.pause();
  await load(cluster.httpPort, requests);
  await sleep(1_500); // each worker's last second handed over
  const exported = spans.exportedTotal;
  // the load's own garbage (autocannon runs in this process) is collected first, not counted as the export's
  (globalThis as { gc?: () => void }).gc?.();
  const before = process.cpuUsage();
  for (let idle = 0; idle < 3; ) {
    await spans.tick();
    if (spans.queued === 0 && !spans.busy) idle++;
    else idle = 0;
    await sleep(20);
  }
  const used = process.cpuUsage(before);
  spans.start();
  return { cpuMs: (used.user + used.system) / 1000, spans: spans.exportedTotal - exported };
}

/**
 * perCall times tracing.rewrite() and tracing.log() together inside a real nginx worker (a content handler running
 * them 20,000 times with a request's variables, as the two phases would, a sampled span each): the Lua side of the
 * cost without the machine's noise. Each run is a second apart, so the worker's timer has handed its spans over.
 */
function perCall(): Promise<string> {
  return timeInLuaWorker({
    http: `    lua_shared_dict ia_spans 64m;
    init_worker_by_lua_block { require("ingress_actors.tracing").init_worker(1, false) }`,
    server: `        set $ia_host "tracing.bench";
        set $ia_otel "";
        set $ia_traceparent "";
        set $ia_tracestate "";`,
    lua: `                local tracing, n, var = require("ingress_actors.tracing"), 20000, ngx.var
                ngx.update_time()
                local t0 = ngx.now()
                for _ = 1, n do
                    var.ia_otel = "trust"
                    tracing.rewrite()
                    tracing.log()
                end
                ngx.update_time()
                ngx.say((ngx.now() - t0) / n * 1e6)`,
    gapMs: 1_200,
    path: '/api/items?page=2',
    headers: { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', tracestate: 'rojo=1' },
  });
}

/** runTracing prints requests/s with tracing (100 % sampled) and without, and the controller's CPU per 1,000 spans. */
export async function runTracing(): Promise<void> {
  if (process.env.BENCH_LUA_ONLY) {
    console.log(`bench tracing: tracing.rewrite() + log() in a worker: ${await perCall()} us per request (5 runs)`);
    return;
  }
  // the collector too: 200 to POST /v1/traces, its body discarded
  const backend = await startStaticNginx('        location = /v1/traces { client_max_body_size 64m; return 200; }\n');
  const scene = (tracing: boolean) => [
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'ingress-config', namespace: 'default' },
      data: tracing
        ? {
            'enable-opentelemetry': 'true',
            'otel-sampler': 'AlwaysOn',
            'otlp-collector-host': '127.0.0.2',
            'otlp-collector-port': String(backend.port),
            'otel-max-queuesize': '65536',
            'otel-schedule-delay-millis': '1000',
          }
        : {},
    },
    ingressClass(),
    ...serviceWithEndpoints('bench', [{ ip: '127.0.0.2', port: backend.port }]),
    ingress('bench', { [HOST]: [{ path: '/', service: 'bench' }] }),
  ];
  const flags = ['--configmap', 'default/ingress-config'];
  const on = await startChildController(scene(true), flags);
  const off = await startChildController(scene(false), flags);
  const rates = { on: [] as number[], off: [] as number[] };
  const failures = { on: 0, off: 0 };
  let cpuCluster: Cluster | null = null;
  try {
    for (const c of [on, off])
      await waitFor(
        'the bench Ingress served',
        async () =>
          (await get({ host: HOST, path: '/', port: c.httpPort }).catch(() => ({ status: 0 }))).status === 200,
        30_000,
      );
    await Promise.all([load(on.httpPort), load(off.httpPort)]); // warm both (JIT, connections)
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? (['on', 'off'] as const) : (['off', 'on'] as const);
      for (const mode of order) {
        const r = await load(mode === 'on' ? on.httpPort : off.httpPort);
        rates[mode].push(r.requests.average);
        failures[mode] += r.errors + r.non2xx;
      }
    }
    await on.close();
    await off.close();
    cpuCluster = await startCluster(scene(true), flags);
    const cluster = cpuCluster;
    await waitFor(
      'the bench Ingress served',
      async () =>
        (await get({ host: HOST, path: '/', port: cluster.httpPort }).catch(() => ({ status: 0 }))).status === 200,
      30_000,
    );
    await load(cluster.httpPort, CPU_REQUESTS); // warm the export path
    await sleep(3_000);
    const cpu = [await exportCpu(cluster, CPU_REQUESTS), await exportCpu(cluster, CPU_REQUESTS)];
    const dropped = (await cluster.controller.metrics.render())
      .split('\n')
      .filter((l) => l.startsWith('ingress_actors_spans_dropped_total'))
      .map((l) => l.replace(/,?controller_[a-z]+="[^"]*"/g, ''))
      .join('; ');
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    const ratios = rates.on.map((r, i) => r / rates.off[i]!);
    console.log(
      `bench tracing: ${ROUNDS} rounds of ${SECONDS} s, ${CONNECTIONS} connections, interleaved; requests/s ` +
        `traced ${mean(rates.on).toFixed(0)} [${rates.on.map((r) => r.toFixed(0)).join(' ')}], untraced ` +
        `${mean(rates.off).toFixed(0)} [${rates.off.map((r) => r.toFixed(0)).join(' ')}]; ratio ` +
        `${(mean(rates.on) / mean(rates.off)).toFixed(3)} (per round ${ratios.map((r) => r.toFixed(2)).join(' ')}; ` +
        `target >= 0.85); controller CPU to drain and export ${cpu
          .map((c) => `${c.cpuMs.toFixed(0)} ms for ${c.spans} spans = ${((c.cpuMs / c.spans) * 1000).toFixed(1)} ms`)
          .join(', ')} per 1,000 spans; failed requests traced ${failures.on}, untraced ${failures.off}; ` +
        `dropped: ${dropped || 'none'}; tracing.rewrite() + log() in a worker: ${await perCall()} us per request ` +
        '(5 runs)',
    );
  } finally {
    await on.close().catch(() => {});
    await off.close().catch(() => {});
    await cpuCluster?.close();
    await backend.close();
  }
}
