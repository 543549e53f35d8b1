/**
 * What a large scrape costs /healthz (issue 27): the request metrics at their cap for 8 Ingresses (4,000 series, every
 * histogram observed, about 100 MB of text), served two ways side by side in interleaved rounds: as /metrics writes it
 * now (ControllerMetrics.text(), a slice at a time) and as it was written before (prom-client's Registry.metrics(), one
 * string). Another process probes /healthz every 50 ms on a new connection (as the kubelet does) while each scrape is
 * read; the probes' worst and p99 latencies, the scrape's duration and the growth of this process's peak RSS are
 * compared. The sliced rounds run first in each pair's first round, so the peak RSS they leave is their own.
 */
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { MetricsFlags } from '../src/config.js';
import { createLogger } from '../src/log.js';
import type { NginxModel } from '../src/model/nginx-model.js';
import { ControllerMetrics } from '../src/http/metrics.js';
import { STATUS_CODES } from '../src/http/request-labels.js';
import { RequestMetrics } from '../src/http/request-metrics.js';
import { createHttpServer } from '../src/http/server.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const INGRESSES = 8;
const FLAGS: MetricsFlags = {
  enabled: true,
  perHost: true,
  perUndefinedHost: false,
  statusClasses: false,
  buckets: {
    time: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    length: [10, 20, 30, 40, 50, 60, 70, 80, 90, 100],
    size: [10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000],
  },
  exclude: [],
};
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'CONNECT', 'OPTIONS', 'TRACE', 'PATCH', 'OTHER'];
/** one request observed in every histogram (slots as monitor.lua lays them out with the default buckets) */
const DELTAS = '0:1,1:1,13:0.001,14:1,26:0.001,27:1,39:0.001,40:1,52:0.001,53:1,64:5,65:1,76:5,77:1,85:5';

/** PROBER asks /healthz every 50 ms on a new connection until its stdin closes; prints the latencies (ms) as JSON */
const PROBER = `
import { get } from 'node:http';
const port = Number(process.argv[1]);
const probe = () => new Promise((resolve, reject) => {
  const req = get({ host: '127.0.0.1', port, path: '/healthz', agent: false }, (res) => res.resume().on('end', resolve));
  req.on('error', reject);
});
const probes = [];
let done = false;
process.stdin.on('end', () => { done = true; }).resume();
process.stderr.write('started\\n');
while (!done) {
  const start = performance.now();
  await probe();
  probes.push(performance.now() - start);
  await new Promise((resolve) => setTimeout(resolve, 50));
}
process.stdout.write(JSON.stringify(probes));
`;

/** probed reads one /metrics from `port` while another process probes /healthz there */
async function probed(port: number): Promise<{ probes: number[]; scrapeMs: number; bytes: number }> {
  const child = spawn(process.execPath, ['--input-type=module', '-e', PROBER, String(port)], { stdio: 'pipe' });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  await new Promise((resolve) => child.stderr.once('data', resolve));
  const start = performance.now();
  const res = await fetch(`http://127.0.0.1:${port}/metrics`);
  let bytes = 0;
  for await (const chunk of res.body!) bytes += chunk.length;
  const scrapeMs = performance.now() - start;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.stdin.end();
  await exited;
  return { probes: JSON.parse(out) as number[], scrapeMs, bytes };
}

const listen = async (server: Server) => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
};

/** runMetricsScrape prints /healthz's worst and p99 latency during a large scrape, sliced and whole, and their ratio. */
export async function runMetricsScrape(): Promise<void> {
  const log = createLogger({ level: 'silent' });
  const metrics = new ControllerMetrics({
    controllerNamespace: 'ingress-nginx',
    controllerClass: 'k8s.io/ingress-nginx',
    controllerPod: 'pod-1',
    electionId: 'leader',
    lookup: () => undefined,
    actorIds: [],
  });
  const requests = new RequestMetrics({
    registry: metrics.registry,
    flags: FLAGS,
    drain: async () => 'left 0 dropped 0\n',
    log,
  });
  const servers = Array.from({ length: INGRESSES }, (_, i) => ({
    host: `app${i}.example.com`,
    locations: [{ path: '/', route: { id: `r${i}`, namespace: `t${i}`, ingressName: `app${i}`, serviceName: 'web' } }],
  }));
  requests.setModel({ defaultServer: { host: '_', locations: [] }, servers } as unknown as NginxModel);
  for (let i = 0; i < INGRESSES; i++) {
    const lines = ['left 0 dropped 0'];
    for (const status of STATUS_CODES)
      for (const method of METHODS) lines.push(`app${i}.example.com r${i} ${status} ${method} 0\t${DELTAS}`);
    requests.add(`${lines.join('\n')}\n`);
  }
  const sliced = createHttpServer({ port: 0, health: () => ({ ok: true, problems: [], warnings: [] }), metrics, log });
  // the former /metrics: the registry's whole text, then the answer
  const whole = createServer((req, res) => {
    if (req.url === '/healthz') res.end('ok\n');
    else void metrics.registry.metrics().then((text) => res.end(text));
  });
  const ports = { sliced: await listen(sliced), whole: await listen(whole) };
  const results = {
    sliced: [] as Awaited<ReturnType<typeof probed>>[],
    whole: [] as Awaited<ReturnType<typeof probed>>[],
  };
  const rss = { sliced: 0, whole: 0 };
  try {
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? (['sliced', 'whole'] as const) : (['whole', 'sliced'] as const);
      for (const mode of order) {
        const before = process.resourceUsage().maxRSS;
        results[mode].push(await probed(ports[mode]));
        rss[mode] += process.resourceUsage().maxRSS - before;
      }
    }
  } finally {
    sliced.closeAllConnections();
    whole.closeAllConnections();
    sliced.close();
    whole.close();
  }
  const summary = (mode: 'sliced' | 'whole') => {
    const probes = results[mode].flatMap((r) => r.probes).sort((a, b) => a - b);
    const worst = probes.at(-1) ?? 0;
    const p99 = probes[Math.floor(probes.length * 0.99)] ?? 0;
    const scrape = results[mode].reduce((a, r) => a + r.scrapeMs, 0) / results[mode].length;
    const mb = (results[mode][0]?.bytes ?? 0) / 1e6;
    return { worst, p99, scrape, mb, text: `worst ${worst.toFixed(0)} ms, p99 ${p99.toFixed(0)} ms` };
  };
  const s = summary('sliced');
  const w = summary('whole');
  console.log(
    `bench metrics-scrape: ${requests.size} series, ${s.mb.toFixed(1)} MB per scrape, ${ROUNDS} interleaved rounds; ` +
      `/healthz during a scrape: sliced ${s.text}, whole ${w.text}; worst whole/sliced ${(w.worst / s.worst).toFixed(1)}x ` +
      `(target: sliced worst < 1,000 ms); scrape ${s.scrape.toFixed(0)} ms sliced, ${w.scrape.toFixed(0)} ms whole ` +
      `(ratio ${(s.scrape / w.scrape).toFixed(2)}); peak RSS growth sliced ${(rss.sliced / 1024).toFixed(0)} MB, whole ` +
      `${(rss.whole / 1024).toFixed(0)} MB`,
  );
}
