/**
 * Issue 18, the status page on the healthz port, in a real browser: Debian's headless Chromium driven by
 * playwright-core, against a real controller with nginx and the test API server seeded with the demo's manifests
 * (examples/). The page shows the demo's hosts; Ingresses applied afterwards show up as problems naming object and
 * field without a reload of the page; a watcher's state change shows too; a hostile annotation value is shown as
 * text (no dialog, no request but the page's own). Also /status.json's shape, the headers, and the 403 for a client
 * that is not on loopback (over the machine's own non-loopback address, when it has one).
 * `UPDATE_DOCS=1` writes docs/status-page.png, the README's picture.
 */
import { request as httpRequest } from 'node:http';
import { networkInterfaces } from 'node:os';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser, type Page } from 'playwright-core';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gatewayApiCrds } from '../../src/dev/api-server/gateway-api.js';
import { parseManifests } from '../../src/manifests/load.js';
import { ControllerMetrics } from '../../src/http/metrics.js';
import { createHttpServer } from '../../src/http/server.js';
import { CONTENT_SECURITY_POLICY, type StatusPageMode } from '../../src/http/status-page.js';
import type { StatusReport } from '../../src/http/status-report.js';
import { watchedKinds } from '../../src/kube/kinds.js';
import { PROJECT_ROOT } from '../../src/project-root.js';
import { ingress } from '../support/manifests.js';
import { get } from '../support/net.js';
import { startCluster, waitFor, type Cluster } from '../support/cluster.js';

const CHROMIUM = '/usr/bin/chromium';
const HOSTILE = '<img src=x onerror=alert(document.domain)>';

let cluster: Cluster;
let browser: Browser;
let page: Page;
const dialogs: string[] = [];
const requests: string[] = [];
const consoleErrors: string[] = [];
let navigations = 0;

async function manifests(folder: string, only?: string) {
  const files = (await readdir(folder)).filter((f) => (only ? f === only : f.endsWith('.yaml'))).sort();
  const objects: object[] = [];
  for (const file of files) objects.push(...parseManifests(await readFile(join(folder, file), 'utf8'), file));
  return objects;
}

/** rows reads a table of the page as text, one array of cell texts per row. */
const rows = (id: string): Promise<string[][]> =>
  page
    .locator(`#${id} tbody tr`)
    .evaluateAll((trs) =>
      trs.map((tr) =>
        Array.from(tr.querySelectorAll('td'), (td: { textContent: string | null }) => td.textContent ?? ''),
      ),
    );

beforeAll(async () => {
  cluster = await startCluster(await manifests(join(PROJECT_ROOT, 'examples')), [
    '--configmap',
    'ingress-actors/ingress-actors',
  ]);
  await waitFor('the first sync', () => (cluster.actor('nginx')?.context.reloadsOk as number) >= 1, 20_000);
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  page = await browser.newPage({ viewport: { width: 1360, height: 900 } });
  page.on('dialog', (dialog) => {
    dialogs.push(dialog.message());
    void dialog.dismiss();
  });
  page.on('request', (r) => requests.push(r.url()));
  page.on('console', (m) => {
    if (m.type() === 'error') consoleErrors.push(m.text());
  });
  page.on('framenavigated', (frame) => {
    if (frame === page.mainFrame()) navigations++;
  });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await cluster?.close();
});

