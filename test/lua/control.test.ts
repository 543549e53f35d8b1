import { Agent, request } from 'node:http';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ControlChannel, ControlError, newControlToken } from '../../src/nginx/control.js';
import { backendEntries, keyedBody } from '../../src/model/dynamic-tables.js';
import type { Backend, BackendTable, RouteEntry, RouteTable } from '../../src/model/pushed-tables.js';
import { CONTROL_TOKEN_HEADER } from '../../src/nginx/control.js';
import { call, type LuaNginx, type Pod, startLuaNginx, startPod } from './harness.js';

let nginx: LuaNginx;
let pod: Pod;

/** raw sends a control request as is, so tests can send what ControlChannel never would. */
function raw(
  socketPath: string,
  method: string,
  path: string,
  headers: Record<string, string | number>,
  body?: string | Buffer,
): Promise<{ status: number; body: string }> {
  return new Promise((done, fail) => {
    const req = request({ socketPath, method, path, headers: { host: 'localhost', ...headers } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => done({ status: res.statusCode ?? 0, body: text }));
    });
    req.on('error', fail);
    req.end(body);
  });
}

const good = (): BackendTable => ({
  version: 'good-1',
  backends: [{ name: 'web', balance: 'round_robin', hashKey: null, endpoints: [pod.peer] }],
});

beforeAll(async () => {
  pod = await startPod('a', '127.0.0.2');
  nginx = await startLuaNginx({ token: newControlToken(), maxBody: '2m', bodyBuffer: '1m' });
});

afterAll(async () => {
  await nginx?.stop();
  await pod?.close();
});

describe('status', () => {
  test('reports null before any push, then each table’s version', async () => {
    expect(await nginx.control.status()).toEqual({
      backends: null,
      certificates: null,
      routes: null,
      ingress_routes: null,
    });
    expect(await nginx.control.pushBackends(good())).toEqual({ version: 'good-1', refused: [] });
    expect(await nginx.control.status()).toEqual({
      backends: 'good-1',
      certificates: null,
      routes: null,
      ingress_routes: null,
    });
    expect(await nginx.control.pushCertificates({ version: 'certs:1', certificates: [] })).toEqual({
      version: 'certs:1',
      refused: [],
    });
    expect(await nginx.control.status()).toEqual({
      backends: 'good-1',
      certificates: 'certs:1',
      routes: null,
      ingress_routes: null,
    });
    expect((await nginx.control.pushRoutes({ version: 'routes:1', servers: [] })).version).toBe('routes:1');
    expect(await nginx.control.status()).toEqual({
      backends: 'good-1',
      certificates: 'certs:1',
      routes: 'routes:1',
      ingress_routes: null,
    });
  });
});

