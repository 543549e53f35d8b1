/**
 * A scrape never delays /healthz (issue 27): the HTTP server of --healthz-port with request metrics at their largest
 * (8 Ingresses at their 500-series cap, every histogram observed: about 4,000 series and 100 MB of text), a /metrics
 * read to its end while /healthz is asked every 50 ms. Each probe is answered within 1 s (the deploy's probe timeout
 * is longer), and the scrape is whole. The request totals come as nginx's control channel hands them over.
 */
import { spawn } from 'node:child_process';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import { createHttpServer } from '../../src/http/server.js';
import { fillToCap, setUpRequestMetrics } from '../support/request-metrics.js';

const INGRESSES = 8;

let server: Server;
let port: number;

beforeAll(async () => {
  const log = createLogger({ level: 'silent' });
  const { metrics, requests } = setUpRequestMetrics({ log });
  fillToCap(requests, INGRESSES);
  server = createHttpServer({
    port: 0,
    health: () => ({ ok: true, problems: [], warnings: [] }),
    metrics,
    log,
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
}, 60_000);

afterAll(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
});

/** PROBER asks /healthz every 50 ms until its stdin closes, then prints each answer's latency (ms) as JSON */
const PROBER = `
import { get } from 'node:http';
const port = Number(process.argv[1]);
// a connection per probe, as the kubelet's
const probe = () => new Promise((resolve, reject) => {
  const req = get({ host: '127.0.0.1', port, path: '/healthz', agent: false, timeout: 30000 }, (res) => {
    let body = '';
    res.setEncoding('utf8').on('data', (c) => { body += c; }).on('end', () => resolve(body));
  });
  req.on('error', reject).on('timeout', () => req.destroy(new Error('timeout')));
});
const probes = [];
let done = false;
process.stdin.on('end', () => { done = true; }).resume();
while (!done) {
  const start = performance.now();
  const body = await probe();
  if (body !== 'ok\\n') throw new Error('healthz: ' + body);
  probes.push(performance.now() - start);
  if (probes.length === 1) process.stderr.write('started\\n');
  await new Promise((resolve) => setTimeout(resolve, 50));
}
process.stdout.write(JSON.stringify(probes));
`;

function startProber(port: number): { started: Promise<void>; stop(): Promise<number[]> } {
  const child = spawn(process.execPath, ['--input-type=module', '-e', PROBER, String(port)], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  let err = '';
  const started = new Promise<void>((resolve) =>
    child.stderr.on('data', (chunk: Buffer) => {
      err += chunk.toString();
      resolve();
    }),
  );
  return {
    started,
    async stop() {
      child.stdin.end();
      expect(await exited, err).toBe(0);
      return JSON.parse(out) as number[];
    },
  };
}

describe('/metrics while /healthz is probed', () => {
  it('answers every probe within 1 s while a scrape of ~4,000 series is written, and the scrape is whole', async () => {
    // The probes come from another process, as the kubelet's do: this process's own event loop is the server's.
    const prober = startProber(port);
    await prober.started;
    const res = await fetch(`http://127.0.0.1:${port}/metrics`);
    let size = 0;
    const counts = new Map<string, number>();
    let last = '';
    const decoder = new TextDecoder();
    for await (const chunk of res.body!) {
      const text = last + decoder.decode(chunk, { stream: true });
      const lines = text.split('\n');
      last = lines.pop()!;
      for (const line of lines) {
        if (!line.startsWith('nginx_ingress_controller_requests{')) continue;
        const ingress = /ingress="([^"]*)"/.exec(line)![1]!;
        counts.set(ingress, (counts.get(ingress) ?? 0) + 1);
      }
      size += chunk.length;
    }
    const probes = await prober.stop();
    expect(res.status).toBe(200);
    expect(last).toBe('');
    // each Ingress's series, as many as its cap (500) lets it keep
    expect(counts.size).toBe(INGRESSES);
    for (const [ingress, n] of counts) expect(n, ingress).toBeGreaterThanOrEqual(500);
    expect(size).toBeGreaterThan(50_000_000);
    // probed throughout: the scrape took several probe intervals, and none waited for it
    expect(probes.length).toBeGreaterThan(3);
    expect(Math.max(...probes)).toBeLessThan(1_000);
  }, 120_000);
});
