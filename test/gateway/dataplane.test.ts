/**
 * Gateway API routes through the real nginx and the Lua router: a Snapshot with GatewayClass, Gateway, HTTPRoutes,
 * Services and EndpointSlices is built with the Lua balancer, rendered with the real template, and nginx gets the
 * pushed tables as the controller pushes them. Pods are small HTTP servers on 127.0.0.2-4 that answer with their
 * name, the path and the headers they got.
 */
import { execFileSync } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildModel } from '../../src/model/build.js';
import { defaultBuildOptions, type BuildOptions } from '../../src/model/build-types.js';
import { servedNames, tablesForReload } from '../../src/model/dynamic-tables.js';
import { DynamicSplit } from '../../src/sync/dynamic-split.js';
import type { DynamicTables } from '../../src/model/pushed-tables.js';
import type { Snapshot } from '../../src/model/snapshot.js';
import { pushTables } from '../../src/actors/nginx.js';
import type { ControlChannel } from '../../src/nginx/control.js';
import { writeConfigSet } from '../../src/nginx/files.js';
import { loadTemplate } from '../../src/render/load.js';
import { render } from '../../src/render/render.js';
import { issueCertificate } from '../../src/tls/issue.js';
import { ingress, ingressClass, serviceWithEndpoints, snapshotOf, tlsSecret } from '../support/manifests.js';
import { freePort, get, type Reply } from '../support/net.js';
import { luaFolder, startNginx, type RunningNginx } from '../support/nginx.js';
import { CONTROLLER, gateway, gatewayClass, listener, namespace, route } from './fixtures.js';

interface Pod {
  readonly name: string;
  readonly ip: string;
  readonly port: number;
  hits: number;
  /** the last request it got: path, headers and body */
  last: { path?: string; headers: Record<string, unknown>; body: string } | null;
  close(): Promise<void>;
}

/** startPod answers every request, once its body is in, with JSON: its name, the method, the path with query, the
 * headers and the body. */
async function startPod(name: string, ip: string): Promise<Pod> {
  const server: Server = createServer(async (req, res) => {
    let body = '';
    for await (const chunk of req) body += chunk;
    pod.hits++;
    pod.last = { path: req.url, headers: req.headers, body };
    res.setHeader('content-type', 'application/json');
    res.setHeader('x-from-backend', 'yes');
    // `/slow…` answers after 600 ms, for the route timeouts
    const delay = req.url?.startsWith('/slow') ? 600 : 0;
    setTimeout(
      () => res.end(JSON.stringify({ backend: name, method: req.method, path: req.url, headers: req.headers, body })),
      delay,
    );
  });
  await new Promise<void>((done) => server.listen(0, ip, done));
  const pod: Pod = {
    name,
    ip,
    port: (server.address() as AddressInfo).port,
    hits: 0,
    last: null,
    close: () =>
      new Promise((done) => {
        server.closeAllConnections();
        server.close(() => done());
      }),
  };
  return pod;
}

const pods: Record<string, Pod> = {};
let dir: string;
let nginx: RunningNginx;
let control: ControlChannel;
let options: BuildOptions;
let split: DynamicSplit;
let pushed: DynamicTables | null = null;
let objects: Record<string, unknown>[];
let certPem: string;
const template = await loadTemplate();

const svc = (name: string, pod: Pod) => serviceWithEndpoints(name, [{ ip: pod.ip, port: pod.port }]);
const backend = (name: string, weight?: number) => ({ name, port: 80, ...(weight === undefined ? {} : { weight }) });
const path = (type: string, value: string) => ({ path: { type, value } });

