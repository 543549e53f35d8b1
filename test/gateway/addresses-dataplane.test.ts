/**
 * Per-Gateway addresses through a real nginx: two Gateways with port-80 listeners without hostname, each on its own
 * loopback address, keep their catch-alls and routes apart; an Ingress host stays the Ingress's on the shared
 * address while a Gateway serves the same name on its own; a Gateway with only named listeners answers 404 for other
 * names on its address.
 */
import { rm } from 'node:fs/promises';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildModel } from '../../src/model/build.js';
import { defaultBuildOptions, type BuildOptions } from '../../src/model/build-types.js';
import { ingress, ingressClass, serviceWithEndpoints, snapshotOf } from '../support/manifests.js';
import { freePort } from '../support/net.js';
import { serveModel } from '../support/served-model.js';
import { luaFolder, type RunningNginx } from '../support/nginx.js';
import { CONTROLLER, gateway, gatewayClass, listener, route } from './fixtures.js';

type Obj = Record<string, unknown>;
const POOL = ['127.0.0.200', '127.0.0.201', '127.0.0.202'];

/** startPod answers every request with its name. */
async function startPod(name: string, ip: string): Promise<{ port: number; close(): Promise<void> }> {
  const server: Server = createServer((_req, res) => res.end(name));
  await new Promise<void>((done) => server.listen(0, ip, done));
  return {
    port: (server.address() as AddressInfo).port,
    close: () => new Promise((done) => server.close(() => done())),
  };
}

/** send asks nginx at `address` for `/` with Host `host`: the status and the body (a pod's name). */
function send(address: string, host: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request({ host: address, port, path: '/', headers: { host }, agent: false }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve(res.statusCode === 200 ? body : String(res.statusCode)));
    });
    req.on('error', reject);
    req.end();
  });
}

const aged = (g: Obj, minute: number): Obj => ({
  ...g,
  metadata: { ...(g.metadata as Obj), creationTimestamp: `2026-01-01T00:0${minute}:00Z` },
});
const to = (name: string) => [{ name, namespace: 'default' }];

let port: number;
let dir: string;
let nginx: RunningNginx | undefined;
const pods: { close(): Promise<void> }[] = [];
let result: ReturnType<typeof buildModel>;

beforeAll(async () => {
  const [a, b, legacy] = [
    await startPod('a', '127.0.0.2'),
    await startPod('b', '127.0.0.3'),
    await startPod('legacy', '127.0.0.4'),
  ];
  pods.push(a, b, legacy);
  const folder = await luaFolder('ia-gw-addr-');
  dir = folder.dir;
  port = await freePort();
  const options: BuildOptions = {
    ...defaultBuildOptions,
    httpPort: port,
    httpsPort: await freePort(),
    dynamic: folder.dynamic,
    gateway: { controllerName: CONTROLLER, addresses: POOL },
  };
  const objects = [
    ingressClass(),
    ingress('legacy', { 'shared.test': [{ path: '/', service: 'legacy' }] }),
    ...serviceWithEndpoints('a', [{ ip: '127.0.0.2', port: a.port }]),
    ...serviceWithEndpoints('b', [{ ip: '127.0.0.3', port: b.port }]),
    ...serviceWithEndpoints('legacy', [{ ip: '127.0.0.4', port: legacy.port }]),
  ];
  const gatewayObjects = [
    gatewayClass(),
    aged(gateway([listener('http')], 'one'), 1),
    aged(gateway([listener('http')], 'two'), 2),
    aged(gateway([listener('named', { hostname: 'only.test' })], 'three'), 3),
    aged(gateway([listener('http')], 'four'), 4),
    route('r1', { parentRefs: to('one'), rules: [{ backendRefs: [{ name: 'a', port: 80 }] }] }),
    route('r2', { parentRefs: to('two'), rules: [{ backendRefs: [{ name: 'b', port: 80 }] }] }),
    route('r3', { parentRefs: to('three'), rules: [{ backendRefs: [{ name: 'a', port: 80 }] }] }),
    route('r4', { parentRefs: to('four'), rules: [{ backendRefs: [{ name: 'b', port: 80 }] }] }),
  ];
  const snapshot = snapshotOf([...objects, ...gatewayObjects]);
  result = buildModel(snapshot, options);
  nginx = await serveModel(dir, port, folder.control, result.model);
}, 60_000);

afterAll(async () => {
  await nginx?.stop();
  await Promise.all(pods.map((p) => p.close()));
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('Gateways on their own addresses, through nginx', () => {
  it('two Gateways with a port-80 listener without hostname: each catch-all on its own address', async () => {
    expect(await send('127.0.0.200', 'any.test')).toBe('a');
    expect(await send('127.0.0.201', 'any.test')).toBe('b');
  });

  it('the shared address keeps the Ingress servers: its host, and 404 for unknown hosts (no Gateway route)', async () => {
    expect(await send('127.0.0.1', 'shared.test')).toBe('legacy');
    expect(await send('127.0.0.1', 'any.test')).toBe('404');
  });

  it('a Gateway with only a named listener: that name served, other names 404 on its address', async () => {
    expect(await send('127.0.0.202', 'only.test')).toBe('a');
    expect(await send('127.0.0.202', 'other.test')).toBe('404');
  });

  it('the pool exhausted: the newest Gateway is not served and says AddressNotAssigned', () => {
    const four = result.gateway?.status.gateways.find((g) => g.name === 'four');
    expect(four?.conditions.find((c) => c.type === 'Programmed')).toMatchObject({
      status: 'False',
      reason: 'AddressNotAssigned',
    });
    expect(result.model.gateway?.servers.some((s) => s.gateways.includes('default/four'))).toBe(false);
  });
});
