/**
 * Request metrics through the real controller and its nginx: two Ingresses in two namespaces and a canary, pods on
 * 127.0.0.2-4 answering 2xx, 4xx and 5xx, known numbers of requests over raw sockets (so the bytes each way are known
 * exactly), then /metrics parsed as Prometheus parses it: ingress-nginx's names, labels, buckets and const labels,
 * counts per label set, histogram buckets against their _count and _sum, and label values a client cannot choose (a
 * random Host, an odd method). Counters survive a kill -9 of nginx. Then the flags: per undefined host, status
 * classes, buckets and exclusions; and --enable-metrics=false, which leaves nginx without the monitor.
 */
import { X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { connect, createServer as createNetServer, type Server as NetServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, waitFor, type Cluster } from '../support/cluster.js';
import { ingress, ingressClass, serviceWithEndpoints, tlsSecret } from '../support/manifests.js';
import { issueCertificate, type KeyPair } from '../../src/tls/issue.js';
import { freePort } from '../support/net.js';
import { parseScrape, type Scrape } from '../http/prometheus.js';

const TIME = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const LENGTH = [10, 20, 30, 40, 50, 60, 70, 80, 90, 100];
const SIZE = [10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000];
const HISTOGRAMS: Record<string, number[]> = {
  request_duration_seconds: TIME,
  response_duration_seconds: TIME,
  connect_duration_seconds: TIME,
  header_duration_seconds: TIME,
  request_size: LENGTH,
  response_size: LENGTH,
  bytes_sent: SIZE,
};
const P = 'nginx_ingress_controller_';
const CANARY_UPSTREAM = 'default_api-canary_80';

/** pods answer by path: /fail 500, /missing 404, else 200 with their name */
async function startPod(ip: string, port: number, name: string): Promise<Server> {
  const server = createServer((req, res) => {
    req.resume();
    const status = req.url?.endsWith('/fail') ? 500 : req.url?.endsWith('/missing') ? 404 : 200;
    res.writeHead(status, { 'content-type': 'text/plain' });
    res.end(name);
  });
  await new Promise<void>((resolve) => server.listen(port, ip, resolve));
  return server;
}

/** send makes one HTTP/1.1 request on its own connection; returns the status and the bytes each way. */
function send(
  port: number,
  host: string,
  path: string,
  method = 'GET',
  headers: Record<string, string> = {},
): Promise<{ status: number; sent: number; received: number }> {
  const head = [`${method} ${path} HTTP/1.1`, `Host: ${host}`, 'Connection: close']
    .concat(Object.entries(headers).map(([k, v]) => `${k}: ${v}`))
    .join('\r\n');
  const request = Buffer.from(`${head}\r\n\r\n`);
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(request));
    const chunks: Buffer[] = [];
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('end', () => {
      const reply = Buffer.concat(chunks);
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(reply.toString('latin1'))?.[1] ?? 0);
      resolve({ status, sent: request.length, received: reply.length });
    });
  });
}

/** Metrics is one /metrics answer: the parsed families (types, help) and every sample line with its labels. */
interface Metrics {
  readonly parsed: Scrape;
  readonly lines: readonly { name: string; labels: Record<string, string>; value: number }[];
}

/** parseLines reads sample lines (parse-prometheus-text-format folds labelled histograms into one, so not with it). */
function parseLines(text: string): Metrics['lines'] {
  const lines: { name: string; labels: Record<string, string>; value: number }[] = [];
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_]\w*)="((?:[^"\\]|\\.)*)"/g))
      labels[l[1]!] = l[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    lines.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return lines;
}

async function scrapeOf(cluster: Cluster): Promise<Metrics> {
  const res = await fetch(`http://127.0.0.1:${cluster.healthzPort}/metrics`);
  const text = await res.text();
  return { parsed: parseScrape(text), lines: parseLines(text) };
}

const has = (labels: Record<string, string>, want: Record<string, string>) =>
  Object.entries(want).every(([k, v]) => labels[k] === v);

