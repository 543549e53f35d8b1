/**
 * SIGTERM to a real controller process (the CLI) while requests stream through its nginx: the
 * requests in flight finish and the process exits 0; when nginx cannot quit within the shutdown
 * timeout (a request that never ends), it is killed and the exit code is 1.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterEach, expect, it } from 'vitest';
import { startApiServer, type ApiServer } from '../../src/dev/api-server/server.js';
import { liveGroupMembers } from '../../src/nginx/master.js';
import { isListening } from '../../src/nginx/probe.js';
import { ingress, ingressClass, serviceWithEndpoints } from '../support/manifests.js';
import { freePort, get } from '../support/net.js';
import { startSlowBackend, type SlowBackend } from '../support/slow-backend.js';
import { waitFor } from '../support/cluster.js';

const CLI = new URL('../../bin/ingress-actors', import.meta.url).pathname;
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function startControllerProcess(shutdownTimeout: string) {
  const backend: SlowBackend = await startSlowBackend('app');
  const api: ApiServer = await startApiServer({
    seed: [
      ingressClass(),
      ...serviceWithEndpoints('app', [{ port: backend.port }]),
      ingress('app', { 'term.example.com': [{ path: '/', service: 'app' }] }),
    ] as never,
  });
  const dir = await mkdtemp(join(tmpdir(), 'ia-sigterm-'));
  cleanups.push(
    async () => (await api.close(), await backend.close(), await rm(dir, { recursive: true, force: true })),
  );
  await api.writeKubeconfig(join(dir, 'kubeconfig'));
  const port = await freePort();
  const child = execa(
    CLI,
    [
      'controller',
      '--kubeconfig',
      join(dir, 'kubeconfig'),
      '--http-port',
      String(port),
      '--https-port',
      String(await freePort()),
      '--config-dir',
      join(dir, 'nginx'),
      '--shutdown-timeout',
      shutdownTimeout,
      '--log-level',
      'warn',
    ],
    { reject: false },
  );
  const request = (path: string) => get({ host: 'term.example.com', path, port });
  // Right after a reload the old workers may still take a connection or two: wait for a steady answer.
  let steady = 0;
  await waitFor(
    'the controller serving steadily',
    async () => ((steady = (await request('/')).backend === 'app' ? steady + 1 : 0), steady >= 10),
    20_000,
    50,
  );
  return { child, request, port, dir };
}

it('finishes the requests in flight and exits 0 on SIGTERM', async () => {
  const { child, request, port } = await startControllerProcess('10');
  const inFlight = Array.from({ length: 20 }, (_, i) => request(`/?delay=${200 + i * 20}`));
  await new Promise((r) => setTimeout(r, 100));
  child.kill('SIGTERM');
  const replies = await Promise.all(inFlight);
  expect(replies.map((r) => r.status)).toEqual(replies.map(() => 200));
  const result = await child;
  expect(result.exitCode).toBe(0);
  expect(await isListening(port)).toBe(false);
}, 60_000);

it('kills nginx and exits 1 when it cannot quit within the shutdown timeout', async () => {
  const { child, request, dir } = await startControllerProcess('1');
  const hanging = request('/?delay=30000').catch((error: Error) => error);
  await new Promise((r) => setTimeout(r, 200));
  const masterPid = Number(await readFile(join(dir, 'nginx', 'nginx.pid'), 'utf8'));
  expect(liveGroupMembers(masterPid).length).toBeGreaterThan(1);
  const started = Date.now();
  child.kill('SIGTERM');
  const result = await child;
  expect(result.exitCode).toBe(1);
  expect(Date.now() - started).toBeLessThan(10_000);
  expect(await hanging).toBeInstanceOf(Error); // its connection was cut when nginx was killed
  expect(liveGroupMembers(masterPid)).toEqual([]);
}, 60_000);