function routes() {
  return [
    route('paths', {
      hostnames: ['paths.test'],
      rules: [
        { matches: [path('PathPrefix', '/prefix')], backendRefs: [backend('b')] },
        { matches: [path('Exact', '/prefix/exact')], backendRefs: [backend('a')] },
        { matches: [path('RegularExpression', '/re/[0-9]+')], backendRefs: [backend('a')] },
        { matches: [{ ...path('PathPrefix', '/m'), method: 'POST' }], backendRefs: [backend('b')] },
        { matches: [path('PathPrefix', '/m')], backendRefs: [backend('a')] },
        {
          matches: [{ ...path('PathPrefix', '/h'), headers: [{ name: 'X-Env', value: 'canary' }] }],
          backendRefs: [backend('b')],
        },
        {
          matches: [
            { ...path('PathPrefix', '/h'), headers: [{ type: 'RegularExpression', name: 'x-env', value: 'st[a-z]+' }] },
          ],
          backendRefs: [backend('c')],
        },
        { matches: [path('PathPrefix', '/h')], backendRefs: [backend('a')] },
        {
          matches: [{ ...path('PathPrefix', '/q'), queryParams: [{ name: 'v', value: '2' }] }],
          backendRefs: [backend('b')],
        },
        { matches: [path('PathPrefix', '/q')], backendRefs: [backend('a')] },
      ],
    }),
    route('filters', {
      hostnames: ['filters.test'],
      rules: [
        {
          matches: [path('PathPrefix', '/headers')],
          filters: [
            {
              type: 'RequestHeaderModifier',
              requestHeaderModifier: {
                set: [{ name: 'X-Set', value: 'set' }],
                add: [{ name: 'X-Add', value: 'added' }],
                remove: ['X-Remove'],
              },
            },
            {
              type: 'ResponseHeaderModifier',
              responseHeaderModifier: { set: [{ name: 'X-Resp', value: 'r' }], remove: ['X-From-Backend'] },
            },
          ],
          backendRefs: [backend('a')],
        },
        {
          // an add extends what a set or an earlier add of the same name left
          matches: [path('PathPrefix', '/adds')],
          filters: [
            {
              type: 'RequestHeaderModifier',
              requestHeaderModifier: {
                set: [{ name: 'X-Both', value: 's' }],
                add: [
                  { name: 'X-Both', value: '1' },
                  { name: 'X-Twice', value: '1' },
                  { name: 'x-twice', value: '2' },
                ],
              },
            },
            {
              type: 'ResponseHeaderModifier',
              responseHeaderModifier: {
                add: [
                  { name: 'X-Resp-Twice', value: '1' },
                  { name: 'X-Resp-Twice', value: '2' },
                ],
              },
            },
          ],
          backendRefs: [backend('a')],
        },
        {
          matches: [path('PathPrefix', '/old')],
          filters: [
            {
              type: 'RequestRedirect',
              requestRedirect: {
                scheme: 'https',
                hostname: 'elsewhere.test',
                path: { type: 'ReplacePrefixMatch', replacePrefixMatch: '/new' },
                statusCode: 301,
              },
            },
          ],
        },
        {
          matches: [path('PathPrefix', '/port')],
          filters: [{ type: 'RequestRedirect', requestRedirect: { port: 8081 } }],
        },
        {
          matches: [path('PathPrefix', '/rewrite')],
          filters: [
            {
              type: 'URLRewrite',
              urlRewrite: {
                hostname: 'rewritten.test',
                path: { type: 'ReplacePrefixMatch', replacePrefixMatch: '/inner' },
              },
            },
          ],
          backendRefs: [backend('a')],
        },
        {
          matches: [path('Exact', '/full')],
          filters: [{ type: 'URLRewrite', urlRewrite: { path: { type: 'ReplaceFullPath', replaceFullPath: '/x/y' } } }],
          backendRefs: [backend('a')],
        },
        {
          matches: [path('PathPrefix', '/mirror')],
          filters: [
            { type: 'RequestMirror', requestMirror: { backendRef: { name: 'm', port: 80 } } },
            { type: 'RequestMirror', requestMirror: { backendRef: { name: 'm2', port: 80 } } },
            {
              type: 'RequestHeaderModifier',
              requestHeaderModifier: { set: [{ name: 'X-Mirrored', value: 'yes' }] },
            },
          ],
          backendRefs: [backend('a')],
        },
        {
          matches: [path('PathPrefix', '/never')],
          filters: [
            { type: 'RequestMirror', requestMirror: { backendRef: { name: 'm', port: 80 }, percent: 0 } },
            {
              type: 'RequestMirror',
              requestMirror: { backendRef: { name: 'm2', port: 80 }, fraction: { numerator: 0 } },
            },
          ],
          backendRefs: [backend('a')],
        },
      ],
    }),
    route('weights', {
      hostnames: ['weights.test'],
      rules: [
        { matches: [path('PathPrefix', '/zero')], backendRefs: [backend('a', 0), backend('b', 0)] },
        { matches: [path('PathPrefix', '/none')] },
        { matches: [path('PathPrefix', '/missing')], backendRefs: [backend('nowhere')] },
        { matches: [path('PathPrefix', '/')], backendRefs: [backend('a', 3), backend('b', 1), backend('c', 0)] },
      ],
    }),
    route('timeouts', {
      hostnames: ['timeouts.test'],
      rules: [
        { matches: [path('PathPrefix', '/slow/request')], timeouts: { request: '200ms' }, backendRefs: [backend('a')] },
        {
          matches: [path('PathPrefix', '/slow/backend')],
          timeouts: { request: '10s', backendRequest: '200ms' },
          backendRefs: [backend('a')],
        },
        { matches: [path('PathPrefix', '/slow/long')], timeouts: { request: '5s' }, backendRefs: [backend('a')] },
      ],
    }),
    route('cors', {
      hostnames: ['cors.test'],
      rules: [
        {
          matches: [path('PathPrefix', '/cors')],
          filters: [
            {
              type: 'CORS',
              cors: {
                allowOrigins: ['https://App.test', 'http://*.site.test:8080'],
                allowMethods: ['GET', 'PUT'],
                allowHeaders: ['X-A'],
                exposeHeaders: ['X-From-Backend'],
                allowCredentials: true,
                maxAge: 60,
              },
            },
          ],
          backendRefs: [backend('a')],
        },
        {
          // each backendRef sets its own header, after the rule's filter
          matches: [path('PathPrefix', '/per-backend')],
          filters: [
            { type: 'RequestHeaderModifier', requestHeaderModifier: { set: [{ name: 'X-Backend', value: 'rule' }] } },
          ],
          backendRefs: ['a', 'b'].map((name) => ({
            ...backend(name, 1),
            filters: [
              {
                type: 'RequestHeaderModifier',
                requestHeaderModifier: {
                  set: [{ name: 'X-Backend', value: name }],
                  add: [{ name: 'X-Via', value: name }],
                },
              },
            ],
          })),
        },
        {
          matches: [path('PathPrefix', '/any')],
          filters: [{ type: 'CORS', cors: { allowOrigins: ['*'], allowMethods: ['*'], allowHeaders: ['*'] } }],
          backendRefs: [backend('a')],
        },
      ],
    }),
    route('mixed', { hostnames: ['ingress.test', 'gw.test'], rules: [{ backendRefs: [backend('b')] }] }),
    route('catch', {
      parentRefs: [{ name: 'gw', sectionName: 'http' }],
      rules: [{ matches: [path('PathPrefix', '/catch-all')], backendRefs: [backend('b')] }],
    }),
    // a redirect on catch-all routes: the Location's host when the request names none (HTTP/1.0 without Host)
    route('catch-redirect', {
      parentRefs: [{ name: 'gw', sectionName: 'http' }],
      rules: [
        {
          matches: [path('PathPrefix', '/r')],
          filters: [{ type: 'RequestRedirect', requestRedirect: { scheme: 'https', statusCode: 301 } }],
        },
      ],
    }),
    route('tls-redirect', {
      parentRefs: [{ name: 'gw', sectionName: 'https-any' }],
      rules: [
        {
          matches: [path('PathPrefix', '/r')],
          filters: [{ type: 'RequestRedirect', requestRedirect: { port: 8443 } }],
        },
      ],
    }),
    route('wild', { hostnames: ['*.wild.test'], rules: [{ backendRefs: [backend('c')] }] }),
    route('any-tls', {
      parentRefs: [{ name: 'gw', sectionName: 'https-any' }],
      rules: [{ backendRefs: [backend('b')] }],
    }),
    // conformance HTTPRouteHTTPSListener: a hostname the catch-all listener's certificate does not name
    route('any-named', {
      hostnames: ['named-any.test'],
      parentRefs: [{ name: 'gw', sectionName: 'https-any' }],
      rules: [{ backendRefs: [backend('c')] }],
    }),
    route('only-named', {
      hostnames: ['example.org'],
      parentRefs: [{ name: 'gw2' }],
      rules: [{ backendRefs: [backend('a')] }],
    }),
    route('secure', {
      hostnames: ['secure.test'],
      parentRefs: [{ name: 'gw', sectionName: 'https' }],
      rules: [{ backendRefs: [backend('c')] }],
    }),
  ];
}