describe('the status page in Chromium', () => {
  it('renders the demo’s hosts, then problems of Ingresses applied later and a watcher’s state, live', async () => {
    await page.goto(`http://127.0.0.1:${cluster.healthzPort}/`);
    await page.locator('#routes tbody', { hasText: 'hello.demo.local' }).waitFor({ timeout: 10_000 });
    const routes = await rows('routes');
    // the host cell says where nginx serves the host from, under its name (routes as data: the shared server)
    expect(routes).toContainEqual([
      'hello.demo.localshared server',
      '/',
      'Prefix',
      'default/hello',
      'default/hello:80',
      '1',
      'proxy',
    ]);
    expect(routes).toContainEqual([
      'api.demo.localshared server',
      '/v2',
      'Prefix',
      'default/api',
      'default/api-v2:80',
      '1',
      'proxy',
    ]);
    expect(routes).toContainEqual([
      'secure.demo.localTLSshared server',
      '/',
      'Prefix',
      'default/secure',
      'default/secure:8443',
      '1',
      'proxy',
    ]);
    const certificates = await rows('certificates');
    expect(certificates.find((r) => r[0] === 'secure.demo.local')?.[1]).toBe('default/secure-demo-tls');
    expect(Number(certificates.find((r) => r[0] === 'secure.demo.local')?.[3])).toBeGreaterThan(300);
    expect(await page.locator('#problems tbody').textContent()).toBe('none');
    expect(await page.locator('#streams-section').isHidden()).toBe(true); // no TCP/UDP services, no passthrough
    expect(await page.locator('#controller').textContent()).toMatch(/versionv\d+\.\d+\.\d+/);
    const actors = await rows('actors');
    expect(actors).toContainEqual(['nginx', 'alive.running']);
    expect(actors).toContainEqual(['watcher.Ingress', 'running.watching']);
    // No Gateway API CRDs in this cluster: the watcher says so (and the controller serves its Ingresses all the same).
    expect(actors).toContainEqual(['watcher.HTTPRoute', 'unserved']);
    const reloads = await page
      .locator('#nginx div', { hasText: /^reloads/ })
      .locator('dd')
      .textContent();
    expect(Number(reloads)).toBeGreaterThanOrEqual(1);

    // demo/bad-ingress.yaml (which the demo's webhook refuses; here nothing does), and a hostile annotation value.
    for (const bad of await manifests(join(PROJECT_ROOT, 'demo'), 'bad-ingress.yaml')) await cluster.apply(bad);
    await cluster.apply(
      ingress(
        'hostile',
        { 'hostile.demo.local': [{ path: '/', service: 'hello' }] },
        { annotations: { 'nginx.ingress.kubernetes.io/proxy-body-size': HOSTILE } },
      ),
    );
    await page.locator('#problems tbody', { hasText: 'default/hostile' }).waitFor({ timeout: 10_000 });
    await page.locator('#problems tbody', { hasText: 'default/slow' }).waitFor({ timeout: 10_000 });
    const problems = await rows('problems');
    expect(problems).toContainEqual([
      'Ingress default/slow',
      'metadata.annotations.nginx.ingress.kubernetes.io/proxy-read-timeout',
      expect.stringContaining('30 seconds'),
    ]);
    expect(problems).toContainEqual([
      'Ingress default/hello-again',
      expect.stringMatching(/^spec\.rules/),
      expect.any(String),
    ]);
    const hostile = problems.find((r) => r[0] === 'Ingress default/hostile');
    expect(hostile?.[2]).toContain(HOSTILE); // the text as written, not an element
    expect(await page.locator('img').count()).toBe(0);
    expect(await page.locator('#problems-count').textContent()).toBe(String(problems.length));

    if (process.env.UPDATE_DOCS) {
      await page.waitForTimeout(1100); // one more poll, so the uptime and "updated" line are fresh
      await page.screenshot({ path: join(PROJECT_ROOT, 'docs', 'status-page.png'), fullPage: true });
    }

    // The API server fails every request: the Ingress watcher leaves `watching`, and comes back once it answers.
    const watcherState = async () => (await rows('actors')).find((r) => r[0] === 'watcher.Ingress')?.[1];
    cluster.api.failRequests({ status: 500 });
    cluster.api.dropWatches();
    try {
      await waitFor(
        'the watcher’s new state on the page',
        async () => (await watcherState()) !== 'running.watching',
        15_000,
        100,
      );
      expect(await watcherState()).toMatch(/^(backoff|running\.listing)$/);
      await page.locator('#health', { hasText: 'watcher Ingress is not watching' }).waitFor({ timeout: 10_000 });
    } finally {
      cluster.api.failRequests(null);
    }
    await waitFor('watching again on the page', async () => (await watcherState()) === 'running.watching', 30_000, 100);

    expect(navigations).toBe(1); // all of it without a reload
    expect(dialogs).toEqual([]);
    const origin = `http://127.0.0.1:${cluster.healthzPort}`;
    expect(new Set(requests)).toEqual(
      new Set([`${origin}/`, `${origin}/status.css`, `${origin}/status.js`, `${origin}/status.json`]),
    );
    expect(consoleErrors).toEqual([]);
  }, 120_000);
});

