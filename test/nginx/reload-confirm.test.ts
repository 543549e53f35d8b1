/**
 * Finding 5 of "No tenant can stall, block or bypass another": a reload is confirmed, not assumed.
 * `nginx -t` does not bind sockets, so a config naming a port another process holds passes it and
 * then fails in the master after SIGHUP, which keeps serving the old config. The nginx-process
 * machine, with the controller's own effects over a real nginx, must count that reload as failed.
 */
import { createServer, type Server } from 'node:net';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createActor } from 'xstate';
import { nginxProcessMachine } from '../../machines/nginxProcess.machine.js';
import { nginxActors } from '../../src/actors/nginx.js';
import { buildModel } from '../../src/model/build.js';
import { defaultBuildOptions } from '../../src/model/build-types.js';
import { emptySnapshot } from '../../src/model/snapshot.js';
import { nginxBinary } from '../../src/nginx/binary.js';
import { stageConfig } from '../../src/nginx/apply.js';
import { spawnMaster } from '../../src/nginx/master.js';
import { loadTemplate } from '../../src/render/load.js';
import { render } from '../../src/render/render.js';
import type { Certificate } from '../../src/model/nginx-model.js';
import { waitFor } from '../support/cluster.js';
import { freePort, get } from '../support/net.js';

let dir: string;
let httpPort: number;
let base: string;
let files: Certificate[];
let squatter: Server;
let heldPort: number;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ia-reload-confirm-'));
  httpPort = await freePort();
  const { model } = buildModel(emptySnapshot, { ...defaultBuildOptions, httpPort, httpsPort: await freePort() });
  base = render(model, await loadTemplate());
  files = [...model.certificates];
  expect((await stageConfig(nginxBinary(), dir, base, model.certificates)).ok).toBe(true);
  squatter = createServer();
  await new Promise<void>((resolve) => squatter.listen(0, '127.0.0.1', resolve));
  heldPort = (squatter.address() as { port: number }).port;
});
afterAll(async () => {
  await new Promise((resolve) => squatter.close(resolve));
  await rm(dir, { recursive: true, force: true });
});

/** goodAnswer is what good.example answers on the HTTP port. */
const goodAnswer = async () => (await get({ host: 'good.example', path: '/', port: httpPort })).body;

/** withServer adds a server to a rendered config, before the http block's closing brace. */
function withServer(config: string, server: string): string {
  const end = config.lastIndexOf('}');
  return `${config.slice(0, end)}    ${server}\n}\n`;
}

it(
  'finding 5: a reload the master refuses after nginx -t passed ' +
    '(a port in use) counts as failed, the old config serving',
  async () => {
    const nginx = createActor(
      nginxProcessMachine.provide({
        actors: nginxActors({ binary: nginxBinary(), dir, httpPort, log: pino({ level: 'silent' }) }),
      }),
      {
        input: {
          shutdownTimeoutMs: 5000,
          drainTimeoutMs: 2000,
          backoffBaseMs: 100,
          backoffMaxMs: 500,
          stableAfterMs: 1000,
          reloadRetryMs: 60_000,
        },
      },
    ).start();
    try {
      await waitFor('nginx running', () => nginx.getSnapshot().matches({ alive: 'running' }));
      const good = withServer(
        base,
        `server { listen 127.0.0.1:${httpPort}; server_name good.example; return 200 "good"; }`,
      );
      nginx.send({ type: 'nginx.reload', config: good, files });
      await waitFor('the good reload', () => nginx.getSnapshot().context.reloadsOk === 1);
      expect(await goodAnswer()).toBe('good');

      const blocked = withServer(
        good,
        `server { listen 127.0.0.1:${heldPort}; server_name held.example; return 200 "held"; }`,
      );
      nginx.send({ type: 'nginx.reload', config: blocked, files });
      await waitFor('the refused reload', () => nginx.getSnapshot().context.reloadsFailed === 1);
      const context = nginx.getSnapshot().context;
      expect(context.reloadsOk).toBe(1);
      expect(context.applied?.config).toBe(good);
      expect(context.lastReloadError).toMatch(/bind\(\) to 127\.0\.0\.1:\d+ failed/);
      // The master kept the old generation: the old config still answers.
      expect(await goodAnswer()).toBe('good');
    } finally {
      nginx.send({ type: 'nginx.stop' });
      await waitFor('nginx stopped', () => nginx.getSnapshot().status === 'done');
    }
  },
);

/**
 * slowWorkerStart makes each worker of a config spend `seconds` starting (a busy loop in init_worker_by_lua)
 * before it takes its title and serves: what a worker on a loaded machine may take.
 */
function slowWorkerStart(config: string, seconds: number): string {
  const modules = ['ndk_http_module.so', 'ngx_http_lua_module.so'].map(
    (m) => `load_module /usr/lib/nginx/modules/${m};`,
  );
  const busy = `init_worker_by_lua_block { local t = os.clock() while os.clock() - t < ${seconds} do end }`;
  return `${modules.join('\n')}\n${withServer(config, busy)}`;
}

it('a reload signalled while the first workers are still starting is confirmed only once no worker of the old ' +
  'config can take a connection', async () => {
  // The old confirmation counted as new any worker it had not seen titled before the signal: with
  // none titled yet, the first old worker to start "confirmed" the reload (a CI run met one).
  const log = pino({ level: 'silent' });
  // The old config's workers take their titles after the signal, before the master tells them to stop
  // (it waits 100 ms after starting the new ones); the new config's start later still.
  const answering = (text: string, seconds: number) =>
    slowWorkerStart(
      withServer(base, `server { listen 127.0.0.1:${httpPort}; server_name good.example; return 200 "${text}"; }`),
      seconds,
    );
  for (let round = 0; round < 3; round++) {
    expect((await stageConfig(nginxBinary(), dir, answering('old', 0.05), files)).ok).toBe(true);
    const master = spawnMaster(nginxBinary(), dir, join(dir, 'nginx.conf'), log);
    try {
      // The master takes signals once it wrote its pid; its workers are still starting.
      const pid = async () => (await readFile(join(dir, 'nginx.pid'), 'utf8').catch(() => '')).trim();
      await waitFor('the pid file', async () => (await pid()) === String(master.pid), 10_000, 1);
      expect((await stageConfig(nginxBinary(), dir, answering('new', 0.3), files)).ok).toBe(true);
      await master.reload(10_000);
      for (let i = 0; i < 5; i++) expect(await goodAnswer()).toBe('new');
    } finally {
      master.quit();
      await master.exited;
    }
  }
}, 60_000);