/** samples of `name` whose labels include `labels` */
const samples = (m: Metrics, name: string, labels: Record<string, string> = {}) =>
  m.lines.filter((l) => l.name === name && has(l.labels, labels));

const total = (m: Metrics, labels: Record<string, string> = {}) =>
  samples(m, `${P}requests`, labels).reduce((sum, l) => sum + l.value, 0);

/** histograms of `name` whose labels include `labels`: per label set, its buckets (le order), _sum and _count */
function histograms(m: Metrics, name: string, labels: Record<string, string> = {}) {
  const series = new Map<
    string,
    { labels: Record<string, string>; buckets: [string, number][]; sum: number; count: number }
  >();
  const of = (l: Record<string, string>) => {
    const { le: _, ...rest } = l;
    const key = JSON.stringify(Object.entries(rest).sort());
    let s = series.get(key);
    if (!s) {
      s = { labels: rest, buckets: [], sum: Number.NaN, count: Number.NaN };
      series.set(key, s);
    }
    return s;
  };
  for (const l of m.lines) {
    if (!has(l.labels, labels)) continue;
    if (l.name === `${name}_bucket`) of(l.labels).buckets.push([l.labels.le!, l.value]);
    if (l.name === `${name}_sum`) of(l.labels).sum = l.value;
    if (l.name === `${name}_count`) of(l.labels).count = l.value;
  }
  return [...series.values()];
}

const families = (m: Metrics) => m.parsed.families.map((f) => f.name);

/** the scene both clusters share: shop (default) with a header canary, blog (media, with TLS, so the dashboards' certificate panel has its series) */
function scene(ports: { api: number; canary: number; web: number; dead: number }) {
  return [
    // POD_NAMESPACE's: the leader Lease lives there
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'ingress-nginx' } },
    tlsSecret('blog-tls', blogPair.certPem, blogPair.keyPem, 'media'),
    ingressClass(),
    ...serviceWithEndpoints('api', [{ ip: '127.0.0.2', port: ports.api }]),
    ...serviceWithEndpoints('api-canary', [{ ip: '127.0.0.3', port: ports.canary }]),
    ...serviceWithEndpoints('web', [{ ip: '127.0.0.4', port: ports.web }], 'media'),
    ingress('shop', { 'shop.example.com': [{ path: '/api', service: 'api' }] }),
    ingress(
      'shop-canary',
      { 'shop.example.com': [{ path: '/api', service: 'api-canary' }] },
      {
        annotations: {
          'nginx.ingress.kubernetes.io/canary': 'true',
          'nginx.ingress.kubernetes.io/canary-by-header': 'X-Canary',
        },
      },
    ),
    ingress(
      'blog',
      { 'blog.example.com': [{ path: '/', service: 'web' }] },
      {
        namespace: 'media',
        tls: [{ hosts: ['blog.example.com'], secretName: 'blog-tls' }],
        // plain HTTP is what the counts below send
        annotations: { 'nginx.ingress.kubernetes.io/ssl-redirect': 'false' },
      },
    ),
    // one endpoint resets each connection: nginx retries on the other, and $upstream_*_time become lists
    ...serviceWithEndpoints('flaky', [
      { ip: '127.0.0.5', port: ports.dead },
      { ip: '127.0.0.2', port: ports.api },
    ]),
    ingress('flaky', { 'flaky.example.com': [{ path: '/', service: 'flaky' }] }),
  ];
}

const pods: Server[] = [];
let resetter: NetServer;
/** connections the resetting endpoint took: each is a request nginx retried on the other peer */
let resets = 0;
let ports: { api: number; canary: number; web: number; dead: number };
let blogPair: KeyPair;

