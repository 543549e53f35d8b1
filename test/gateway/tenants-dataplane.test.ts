/**
 * Two tenants' Gateways through a real nginx, the second one hostile: with `--gateway-addresses` it names the address
 * the first one holds in `spec.addresses`; without, it puts a listener on the first one's port and hostname with a
 * route for `/`. Either way the first tenant's hostname stays answered by the first tenant's routes alone.
 */
import { rm } from 'node:fs/promises';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pushTables } from '../../src/actors/nginx.js';
import { buildModel } from '../../src/model/build.js';
import { defaultBuildOptions, type BuildOptions } from '../../src/model/build-types.js';
import { DynamicSplit } from '../../src/sync/dynamic-split.js';
import { writeConfigSet } from '../../src/nginx/files.js';
import { loadTemplate } from '../../src/render/load.js';
import { render } from '../../src/render/render.js';
import { serviceWithEndpoints, snapshotOf } from '../support/manifests.js';
import { freePort } from '../support/net.js';
import { luaFolder, type RunningNginx, startNginx } from '../support/nginx.js';
import { CONTROLLER, gateway, gatewayClass, listener, route } from './fixtures.js';

type Obj = Record<string, unknown>;

/** startPod answers every request with its name. */
async function startPod(name: string, ip: string): Promise<{ port: number; close(): Promise<void> }> {
  const server: Server = createServer((_req, res) => res.end(name));
  await new Promise<void>((done) => server.listen(0, ip, done));
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise((done) => {
        server.closeAllConnections();
        server.close(() => done());
      }),
  };
}

/** send asks nginx at `address`:`port` for `path` with Host `host`: the body (a pod's name) or the status. */
function send(address: string, port: number, host: string, path = '/'): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request({ host: address, port, path, headers: { host }, agent: false }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve(res.statusCode === 200 ? body : String(res.statusCode)));
    });
    req.on('error', reject);
    req.end();
  });
}

/** tenant is namespace `ns`'s Gateway `gw` (created at minute `minute`) and its route `r` to its Service `web`. */
function tenant(ns: string, minute: number, o: { spec?: Obj; status?: Obj; rules: Obj[] }): Obj[] {
  const g = gateway([listener('http', { hostname: 'victim.test' })], 'gw', ns, o.spec ?? {});
  return [
    {
      ...g,
      metadata: { ...(g.metadata as Obj), creationTimestamp: `2026-01-01T00:0${minute}:00Z` },
      ...(o.status ? { status: o.status } : {}),
    },
    route('r', { namespace: ns, parentRefs: [{ name: 'gw', namespace: ns }], rules: o.rules }),
  ];
}
const toWeb = (path: string) => ({
  matches: [{ path: { type: 'PathPrefix', value: path } }],
  backendRefs: [{ name: 'web', port: 80 }],
});

/** Serving is one nginx started on a build's model, with its tables pushed. */
interface Serving {
  readonly port: number;
  readonly result: ReturnType<typeof buildModel>;
  stop(): Promise<void>;
}

async function serve(objects: Obj[], gateway: BuildOptions['gateway'], prefix: string): Promise<Serving> {
  const folder = await luaFolder(prefix);
  const port = await freePort();
  const options: BuildOptions = {
    ...defaultBuildOptions,
    httpPort: port,
    httpsPort: await freePort(),
    dynamic: folder.dynamic,
    gateway,
  };
  const result = buildModel(snapshotOf(objects), options);
  const { model, tables } = new DynamicSplit().split(result.model);
  await writeConfigSet(folder.dir, render(model, await loadTemplate()), model.certificates);
  let nginx: RunningNginx | undefined;
  try {
    nginx = await startNginx(folder.dir, port);
    await pushTables(folder.control, tables, null);
  } catch (error) {
    await nginx?.stop();
    await rm(folder.dir, { recursive: true, force: true });
    throw error;
  }
  return {
    port,
    result,
    async stop() {
      await nginx?.stop();
      await rm(folder.dir, { recursive: true, force: true });
    },
  };
}

const pods: { close(): Promise<void> }[] = [];
let backends: Obj[] = [];