const snapshot = (): Snapshot => snapshotOf([...objects, namespace('default')]);

/**
 * apply builds and renders as the controller does, and writes nginx.conf when it changed (then the caller must
 * reload, and says so with `reloads`); it reports whether nginx.conf changed.
 */
let lastText = '';
async function apply(reloads = false): Promise<{ changed: boolean; problems: string[]; tables: DynamicTables }> {
  const result = buildModel(snapshot(), options);
  const { model, tables } = split.split(result.model);
  const text = render(model, template);
  const changed = text !== lastText;
  if (changed) {
    await writeConfigSet(dir, text, model.certificates);
    if (lastText !== '' && !reloads) throw new Error('this test does not reload');
    lastText = text;
  }
  return { changed, problems: result.problems.map((p) => `${p.kind} ${p.name} ${p.field}: ${p.message}`), tables };
}

/** push sends the tables that changed, as the nginx actor does. */
async function push(tables: DynamicTables): Promise<void> {
  pushed = (await pushTables(control, tables, pushed)).pushed as DynamicTables;
}

const workers = () =>
  execFileSync('pgrep', ['-P', String(nginx.process.pid)], { encoding: 'utf8' })
    .trim()
    .split('\n')
    .sort();

/** reload sends SIGHUP and waits until none of the old workers is left and new ones run. */
async function reload(): Promise<void> {
  const before = new Set(workers());
  process.kill(nginx.process.pid!, 'SIGHUP');
  for (const deadline = Date.now() + 20_000; Date.now() < deadline; ) {
    const now = workers();
    if (now.length > 0 && now.every((w) => !before.has(w))) return;
    await new Promise((done) => setTimeout(done, 25));
  }
  throw new Error('nginx did not finish reloading');
}