describe('a bad push', () => {
  type Mutation = [
    string,
    (t: Record<string, unknown>, b: Record<string, unknown>, e: Record<string, unknown>) => void,
  ];
  const mutations: Mutation[] = [
    ['an address with a directive in it', (_t, _b, e) => (e.address = '127.0.0.1; x')],
    ['an address with a port', (_t, _b, e) => (e.address = '1.2.3.4:80')],
    ['an octet over 255', (_t, _b, e) => (e.address = '127.0.0.256')],
    ['a host name', (_t, _b, e) => (e.address = 'evil.example.com')],
    ['IPv6 with a port', (_t, _b, e) => (e.address = '[::1]:80')],
    ['port 0', (_t, _b, e) => (e.port = 0)],
    ['port 70000', (_t, _b, e) => (e.port = 70000)],
    ['a fractional port', (_t, _b, e) => (e.port = 80.5)],
    ['a port as a string', (_t, _b, e) => (e.port = '80')],
    ['a hashKey with {', (_t, b) => ((b.balance = 'chash'), (b.hashKey = '${request_uri}'))],
    ['a hashKey with a space', (_t, b) => ((b.balance = 'chash'), (b.hashKey = '$a $b'))],
    ['a chash without hashKey', (_t, b) => (b.balance = 'chash')],
    ['a sticky without hashKey', (_t, b) => (b.balance = 'sticky')],
    ['an unknown balance', (_t, b) => (b.balance = 'least_conn')],
    ['an unknown field', (_t, b) => (b.extra = 1)],
  ];
  // a name nginx cannot key by: refused, and nothing of that name changes
  const unnamed: Mutation[] = [
    ['a name with a space', (_t, b) => (b.name = 'we b')],
    ['a name with a newline', (_t, b) => (b.name = 'web\n')],
    ['an empty name', (_t, b) => (b.name = '')],
  ];
  // what cannot be read entry by entry refuses the table
  const whole: Mutation[] = [
    ['a version with a slash', (t) => (t.version = 'a/b')],
    ['a version too long', (t) => (t.version = 'v'.repeat(129))],
  ];
  /** pushRaw posts a keyed push's body as given (what the client would not send: a name twice, a list not one) */
  const pushRaw = async (body: unknown) => {
    const headers = { [CONTROL_TOKEN_HEADER]: nginx.token, 'content-type': 'application/json' };
    const answer = await raw(nginx.socketPath, 'POST', '/backends', headers, JSON.stringify(body));
    return { status: answer.status, body: answer.status === 201 ? JSON.parse(answer.body) : answer.body };
  };
  const mutated = (mutate: Mutation[1]) => {
    const table = structuredClone(good()) as unknown as Record<string, unknown>;
    const backend = (table.backends as Record<string, unknown>[])[0]!;
    const endpoint = (backend.endpoints as Record<string, unknown>[])[0]!;
    table.version = 'bad-1';
    mutate(table, backend, endpoint);
    return table as unknown as BackendTable;
  };

  test.each(mutations)('%s: the entry is refused alone, named, and keeps its old value', async (what, mutate) => {
    await nginx.control.pushBackends(good());
    // "web" keeps its pod: the refused entry would have pointed it elsewhere or nowhere
    const answer = await nginx.control.pushBackends(mutated(mutate));
    expect(answer.version, what).toBe('bad-1');
    expect(answer.refused).toHaveLength(1);
    expect(answer.refused[0]).toMatchObject({ table: 'backends', key: 'web' });
    expect(answer.refused[0]!.reason).not.toContain('\n');
    expect(answer.refused[0]!.reason.length).toBeGreaterThan(0);
    // the version moved on: the controller's next push is compared with it
    expect((await nginx.control.status()).backends).toBe('bad-1');
    expect((await call(nginx, '/to/web/')).backend).toBe('a');
  });

  test.each(unnamed)('%s: refused by its place in the push', async (_what, mutate) => {
    await nginx.control.pushBackends(good());
    const entry = mutated(mutate).backends[0];
    const answer = await pushRaw({ version: 'unnamed', base: 'good-1', set: [good().backends[0], entry], remove: [] });
    expect(answer.body.refused).toEqual([expect.objectContaining({ table: 'backends', key: '#2' })]);
    expect((await call(nginx, '/to/web/')).backend).toBe('a');
  });

  test('a name twice: the second is refused', async () => {
    const web = good().backends[0]!;
    const answer = await pushRaw({ version: 'twice', base: null, set: [web, { ...web, endpoints: [] }], remove: [] });
    expect(answer.body.refused).toEqual([{ table: 'backends', key: 'web', reason: 'named twice' }]);
    expect((await call(nginx, '/to/web/')).backend).toBe('a');
  });

  test.each([
    ['set not an array', { version: 'x', base: null, set: { web: 1 }, remove: [] }],
    ['remove not an array', { version: 'x', base: null, set: [], remove: 'web' }],
    ['no base (a delta that forgot it must not replace the table)', { version: 'x', set: [], remove: [] }],
    ['a field it does not know', { version: 'x', base: null, set: [], remove: [], backends: [] }],
  ])('%s is refused with 400 and the old table serves', async (_what, body) => {
    await nginx.control.pushBackends(good());
    expect((await pushRaw(body)).status).toBe(400);
    expect((await nginx.control.status()).backends).toBe('good-1');
    expect((await call(nginx, '/to/web/')).backend).toBe('a');
  });

  test('a delta on another version than the one held is refused with 409; the client sends the whole table then', async () => {
    await nginx.control.pushBackends(good());
    const moved = { name: 'web', balance: 'round_robin', hashKey: null, endpoints: [] };
    const stale = await pushRaw({ version: 'late', base: 'not-held', set: [moved], remove: [] });
    expect(stale.status).toBe(409);
    expect((await call(nginx, '/to/web/')).backend).toBe('a');
    const held = { ...good(), version: 'not-held' };
    const answer = await nginx.control.pushBackends({ version: 'whole', backends: [moved as Backend] }, held);
    expect(answer.version).toBe('whole');
    expect((await call(nginx, '/to/web/')).status).toBe(503);
    await nginx.control.pushBackends(good());
  });

  test('a delta sends what changed and removes what went; a full push removes what it does not name', async () => {
    const api = { name: 'api', balance: 'round_robin' as const, hashKey: null, endpoints: [pod.peer] };
    await nginx.control.pushBackends(good());
    const both = { version: 'both', backends: [...good().backends, api] };
    const body = JSON.parse(keyedBody(backendEntries(both), backendEntries(good())));
    expect(body).toEqual({ version: 'both', base: 'good-1', set: [api], remove: [] });
    await nginx.control.pushBackends(both, good());
    expect((await call(nginx, '/to/api/')).backend).toBe('a');
    expect((await call(nginx, '/to/web/')).backend).toBe('a');
    await nginx.control.pushBackends({ version: 'api-only', backends: [api] }, both);
    expect((await call(nginx, '/to/web/')).status).toBe(503);
    await nginx.control.pushBackends(good());
    expect((await call(nginx, '/to/api/')).status).toBe(503);
    expect((await call(nginx, '/to/web/')).backend).toBe('a');
  });

  test('a refused entry costs only itself: every other entry is applied', async () => {
    await nginx.control.pushBackends(good());
    const answer = await nginx.control.pushBackends({
      version: 'mixed',
      backends: [
        { name: 'api', balance: 'round_robin', hashKey: null, endpoints: [pod.peer] },
        { name: 'new', balance: 'least_conn' as 'ewma', hashKey: null, endpoints: [pod.peer] },
        { name: 'web', balance: 'round_robin', hashKey: null, endpoints: [{ address: 'x', port: 1 }] },
      ],
    });
    expect(answer.refused.map((r) => r.key)).toEqual(['new', 'web']);
    expect(answer.refused[1]!.reason).toMatch(/^endpoint 1: address x /);
    expect((await call(nginx, '/to/api/')).backend).toBe('a');
    // refused and new: absent; refused with an old value: the old value
    expect((await call(nginx, '/to/new/')).status).toBe(503);
    expect((await call(nginx, '/to/web/')).backend).toBe('a');
    // and the next good push replaces what was kept
    expect((await nginx.control.pushBackends({ version: 'after', backends: [] })).refused).toEqual([]);
    expect((await call(nginx, '/to/web/')).status).toBe(503);
    await nginx.control.pushBackends(good());
  });

  test.each(whole)('%s is refused with 400 and the old table serves', async (what, mutate) => {
    await nginx.control.pushBackends(good());
    const err = await nginx.control.pushBackends(mutated(mutate)).catch((e: unknown) => e);
    expect(err, what).toBeInstanceOf(ControlError);
    expect((err as ControlError).status).toBe(400);
    expect((err as ControlError).reason).not.toContain('\n');
    expect((await nginx.control.status()).backends).toBe('good-1');
    expect((await call(nginx, '/to/web/')).backend).toBe('a');
  });

  test.each([
    ['::1', true],
    ['fe80::1', true],
    ['2001:db8:0:0:0:0:0:1', true],
    ['::ffff:10.0.0.1', true],
    ['0.0.0.0', true],
    [':::1', false],
    ['1::2::3', false],
    ['12345::1', false],
    ['1:2:3:4:5:6:7', false],
    ['::ffff:10.0.0.256', false],
    ['10.0.0', false],
    ['1.2.3.4.5', false],
  ])('address %s accepted: %s', async (address, accepted) => {
    const table = good();
    const pushed = nginx.control.pushBackends({
      version: 'forms',
      backends: [{ ...table.backends[0]!, name: 'forms', endpoints: [{ address, port: 80 }] }],
    });
    expect((await pushed).refused.length === 0).toBe(accepted);
    await nginx.control.pushBackends(good());
  });

  /** goodRoutes is a route table with one server, one route using every field. */
  const goodRoutes = (): RouteTable => ({
    version: 'routes-good',
    servers: [
      {
        key: '80/a.example',
        port: 80,
        routes: [
          {
            route: 'default/r#0',
            path: { type: 'PathPrefix', value: '/' },
            method: 'GET',
            grpc: true,
            headers: [{ type: 'Exact', name: 'x-env', value: 'canary' }],
            queryParams: [{ type: 'RegularExpression', name: 'v', value: '[0-9]+' }],
            filters: [
              { type: 'RequestHeaderModifier', set: [{ name: 'x-a', value: 'b' }], add: [], remove: ['x-c'] },
              { type: 'URLRewrite', hostname: 'b.example', path: { type: 'ReplacePrefixMatch', value: '/x' } },
              { type: 'RequestMirror', backend: 'default_m_80', percent: 50 },
            ],
            backends: [{ backend: 'default_web_80', weight: 1 }, { weight: 1 }],
            timeouts: { request: 1000 },
          },
        ],
      },
    ],
  });
  type RouteMutation = [string, (route: Record<string, unknown>, server: Record<string, unknown>) => void];
  const routeMutations: RouteMutation[] = [
    ['a server key with a space', (_r, s) => (s.key = '80/a b')],
    ['a server key with a brace', (_r, s) => (s.key = '80/a{')],
    ['a server key with an address of other characters', (_r, s) => (s.key = 'a;b:80/a.example')],
    ['a server key with an address and no port', (_r, s) => (s.key = '127.0.0.2/a.example')],
    ['a path type unknown', (r) => (r.path = { type: 'Prefix', value: '/' })],
    ['a relative path', (r) => (r.path = { type: 'Exact', value: 'x' })],
    ['a path with a newline', (r) => (r.path = { type: 'Exact', value: '/a\n' })],
    ['a regex that does not compile', (r) => (r.path = { type: 'RegularExpression', value: '(' })],
    ['a method unknown', (r) => (r.method = 'BREW')],
    ['a header name with a colon', (r) => (r.headers = [{ type: 'Exact', name: 'x:y', value: 'a' }])],
    ['a filter unknown', (r) => (r.filters = [{ type: 'ExtensionRef' }])],
    ['a redirect status 200', (r) => (r.filters = [{ type: 'RequestRedirect', statusCode: 200 }])],
    [
      'a redirect host with a slash',
      (r) => (r.filters = [{ type: 'RequestRedirect', statusCode: 302, hostname: 'a/b' }]),
    ],
    ['a weight below 0', (r) => (r.backends = [{ backend: 'x', weight: -1 }])],
    ['a backend name with a dollar', (r) => (r.backends = [{ backend: '$x', weight: 1 }])],
    ['a timeout as text', (r) => (r.timeouts = { request: '1s' })],
    ['an unknown route field', (r) => (r.extra = true)],
    ['grpc that is not true', (r) => (r.grpc = 'yes')],
  ];

  test('a good route table is taken', async () => {
    expect(await nginx.control.pushRoutes(goodRoutes())).toEqual({ version: 'routes-good', refused: [] });
  });

  test('server keys with a Gateway address (--gateway-addresses), IPv4 or IPv6, are taken', async () => {
    for (const key of ['127.0.0.200:80/a.example', '::1:8080/_', 'fd00::1:80/*.example']) {
      const table = { ...goodRoutes(), version: 'routes-addressed' };
      table.servers = [{ ...table.servers[0]!, key }];
      expect(await nginx.control.pushRoutes(table), key).toEqual({ version: 'routes-addressed', refused: [] });
    }
  });

  test.each(routeMutations)('a route table with %s: that entry is refused, its old one kept', async (what, mutate) => {
    await nginx.control.pushRoutes(goodRoutes());
    const table = structuredClone(goodRoutes()) as unknown as { version: string; servers: Record<string, unknown>[] };
    table.version = 'routes-bad';
    const server = table.servers[0]!;
    // a second rule beside it, which is applied whatever the first one's fate
    const other = { ...structuredClone(goodRoutes().servers[0]!.routes[0]!), route: 'default/other#0' };
    server.routes = [...(server.routes as unknown[]), other];
    mutate((server.routes as Record<string, unknown>[])[0]!, server);
    const answer = await nginx.control.pushRoutes(table as unknown as RouteTable);
    expect(answer.version, what).toBe('routes-bad');
    expect(answer.refused, what).toHaveLength(1);
    expect(answer.refused[0]!.table).toBe('routes');
    // a server key nginx cannot read refuses the server; else the rule `<server key> <label>`
    expect(answer.refused[0]!.key).toMatch(/^(#1|80\/a\.example default\/r#0)$/);
    expect((await nginx.control.status()).routes).toBe('routes-bad');
  });

  test('a route rule refused keeps its old entries in its place; the rule beside it is applied', async () => {
    await nginx.control.pushRoutes(goodRoutes());
    const base = goodRoutes().servers[0]!;
    const bad = { ...base.routes[0]!, method: 'BREW' } as unknown as RouteEntry;
    const other = { ...base.routes[0]!, route: 'default/other#0' };
    const answer = await nginx.control.pushRoutes({
      version: 'routes-mixed',
      servers: [
        { ...base, routes: [bad, other] },
        { ...base, key: '80/b.example', routes: [bad] },
      ],
    });
    expect(answer.refused).toEqual([
      expect.objectContaining({ key: '80/a.example default/r#0' }),
      expect.objectContaining({ key: '80/b.example default/r#0' }),
    ]);
  });

  test('a bad certificate entry is refused alone', async () => {
    const answer = await nginx.control.pushCertificates({
      version: 'certs-mixed',
      certificates: [{ secret: 'default/a', cert: 'not PEM', key: 'not PEM', hosts: ['a.example'], servers: [] }],
    });
    expect(answer).toEqual({
      version: 'certs-mixed',
      refused: [{ table: 'certificates', key: 'default/a', reason: 'cert is not a PEM certificate chain' }],
    });
  });

  test('bad JSON and an empty body are refused', async () => {
    const headers = { [CONTROL_TOKEN_HEADER]: nginx.token, 'content-type': 'application/json' };
    expect((await raw(nginx.socketPath, 'POST', '/backends', headers, '{"version": "x", ')).status).toBe(400);
    expect((await raw(nginx.socketPath, 'POST', '/backends', headers, '"just a string"')).status).toBe(400);
    expect((await raw(nginx.socketPath, 'POST', '/backends', headers, '')).status).toBe(400);
    expect((await nginx.control.status()).backends).toBe('good-1');
  });

  test('a wrong or missing token is 401, on every location', async () => {
    const body = JSON.stringify({ ...good(), version: 'stolen' });
    const wrong = new ControlChannel(nginx.socketPath, newControlToken());
    await expect(wrong.pushBackends({ ...good(), version: 'stolen' })).rejects.toMatchObject({ status: 401 });
    await expect(wrong.status()).rejects.toMatchObject({ status: 401 });
    await expect(wrong.drainMetrics()).rejects.toMatchObject({ status: 401 });
    // the request metrics' drain answers the token only (nothing counted here: no Ingress server labels requests)
    expect(await nginx.control.drainMetrics()).toBe('left 0 dropped 0\n');
    // one character short, and the token with something after it
    const near = new ControlChannel(nginx.socketPath, nginx.token.slice(0, -1));
    await expect(near.pushBackends({ ...good(), version: 'stolen' })).rejects.toMatchObject({ status: 401 });
    const longer = new ControlChannel(nginx.socketPath, `${nginx.token}0`);
    await expect(longer.pushBackends({ ...good(), version: 'stolen' })).rejects.toMatchObject({ status: 401 });
    expect((await raw(nginx.socketPath, 'POST', '/backends', {}, body)).status).toBe(401);
    expect((await raw(nginx.socketPath, 'POST', '/certificates', {}, body)).status).toBe(401);
    expect((await nginx.control.status()).backends).toBe('good-1');
  });

  test('a delta costs each worker the backends it changed: the others are not decoded again', async () => {
    const many = {
      version: 'many-1',
      backends: Array.from({ length: 50 }, (_, i) => ({ ...good().backends[0]!, name: `b${i}` })),
    };
    await nginx.control.pushBackends(many);
    // one keep-alive connection: one worker
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const get = (path: string) =>
      new Promise<string>((done, fail) => {
        request({ host: '127.0.0.1', port: nginx.port, path, agent }, (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (text += c));
          res.on('end', () => done(text));
        })
          .on('error', fail)
          .end();
      });
    try {
      for (const b of many.backends) expect(JSON.parse(await get(`/to/${b.name}/`)).backend).toBe('a');
      const decoded = async () => Number((await get('/tables-decoded')).split(' ')[0]);
      const before = await decoded();
      const moved = {
        ...many,
        version: 'many-2',
        backends: many.backends.map((b, i) => (i === 7 ? { ...b, endpoints: [] } : b)),
      };
      await nginx.control.pushBackends(moved, many);
      for (const b of many.backends.filter((_, i) => i !== 7))
        expect(JSON.parse(await get(`/to/${b.name}/`)).backend).toBe('a');
      expect(await decoded()).toBe(before);
      expect(await get('/to/b7/')).toContain('503');
      expect(await decoded()).toBe(before + 1);
    } finally {
      agent.destroy();
      await nginx.control.pushBackends(good());
    }
  });

  test('a body over the in-memory buffer is 413, and one over client_max_body_size too', async () => {
    const padded = (size: number) => {
      const table = good();
      return keyedBody(backendEntries({ ...table, version: 'big' }), null).replace('{', `{${' '.repeat(size)}`);
    };
    const headers = { [CONTROL_TOKEN_HEADER]: nginx.token, 'content-type': 'application/json' };
    // 1.5 MiB: over the 1m buffer (nginx would write it to a file), under the 2m maximum
    const filed = await raw(nginx.socketPath, 'POST', '/backends', headers, padded(1.5 * 1024 * 1024));
    expect(filed.status).toBe(413);
    expect(filed.body).toContain('in-memory buffer');
    const over = await raw(nginx.socketPath, 'POST', '/backends', headers, padded(3 * 1024 * 1024));
    expect(over.status).toBe(413);
    // and just under the buffer is fine
    expect((await raw(nginx.socketPath, 'POST', '/backends', headers, padded(900 * 1024))).status).toBe(201);
    expect((await nginx.control.status()).backends).toBe('big');
    expect((await nginx.control.pushBackends(good())).version).toBe('good-1');
  });

  test('the wrong method is 405', async () => {
    const headers = { [CONTROL_TOKEN_HEADER]: nginx.token };
    expect((await raw(nginx.socketPath, 'GET', '/backends', headers)).status).toBe(405);
    expect((await raw(nginx.socketPath, 'POST', '/status', headers, '{}')).status).toBe(405);
    expect((await raw(nginx.socketPath, 'GET', '/other', headers)).status).toBe(404);
  });
});

describe('the public port', () => {
  test('has no control channel, whatever the Host', async () => {
    const body = JSON.stringify({ ...good(), version: 'public' });
    for (const host of ['test.example', 'localhost', '127.0.0.1', '']) {
      for (const path of ['/backends', '/certificates', '/status']) {
        for (const method of ['GET', 'POST']) {
          const status = await new Promise<number>((done, fail) => {
            const req = request(
              {
                host: '127.0.0.1',
                port: nginx.port,
                method,
                path,
                agent: false,
                headers: { host, [CONTROL_TOKEN_HEADER]: nginx.token, 'content-type': 'application/json' },
              },
              (res) => (res.resume(), res.on('end', () => done(res.statusCode ?? 0))),
            );
            req.on('error', fail);
            req.end(method === 'POST' ? body : undefined);
          });
          expect(status, `${method} ${path} Host ${host}`).toBe(404);
        }
      }
    }
    expect((await nginx.control.status()).backends).toBe('good-1');
  });
});

describe('without a token', () => {
  test.each([
    ['none', undefined],
    ['a short one', 'x'.repeat(31)],
  ])('nginx started with %s accepts no push', async (_what, token) => {
    const other = await startLuaNginx({ token });
    try {
      for (const t of ['', 'x'.repeat(31), newControlToken()]) {
        const channel = new ControlChannel(other.socketPath, t);
        await expect(channel.pushBackends(good())).rejects.toMatchObject({ status: 401 });
      }
      expect(await other.errorLog()).toContain('every push will be refused');
    } finally {
      await other.stop();
    }
  });
});
