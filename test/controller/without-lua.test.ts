/**
 * Without the Lua module (a user's own nginx build), at default flags: the controller says so once, at
 * start, and renders endpoints into nginx.conf as before, so an endpoint change is served by a reload.
 * The nginx is the real one behind a wrapper whose `nginx -V` names a modules folder without the module.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startChildController, type ChildController } from '../../bench/child-controller.js';
import { nginxBinary } from '../../src/nginx/binary.js';
import { waitFor } from '../support/cluster.js';
import { ingress, ingressClass, serviceWithEndpoints } from '../support/manifests.js';
import { get, startBackend, type Backend } from '../support/net.js';

let dir: string;
let controller: ChildController;
const backends: Backend[] = [];

/** writeNginxWithoutLua writes a wrapper that runs the real nginx but says it was built with an empty modules folder. */
async function writeNginxWithoutLua(folder: string): Promise<string> {
  const modules = join(folder, 'no-modules');
  await mkdir(modules);
  const path = join(folder, 'nginx-without-lua.sh');
  await writeFile(
    path,
    [
      '#!/bin/sh',
      'if [ "$1" = "-V" ]; then',
      `  echo "configure arguments: --modules-path=${modules}" >&2`,
      '  exit 0',
      'fi',
      `exec '${nginxBinary()}' "$@"`,
      '',
    ].join('\n'),
    { mode: 0o755 },
  );
  return path;
}

const answer = async () => (await get({ host: 'plain.example.com', path: '/', port: controller.httpPort })).backend;
const logged = (text: string) => controller.logs.filter((line) => line.msg.includes(text));

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ia-without-lua-'));
  backends.push(await startBackend('one'), await startBackend('two'));
  controller = await startChildController(
    [
      ingressClass(),
      ...serviceWithEndpoints('app', [{ port: backends[0]!.port }]),
      ingress('app', { 'plain.example.com': [{ path: '/', service: 'app' }] }),
    ],
    // debug: a push would be logged (`tables pushed`), so its absence says something
    ['--nginx-binary', await writeNginxWithoutLua(dir), '--log-level', 'debug'],
  );
  await waitFor('the app served', async () => (await answer()) === 'one', 15_000);
  // New workers serve before their reload is confirmed and logged: the first sync's line comes after 'one' may.
  await waitFor('the first reload logged', () => logged('nginx reloaded').length > 0, 15_000);
}, 30_000);

afterAll(async () => {
  await controller?.close();
  await Promise.all(backends.map((b) => b.close()));
  await rm(dir, { recursive: true, force: true });
});

it('says once that the Lua balancer cannot run, and why, then serves endpoint changes by reloading', async () => {
  const fallback = logged('the Lua balancer cannot run with this nginx');
  expect(fallback).toHaveLength(1);
  expect(String(fallback[0]!.reason)).toMatch(/ngx_http_lua_module\.so not found \(Debian: apt-get install/);
  const reloadsBefore = logged('nginx reloaded').length;
  const slice = `/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/app-${backends[0]!.port}`;
  expect(
    await controller.rawPatch(slice, { ports: [{ name: 'http', port: backends[1]!.port, protocol: 'TCP' }] }),
  ).toBe(200);
  await waitFor('the new endpoint served', async () => (await answer()) === 'two', 15_000);
  // Served by new workers, so a reload it was (nothing was pushed); its line follows once it is confirmed.
  await waitFor('the reload logged', () => logged('nginx reloaded').length > reloadsBefore, 15_000);
  expect(logged('tables pushed')).toEqual([]);
  expect(logged('the Lua balancer cannot run with this nginx')).toHaveLength(1);
});
