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
import type { MetricsFlags } from '../../src/config.js';
import { createLogger } from '../../src/log.js';
import type { NginxModel } from '../../src/model/nginx-model.js';
import { ControllerMetrics } from '../../src/http/metrics.js';
import { RequestMetrics } from '../../src/http/request-metrics.js';
import { createHttpServer } from '../../src/http/server.js';

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
/** registered status codes: each its own label value */
const STATUSES = [
  [100, 101, 102, 103, 200, 201, 202, 203, 204, 205, 206, 207, 208, 226, 300, 301, 302, 303, 304, 305, 307, 308],
  [400, 401, 402, 403, 404, 405, 406, 407, 408, 409, 410, 411, 412, 413, 414, 415, 416, 417, 418, 421, 422, 423],
  [424, 425, 426, 428, 429, 431, 451, 499, 500, 501, 502, 503, 504, 505, 506, 507, 508, 510, 511],
].flat();
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'CONNECT', 'OPTIONS', 'TRACE', 'PATCH', 'OTHER'];
/** one request observed in every histogram (slots as monitor.lua lays them out with the default buckets) */
const DELTAS = '0:1,1:1,13:0.001,14:1,26:0.001,27:1,39:0.001,40:1,52:0.001,53:1,64:5,65:1,76:5,77:1,85:5';
const INGRESSES = 8;

let server: Server;
let port: number;

beforeAll(async () => {
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
    locations: [
      { path: '/', route: { id: `r${i}`, namespace: `tenant-${i}`, ingressName: `app${i}`, serviceName: 'web' } },
    ],
  }));
  requests.setModel({ defaultServer: { host: '_', locations: [] }, servers } as unknown as NginxModel);
  for (let i = 0; i < INGRESSES; i++) {
    const lines = ['left 0 dropped 0'];
    for (const status of STATUSES)
      for (const method of METHODS) lines.push(`app${i}.example.com r${i} ${status} ${method} 0\t${DELTAS}`);
    requests.add(`${lines.join('\n')}\n`);
  }
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
