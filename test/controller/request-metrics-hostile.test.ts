/**
 * Request metrics cannot be exhausted by one tenant (issue 27), through the real controller and its nginx: tenant-a's
 * backend answers every status from 200 to 999 to eight methods (two of them not standard) on two Ingresses, 12,800
 * requests in all, as the reproduction did. Then tenant-b's new Ingress still gets its series; every `status`
 * is a registered code or a class and every `method` one of the standard ones or OTHER; tenant-a's Ingresses hold at
 * most their cap of series each and the rest of their requests are counted in the overflow counter (series + overflow
 * = requests sent, exactly); /metrics stays small; and deleting an Ingress takes its series with it.
 */
import { createServer, type Server, Agent, request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, waitFor, type Cluster } from '../support/cluster.js';
import { ingress, ingressClass, serviceWithEndpoints } from '../support/manifests.js';
import { freePort } from '../support/net.js';

const P = 'nginx_ingress_controller_';
const FLOOD_METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'PROPFIND', 'FLOOD'];
const FLOOD_HOSTS = ['flood1.example.com', 'flood2.example.com'];
/** the registered codes and nginx's own, as docs/operations.md lists them */
const REGISTERED = new Set(
  [
    [100, 101, 102, 103, 200, 201, 202, 203, 204, 205, 206, 207, 208, 226, 300, 301, 302, 303, 304, 305, 307, 308],
    [400, 401, 402, 403, 404, 405, 406, 407, 408, 409, 410, 411, 412, 413, 414, 415, 416, 417, 418, 421, 422, 423],
    [424, 425, 426, 428, 429, 431, 451, 444, 494, 495, 496, 497, 499],
    [500, 501, 502, 503, 504, 505, 506, 507, 508, 510, 511],
  ]
    .flat()
    .map(String),
);
const STANDARD_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'CONNECT', 'OPTIONS', 'TRACE', 'PATCH']);

/** the hostile pod answers the status its path names (/s/599), with no body */
async function startPod(ip: string, port: number): Promise<Server> {
  const server = createServer((req, res) => {
    req.resume();
    const status = Number(/^\/s\/(\d{3})$/.exec(req.url ?? '')?.[1] ?? 200);
    res.writeHead(status, { 'content-length': '0' }).end();
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(port, ip, resolve));
  return server;
}

/** send makes one request through nginx on a kept-alive connection; resolves with the status nginx answered */
function send(agent: Agent, port: number, host: string, method: string, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path, headers: { host }, agent }, (res) => {
      res.resume().on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject).end();
  });
}

/** Sample is one sample line of /metrics */
interface Sample {
  readonly name: string;
  readonly labels: Record<string, string>;
  readonly value: number;
}

async function scrape(cluster: Cluster): Promise<{ size: number; samples: Sample[] }> {
  const text = await (await fetch(`http://127.0.0.1:${cluster.healthzPort}/metrics`)).text();
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_]\w*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    samples.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return { size: text.length, samples };
}

const sum = (samples: Sample[], name: string, labels: Record<string, string> = {}) =>
  samples
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((total, s) => total + s.value, 0);

const countsOf = (samples: Sample[], labels: Record<string, string> = {}) =>
  samples.filter((s) => s.name === `${P}requests` && Object.entries(labels).every(([k, v]) => s.labels[k] === v));

const pods: Server[] = [];
let cluster: Cluster;
let goodPort: number;

beforeAll(async () => {
  const floodPort = await freePort();
  goodPort = await freePort();
  pods.push(await startPod('127.0.0.6', floodPort));
  pods.push(await startPod('127.0.0.7', goodPort));
  cluster = await startCluster([
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'tenant-a' } },
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'tenant-b' } },
    ingressClass(),
    ...serviceWithEndpoints('flood', [{ ip: '127.0.0.6', port: floodPort }], 'tenant-a'),
    ...serviceWithEndpoints('shop', [{ ip: '127.0.0.7', port: goodPort }], 'tenant-b'),
    ...FLOOD_HOSTS.map((host, i) =>
      ingress(`flood-${i + 1}`, { [host]: [{ path: '/', service: 'flood' }] }, { namespace: 'tenant-a' }),
    ),
  ]);
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  await waitFor(
    'the flood served',
    async () => (await send(agent, cluster.httpPort, FLOOD_HOSTS[1]!, 'GET', '/s/200').catch(() => 0)) === 200,
    20_000,
  );
  agent.destroy();
}, 60_000);

afterAll(async () => {
  await cluster?.close();
  for (const pod of pods) {
    pod.closeAllConnections();
    await new Promise((resolve) => pod.close(resolve));
  }
});

