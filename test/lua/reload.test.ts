import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { call, type LuaNginx, type Pod, startLuaNginx, startPod, tally } from './harness.js';

let nginx: LuaNginx;
let pod: Pod;

beforeAll(async () => {
  pod = await startPod('a', '127.0.0.2');
  nginx = await startLuaNginx();
});

afterAll(async () => {
  await nginx?.stop();
  await pod?.close();
});

describe('a reload', () => {
  test('keeps the pushed tables (the shared dict outlives the old workers) and the token', async () => {
    await nginx.control.pushBackends({
      version: 'before-reload',
      backends: [{ name: 'web', balance: 'round_robin', hashKey: null, endpoints: [pod.peer] }],
    });
    await nginx.control.pushCertificates({ version: 'certs-before', certificates: [] });
    await nginx.reload();
    expect(await nginx.control.status()).toEqual({
      backends: 'before-reload',
      certificates: 'certs-before',
      routes: null,
      ingress_routes: null,
    });
    const { statuses, workers } = await tally(nginx, '/to/web/', 20);
    expect(statuses.get(200)).toBe(20);
    expect(workers.size).toBe(2);
    // the master read the token again from its environment: pushes still work
    expect(
      await nginx.control.pushBackends({
        version: 'after-reload',
        backends: [{ name: 'web', balance: 'ewma', hashKey: null, endpoints: [pod.peer] }],
      }),
    ).toEqual({ version: 'after-reload', refused: [] });
    expect((await call(nginx, '/to/web/')).backend).toBe('a');
  });
});

describe('a location with its own rewrite_by_lua', () => {
  test('still balances; without peers it is a 500 (the balancer phase cannot answer 503), logged', async () => {
    await nginx.control.pushBackends({
      version: 'own',
      backends: [
        { name: 'web', balance: 'round_robin', hashKey: null, endpoints: [pod.peer] },
        { name: 'empty', balance: 'round_robin', hashKey: null, endpoints: [] },
      ],
    });
    expect((await call(nginx, '/own/web/')).backend).toBe('a');
    expect((await call(nginx, '/own/empty/')).status).toBe(500);
    expect((await call(nginx, '/own/nosuch/')).status).toBe(500);
    expect(await nginx.errorLog()).toContain('no peer for backend nosuch');
  });
});
