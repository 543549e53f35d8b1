/**
 * The controller end to end against the test API server and a real nginx: a burst of changes
 * coalesces into few reloads, a broken template on disk keeps the old one serving, and a
 * config nginx refuses leaves the live one untouched.
 */
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ingress, ingressClass, serviceWithEndpoints } from '../support/manifests.js';
import { get, startBackend, type Backend } from '../support/net.js';
import { nginxSettled, queueIdle, startCluster, waitFor, type Cluster } from '../support/cluster.js';
import { addRefusalHook, REFUSAL } from '../support/refusal-hook.js';

let cluster: Cluster;
let templates: string;
const backends: Backend[] = [];

const request = (host: string, path: string) => get({ host, path, port: cluster.httpPort });
const nginxContext = () =>
  cluster.actor('nginx')!.context as { reloadsOk: number; reloadsFailed: number; lastReloadError: string | null };

beforeAll(async () => {
  templates = await mkdtemp(join(tmpdir(), 'ia-templates-'));
  await cp(new URL('../../templates/', import.meta.url).pathname, templates, { recursive: true });
  await addRefusalHook(join(templates, 'nginx.conf.hbs'));
  for (const name of ['one', 'two']) backends.push(await startBackend(name));
  cluster = await startCluster(
    [
      ingressClass(),
      ...serviceWithEndpoints('one', [{ port: backends[0]!.port }]),
      ...serviceWithEndpoints('two', [{ port: backends[1]!.port }]),
      { apiVersion: 'v1', kind: 'ConfigMap', metadata: { namespace: 'default', name: 'ingress-config' }, data: {} },
      ingress('burst', { 'burst.example.com': [{ path: '/v0', service: 'one' }] }),
    ],
    [
      '--template',
      join(templates, 'nginx.conf.hbs'),
      '--configmap',
      'default/ingress-config',
      '--sync-rate-limit',
      '0.5',
    ],
  );
  await waitFor('the first config', async () => (await request('burst.example.com', '/v0')).backend === 'one', 15_000);
}, 30_000);

afterAll(async () => {
  await cluster?.close();
  await Promise.all(backends.map((b) => b.close()));
  await rm(templates, { recursive: true, force: true });
});

describe('the controller', () => {
  it('turns a burst of 500 Ingress changes within a second ' +
    'into at most 3 reloads, ending on the last state', async () => {
    await waitFor('the sync queue to be idle', () => queueIdle(cluster.actor('syncQueue')?.value));
    await waitFor('nginx to be idle', () => nginxSettled(cluster.actor('nginx')));
    const before = nginxContext().reloadsOk;
    // Written in the API server's store directly and synchronously: the controller (in this process) runs
    // only once all 500 are written, so it meets them as one burst however long the loop took on a loaded
    // machine, and still sees them only through its watch.
    // Each change a setting no path had before: a new location profile each time, so every one of them would reload
    // (a change of paths alone is pushed, routes as data)
    for (let i = 1; i <= 500; i++) {
      cluster.api.registry.apply(
        ingress(
          'burst',
          { 'burst.example.com': [{ path: `/v${i}`, service: 'two' }] },
          { annotations: { 'nginx.ingress.kubernetes.io/proxy-read-timeout': String(1000 + i) } },
        ) as never,
      );
    }
    await waitFor(
      'the last state served',
      async () => (await request('burst.example.com', '/v500')).backend === 'two',
      15_000,
    );
    await waitFor('the sync queue to settle', () => queueIdle(cluster.actor('syncQueue')?.value), 10_000);
    // New workers serve before the reload is confirmed and counted: wait for nginx to be done too.
    await waitFor('nginx to be done reloading', () => nginxSettled(cluster.actor('nginx')), 10_000);
    const reloads = nginxContext().reloadsOk - before;
    expect(reloads).toBeGreaterThanOrEqual(1);
    expect(reloads).toBeLessThanOrEqual(3);
    expect((await request('burst.example.com', '/v499')).status).toBe(404);
  }, 60_000);

  it('keeps the last good template when the file breaks, and recovers when it is fixed', async () => {
    const file = join(templates, 'nginx.conf.hbs');
    const good = await readFile(file, 'utf8');
    await writeFile(file, good.replace('{{#each servers}}', '{{#each servers}'));
    await waitFor('the template to be invalid', () => cluster.actor('template')?.value === 'invalid');
    expect(String(cluster.actor('template')?.context.lastError)).toMatch(/nginx\.conf\.hbs: .*line \d+/);
    // The whole reply, so a failure shows what nginx answered instead.
    expect(await request('burst.example.com', '/v500')).toMatchObject({ status: 200, backend: 'two' });
    await writeFile(
      file,
      good.replace('# nginx.conf written by ingress-actors', '# nginx.conf (fixed) written by ingress-actors'),
    );
    await waitFor('the template to be ready', () => cluster.actor('template')?.value === 'ready');
    await waitFor(
      'the fixed template live',
      async () => (await readFile(join(cluster.config.configDir, 'nginx.conf'), 'utf8')).includes('(fixed)'),
      10_000,
    );
    expect((await request('burst.example.com', '/v500')).backend).toBe('two');
  }, 30_000);

  it('never swaps in a config nginx -t refuses, and applies the next good change', async () => {
    const live = () => readFile(join(cluster.config.configDir, 'nginx.conf'), 'utf8');
    const before = await live();
    const failed = nginxContext().reloadsFailed;
    // Every valid ConfigMap value renders a config nginx takes: the refusal is the test template's hook.
    await cluster.patch({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'ingress-config' },
      data: REFUSAL.on,
    });
    await waitFor('a failed reload', () => nginxContext().reloadsFailed > failed, 10_000);
    expect(nginxContext().lastReloadError).toMatch(REFUSAL.error);
    expect(await live()).toBe(before);
    expect((await request('burst.example.com', '/v500')).backend).toBe('two');
    await cluster.patch({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'ingress-config' },
      data: { ...REFUSAL.off, 'log-format-upstream': '$remote_addr good' },
    });
    await waitFor('the good change live', async () => (await live()).includes('$remote_addr good'), 10_000);
  }, 30_000);
});