beforeAll(async () => {
  blogPair = await issueCertificate({ commonName: 'blog.example.com', dnsNames: ['blog.example.com'] });
  ports = { api: await freePort(), canary: await freePort(), web: await freePort(), dead: await freePort() };
  pods.push(await startPod('127.0.0.2', ports.api, 'api'));
  pods.push(await startPod('127.0.0.3', ports.canary, 'canary'));
  pods.push(await startPod('127.0.0.4', ports.web, 'web'));
  resetter = createNetServer((socket) => {
    resets++;
    socket.resetAndDestroy();
  });
  await new Promise<void>((resolve) => resetter.listen(ports.dead, '127.0.0.5', resolve));
}, 30_000);

afterAll(async () => {
  await new Promise((resolve) => resetter?.close(resolve));
  for (const pod of pods) {
    pod.closeAllConnections();
    await new Promise((resolve) => pod.close(resolve));
  }
});

/** ready waits until the scene serves: each Ingress answers through nginx. */
async function ready(cluster: Cluster): Promise<void> {
  await waitFor(
    'the scene served',
    async () =>
      (await send(cluster.httpPort, 'shop.example.com', '/api/x').catch(() => ({ status: 0 }))).status === 200 &&
      (await send(cluster.httpPort, 'blog.example.com', '/').catch(() => ({ status: 0 }))).status === 200,
    20_000,
  );
}

/** settled scrapes once nginx has handed over every request so far (each worker flushes each second). */
async function settled(cluster: Cluster): Promise<Metrics> {
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  return scrapeOf(cluster);
}

