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
import { createHttpServer } from '../src/http/server.js';
import { createLogger } from '../src/log.js';
import { fillToCap, setUpRequestMetrics } from '../test/support/request-metrics.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const INGRESSES = 8;

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
  const { metrics, requests } = setUpRequestMetrics({ log });
  fillToCap(requests, INGRESSES);
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
