/**
 * Finding 7 at the controller's surface: an API server that hangs after the first sync leaves
 * the replica ready (nginx serves what was last seen, as ingress-nginx does while the API server
 * is away) but says so: a warning in the /healthz detail and
 * `ingress_actors_watcher_stale_since_seconds{kind}`, both cleared once it lists again. Real
 * controller, real nginx, the test API server's hanging-request fault, short informer timeouts.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseControllerFlags } from '../../src/cli/controller-flags.js';
import { startApiServer, type ApiServer } from '../../src/dev/api-server/server.js';
import { startController, type Controller } from '../../src/main.js';
import { waitFor } from '../support/cluster.js';
import { ingress, ingressClass, serviceWithEndpoints } from '../support/manifests.js';
import { get, startBackend, type Backend } from '../support/net.js';
import { testControllerFlags } from '../support/controller-flags.js';
import { healthz, scrape } from './prometheus.js';

let api: ApiServer;
let backend: Backend;
let controller: Controller;
let dir: string;
let healthzPort: number;
let httpPort: number;

beforeAll(async () => {
  backend = await startBackend('web');
  api = await startApiServer({
    seed: [
      ingressClass(),
      ...serviceWithEndpoints('web', [{ port: backend.port }]),
      ingress('web', { 'web.example.com': [{ path: '/', service: 'web' }] }),
    ] as never,
    bookmarkIntervalMs: 200,
  });
  dir = await mkdtemp(join(tmpdir(), 'ia-stale-'));
  await api.writeKubeconfig(join(dir, 'kubeconfig'));
  const first = await testControllerFlags(join(dir, 'kubeconfig'), join(dir, 'nginx'));
  [healthzPort, httpPort] = [first.healthzPort, first.httpPort];
  const parsed = parseControllerFlags([...first.flags, '--sync-rate-limit', '10', '--shutdown-timeout', '5']);
  if (!('config' in parsed)) throw new Error('unexpected --help');
  controller = await startController(parsed.config, pino({ level: 'silent' }), {
    watcherTimeouts: { requestTimeoutMs: 300, watchIdleTimeoutMs: 2_000 },
  });
  await waitFor(
    'healthy',
    async () => (await healthz(healthzPort).catch(() => ({ status: 0 }))).status === 200,
    20_000,
    50,
  );
}, 30_000);

afterAll(async () => {
  api?.failRequests(null);
  if (controller?.root.getSnapshot().status === 'active') controller.stop();
  await controller?.exitCode;
  await api?.close();
  await backend?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('finding 7: a watcher failing after its first sync', () => {
  it('keeps /healthz 200 but shows the stale watcher in ' +
    'its detail and in /metrics, until it watches again', async () => {
    const stale = async () =>
      (await scrape(healthzPort)).value('ingress_actors_watcher_stale_since_seconds', { kind: 'Ingress' });
    expect(await stale()).toBe(0);
    const before = Math.floor(Date.now() / 1000);
    api.failRequests({ hang: true });
    api.dropWatches();
    await waitFor('the stale watcher in /metrics', async () => (await stale()) > 0, 5_000, 50);
    expect(await stale()).toBeGreaterThanOrEqual(before - 1);
    const h = await healthz(healthzPort);
    expect(h.status).toBe(200);
    expect(h.body).toMatch(/^ok\n/);
    const since = String.raw`\d{4}-\d\d-\d\dT[\d:.]+Z`;
    const state = String.raw`\(state [a-z.]+, \d+ failures in a row, last error: .*did not answer within 300 ms\)`;
    expect(h.body).toMatch(
      new RegExp(
        String.raw`^warning: watcher Ingress is not watching since ${since}; ` +
          String.raw`serving what it last saw ${state}$`,
        'm',
      ),
    );
    expect((await get({ host: 'web.example.com', path: '/', port: httpPort })).backend).toBe('web'); // still served

    api.failRequests(null);
    await waitFor('watching again', async () => (await stale()) === 0, 10_000, 50);
    await waitFor('no warning left', async () => (await healthz(healthzPort)).body === 'ok\n', 5_000, 50);
  }, 30_000);
});
