/**
 * What tracing costs (issue 33): two controllers side by side, each in its own process as in production, the same
 * Ingress and backend, one with enable-opentelemetry and otel-sampler AlwaysOn (every request a span, exported to a
 * collector) and one without; autocannon through each nginx in interleaved rounds (the order flips every round),
 * requests/s compared. The backend is a stock nginx answering 200 itself, and the collector a stock nginx answering
 * 200 to POST /v1/traces. The controllers' own CPU (from /proc) is taken around each of their rounds: the traced one's
 * per 1,000 requests, less the untraced one's (what a controller does anyway), is its CPU per 1,000 spans drained,
 * written and exported (OTLP/HTTP protobuf), on the same cores as nginx.
 */
import autocannon from 'autocannon';
import { startStaticNginx, timeInLuaWorker } from './bare-nginx.js';
import { readFile } from 'node:fs/promises';
import { waitFor } from '../test/support/cluster.js';
import { startChildController } from './child-controller.js';
import { ingress, ingressClass, serviceWithEndpoints } from '../test/support/manifests.js';
import { get } from '../test/support/net.js';

const HOST = 'tracing.bench';
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 6);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 4);
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

/** cpuMs is the CPU time (user and system) process `pid` has used, in milliseconds (Linux: /proc, 100 ticks a second) */
async function cpuMs(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** spanCounts reads the controller's span counters from its /metrics: exported, and dropped by reason */
async function spanCounts(port: number): Promise<{ exported: number; dropped: string }> {
  const text = (await get({ host: 'x', path: '/metrics', port })).body;
  const exported = /^ingress_actors_spans_exported_total(?:\{[^}]*\})? (\d+)/m.exec(text);
  const dropped = text
    .split('\n')
    .filter((l) => l.startsWith('ingress_actors_spans_dropped_total'))
    .map((l) => l.replace(/,?controller_[a-z]+="[^"]*"/g, ''))
    .join('; ');
  return { exported: Number(exported?.[1] ?? 0), dropped: dropped || 'none' };
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
  const requests = { on: 0, off: 0 };
  const controllerMs = { on: 0, off: 0 };
  try {
    for (const c of [on, off])
      await waitFor(
        'the bench Ingress served',
        async () =>
          (await get({ host: HOST, path: '/', port: c.httpPort }).catch(() => ({ status: 0 }))).status === 200,
        30_000,
      );
    // warm both (JIT, connections); the traced one's spans are exported too
    const [warm] = await Promise.all([load(on.httpPort), load(off.httpPort)]);
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? (['on', 'off'] as const) : (['off', 'on'] as const);
      for (const mode of order) {
        const controller = mode === 'on' ? on : off;
        const before = await cpuMs(controller.pid);
        const r = await load(controller.httpPort);
        await sleep(1_500); // the round's last spans drained and exported
        controllerMs[mode] += (await cpuMs(controller.pid)) - before;
        requests[mode] += r.requests.total;
        rates[mode].push(r.requests.average);
        failures[mode] += r.errors + r.non2xx;
      }
    }
    const spans = await spanCounts(on.healthzPort);
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    const ratios = rates.on.map((r, i) => r / rates.off[i]!);
    const perThousand = (mode: 'on' | 'off') => (controllerMs[mode] / requests[mode]) * 1000;
    console.log(
      `bench tracing: ${ROUNDS} rounds of ${SECONDS} s, ${CONNECTIONS} connections, interleaved; requests/s ` +
        `traced ${mean(rates.on).toFixed(0)} [${rates.on.map((r) => r.toFixed(0)).join(' ')}], untraced ` +
        `${mean(rates.off).toFixed(0)} [${rates.off.map((r) => r.toFixed(0)).join(' ')}]; ratio ` +
        `${(mean(rates.on) / mean(rates.off)).toFixed(3)} (per round ${ratios.map((r) => r.toFixed(2)).join(' ')}; ` +
        `target >= 0.85); controller CPU per 1,000 requests traced ${perThousand('on').toFixed(1)} ms, untraced ` +
        `${perThousand('off').toFixed(1)} ms: ${(perThousand('on') - perThousand('off')).toFixed(1)} ms per 1,000 spans; ` +
        `spans exported ${spans.exported} of ${requests.on + warm.requests.total} traced requests, dropped: ${spans.dropped}; failed ` +
        `requests traced ${failures.on}, untraced ${failures.off}; tracing.rewrite() + log() in a worker: ` +
        `${await perCall()} us per request (5 runs)`,
    );
  } finally {
    await on.close().catch(() => {});
    await off.close().catch(() => {});
    await backend.close();
  }
}