describe('the status page with the Gateway API (the demo’s cluster)', () => {
  let gateway: Cluster;
  afterAll(async () => await gateway?.close());

  it('lists the demo’s HTTPRoute beside the Ingress routes: kind, name, hostnames, its parent’s status', async () => {
    gateway = await startCluster(
      [
        ...(await manifests(join(PROJECT_ROOT, 'examples'))),
        ...gatewayApiCrds(),
        ...(await manifests(join(PROJECT_ROOT, 'examples', 'gateway-api'))),
      ],
      ['--configmap', 'ingress-actors/ingress-actors'],
    );
    await waitFor('the first sync', () => (gateway.actor('nginx')?.context.reloadsOk as number) >= 1, 20_000);
    const tab = await browser.newPage({ viewport: { width: 1360, height: 900 } });
    try {
      const errors: string[] = [];
      tab.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
      await tab.goto(`http://127.0.0.1:${gateway.healthzPort}/`);
      await tab.locator('#gateway-routes tbody', { hasText: 'default/hello' }).waitFor({ timeout: 20_000 });
      await tab.locator('#gateway-routes tbody', { hasText: 'gateway.demo.local' }).waitFor({ timeout: 10_000 });
      const cells = await tab
        .locator('#gateway-routes tbody tr')
        .evaluateAll((trs) =>
          trs.map((tr) =>
            Array.from(tr.querySelectorAll('td'), (td: { textContent: string | null }) => td.textContent),
          ),
        );
      expect(cells).toEqual([['HTTPRoute', 'default/hello', 'gateway.demo.local', 'default/demo', 'True', 'True']]);
      expect(await tab.locator('#gateway-routes-section').isHidden()).toBe(false);
      expect(await tab.locator('#gateway-routes-count').textContent()).toBe('1');
      // The Ingress routes are still there, beside.
      await tab.locator('#routes tbody', { hasText: 'hello.demo.local' }).waitFor({ timeout: 10_000 });
      expect(errors).toEqual([]);
    } finally {
      await tab.close();
    }
  }, 90_000);

  it('hides the section where no Gateway API route is', async () => {
    await page.goto(`http://127.0.0.1:${cluster.healthzPort}/`);
    await page.locator('#routes tbody', { hasText: 'hello.demo.local' }).waitFor({ timeout: 10_000 });
    expect(await page.locator('#gateway-routes-section').isHidden()).toBe(true);
  });
});