describe('with the default flags', () => {
  let cluster: Cluster;
  // what the readiness probes counted: the test counts from there
  let before: Metrics;

  beforeAll(async () => {
    cluster = await startCluster(scene(ports), [], undefined, {
      env: { POD_NAME: 'ingress-nginx-controller-abc', POD_NAMESPACE: 'ingress-nginx' },
    });
    await ready(cluster);
    before = await settled(cluster);
  }, 60_000);

  afterAll(() => cluster?.close());

  const shop = { namespace: 'default', ingress: 'shop', service: 'api', path: '/api', host: 'shop.example.com' };
  const blog = { namespace: 'media', ingress: 'blog', service: 'web', path: '/', host: 'blog.example.com' };
  const delta = (now: Metrics, labels: Record<string, string>) => total(now, labels) - total(before, labels);
  let blogBytes = { sent: 0, received: 0 };

  it('counts each request once under its Ingress, Service, path, host, status, method and canary', async () => {
    const port = cluster.httpPort;
    const shopHost = 'shop.example.com';
    for (let i = 0; i < 5; i++) expect((await send(port, shopHost, '/api/ok')).status).toBe(200);
    for (let i = 0; i < 3; i++) expect((await send(port, shopHost, '/api/missing')).status).toBe(404);
    for (let i = 0; i < 2; i++) expect((await send(port, shopHost, '/api/fail', 'POST')).status).toBe(500);
    for (let i = 0; i < 4; i++)
      expect((await send(port, shopHost, '/api/ok', 'GET', { 'X-Canary': 'always' })).status).toBe(200);
    for (let i = 0; i < 2; i++) expect((await send(port, shopHost, '/api/ok', 'PROPFIND')).status).toBe(200);
    for (let i = 0; i < 6; i++) {
      const r = await send(port, 'blog.example.com', `/post/${i}`);
      expect(r.status).toBe(200);
      blogBytes = { sent: blogBytes.sent + r.sent, received: blogBytes.received + r.received };
    }
    // A Host no Ingress has: the catch-all's 404, not counted (ingress-nginx's --metrics-per-undefined-host=false).
    for (let i = 0; i < 3; i++) expect((await send(port, 'evil.example.net', '/api/ok')).status).toBe(404);

    await waitFor('the requests counted', async () => delta(await scrapeOf(cluster), {}) >= 22, 10_000);
    const now = await settled(cluster);
    expect(delta(now, {})).toBe(22);
    expect(delta(now, { ...shop, status: '200', method: 'GET', canary: '' })).toBe(5);
    expect(delta(now, { ...shop, status: '404', method: 'GET', canary: '' })).toBe(3);
    expect(delta(now, { ...shop, status: '500', method: 'POST', canary: '' })).toBe(2);
    // ingress-nginx reports the canary's traffic under the main Ingress and Service, naming the canary's upstream.
    expect(delta(now, { ...shop, status: '200', method: 'GET', canary: CANARY_UPSTREAM })).toBe(4);
    expect(delta(now, { ...shop, status: '200', method: 'OTHER', canary: '' })).toBe(2);
    expect(delta(now, { ...blog, status: '200', method: 'GET', canary: '' })).toBe(6);

    // No label value the client chose: the Host and the method it sent are nowhere.
    const all = samples(now, `${P}requests`);
    expect(new Set(all.map((m) => m.labels.host))).toEqual(new Set(['shop.example.com', 'blog.example.com']));
    expect(new Set(all.map((m) => m.labels.method))).toEqual(new Set(['GET', 'POST', 'OTHER']));
    const text = JSON.stringify(now.lines);
    expect(text).not.toContain('evil');
    expect(text).not.toContain('PROPFIND');
    // Each Ingress path once, not each URI.
    expect(new Set(all.map((m) => m.labels.path))).toEqual(new Set(['/api', '/']));
  });

  it("has ingress-nginx's label names, const labels, help and buckets, with consistent histograms", async () => {
    const now = await scrapeOf(cluster);
    expect(now.parsed.family(`${P}requests`).type).toBe('COUNTER');
    expect(now.parsed.family(`${P}requests`).help).toBe('The total number of client requests');
    for (const m of samples(now, `${P}requests`)) {
      expect(Object.keys(m.labels).sort()).toEqual([
        'canary',
        'controller_class',
        'controller_namespace',
        'controller_pod',
        'host',
        'ingress',
        'method',
        'namespace',
        'path',
        'service',
        'status',
      ]);
      expect(m.labels.controller_class).toBe('k8s.io/ingress-nginx');
      expect(m.labels.controller_namespace).toBe('ingress-nginx');
      expect(m.labels.controller_pod).toBe('ingress-nginx-controller-abc');
    }
    for (const [name, bounds] of Object.entries(HISTOGRAMS)) {
      expect(now.parsed.family(P + name).type).toBe('HISTOGRAM');
      const series = histograms(now, P + name);
      expect(series.length).toBe(samples(now, `${P}requests`).length);
      for (const h of series) {
        // Every request here reached a pod, so each histogram saw each request once.
        expect(h.count).toBe(total(now, h.labels));
        expect(h.buckets.map(([le]) => le)).toEqual([...bounds.map(String), '+Inf']);
        const cumulative = h.buckets.map(([, v]) => v);
        for (let i = 1; i < cumulative.length; i++) expect(cumulative[i]).toBeGreaterThanOrEqual(cumulative[i - 1]!);
        expect(cumulative.at(-1)).toBe(h.count);
        expect(h.sum).toBeGreaterThanOrEqual(0);
      }
    }
    // Bytes, exactly: what the client sent (request_length) and received (bytes_sent), summed over blog's requests.
    const blogSum = (m: Metrics, name: string) =>
      histograms(m, P + name, { ...blog, status: '200', method: 'GET' }).reduce((sum, h) => sum + h.sum, 0);
    const grew = (name: string) => blogSum(now, name) - blogSum(before, name);
    expect(grew('request_size')).toBe(blogBytes.sent);
    expect(grew('response_size')).toBe(blogBytes.received);
    expect(grew('bytes_sent')).toBe(blogBytes.received);
    // Small answers: over 100 bytes and under 1,000, so bytes_sent's buckets split there.
    const sent = histograms(now, `${P}bytes_sent`, { ...blog, status: '200', method: 'GET' })[0]!;
    expect(sent.buckets.find(([le]) => le === '100')?.[1]).toBe(0);
    expect(sent.buckets.find(([le]) => le === '1000')?.[1]).toBe(sent.count);
  });

  it('has every series and label the two ingress-nginx dashboards query, request-level and the rest', async () => {
    const queries = JSON.parse(
      await readFile(new URL('../fixtures/grafana-dashboard-queries.json', import.meta.url), 'utf8'),
    ) as { dashboards: Record<string, Record<string, string[]>> };
    // ingress-nginx's certificate series come from the leader only: wait for the election
    const leader = async () => (await scrapeOf(cluster)).lines.find((l) => l.name === `${P}leader_election_status`);
    await waitFor('the leader', async () => (await leader())?.value === 1, 20_000);
    const now = await scrapeOf(cluster);
    // Prometheus adds these to the target's series; the series' own namespace becomes exported_namespace.
    const fromPrometheus = new Set(['instance', 'kubernetes_pod_name', 'namespace']);
    // The certificate panel selects ingress=~"$ingress", a label ingress-nginx's own series has not either (its
    // labels: namespace, class, host, secret_name, identifier); with "All" (.*) it matches the series without it.
    const lackedByIngressNginx: Record<string, string[]> = { [`${P}ssl_expire_time_seconds`]: ['ingress'] };
    const series = new Set<string>();
    let checked = 0;
    for (const [dashboard, metrics] of Object.entries(queries.dashboards)) {
      for (const [name, labels] of Object.entries(metrics)) {
        series.add(name);
        const lines = now.lines.filter((l) => l.name === name);
        expect(lines.length, `${dashboard}: ${name}`).toBeGreaterThan(0);
        for (const label of labels.filter((l) => !fromPrometheus.has(l) && !lackedByIngressNginx[name]?.includes(l))) {
          const own = label === 'exported_namespace' ? 'namespace' : label;
          expect(
            lines.every((l) => own in l.labels),
            `${dashboard}: ${name} {${label}}`,
          ).toBe(true);
          checked++;
        }
      }
    }
    expect(checked).toBeGreaterThan(40);
    // the non-request panels too: nginx's process, the reloads, the certificates
    expect(series).toContain(`${P}nginx_process_connections`);
    expect(series).toContain(`${P}ssl_expire_time_seconds`);
    const expiry = now.lines.find((l) => l.name === `${P}ssl_expire_time_seconds`);
    expect(expiry?.labels).toMatchObject({ host: 'blog.example.com', namespace: 'media', secret_name: 'blog-tls' });
    expect(expiry?.value).toBe(Math.floor(new X509Certificate(blogPair.certPem).validToDate.getTime() / 1000));
  });

  it('counts a request nginx retried on another peer, but leaves it out of the upstream histograms, as ingress-nginx', async () => {
    const flaky = { ingress: 'flaky', host: 'flaky.example.com', status: '200', method: 'GET' };
    const resetsBefore = resets;
    for (let i = 0; i < 10; i++) expect((await send(cluster.httpPort, 'flaky.example.com', '/')).status).toBe(200);
    const retried = resets - resetsBefore;
    const now = await settled(cluster);
    const count = (name: string) =>
      histograms(now, P + name, flaky).reduce((sum, h) => sum + h.count, 0) -
      histograms(before, P + name, flaky).reduce((sum, h) => sum + h.count, 0);
    expect(delta(now, flaky)).toBe(10);
    expect(count('request_duration_seconds')).toBe(10);
    expect(count('bytes_sent')).toBe(10);
    // Round robin over the two peers: requests that met the resetting peer first were retried ("0.000, 0.001" is not
    // a number) and are in no upstream histogram; the others are in each.
    expect(retried).toBeGreaterThan(0);
    for (const name of ['connect_duration_seconds', 'header_duration_seconds', 'response_duration_seconds'])
      expect(count(name), name).toBe(10 - retried);
  });

  it('loses no count across a reload: the old workers hand over their last deltas as they exit', async () => {
    const counted = total(await settled(cluster));
    const reloads = Number(cluster.actor('nginx')?.context.reloadsOk ?? 0);
    for (let i = 0; i < 7; i++) await send(cluster.httpPort, 'blog.example.com', '/');
    // a setting no other path has: a new location profile, so a reload (a plain new host would be pushed)
    await cluster.apply(
      ingress(
        'extra',
        { 'extra.example.com': [{ path: '/', service: 'api' }] },
        { annotations: { 'nginx.ingress.kubernetes.io/proxy-read-timeout': '94' } },
      ),
    );
    await waitFor('the reload', () => Number(cluster.actor('nginx')?.context.reloadsOk ?? 0) > reloads, 10_000);
    await waitFor('the old workers counted', async () => total(await scrapeOf(cluster)) >= counted + 7, 10_000);
    expect(total(await settled(cluster))).toBe(counted + 7);
  });

  it('keeps its counters when nginx is killed and restarted', async () => {
    const counted = total(await settled(cluster));
    const pid = cluster.actor('nginx')?.context.pid as number;
    process.kill(pid, 'SIGKILL');
    await waitFor(
      'nginx restarted',
      () => {
        const nginx = cluster.actor('nginx');
        return nginx?.context.pid !== pid && JSON.stringify(nginx?.value) === '{"alive":"running"}';
      },
      20_000,
    );
    await ready(cluster);
    const after = await settled(cluster);
    expect(total(after)).toBeGreaterThanOrEqual(counted);
    for (let i = 0; i < 3; i++) await send(cluster.httpPort, 'blog.example.com', '/');
    const last = await settled(cluster);
    expect(total(last)).toBe(total(after) + 3);
  }, 40_000);
});