describe('a backend answering every status to odd methods', () => {
  let sent = 0;
  let before: Sample[] = [];

  it("leaves a good tenant's new Ingress its series, bounds label values and counts the overflow per Ingress", async () => {
    // the warm-up requests handed over first (each worker flushes each second), so the counts below are the flood's
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    before = (await scrape(cluster)).samples;
    const agent = new Agent({ keepAlive: true, maxSockets: 16 });
    const jobs: (() => Promise<number>)[] = [];
    for (const host of FLOOD_HOSTS)
      for (let status = 200; status < 1000; status++)
        for (const method of FLOOD_METHODS)
          jobs.push(() => send(agent, cluster.httpPort, host, method, `/s/${status}`));
    const answered = new Map<number, number>();
    let next = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < jobs.length) {
          const status = await jobs[next++]!();
          answered.set(status, (answered.get(status) ?? 0) + 1);
        }
      }),
    );
    agent.destroy();
    sent = jobs.length;
    // nginx passes the backend's statuses on, 600-999 included: what the label values would have been
    expect(answered.size).toBeGreaterThan(700);

    await cluster.apply(
      ingress('shop', { 'shop.example.com': [{ path: '/', service: 'shop' }] }, { namespace: 'tenant-b' }),
    );
    const good = new Agent({ keepAlive: true, maxSockets: 1 });
    await waitFor(
      'the good Ingress served',
      async () => (await send(good, cluster.httpPort, 'shop.example.com', 'GET', '/s/200').catch(() => 0)) === 200,
      20_000,
    );
    for (let i = 0; i < 5; i++)
      expect(await send(good, cluster.httpPort, 'shop.example.com', 'GET', '/s/200')).toBe(200);
    good.destroy();

    // the good tenant's new Ingress has its series (today's main: none, the flood filled the global cap)
    const shop = { namespace: 'tenant-b', ingress: 'shop', status: '200', method: 'GET' };
    await waitFor(
      "tenant-b's new Ingress counted",
      async () => sum((await scrape(cluster)).samples, `${P}requests`, shop) >= 5,
      30_000,
    );

    // every flood request counted, in a series or in its Ingress's overflow
    const flood = { namespace: 'tenant-a' };
    const counted = (samples: Sample[]) =>
      sum(samples, `${P}requests`, flood) + sum(samples, 'ingress_actors_request_metrics_overflow_total', flood);
    await waitFor(
      'the flood counted',
      async () => counted((await scrape(cluster)).samples) - counted(before) >= sent,
      30_000,
    );
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const { size, samples } = await scrape(cluster);
    expect(counted(samples) - counted(before)).toBe(sent);

    // bounded label values: registered codes or classes, standard methods or OTHER
    const counts = countsOf(samples);
    for (const s of counts) {
      expect(REGISTERED.has(s.labels.status!) || /^[1-9]xx$/.test(s.labels.status!), s.labels.status).toBe(true);
      expect(STANDARD_METHODS.has(s.labels.method!) || s.labels.method === 'OTHER', s.labels.method).toBe(true);
    }
    // 999 and 599 are their classes: dashboards' status=~"[4-5].*" still sees a 5xx as an error
    expect(countsOf(samples, { ingress: 'flood-1', status: '9xx' }).length).toBeGreaterThan(0);
    expect(countsOf(samples, { ingress: 'flood-1', status: '5xx' }).length).toBeGreaterThan(0);
    // each flood Ingress at most its cap, with its overflow counted under its name
    for (const name of ['flood-1', 'flood-2']) {
      expect(countsOf(samples, { ingress: name }).length).toBeLessThanOrEqual(500);
      expect(
        sum(samples, 'ingress_actors_request_metrics_overflow_total', { namespace: 'tenant-a', ingress: name }),
      ).toBeGreaterThan(0);
    }
    // one answer of /metrics: two capped Ingresses and a few series, not hundreds of MB
    expect(size).toBeLessThan(40_000_000);
  }, 240_000);

  it('takes the series of a deleted Ingress with it', async () => {
    await cluster.remove(
      ingress('flood-2', { [FLOOD_HOSTS[1]!]: [{ path: '/', service: 'flood' }] }, { namespace: 'tenant-a' }),
    );
    await waitFor(
      'its series gone',
      async () => countsOf((await scrape(cluster)).samples, { ingress: 'flood-2' }).length === 0,
      20_000,
    );
    const { samples } = await scrape(cluster);
    expect(sum(samples, 'ingress_actors_request_metrics_overflow_total', { ingress: 'flood-2' })).toBe(0);
    expect(countsOf(samples, { ingress: 'flood-1' }).length).toBeGreaterThan(0);
    expect(countsOf(samples, { ingress: 'shop' }).length).toBeGreaterThan(0);
  }, 60_000);
});