describe('/status.json and the page’s headers', () => {
  it('gives the report for scripts, under the strict CSP, nosniff and no-store', async () => {
    const reply = await get({
      host: `127.0.0.1:${cluster.healthzPort}`,
      path: '/status.json',
      port: cluster.healthzPort,
    });
    expect(reply.status).toBe(200);
    expect(reply.headers['content-type']).toBe('application/json; charset=utf-8');
    const report = JSON.parse(reply.body) as StatusReport;
    expect(Object.keys(report)).toEqual([
      'schema',
      'generatedAt',
      'controller',
      'routes',
      'gatewayRoutes',
      'streams',
      'certificates',
      'problems',
      'nginx',
      'sync',
      'actors',
    ]);
    expect(report.schema).toBe(1);
    const { version } = JSON.parse(await readFile(join(PROJECT_ROOT, 'package.json'), 'utf8')) as { version: string };
    expect(report.controller).toMatchObject({
      version,
      ingressClass: 'nginx',
      controllerClass: 'k8s.io/ingress-nginx',
    });
    expect(report.routes).toContainEqual(
      expect.objectContaining({ host: 'api.demo.local', path: '/healthz', pathType: 'Exact', endpoints: 1 }),
    );
    expect(report.actors.map((a) => a.id)).toEqual([
      'root',
      'http',
      ...watchedKinds(true).map((kind) => `watcher.${kind}`),
      'template',
      'syncQueue',
      'nginx',
      'status',
    ]);
    expect(report.nginx.reloadsOk).toBeGreaterThanOrEqual(1);
    for (const path of ['/', '/status.js', '/status.css', '/status.json']) {
      const { status, headers } = await get({ host: 'localhost', path, port: cluster.healthzPort });
      expect([path, status]).toEqual([path, 200]);
      expect(headers['content-security-policy']).toBe(CONTENT_SECURITY_POLICY);
      expect(CONTENT_SECURITY_POLICY).toMatch(
        /^default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:;/,
      );
      expect(headers['x-content-type-options']).toBe('nosniff');
      expect(headers['cache-control']).toBe('no-store');
    }
  });

  it('refuses a Host that is not loopback (a DNS-rebinding page) with the port-forward hint', async () => {
    const reply = await get({ host: 'evil.example.com', path: '/status.json', port: cluster.healthzPort });
    expect(reply.status).toBe(403);
    expect(reply.body).toMatch(/^the status page is for loopback clients: kubectl port-forward/);
    expect(reply.body.split('\n')).toHaveLength(2);
    // /healthz and /metrics answer as before.
    expect((await get({ host: 'evil.example.com', path: '/healthz', port: cluster.healthzPort })).status).toBe(200);
  });

  const external = Object.values(networkInterfaces())
    .flat()
    .find((i) => i && i.family === 'IPv4' && !i.internal)?.address;
  it.skipIf(external === undefined)(
    `refuses a client that is not on loopback (this machine's ${external ?? 'non-loopback address'}) with 403`,
    async () => {
      const ask = (path: string) =>
        new Promise<{ status: number; body: string }>((resolve, reject) => {
          const req = httpRequest(
            { host: external, port: cluster.healthzPort, path, localAddress: external, agent: false },
            (res) => {
              let body = '';
              res.setEncoding('utf8');
              res.on('data', (chunk: string) => (body += chunk));
              res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
            },
          );
          req.on('error', reject);
          req.end();
        });
      for (const path of ['/', '/status.json', '/status.js']) {
        const reply = await ask(path);
        expect([path, reply.status]).toEqual([path, 403]);
        expect(reply.body).toContain('kubectl port-forward');
      }
      expect((await ask('/healthz')).status).toBe(200);
    },
  );
});

describe('--status-page on the server', () => {
  const serve = async (mode: StatusPageMode) => {
    const server = createHttpServer({
      port: 0,
      health: () => ({ ok: true, problems: [], warnings: [] }),
      metrics: new ControllerMetrics({
        controllerNamespace: '',
        controllerClass: 'k8s.io/ingress-nginx',
        controllerPod: 'test',
        electionId: 'test',
        actorIds: [],
      }),
      log: pino({ level: 'silent' }),
      statusPage: { mode, report: () => ({ schema: 1 }) as unknown as StatusReport },
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return { server, port: (server.address() as AddressInfo).port };
  };
  it.each<[StatusPageMode, string, number]>([
    ['off', 'localhost', 404],
    ['loopback', 'ingress.example.com', 403],
    ['all', 'ingress.example.com', 200],
  ])('%s: a request for / with Host %s gets %i; /healthz is 200 whatever the mode', async (mode, host, status) => {
    const { server, port } = await serve(mode);
    try {
      for (const path of ['/', '/status.json', '/status.js'])
        expect([path, (await get({ host, path, port })).status]).toEqual([path, status]);
      expect((await get({ host, path: '/healthz', port })).status).toBe(200);
      expect((await get({ host, path: '/other', port })).status).toBe(404);
    } finally {
      server.close();
    }
  });
});
