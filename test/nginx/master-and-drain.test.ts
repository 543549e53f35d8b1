/**
 * The nginx adapters against a real nginx: a master in its own process group, orphaned workers
 * after `kill -9` of the master (they keep serving), and drainOrphans ending them.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { buildModel } from '../../src/model/build.js';
import { defaultBuildOptions } from '../../src/model/build-types.js';
import { nginxBinary } from '../../src/nginx/binary.js';
import { drainOrphans } from '../../src/nginx/drain.js';
import { liveGroupMembers, spawnMaster } from '../../src/nginx/master.js';
import { isListening, waitForPort } from '../../src/nginx/probe.js';
import { stageConfig } from '../../src/nginx/apply.js';
import { loadTemplate } from '../../src/render/load.js';
import { render } from '../../src/render/render.js';
import { freePort, get } from '../support/net.js';

let dir: string;
let port: number;
const log = pino({ level: 'silent' });

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ia-master-'));
  port = await freePort();
  const { model } = buildModel(
    { ingresses: [], ingressClasses: [], services: [], endpointSlices: [], secrets: [], configMaps: [] },
    { ...defaultBuildOptions, httpPort: port, httpsPort: await freePort() },
  );
  const staged = await stageConfig(nginxBinary(), dir, render(model, await loadTemplate()), model.certificates);
  expect(staged.ok).toBe(true);
});
afterAll(() => rm(dir, { recursive: true, force: true }));

it('orphaned workers keep serving after kill -9 of the master until drained', async () => {
  const master = spawnMaster(nginxBinary(), dir, join(dir, 'nginx.conf'), log);
  await waitForPort(port);
  expect((await get({ host: 'x', path: '/', port })).status).toBe(404);
  process.kill(master.pid, 'SIGKILL');
  expect((await master.exited).signal).toBe('SIGKILL');
  // What the seed's probe alone would wait on forever:
  expect((await get({ host: 'x', path: '/', port })).status).toBe(404);
  expect(liveGroupMembers(master.pid).length).toBeGreaterThan(0); // the orphaned workers
  const started = Date.now();
  await drainOrphans({ pgid: master.pid, port, drainTimeoutMs: 2000 });
  expect(Date.now() - started).toBeLessThan(2500);
  expect(liveGroupMembers(master.pid)).toEqual([]);
  expect(await isListening(port)).toBe(false);
});

it('a config nginx refuses never replaces the live one', async () => {
  const before = await import('node:fs/promises').then((fs) => fs.readFile(join(dir, 'nginx.conf'), 'utf8'));
  const result = await stageConfig(nginxBinary(), dir, 'events {}\nhttp { server { listen 1 bogus_option; } }\n', []);
  expect(result.ok).toBe(false);
  expect(!result.ok && result.error).toMatch(/invalid parameter "bogus_option"/);
  const after = await import('node:fs/promises').then((fs) => fs.readFile(join(dir, 'nginx.conf'), 'utf8'));
  expect(after).toBe(before);
});