describe('with the metric flags', () => {
  let cluster: Cluster;
  let before: Metrics;

  beforeAll(async () => {
    cluster = await startCluster(scene(ports), [
      '--metrics-per-undefined-host',
      '--report-status-classes',
      '--time-buckets=0.5,1',
      '--exclude-socket-metrics=nginx_ingress_controller_bytes_sent,header_duration_seconds',
    ]);
    await ready(cluster);
    before = await settled(cluster);
  }, 60_000);

  afterAll(() => cluster?.close());

  it('counts the catch-all server as host _, in status classes, with the given buckets and without the excluded', async () => {
    for (let i = 0; i < 3; i++) await send(cluster.httpPort, 'evil.example.net', '/x');
    for (let i = 0; i < 2; i++) await send(cluster.httpPort, 'shop.example.com', '/api/missing');
    const now = await settled(cluster);
    const delta = (labels: Record<string, string>) => total(now, labels) - total(before, labels);
    expect(delta({})).toBe(5);
    expect(delta({ host: '_', status: '4xx', ingress: '', namespace: '', service: '', path: '' })).toBe(3);
    expect(delta({ host: 'shop.example.com', ingress: 'shop', status: '4xx' })).toBe(2);
    expect(samples(now, `${P}requests`).every((m) => /^[1-5]xx$/.test(m.labels.status!))).toBe(true);
    const duration = histograms(now, `${P}request_duration_seconds`)[0]!;
    expect(duration.buckets.map(([le]) => le)).toEqual(['0.5', '1', '+Inf']);
    expect(families(now)).not.toContain(`${P}bytes_sent`);
    expect(families(now)).not.toContain(`${P}header_duration_seconds`);
    expect(families(now)).toContain(`${P}response_size`);
  });
});

describe('with --enable-metrics=false', () => {
  let cluster: Cluster;

  beforeAll(async () => {
    cluster = await startCluster(scene(ports), ['--enable-metrics=false']);
    await ready(cluster);
  }, 60_000);

  afterAll(() => cluster?.close());

  it('counts nothing: no monitor in nginx.conf, only the controller’s own metrics', async () => {
    const conf = await readFile(join(cluster.dir, 'nginx', 'nginx.conf'), 'utf8');
    expect(conf).not.toContain('monitor');
    expect(conf).not.toContain('ia_route');
    await send(cluster.httpPort, 'shop.example.com', '/api/ok');
    const now = await scrapeOf(cluster);
    expect(families(now)).not.toContain(`${P}requests`);
    expect(families(now)).toContain(`${P}success`);
  });
});