beforeAll(async () => {
  const victim = await startPod('victim', '127.0.0.2');
  const thief = await startPod('thief', '127.0.0.3');
  pods.push(victim, thief);
  backends = [
    ...serviceWithEndpoints('web', [{ ip: '127.0.0.2', port: victim.port }], 'victim'),
    ...serviceWithEndpoints('web', [{ ip: '127.0.0.3', port: thief.port }], 'thief'),
  ];
});

afterAll(async () => {
  await Promise.all(pods.map((p) => p.close()));
});

const programmed = (result: ReturnType<typeof buildModel>, ns: string) =>
  result.gateway?.status.gateways.find((g) => g.namespace === ns)?.conditions.find((c) => c.type === 'Programmed');

describe('--gateway-addresses: a newer Gateway naming the address another one holds', () => {
  const POOL = ['127.0.0.210', '127.0.0.211'];
  const pool = { controllerName: CONTROLLER, addresses: POOL };
  let serving: Serving | undefined;
  let held: readonly string[] | undefined;

  beforeAll(async () => {
    // the victim alone first: it gets the first address, which the status writer then puts in its status
    const alone = buildModel(
      snapshotOf([...backends, gatewayClass(), ...tenant('victim', 1, { rules: [toWeb('/')] })]),
      {
        ...defaultBuildOptions,
        // a build only (no nginx): any Lua settings do
        dynamic: { modules: [], packagePath: '/lua/?.lua;;', controlSocket: '/run/c.sock', requestMetrics: false },
        gateway: pool,
      },
    );
    held = alone.gateway?.status.gateways.find((g) => g.namespace === 'victim')?.addresses;
    const status = { addresses: (held ?? []).map((value) => ({ type: 'IPAddress', value })) };
    serving = await serve(
      [
        ...backends,
        gatewayClass(),
        ...tenant('victim', 1, { status, rules: [toWeb('/')] }),
        ...tenant('thief', 2, {
          spec: { addresses: [{ type: 'IPAddress', value: '127.0.0.210' }] },
          rules: [toWeb('/')],
        }),
      ],
      pool,
      'ia-gw-tenants-1-',
    );
  }, 60_000);

  afterAll(async () => {
    await serving?.stop();
  });

  it('the victim’s hostname on its address is still answered by the victim', async () => {
    expect(held).toEqual(['127.0.0.210']);
    expect(await send('127.0.0.210', serving!.port, 'victim.test')).toBe('victim');
  });

  it('the claimant is Programmed=False/AddressNotUsable and served nowhere', async () => {
    const result = serving!.result;
    expect(programmed(result, 'thief')).toMatchObject({ status: 'False', reason: 'AddressNotUsable' });
    expect(result.gateway?.status.gateways.find((g) => g.namespace === 'thief')?.addresses).toEqual([]);
    expect(result.model.gateway?.servers.some((s) => s.gateways.includes('thief/gw'))).toBe(false);
    expect(await send('127.0.0.211', serving!.port, 'victim.test')).toBe('404');
  });
});

describe('without --gateway-addresses: a newer Gateway on the same port and hostname', () => {
  let serving: Serving | undefined;

  beforeAll(async () => {
    serving = await serve(
      [
        ...backends,
        gatewayClass(),
        ...tenant('victim', 1, { rules: [toWeb('/app')] }),
        // the thief's `/` would take every path the victim's routes leave
        ...tenant('thief', 2, { rules: [toWeb('/')] }),
      ],
      { controllerName: CONTROLLER },
      'ia-gw-tenants-2-',
    );
  }, 60_000);

  afterAll(async () => {
    await serving?.stop();
  });

  it('the victim’s paths go to the victim, and the rest of its hostname to nobody else', async () => {
    expect(await send('127.0.0.1', serving!.port, 'victim.test', '/app/x')).toBe('victim');
    expect(await send('127.0.0.1', serving!.port, 'victim.test', '/other')).toBe('404');
  });

  it('the thief’s listener is Conflicted=True/HostnameConflict and its Gateway not Programmed', () => {
    const thief = serving!.result.gateway?.status.gateways.find((g) => g.namespace === 'thief');
    expect(thief?.listeners[0]?.conditions.find((c) => c.type === 'Conflicted')).toMatchObject({
      status: 'True',
      reason: 'HostnameConflict',
    });
    expect(programmed(serving!.result, 'thief')?.status).toBe('False');
    expect(programmed(serving!.result, 'victim')?.status).toBe('True');
  });
});
