/**
 * /healthz and /metrics of a controller against the test API server and a real nginx: /healthz
 * is 200 once everything is up, 500 with the reason while nginx is down, still 200 (with a
 * warning) after a refused reload while nginx serves the last good config, and 200 again once
 * it recovers; /metrics, read with a Prometheus text parser, moves
 * its counters as reloads, refused reloads and nginx restarts happen.
 */
import { createServer, type Server } from 'node:net';
import { cp, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signalGroup } from '../../src/nginx/master.js';
import { nginxSettled, startCluster, waitFor, type Cluster } from '../support/cluster.js';
import { ingress, ingressClass, serviceWithEndpoints } from '../support/manifests.js';
import { addRefusalHook, REFUSAL } from '../support/refusal-hook.js';
import { get, startBackend, type Backend } from '../support/net.js';
import { healthz, scrape, type Scrape } from './prometheus.js';

let cluster: Cluster;
let backend: Backend;
let templates: string;
const request = () => get({ host: 'web.example.com', path: '/', port: cluster.httpPort });
const metrics = () => scrape(cluster.healthzPort);
const ok = (s: Scrape) => s.value('nginx_ingress_controller_success');

beforeAll(async () => {
  // A template copy nginx -t refuses on demand (every ConfigMap value that passes its validator renders a good config).
  templates = await mkdtemp(join(tmpdir(), 'ia-templates-'));
  await cp(new URL('../../templates/', import.meta.url).pathname, templates, { recursive: true });
  await addRefusalHook(join(templates, 'nginx.conf.hbs'));
  backend = await startBackend('web');
  cluster = await startCluster(
    [
      ingressClass(),
      ...serviceWithEndpoints('web', [{ port: backend.port }]),
      { apiVersion: 'v1', kind: 'ConfigMap', metadata: { namespace: 'default', name: 'ingress-config' }, data: {} },
      ingress('web', { 'web.example.com': [{ path: '/', service: 'web' }] }),
    ],
    ['--configmap', 'default/ingress-config', '--template', join(templates, 'nginx.conf.hbs')],
  );
  await waitFor('the app served', async () => (await request()).backend === 'web', 15_000);
  // Until the first reload is confirmed, a boot-config worker may still take a connection.
  await waitFor('nginx settled', () => nginxSettled(cluster.actor('nginx')), 10_000);
}, 30_000);

afterAll(async () => {
  await cluster?.close();
  await backend?.close();
  if (templates) await rm(templates, { recursive: true, force: true });
});

