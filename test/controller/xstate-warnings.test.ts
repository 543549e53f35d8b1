/**
 * Finding 1 (issue 15, habits): the xstate warnings the test output used to carry, each at its
 * cause, against the whole controller (real API server, real nginx):
 * - "Custom actions should not call `assign()` / `raise()` directly": the wiring's provided actions
 *   (reportApplied, reportRefused, reportChanged, reportSynced, notifyChanged) called `send()` on
 *   the sync queue, whose step (with its own enqueued assign and raise) then ran inside them.
 *   They are enqueued `sendTo`s now (src/actors/tell.ts).
 * - "Event "nginx.exited" was sent to stopped actor": the master of a failed nginx machine, killed
 *   on that failure, reported its exit to the stopped machine. The root supervisor now stops what a
 *   failed child still runs (stopOrphans, machines/rootSupervisor.machine.ts), and the master's
 *   cleanup kills nginx (src/actors/nginx.ts): no second master beside the restarted machine's.
 * test/support/xstate-warnings.ts fails any test that prints them; these provoke each one.
 */
import { readFile, writeFile, cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { liveGroupMembers } from '../../src/nginx/master.js';
import { nginxSettled, startCluster, waitFor, type Cluster } from '../support/cluster.js';
import { ingress, ingressClass, serviceWithEndpoints } from '../support/manifests.js';
import { get, startBackend, type Backend } from '../support/net.js';
import { addRefusalHook, REFUSAL } from '../support/refusal-hook.js';
import { collectXstateWarnings } from '../support/xstate-warnings.js';

const HOST = 'warn.example.com';
let cluster: Cluster;
let backend: Backend;
let templates: string;
let warnings: ReturnType<typeof collectXstateWarnings>;

const request = (path = '/') => get({ host: HOST, path, port: cluster.httpPort });
const nginxContext = () => cluster.actor('nginx')!.context as { reloadsFailed: number; pid: number | null };

beforeAll(async () => {
  templates = await mkdtemp(join(tmpdir(), 'ia-warn-templates-'));
  await cp(new URL('../../templates/', import.meta.url).pathname, templates, { recursive: true });
  await addRefusalHook(join(templates, 'nginx.conf.hbs'));
  backend = await startBackend('app');
  cluster = await startCluster(
    [
      ingressClass(),
      ...serviceWithEndpoints('app', [{ port: backend.port }]),
      { apiVersion: 'v1', kind: 'ConfigMap', metadata: { namespace: 'default', name: 'ingress-config' }, data: {} },
      ingress('app', { [HOST]: [{ path: '/', service: 'app' }] }),
    ],
    ['--template', join(templates, 'nginx.conf.hbs'), '--configmap', 'default/ingress-config'],
  );
  await waitFor('the app served', async () => (await request()).backend === 'app', 15_000);
  // Until the first reload is confirmed, a boot-config worker may still take a connection.
  await waitFor('nginx settled', () => nginxSettled(cluster.actor('nginx')), 10_000);
}, 30_000);

afterAll(async () => {
  await cluster?.close();
  await backend?.close();
  if (templates) await rm(templates, { recursive: true, force: true });
});

beforeEach(() => void (warnings = collectXstateWarnings()));
afterEach(() => warnings.stop());

describe('finding 1: no xstate warning from the controller', () => {
  // A change the sync queue gets while idle.quiet with its rate token starts a sync at once:
  // `takeToken` (enqueue.assign, enqueue.raise) ran inside the sender's custom action.
  const quietWithToken = () => {
    const queue = cluster.actor('syncQueue');
    return JSON.stringify(queue?.value) === JSON.stringify({ idle: 'quiet' }) && queue?.context.tokenReady === true;
  };
  const live = () => readFile(join(cluster.config.configDir, 'nginx.conf'), 'utf8');

  it('finding 1: an Ingress change (reportChanged) and a template change (notifyChanged) reach a quiet sync queue as ' +
    'sendTo, without an assign()/raise() warning', async () => {
    await waitFor('the sync queue quiet, its token ready', quietWithToken, 10_000);
    await cluster.apply(
      ingress('app', {
        [HOST]: [
          { path: '/', service: 'app' },
          { path: '/v2', service: 'app' },
        ],
      }),
    );
    await waitFor('the new path served', async () => (await request('/v2')).backend === 'app', 10_000);
    await waitFor('the sync queue quiet, its token ready', quietWithToken, 10_000);
    const template = join(templates, 'nginx.conf.hbs');
    await writeFile(template, `# edited by the test\n${await readFile(template, 'utf8')}`);
    await waitFor('the edited template live', async () => (await live()).startsWith('# edited by the test'), 10_000);
    await waitFor('the sync queue quiet, its token ready', quietWithToken, 10_000);
    expect(warnings.seen).toEqual([]);
  }, 40_000);

  it('finding 1: a config nginx -t refuses (reportRefused) and the good one after it (reportApplied) reach the sync ' +
    'queue without a warning', async () => {
    const failed = nginxContext().reloadsFailed;
    await waitFor('the sync queue quiet, its token ready', quietWithToken, 10_000);
    // Every valid ConfigMap value renders a config nginx takes: the refusal is the test template's hook.
    await cluster.patch({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'ingress-config' },
      data: REFUSAL.on,
    });
    await waitFor('a refused reload', () => nginxContext().reloadsFailed > failed, 10_000);
    await cluster.patch({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'ingress-config' },
      data: { ...REFUSAL.off, 'log-format-upstream': '$remote_addr good' },
    });
    await waitFor('the good config live', async () => (await live()).includes('$remote_addr good'), 10_000);
    await waitFor('the sync queue quiet, its token ready', quietWithToken, 10_000);
    expect(warnings.seen).toEqual([]);
  }, 40_000);

  it('finding 1: the master of a failed nginx machine is killed ' +
    'and its exit is not sent to the stopped machine', async () => {
    const oldPid = nginxContext().pid!;
    const oldMachine = cluster.controller.root.system.get('nginx')!;
    // A bug in the machine: an event whose field throws when an action reads it fails the machine.
    const bug = Object.defineProperty({ type: 'nginx.reload' }, 'config', {
      enumerable: false,
      get: () => {
        throw new Error('nginx crashed (injected)');
      },
    });
    oldMachine.send(bug as never);
    expect(oldMachine.getSnapshot().status).toBe('error');
    await waitFor('the old master gone', () => liveGroupMembers(oldPid).length === 0, 10_000);
    await waitFor(
      'a new master serving',
      async () => nginxContext().pid !== oldPid && (await request()).backend === 'app',
      15_000,
    );
    expect(warnings.seen).toEqual([]);
  }, 40_000);
});