/** serverText is the rendered server block whose server_name is `host`. */
const serverText = (host: string) =>
  lastText.split(/\n {4}server \{\n/).find((block) => block.includes(`server_name "${host}";`)) ?? '';

let port: number;
let tlsPort: number;
let otherTlsPort: number;
let problems: string[] = [];

beforeAll(async () => {
  pods.a = await startPod('a', '127.0.0.2');
  pods.b = await startPod('b', '127.0.0.3');
  pods.c = await startPod('c', '127.0.0.3');
  pods.m = await startPod('m', '127.0.0.4');
  pods.m2 = await startPod('m2', '127.0.0.4');
  pods.legacy = await startPod('legacy', '127.0.0.2');
  const folder = await luaFolder('ia-gw-');
  dir = folder.dir;
  [port, tlsPort, otherTlsPort] = [await freePort(), await freePort(), await freePort()];
  options = {
    ...defaultBuildOptions,
    httpPort: port,
    httpsPort: tlsPort,
    listenAddress: '127.0.0.1',
    dynamic: folder.dynamic,
    gateway: { controllerName: CONTROLLER },
  };
  const cert = await issueCertificate({ commonName: 'secure.test', dnsNames: ['secure.test'] });
  certPem = cert.certPem;
  const anyCert = await issueCertificate({ commonName: 'any.test', dnsNames: ['any.test'] });
  objects = [
    ingressClass(),
    ingress('legacy', { 'ingress.test': [{ path: '/', service: 'legacy' }] }),
    ...svc('legacy', pods.legacy!),
    ...svc('a', pods.a!),
    ...svc('b', pods.b!),
    ...svc('c', pods.c!),
    ...svc('m', pods.m!),
    ...svc('m2', pods.m2!),
    tlsSecret('gw-cert', cert.certPem, cert.keyPem),
    tlsSecret('any-cert', anyCert.certPem, anyCert.keyPem),
    gatewayClass(),
    gateway([
      listener('http', { allowedRoutes: { namespaces: { from: 'All' } } }),
      listener('https', {
        port: 443,
        protocol: 'HTTPS',
        hostname: 'secure.test',
        tls: { certificateRefs: [{ name: 'gw-cert' }] },
      }),
      listener('https-any', { port: 443, protocol: 'HTTPS', tls: { certificateRefs: [{ name: 'any-cert' }] } }),
    ]),
    // an HTTPS listener without hostname whose only route names a hostname
    gateway(
      [listener('https', { port: otherTlsPort, protocol: 'HTTPS', tls: { certificateRefs: [{ name: 'any-cert' }] } })],
      'gw2',
    ),
    ...routes(),
  ] as Record<string, unknown>[];
  split = new DynamicSplit();
  const first = await apply();
  problems = first.problems;
  nginx = await startNginx(dir, port);
  control = folder.control;
  await push(first.tables);
}, 60_000);

afterAll(async () => {
  await nginx?.stop();
  await Promise.all(Object.values(pods).map((p) => p.close()));
  if (dir) await rm(dir, { recursive: true, force: true });
});

interface Echo {
  backend?: string;
  method?: string;
  path?: string;
  headers?: Record<string, string>;
  body?: string;
}

async function send(
  host: string,
  p: string,
  extra: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<Reply & { echo: Echo }> {
  const reply = await get({ host, path: p, port, ...extra });
  let echo: Echo = {};
  try {
    echo = JSON.parse(reply.body) as Echo;
  } catch {
    /* not a pod's answer */
  }
  return { ...reply, echo };
}

/**
 * raw sends `request` as written to nginx on 127.0.0.1:`to` (over TLS when `servername` is given, null: TLS without
 * SNI) and reads until nginx closes: the status and the Location.
 */
function raw(to: number, request: string, servername?: string | null): Promise<{ status: number; location?: string }> {
  return new Promise((resolve, reject) => {
    const socket =
      servername === undefined
        ? connect({ host: '127.0.0.1', port: to })
        : tlsConnect({
            host: '127.0.0.1',
            port: to,
            rejectUnauthorized: false,
            ...(servername === null ? {} : { servername }),
          });
    let text = '';
    socket.setEncoding('utf8');
    socket.on(servername === undefined ? 'connect' : 'secureConnect', () => socket.write(request));
    socket.on('data', (chunk: string) => (text += chunk));
    socket.on('error', reject);
    socket.on('end', () => {
      const status = Number(/^HTTP\/1\.\d (\d{3})/.exec(text)?.[1] ?? 0);
      const location = /^location: (.*)$/im.exec(text)?.[1]?.trim();
      resolve(location === undefined ? { status } : { status, location });
    });
  });
}

const backendOf = async (host: string, p: string, extra = {}) => {
  const r = await send(host, p, extra);
  return r.status === 200 ? r.echo.backend : r.status;
};

describe('Gateway API routes through nginx and the Lua router', () => {
  it('matches paths: Exact before PathPrefix, PathPrefix on segment boundaries, RegularExpression anchored', async () => {
    expect(await backendOf('paths.test', '/prefix/exact')).toBe('a');
    expect(await backendOf('paths.test', '/prefix/exact/more')).toBe('b');
    expect(await backendOf('paths.test', '/prefix')).toBe('b');
    expect(await backendOf('paths.test', '/prefix/')).toBe('b');
    expect(await backendOf('paths.test', '/prefix/x')).toBe('b');
    expect(await backendOf('paths.test', '/prefixx')).toBe(404);
    expect(await backendOf('paths.test', '/re/42')).toBe('a');
    expect(await backendOf('paths.test', '/re/42x')).toBe(404);
    expect(await backendOf('paths.test', '/nothing')).toBe(404);
  });

  it('matches methods, headers (names in any case, Exact and RegularExpression) and query parameters', async () => {
    expect(await backendOf('paths.test', '/m', { method: 'POST' })).toBe('b');
    expect(await backendOf('paths.test', '/m')).toBe('a');
    expect(await backendOf('paths.test', '/h', { headers: { 'x-env': 'canary' } })).toBe('b');
    expect(await backendOf('paths.test', '/h', { headers: { 'X-ENV': 'stable' } })).toBe('c');
    expect(await backendOf('paths.test', '/h', { headers: { 'x-env': 'stable1' } })).toBe('a');
    expect(await backendOf('paths.test', '/h')).toBe('a');
    expect(await backendOf('paths.test', '/q?v=2')).toBe('b');
    expect(await backendOf('paths.test', '/q?v=2&v=3')).toBe('b');
    expect(await backendOf('paths.test', '/q?v=3&v=2')).toBe('a');
    expect(await backendOf('paths.test', '/q?V=2')).toBe('a');
  });

  it('modifies request and response headers', async () => {
    const r = await send('filters.test', '/headers', {
      headers: { 'x-set': 'client', 'x-add': 'one', 'x-remove': 'x' },
    });
    expect(r.status).toBe(200);
    expect(r.echo.headers?.['x-set']).toBe('set');
    expect(r.echo.headers?.['x-add']).toBe('one,added');
    expect(r.echo.headers?.['x-remove']).toBeUndefined();
    expect(r.echo.headers?.host).toBe('filters.test');
    expect(r.headers['x-resp']).toBe('r');
    expect(r.headers['x-from-backend']).toBeUndefined();
    // another rule of the same route has no response filter: the backend's header passes
    expect((await send('filters.test', '/rewrite')).headers['x-from-backend']).toBe('yes');
    const adds = await send('filters.test', '/adds', { headers: { 'x-both': 'client', 'x-twice': 'c' } });
    expect(adds.echo.headers?.['x-both']).toBe('s,1');
    expect(adds.echo.headers?.['x-twice']).toBe('c,1,2');
    expect(adds.headers['x-resp-twice']).toBe('1,2');
    expect((await send('filters.test', '/adds')).echo.headers?.['x-twice']).toBe('1,2');
  });

  it('answers CORS preflights itself and adds the CORS headers to allowed origins’ answers (HTTPRoute CORS)', async () => {
    const hits = pods.a!.hits;
    const preflight = (origin: string, extra: Record<string, string> = {}) =>
      send('cors.test', '/cors/x', {
        method: 'OPTIONS',
        headers: { origin, 'access-control-request-method': 'PUT', ...extra },
      });
    const ok = await preflight('https://app.test', { 'access-control-request-headers': 'x-a' });
    expect(ok.status).toBe(200);
    expect(ok.headers['access-control-allow-origin']).toBe('https://app.test');
    expect(ok.headers['access-control-allow-methods']).toBe('GET, PUT');
    expect(ok.headers['access-control-allow-headers']).toBe('X-A');
    expect(ok.headers['access-control-allow-credentials']).toBe('true');
    expect(ok.headers['access-control-max-age']).toBe('60');
    expect(ok.headers.vary).toBe('Origin');
    // an origin's scheme and host in any case, its port as the scheme's default; a wildcard for any labels before it
    for (const origin of ['HTTPS://APP.test:443', 'http://a.b.site.test:8080'])
      expect((await preflight(origin)).headers['access-control-allow-origin']).toBe(origin);
    // not the bare suffix, not another port or scheme, nothing that is not scheme://host[:port], nothing too long
    for (const origin of [
      'http://site.test:8080',
      'http://x.site.test',
      'http://app.test',
      'https://evil.test',
      'https://app.test/path',
      'null',
      `https://${'a.'.repeat(200)}app.test`,
    ]) {
      const denied = await preflight(origin);
      expect(denied.status, origin.slice(0, 40)).toBe(200);
      expect(denied.headers['access-control-allow-origin'], origin.slice(0, 40)).toBeUndefined();
    }
    // the preflights never reached the backend
    expect(pods.a!.hits).toBe(hits);
    const actual = await send('cors.test', '/cors/x', { headers: { origin: 'https://app.test' } });
    expect(actual.echo.backend).toBe('a');
    expect(actual.headers['access-control-allow-origin']).toBe('https://app.test');
    expect(actual.headers['access-control-expose-headers']).toBe('X-From-Backend');
    expect(actual.headers['access-control-allow-credentials']).toBe('true');
    const other = await send('cors.test', '/cors/x', { headers: { origin: 'https://evil.test' } });
    expect(other.echo.backend).toBe('a');
    expect(other.headers['access-control-allow-origin']).toBeUndefined();
    // the answer depends on Origin all the same: a cache must not give it to an allowed origin
    expect(other.headers.vary).toBe('Origin');
    expect((await preflight('https://evil.test')).headers.vary).toBe('Origin');
    expect((await send('cors.test', '/cors/x')).headers.vary).toBeUndefined();
    // `*` without credentials: any origin gets `*`, a `*` method or header list answers what was asked
    const any = await send('cors.test', '/any', {
      method: 'OPTIONS',
      headers: { origin: 'null', 'access-control-request-method': 'DELETE', 'access-control-request-headers': 'a, b' },
    });
    expect(any.headers['access-control-allow-origin']).toBe('*');
    expect(any.headers['access-control-allow-methods']).toBe('DELETE');
    expect(any.headers['access-control-allow-headers']).toBe('a, b');
    expect(any.headers['access-control-allow-credentials']).toBeUndefined();
    expect(any.headers['access-control-max-age']).toBe('5');
  });

  it("applies a backendRef's own request header filters to the requests it gets, after the rule's", async () => {
    const seen = new Set<string>();
    for (let i = 0; i < 40; i++) {
      const r = await send('cors.test', '/per-backend', { headers: { 'x-via': 'client' } });
      expect(r.echo.headers?.['x-backend']).toBe(r.echo.backend);
      expect(r.echo.headers?.['x-via']).toBe(`client,${r.echo.backend}`);
      seen.add(r.echo.backend!);
    }
    expect([...seen].sort()).toEqual(['a', 'b']);
  });

  it('redirects: scheme, hostname, prefix path, status; a port alone keeps the scheme', async () => {
    const r = await send('filters.test', '/old/page?x=1');
    expect(r.status).toBe(301);
    expect(r.headers.location).toBe('https://elsewhere.test/new/page?x=1');
    const p = await send('filters.test', '/port/a');
    expect(p.status).toBe(302);
    expect(p.headers.location).toBe('http://filters.test:8081/port/a');
  });

  it('redirects a request that names no host (HTTP/1.0) to the host it reached: TLS name, else the address', async () => {
    // the catch-all's server_name is "": $host alone made `https:///r/x`
    const bare = await raw(port, 'GET /r/x?q=1 HTTP/1.0\r\n\r\n');
    expect([bare.status, bare.location]).toEqual([301, 'https://127.0.0.1/r/x?q=1']);
    // a Host, or a request line with one, is still the client's
    const named = await raw(port, 'GET /r/x HTTP/1.0\r\nHost: asked.test\r\n\r\n');
    expect(named.location).toBe('https://asked.test/r/x');
    const absolute = await raw(port, 'GET http://line.test/r/x HTTP/1.0\r\n\r\n');
    expect(absolute.location).toBe('https://line.test/r/x');
    // over TLS the server name the client sent (here no server has it: the listener without hostname answers)
    const tls = await raw(tlsPort, 'GET /r/y HTTP/1.0\r\n\r\n', 'Sni.Example.test');
    expect([tls.status, tls.location]).toEqual([302, 'https://sni.example.test:8443/r/y']);
    // and without one either, its address
    const bareTls = await raw(tlsPort, 'GET /r/y HTTP/1.0\r\n\r\n', null);
    expect(bareTls.location).toBe('https://127.0.0.1:8443/r/y');
  });

  it('rewrites the Host header and the path, keeping the query string', async () => {
    const r = await send('filters.test', '/rewrite/deep?q=1');
    expect(r.echo.path).toBe('/inner/deep?q=1');
    expect(r.echo.headers?.host).toBe('rewritten.test');
    const full = await send('filters.test', '/full?k=v');
    expect(full.echo.path).toBe('/x/y?k=v');
    expect(full.echo.headers?.host).toBe('filters.test');
  });

  it('mirrors a request to both mirror backends, with the modified headers, and answers from the route backend', async () => {
    const [m, m2] = [pods.m!, pods.m2!];
    const before = [m.hits, m2.hits];
    const r = await send('filters.test', '/mirror/one?k=v');
    expect(r.echo.backend).toBe('a');
    expect(r.echo.headers?.['x-mirrored']).toBe('yes');
    for (let i = 0; i < 100 && (m.hits === before[0] || m2.hits === before[1]); i++)
      await new Promise((done) => setTimeout(done, 20));
    expect([m.hits, m2.hits]).toEqual([before[0]! + 1, before[1]! + 1]);
    expect(m.last).toMatchObject({ path: '/mirror/one?k=v', headers: { 'x-mirrored': 'yes', host: 'filters.test' } });
    // percent 0, fraction 0/100, and routes without the filter mirror nothing
    await send('filters.test', '/never');
    await send('filters.test', '/headers');
    await new Promise((done) => setTimeout(done, 200));
    expect([m.hits, m2.hits]).toEqual([before[0]! + 1, before[1]! + 1]);
  });

  it('mirrors a request body too: each copy carries it, and the route backend gets it whole', async () => {
    const [m, m2] = [pods.m!, pods.m2!];
    const before = [m.hits, m2.hits];
    // larger than client_body_buffer_size's default, so the mirrors share a body nginx kept in a file
    const body = `${'payload '.repeat(4096)}end`;
    const r = await send('filters.test', '/mirror/upload', { method: 'POST', body });
    // lengths and a flag, not the 32 KB in a failure's message
    const whole = (got: string | undefined) => [got?.length, got === body];
    expect([r.echo.backend, r.echo.method, ...whole(r.echo.body)]).toEqual(['a', 'POST', body.length, true]);
    for (let i = 0; i < 100 && (m.hits === before[0] || m2.hits === before[1]); i++)
      await new Promise((done) => setTimeout(done, 20));
    expect([whole(m.last?.body), whole(m2.last?.body)]).toEqual([whole(body), whole(body)]);
    expect(m.last?.headers['content-length']).toBe(String(body.length));
  });

  it('splits by weight (weight 0 never) and answers 500 for no weight or an unresolved backend', async () => {
    const counts: Record<string, number> = {};
    const n = 400;
    for (let i = 0; i < n; i++) {
      const b = String(await backendOf('weights.test', `/w${i}`));
      counts[b] = (counts[b] ?? 0) + 1;
    }
    // a: p = 3/4, sd = sqrt(400 * 3/4 * 1/4) ≈ 8.7; ±5 sd
    expect(counts.a).toBeGreaterThan(300 - 44);
    expect(counts.a).toBeLessThan(300 + 44);
    expect((counts.a ?? 0) + (counts.b ?? 0)).toBe(n);
    expect(counts.c).toBeUndefined();
    expect(await backendOf('weights.test', '/zero')).toBe(500);
    expect(await backendOf('weights.test', '/none')).toBe(500);
    expect(await backendOf('weights.test', '/missing')).toBe(500);
  });

  it('times out a slow backend after the route’s request or backendRequest timeout (504)', async () => {
    expect(await backendOf('timeouts.test', '/slow/request')).toBe(504);
    expect(await backendOf('timeouts.test', '/slow/backend')).toBe(504);
    expect(await backendOf('timeouts.test', '/slow/long')).toBe('a');
  });

  it('serves a wildcard hostname for any number of labels below it, not for the bare suffix', async () => {
    expect(await backendOf('a.wild.test', '/')).toBe('c');
    expect(await backendOf('a.b.wild.test', '/')).toBe('c');
    expect(await backendOf('wild.test', '/')).toBe(404);
  });

  it('leaves a host an Ingress names to the Ingress, with a problem, and serves the route on its other host', async () => {
    expect(await backendOf('ingress.test', '/')).toBe('legacy');
    expect(await backendOf('gw.test', '/')).toBe('b');
    expect(problems).toContainEqual(
      expect.stringMatching(/^HTTPRoute mixed spec\.hostnames: host ingress\.test .*Ingress default\/legacy/),
    );
    // the catch-all is the Gateway's (no Ingress has a rule without host); the route without hostnames also
    // serves under every other Gateway hostname, but not the Ingress's
    expect(await backendOf('unknown.test', '/catch-all')).toBe('b');
    expect(await backendOf('unknown.test', '/')).toBe(404);
    expect(await backendOf('paths.test', '/catch-all')).toBe('b');
    expect(await backendOf('ingress.test', '/catch-all')).toBe('legacy');
  });

  it('serves an HTTPS listener with its certificateRef, pushed in the certificate table', async () => {
    const r = await get({ host: 'secure.test', path: '/', port: tlsPort, https: true, ca: certPem });
    expect(r.status).toBe(200);
    expect(JSON.parse(r.body).backend).toBe('c');
    expect(servedNames(pushed!.certificates)).toContain(`server ${tlsPort}/secure.test`);
  });

  it('answers 421 when the TLS server name picks another listener than the Host header reached', async () => {
    const request = (host: string) => `GET / HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`;
    // secure.test has its own listener; whatever.test falls to the listener without hostname
    expect((await raw(tlsPort, request('secure.test'), 'secure.test')).status).toBe(200);
    expect((await raw(tlsPort, request('secure.test'), 'whatever.test')).status).toBe(421);
    expect((await raw(tlsPort, request('whatever.test'), 'secure.test')).status).toBe(421);
    // the same listener (the one without hostname, which has a catch-all route): not misdirected; no server name:
    // nothing to compare
    expect((await raw(tlsPort, request('named-any.test'), 'whatever.test')).status).toBe(200);
    expect((await raw(tlsPort, request('secure.test'), null)).status).toBe(200);
  });

  it('serves an HTTPS listener without hostname to any name, with its certificate (named in nginx.conf)', async () => {
    const r = await get({ host: 'whatever.test', path: '/', port: tlsPort, https: true });
    expect(r.status).toBe(200);
    expect(JSON.parse(r.body).backend).toBe('b');
    expect(r.peerCertificate?.subject.CN).toBe('any.test');
    expect(lastText).toMatch(/ssl_certificate "certificates\/default_any-cert\.pem";/);
  });

  it('serves a listener without hostname with its certificate under every route hostname, named or not', async () => {
    // any-cert names any.test only: the listener's certificate is served all the same, not nginx's default one
    const named = await get({ host: 'named-any.test', path: '/', port: tlsPort, https: true });
    expect([named.status, named.backend, named.peerCertificate?.subject.CN]).toEqual([200, 'c', 'any.test']);
    // the same Secret is pushed for named-any.test and still a file for the catch-all server
    expect(servedNames(pushed!.certificates)).toContain(`server ${tlsPort}/named-any.test`);
    expect(lastText).toMatch(/ssl_certificate "certificates\/default_any-cert\.pem";/);
    expect(
      (await get({ host: 'whatever.test', path: '/', port: tlsPort, https: true })).peerCertificate?.subject.CN,
    ).toBe('any.test');
  });

  it('answers a name no route serves on an HTTPS listener without hostname: its certificate, then 404', async () => {
    const named = await get({ host: 'example.org', path: '/', port: otherTlsPort, https: true });
    expect([named.status, named.backend, named.peerCertificate?.subject.CN]).toEqual([200, 'a', 'any.test']);
    const unknown = await get({ host: 'unknown-example.org', path: '/', port: otherTlsPort, https: true });
    expect([unknown.status, unknown.peerCertificate?.subject.CN]).toEqual([404, 'any.test']);
  });

  it('applies an HTTPRoute change by a push: nginx.conf is the same and the workers stay', async () => {
    const before = workers();
    expect(await backendOf('paths.test', '/prefix/exact')).toBe('a');
    const paths = objects.find((o) => o.kind === 'HTTPRoute' && (o.metadata as { name: string }).name === 'paths')!;
    const spec = paths.spec as { rules: { backendRefs: unknown[] }[] };
    spec.rules[1]!.backendRefs = [backend('c')];
    const next = await apply();
    expect(next.changed).toBe(false);
    await push(next.tables);
    expect(await backendOf('paths.test', '/prefix/exact')).toBe('c');
    expect(workers()).toEqual(before);
  });

  it('starts mirror subrequests only in servers where a route mirrors; a first mirror reloads, then copies', async () => {
    const [m, m2] = [pods.m!, pods.m2!];
    expect(serverText('filters.test')).toContain('mirror /_ia_gateway_mirror/2;');
    expect(serverText('paths.test')).not.toMatch(/^\s*mirror |_ia_gateway_mirror|\$ia_mirror/m);
    expect(serverText('paths.test')).toContain('require("ingress_actors.router").rewrite(0)');
    const paths = objects.find((o) => o.kind === 'HTTPRoute' && (o.metadata as { name: string }).name === 'paths')!;
    const spec = paths.spec as { rules: { filters?: unknown[]; backendRefs: unknown[] }[] };
    spec.rules[0]!.filters = [{ type: 'RequestMirror', requestMirror: { backendRef: { name: 'm', port: 80 } } }];
    spec.rules[0]!.backendRefs = [backend('a')];
    const next = await apply(true);
    expect(next.changed).toBe(true);
    expect(serverText('paths.test')).toContain('mirror /_ia_gateway_mirror/1;');
    expect(serverText('paths.test')).not.toContain('_ia_gateway_mirror/2');
    // as the controller does: the tables go first, but a server that needs more mirror slots than the running
    // nginx.conf has keeps its old routes until the reload (the new ones would run without their copies)
    await push(tablesForReload(next.tables, pushed));
    const hits = [m.hits, m2.hits];
    expect(await backendOf('paths.test', '/prefix/early')).toBe('b');
    await reload();
    await push(next.tables);
    expect(await backendOf('paths.test', '/prefix/copied?k=v')).toBe('a');
    for (let i = 0; i < 100 && m.hits === hits[0]!; i++) await new Promise((done) => setTimeout(done, 20));
    expect(m.last).toMatchObject({ path: '/prefix/copied?k=v', headers: { host: 'paths.test' } });
    await new Promise((done) => setTimeout(done, 200));
    expect([m.hits, m2.hits]).toEqual([hits[0]! + 1, hits[1]]);
  });
});