describe('/healthz and /metrics', () => {
  it('answers 200 when watchers are synced, nginx runs and the reload succeeded; /metrics says the same', async () => {
    await waitFor('healthy', async () => (await healthz(cluster.healthzPort)).status === 200);
    expect(await healthz(cluster.healthzPort)).toEqual({ status: 200, body: 'ok\n' });
    const res = await fetch(`http://127.0.0.1:${cluster.healthzPort}/metrics`);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const m = await metrics();
    expect(m.family('nginx_ingress_controller_success').type).toBe('COUNTER');
    expect(ok(m)).toBeGreaterThanOrEqual(1);
    expect(m.value('nginx_ingress_controller_errors')).toBe(0);
    expect(m.value('nginx_ingress_controller_config_last_reload_successful')).toBe(1);
    expect(m.value('nginx_ingress_controller_config_last_reload_successful_timestamp_seconds')).toBeGreaterThan(
      Date.now() / 1000 - 60,
    );
    expect(m.value('nginx_ingress_controller_leader_election_status', { name: 'ingress-controller-leader' })).toBe(1);
    expect(m.value('ingress_actors_nginx_restarts_total')).toBe(0);
    // (This parser drops _count of labelled histograms; the +Inf bucket is the same number.)
    expect(
      Number(m.family('ingress_actors_sync_duration_seconds').metrics[0]!.buckets?.['+Inf']),
    ).toBeGreaterThanOrEqual(1);
    expect(m.value('ingress_actors_actor_state', { actor: 'nginx', state: 'alive.running' })).toBe(1);
    expect(m.value('ingress_actors_actor_state', { actor: 'watcher.Ingress', state: 'running.watching' })).toBe(1);
    expect(m.value('ingress_actors_actor_state', { actor: 'status', state: 'leader' })).toBe(1);
    expect(m.value('ingress_actors_actor_state', { actor: 'root', state: 'running' })).toBe(1);
    expect((await fetch(`http://127.0.0.1:${cluster.healthzPort}/nope`)).status).toBe(404);
  });

  it('counts a reload per applied change', async () => {
    const before = ok(await metrics());
    // a setting no other path has: a new location profile, so nginx.conf changes (a new path alone is pushed)
    await cluster.patch({
      apiVersion: 'networking.k8s.io/v1',
      kind: 'Ingress',
      metadata: { name: 'web', annotations: { 'nginx.ingress.kubernetes.io/proxy-read-timeout': '95' } },
      spec: {
        rules: [
          {
            host: 'web.example.com',
            http: {
              paths: [
                { path: '/', pathType: 'Prefix', backend: { service: { name: 'web', port: { number: 80 } } } },
                { path: '/v2', pathType: 'Exact', backend: { service: { name: 'web', port: { number: 80 } } } },
              ],
            },
          },
        ],
      },
    });
    await waitFor('a reload counted', async () => ok(await metrics()) === before + 1, 10_000);
  });

  it('turns 500 while nginx is down, says why, and 200 again once nginx is back; the restart is counted', async () => {
    const pid = Number(await readFile(join(cluster.config.configDir, 'nginx.pid'), 'utf8'));
    // Kill the whole group and take the port, so the replacement cannot listen until we let go.
    signalGroup(pid, 'SIGKILL');
    const squatter: Server = await new Promise((resolve) => {
      const attempt = () => {
        const s = createServer();
        s.once('error', () => setTimeout(attempt, 2));
        s.listen(cluster.httpPort, '0.0.0.0', () => resolve(s));
      };
      attempt();
    });
    let body = '';
    await waitFor(
      '/healthz 500',
      async () => {
        const h = await healthz(cluster.healthzPort);
        body = h.body;
        return h.status === 500 && h.body.includes('nginx is not running');
      },
      10_000,
      10,
    );
    expect(body).toMatch(/^nginx is not running \(state (died|draining|restarting|alive\.starting)/m);
    await new Promise<void>((resolve) => squatter.close(() => resolve()));
    await waitFor('/healthz 200 again', async () => (await healthz(cluster.healthzPort)).status === 200, 15_000, 50);
    expect((await request()).backend).toBe('web');
    expect((await metrics()).value('ingress_actors_nginx_restarts_total')).toBeGreaterThanOrEqual(1);
  }, 30_000);

  it('finding 2: stays 200 after a reload nginx refused (nginx serves the last good config), says why in the detail, ' +
    'counts it in /metrics, and recovers', async () => {
    const before = await metrics();
    const lastGood = before.value('nginx_ingress_controller_config_last_reload_successful_timestamp_seconds');
    // The hooked template writes a directive nginx does not know: the config passes the model, not `nginx -t`.
    await cluster.patch({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'ingress-config' },
      data: REFUSAL.on,
    });
    await waitFor(
      'the error counted',
      async () =>
        (await metrics()).value('nginx_ingress_controller_errors') ===
        before.value('nginx_ingress_controller_errors') + 1,
      10_000,
    );
    const failed = await metrics();
    expect(failed.value('nginx_ingress_controller_config_last_reload_successful')).toBe(0);
    // The timestamp stays that of the last good reload: what nginx serves is that old.
    expect(failed.value('nginx_ingress_controller_config_last_reload_successful_timestamp_seconds')).toBe(lastGood);
    const h = await healthz(cluster.healthzPort);
    expect(h.status).toBe(200);
    // This request comes from 127.0.0.1: the local admin sees nginx -t's own words.
    expect(h.body).toMatch(
      /^ok\nwarning: the last reload failed: .*test_refused_by_nginx.*\(nginx serves the last good config\)\n$/,
    );
    expect((await request()).backend).toBe('web'); // the old config still serves

    await cluster.patch({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'ingress-config' },
      // a config other than the last good one, so that a reload happens (the same text would be already applied)
      data: { ...REFUSAL.off, 'log-format-upstream': '$remote_addr good' },
    });
    await waitFor('the warning gone', async () => (await healthz(cluster.healthzPort)).body === 'ok\n', 10_000);
    const recovered = await metrics();
    expect(recovered.value('nginx_ingress_controller_config_last_reload_successful')).toBe(1);
    expect(
      recovered.value('nginx_ingress_controller_config_last_reload_successful_timestamp_seconds'),
    ).toBeGreaterThanOrEqual(lastGood);
    expect(ok(recovered)).toBe(ok(failed) + 1);
  }, 30_000);
});
