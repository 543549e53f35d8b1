/**
 * Issue 29's Ingress route table as pushed data, through a real nginx: POST /ingress-routes (a full replace, then
 * deltas over the version nginx holds; each host checked and refused alone; lua/ingress_actors/control.lua and
 * validate.lua) and the shared server's `location /` serving it (ingress_router.route: the host, the entry, the
 * variables a profile reads, the jump to `@ia_p_<profile>`), with two workers.
 */
import { Agent, request } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import { controlRequest, type LuaNginx, PROFILE_VARIABLES, startLuaNginx } from './harness.js';
import { newControlToken } from '../../src/nginx/control.js';

/** profile is the n-th test profile key: 32 lowercase hex digits. */
const profile = (n: number) => n.toString(16).padStart(32, '0');
const PROFILES = [1, 2, 3, 4, 5, 6].map(profile);
/** the router's bound on remembered request hosts in this nginx (its max_resolved) */
const MAX_RESOLVED = 16;

type Json = Record<string, unknown>;

/** entry is a route entry going to profile `n`, with `extra` fields. */
const entry = (kind: string, path: string, n: number, extra: Json = {}): Json => ({
  kind,
  path,
  profile: profile(n),
  autoRedirect: false,
  internal: false,
  ...extra,
});

const INFO = { namespace: 'team-a', ingressName: 'web', serviceName: 'web-svc', servicePort: '8080' };

/** the table of the per-request tests */
const HOSTS: Json[] = [
  {
    host: 'app.test',
    entries: [
      entry('exact', '/exact', 1, { upstream: 'team-a_web-svc_8080', route: '0123456789abcdef', info: INFO }),
      entry('prefix', '/', 2, { upstream: 'team-a_root_80' }),
      entry('prefix', '/dir/', 3, { upstream: 'team-a_dir_80', autoRedirect: true }),
      entry('regex', '^/re/[0-9]+$', 4),
      entry('iregex', '^/ci/', 5),
      entry('exact', '/_external-auth-0123456789abcdef', 6, { internal: true }),
    ],
  },
  { host: '*.wild.test', entries: [entry('prefix', '/', 4, { upstream: 'wild' })] },
  { host: 'a.wild.test', entries: [entry('exact', '/a', 5, { upstream: 'a-wild' })] },
  { host: 'nofallback.test', entries: [entry('prefix', '/api/', 1)] },
  { host: 'nometrics.test', entries: [entry('prefix', '/', 6, { route: 'ab', info: INFO, upstream: 'nm' })] },
];
const DEFAULT_HOST: Json = { host: '_', entries: [entry('prefix', '/', 3, { upstream: 'default' })] };

let nginx: LuaNginx;

beforeAll(async () => {
  nginx = await startLuaNginx({ token: newControlToken(), profiles: PROFILES, maxResolved: MAX_RESOLVED });
});

afterAll(async () => {
  await nginx?.stop();
});

interface PushAnswer {
  readonly status: number;
  readonly body: string;
  readonly json?: { version: string; refused: { table: string; key: string; reason: string }[] };
}

/** push sends POST /ingress-routes. */
async function push(version: string, base: string | null, set: unknown[], remove: unknown[] = []): Promise<PushAnswer> {
  const a = await controlRequest(nginx, 'POST', '/ingress-routes', JSON.stringify({ version, base, set, remove }));
  return a.status === 201 ? { ...a, json: JSON.parse(a.body) } : a;
}

async function heldVersion(): Promise<string | null> {
  const a = await controlRequest(nginx, 'GET', '/status');
  expect(a.status).toBe(200);
  return (JSON.parse(a.body) as { ingress_routes: string | null }).ingress_routes;
}

/** Served is one request's outcome on the shared server. */
interface Served {
  readonly status: number;
  /** the profile key that answered, or undefined */
  readonly profile?: string;
  /** the variables it saw, by name */
  readonly vars: Record<string, string>;
  readonly location: string | undefined;
  readonly worker: string | undefined;
}

/** serve sends one request to the shared server on a new connection (reuseport spreads them over the workers). */
function serve(host: string, path: string): Promise<Served> {
  return new Promise((done, fail) => {
    const req = request({ host: '127.0.0.1', port: nginx.routerPort, path, agent: false, headers: { host } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => {
        const vars: Record<string, string> = {};
        let key: string | undefined;
        const m = /^([0-9a-f]{32}) (.*)$/.exec(body);
        if (res.statusCode === 200 && m) {
          key = m[1];
          const values = [...m[2]!.matchAll(/\[([^\]]*)\]/g)].map((v) => v[1]!);
          PROFILE_VARIABLES.forEach((name, i) => {
            vars[name] = values[i] ?? '?';
          });
        }
        const worker = res.headers['x-worker'];
        done({
          status: res.statusCode ?? 0,
          ...(key ? { profile: key } : {}),
          vars,
          location: res.headers.location,
          worker: typeof worker === 'string' ? worker : undefined,
        });
      });
    });
    req.setTimeout(10_000, () => req.destroy(new Error(`request to ${host}${path} timed out`)));
    req.on('error', fail);
    req.end();
  });
}

/** servedBy is the profile number (as in profile(n)) that answered, or the status. */
async function servedBy(host: string, path: string): Promise<string> {
  const s = await serve(host, path);
  if (s.profile) return `p${Number.parseInt(s.profile, 16)}`;
  if (s.status === 301) return `301 ${s.location}`;
  return `${s.status}`;
}

describe('POST /ingress-routes', () => {
  beforeEach(async () => {
    expect((await push('reset', null, [])).status).toBe(201);
  });

  test('a full replace, then deltas over it; status reports the version', async () => {
    const a = await push('full-1', null, [...HOSTS, DEFAULT_HOST]);
    expect(a.status).toBe(201);
    expect(a.json).toEqual({ version: 'full-1', refused: [] });
    expect(a.body).toContain('"refused":[]');
    expect(await heldVersion()).toBe('full-1');
    expect(await servedBy('app.test', '/exact')).toBe('p1');

    // a delta: one host changed, one added, one removed
    const changed = { host: 'app.test', entries: [entry('prefix', '/', 5)] };
    const added = { host: 'new.test', entries: [entry('exact', '/n', 2)] };
    const d = await push('delta-2', 'full-1', [changed, added], ['nofallback.test', 'absent.test']);
    expect(d.json).toEqual({ version: 'delta-2', refused: [] });
    expect(await heldVersion()).toBe('delta-2');
    expect(await servedBy('app.test', '/exact')).toBe('p5');
    expect(await servedBy('new.test', '/n')).toBe('p2');
    // removed: the default server's entry serves it now
    expect(await servedBy('nofallback.test', '/api/')).toBe('p3');
    // untouched by the delta
    expect(await servedBy('a.wild.test', '/a')).toBe('p5');
  });

  test('a delta over another version is answered 409 and changes nothing', async () => {
    await push('v1', null, HOSTS);
    const stale = await push('v2', 'v0', [{ host: 'app.test', entries: [] }], ['a.wild.test']);
    expect(stale.status).toBe(409);
    expect(stale.body.trim().split('\n')).toHaveLength(1);
    expect(stale.body).toContain('v1');
    expect(await heldVersion()).toBe('v1');
    expect(await servedBy('app.test', '/exact')).toBe('p1');
    expect(await servedBy('a.wild.test', '/a')).toBe('p5');
  });

  test('a full replace removes every host it does not name', async () => {
    await push('v1', null, [...HOSTS, DEFAULT_HOST]);
    await push('v2', null, [{ host: 'only.test', entries: [entry('prefix', '/', 2)] }]);
    expect(await servedBy('only.test', '/x')).toBe('p2');
    for (const host of ['app.test', 'a.wild.test', 'b.wild.test', 'other.test']) {
      expect(await servedBy(host, '/a'), host).toBe('404');
    }
  });

  test('a host both set and removed keeps what it had, and is named', async () => {
    await push('v1', null, HOSTS);
    const a = await push('v2', 'v1', [{ host: 'app.test', entries: [] }], ['app.test']);
    expect(a.json?.refused).toEqual([
      { table: 'ingress_routes', key: 'app.test', reason: 'named in set and in remove' },
    ]);
    expect(await servedBy('app.test', '/exact')).toBe('p1');
  });

  test('a host named twice: the first applies, the second is refused', async () => {
    const a = await push('v1', null, [
      { host: 'twice.test', entries: [entry('prefix', '/', 1)] },
      { host: 'twice.test', entries: [entry('prefix', '/', 2)] },
    ]);
    expect(a.json?.refused).toEqual([{ table: 'ingress_routes', key: 'twice.test', reason: 'named twice' }]);
    expect(await servedBy('twice.test', '/')).toBe('p1');
  });

  // each rule of validate.lua's ingress_host_routes: the host keeps its entries, the other host of the push applies
  type Mutation = [string, (h: Json, e: Json) => void, RegExp];
  const c = (code: number) => String.fromCharCode(code);
  const entryMutations: Mutation[] = [
    ['a kind not in the set', (_h, e) => (e.kind = 'suffix'), /kind/],
    ['a kind not a string', (_h, e) => (e.kind = 1), /kind/],
    ['a path without /', (_h, e) => (e.path = 'x/'), /does not start with \//],
    ['a prefix not ending in /', (_h, e) => (e.path = '/x'), /does not end in \//],
    ['a path over the bound', (_h, e) => (e.path = `/${'a'.repeat(2064)}/`), /path is not/],
    ['an empty path', (_h, e) => (e.path = ''), /path is not/],
    ['a path with a newline', (_h, e) => (e.path = '/a\n/'), /path is not/],
    ['a path with a NUL', (_h, e) => (e.path = `/a${c(0)}/`), /path is not/],
    ['a path with DEL', (_h, e) => (e.path = `/a${c(127)}/`), /path is not/],
    ['a path not a string', (_h, e) => (e.path = ['/']), /path is not/],
    [
      'a regex that does not compile',
      (_h, e) => ((e.kind = 'regex'), (e.path = '^/(a')),
      /does not compile: .*missing/,
    ],
    ['an iregex that does not compile', (_h, e) => ((e.kind = 'iregex'), (e.path = '[z-a]')), /does not compile/],
    ['a profile too short', (_h, e) => (e.profile = 'abc'), /profile/],
    ['a profile in upper case', (_h, e) => (e.profile = 'A'.repeat(32)), /profile/],
    ['a profile with a quote', (_h, e) => (e.profile = `${'a'.repeat(31)}"`), /profile/],
    ['a profile not a string', (_h, e) => (e.profile = 1), /profile/],
    ['a route not hex', (_h, e) => (e.route = 'ns/name#0'), /route/],
    ['a route over the bound', (_h, e) => (e.route = 'a'.repeat(65)), /route/],
    ['a route null', (_h, e) => (e.route = null), /route/],
    ['an upstream with a space', (_h, e) => (e.upstream = 'a b'), /upstream/],
    ['an upstream over the bound', (_h, e) => (e.upstream = 'a'.repeat(256)), /upstream/],
    ['an upstream null', (_h, e) => (e.upstream = null), /upstream/],
    ['info null', (_h, e) => (e.info = null), /info/],
    ['info with an unknown field', (_h, e) => (e.info = { ...INFO, x: '1' }), /info: unknown field/],
    ['a namespace with a dot', (_h, e) => (e.info = { ...INFO, namespace: 'a.b' }), /namespace/],
    ['a namespace over 63', (_h, e) => (e.info = { ...INFO, namespace: 'a'.repeat(64) }), /namespace/],
    ['an ingressName in upper case', (_h, e) => (e.info = { ...INFO, ingressName: 'Web' }), /ingressName/],
    ['an ingressName with a newline', (_h, e) => (e.info = { ...INFO, ingressName: 'web\n' }), /ingressName/],
    ['a serviceName with ..', (_h, e) => (e.info = { ...INFO, serviceName: 'a..b' }), /serviceName/],
    ['a servicePort 0', (_h, e) => (e.info = { ...INFO, servicePort: '0' }), /servicePort/],
    ['a servicePort 65536', (_h, e) => (e.info = { ...INFO, servicePort: '65536' }), /servicePort/],
    ['a servicePort as a number', (_h, e) => (e.info = { ...INFO, servicePort: 80 }), /servicePort/],
    ['a servicePort name with --', (_h, e) => (e.info = { ...INFO, servicePort: 'ht--tp' }), /servicePort/],
    ['a servicePort name over 15', (_h, e) => (e.info = { ...INFO, servicePort: 'h'.repeat(16) }), /servicePort/],
    ['a servicePort of digits only, not a port', (_h, e) => (e.info = { ...INFO, servicePort: '080' }), /servicePort/],
    ['autoRedirect as a string', (_h, e) => (e.autoRedirect = 'true'), /autoRedirect/],
    ['internal missing', (_h, e) => delete e.internal, /internal/],
    ['an unknown field', (_h, e) => (e.extra = 1), /unknown field/],
    ['an entry not an object', (h) => (h.entries = ['x']), /not an object/],
    ['entries not an array', (h) => (h.entries = { a: 1 }), /entries is not an array/],
    ['entries over the bound', (h) => (h.entries = Array(10_001).fill(h.entries)), /more than 10000 entries/],
    ['an unknown host field', (h) => (h.tls = true), /unknown field/],
  ];

  test.each(entryMutations)('%s: the host is refused alone and keeps its entries', async (what, mutate, reason) => {
    const good = { host: 'keep.test', entries: [entry('prefix', '/', 1, { info: INFO })] };
    await push('v1', null, [good]);
    const bad = structuredClone(good) as Json;
    mutate(bad, (bad.entries as Json[])[0]!);
    const other = { host: 'other.test', entries: [entry('prefix', '/', 2)] };
    const a = await push('v2', 'v1', [bad, other]);
    expect(a.status, what).toBe(201);
    expect(a.json?.version).toBe('v2');
    expect(a.json?.refused).toHaveLength(1);
    const refused = a.json?.refused[0];
    expect(refused).toMatchObject({ table: 'ingress_routes', key: 'keep.test' });
    expect(refused?.reason).toMatch(reason);
    expect(refused?.reason).not.toMatch(/[\u0000-\u001f\u007f]/);
    // the version moved on; the refused host kept its entries, the other host of the push applied
    expect(await heldVersion()).toBe('v2');
    expect(await servedBy('keep.test', '/')).toBe('p1');
    expect(await servedBy('other.test', '/')).toBe('p2');
  });

  test('a refused host that was absent stays absent', async () => {
    await push('v1', null, []);
    const a = await push('v2', 'v1', [{ host: 'new.test', entries: [entry('prefix', '/x', 1)] }]);
    expect(a.json?.refused.map((r) => r.key)).toEqual(['new.test']);
    expect(await servedBy('new.test', '/x/')).toBe('404');
  });

  test('a refused host of a full replace keeps its entries', async () => {
    await push('v1', null, [{ host: 'keep.test', entries: [entry('prefix', '/', 1)] }]);
    const a = await push('v2', null, [{ host: 'keep.test', entries: [entry('prefix', '/', 1, { profile: 'x' })] }]);
    expect(a.json?.refused.map((r) => r.key)).toEqual(['keep.test']);
    expect(await servedBy('keep.test', '/')).toBe('p1');
  });

  // a host that is not one: refused by its place in `set` (or `remove`), nothing of that name changes
  const hostileHosts: [string, unknown][] = [
    ['upper case', 'App.test'],
    ['a space', 'a b.test'],
    ['a newline', 'a.test\n'],
    ['a NUL', `a${c(0)}.test`],
    ['a colon and port', 'a.test:80'],
    ['a label over 63', `${'a'.repeat(64)}.test`],
    ['over 253', `${'a.'.repeat(127)}ab`],
    ['an empty label', 'a..test'],
    ['a leading dot', '.a.test'],
    ['a trailing dot', 'a.test.'],
    ['a label ending in -', 'a-.test'],
    ['a wildcard of two labels', '*.*.test'],
    ['a wildcard in the middle', 'a.*.test'],
    ['an underscore name', '_a.test'],
    ['empty', ''],
    ['a number', 1],
    ['null', null],
  ];

  test.each(hostileHosts)('a host with %s is refused by its place', async (_what, host) => {
    await push('v1', null, [{ host: 'keep.test', entries: [entry('prefix', '/', 1)] }]);
    const a = await push(
      'v2',
      'v1',
      [
        { host: 'fine.test', entries: [entry('prefix', '/', 2)] },
        { host, entries: [] },
      ],
      [host],
    );
    expect(a.status).toBe(201);
    expect(a.json?.refused.map((r) => r.key)).toEqual(['remove #1', '#2']);
    expect(await servedBy('fine.test', '/')).toBe('p2');
    expect(await servedBy('keep.test', '/')).toBe('p1');
  });

  // what cannot be read host by host refuses the push: nothing changes
  const malformed: [string, string][] = [
    ['not JSON', '{"version":'],
    ['an array', '[]'],
    ['a version with a slash', JSON.stringify({ version: 'a/b', base: null, set: [], remove: [] })],
    ['a version too long', JSON.stringify({ version: 'v'.repeat(129), base: null, set: [], remove: [] })],
    ['no version', JSON.stringify({ base: null, set: [], remove: [] })],
    ['base a number', JSON.stringify({ version: 'v9', base: 1, set: [], remove: [] })],
    ['base missing', JSON.stringify({ version: 'v9', set: [], remove: [] })],
    ['base with a newline', JSON.stringify({ version: 'v9', base: 'v1\n', set: [], remove: [] })],
    ['set an object', JSON.stringify({ version: 'v9', base: null, set: { a: 1 }, remove: [] })],
    ['set missing', JSON.stringify({ version: 'v9', base: null, remove: [] })],
    ['remove a string', JSON.stringify({ version: 'v9', base: null, set: [], remove: 'app.test' })],
    ['an unknown field', JSON.stringify({ version: 'v9', base: null, set: [], remove: [], all: true })],
    ['set over the bound', JSON.stringify({ version: 'v9', base: null, set: Array(200_001).fill(0), remove: [] })],
  ];

  test.each(malformed)('%s: 400, nothing changes', async (_what, body) => {
    await push('v1', null, HOSTS);
    const a = await controlRequest(nginx, 'POST', '/ingress-routes', body);
    expect(a.status).toBe(400);
    expect(a.body.trim().split('\n')).toHaveLength(1);
    expect(await heldVersion()).toBe('v1');
    expect(await servedBy('app.test', '/exact')).toBe('p1');
  });

  test('the token is required, and POST', async () => {
    const body = JSON.stringify({ version: 'v9', base: null, set: [], remove: [] });
    expect((await controlRequest(nginx, 'POST', '/ingress-routes', body, null)).status).toBe(401);
    expect((await controlRequest(nginx, 'POST', '/ingress-routes', body, 'f'.repeat(64))).status).toBe(401);
    expect((await controlRequest(nginx, 'GET', '/ingress-routes')).status).toBe(405);
    expect(await heldVersion()).toBe('reset');
  });
});

describe('serving the pushed table', () => {
  beforeAll(async () => {
    expect((await push('serve-1', null, [...HOSTS, DEFAULT_HOST])).json?.refused).toEqual([]);
  });

  test.each([
    ['app.test', '/exact', 'p1'],
    ['app.test', '/exact/', 'p2'],
    ['app.test', '/other', 'p2'],
    ['app.test', '/dir/x', 'p3'],
    ['app.test', '/re/12', 'p4'],
    ['app.test', '/re/12/x', 'p2'],
    ['app.test', '/CI/x', 'p5'],
    // the internal auth-url location: nginx answers 404 to a client
    ['app.test', '/_external-auth-0123456789abcdef', '404'],
    // the wildcard serves one more label; a.wild.test has its own entries (no `/`: 404)
    ['b.wild.test', '/x', 'p4'],
    ['a.wild.test', '/a', 'p5'],
    ['a.wild.test', '/b', '404'],
    // two more labels: not the wildcard's, the default server's
    ['b.c.wild.test', '/x', 'p3'],
    ['unknown.test', '/x', 'p3'],
    // a host without `/`: no entry, 404 (not the default server's)
    ['nofallback.test', '/x', '404'],
    ['nofallback.test', '/api/v1', 'p1'],
  ])('%s%s → %s', async (host, path, expected) => {
    expect(await servedBy(host, path)).toBe(expected);
  });

  test('autoRedirect answers 301 to the entry, with the args, as nginx’s auto_redirect', async () => {
    const port = nginx.routerPort;
    expect(await servedBy('app.test', '/dir')).toBe(`301 http://app.test:${port}/dir/`);
    expect(await servedBy('app.test', '/dir?a=1&b=%20')).toBe(`301 http://app.test:${port}/dir/?a=1&b=%20`);
    // nginx's own, on the same server
    expect(await servedBy('app.test', '/nginx-redirect?a=1&b=%20')).toBe(
      `301 http://app.test:${port}/nginx-redirect/?a=1&b=%20`,
    );
    expect(await servedBy('app.test', '/nginx-redirect')).toBe(`301 http://app.test:${port}/nginx-redirect/`);
  });

  test('over TLS too: https, and the port unless 443', async () => {
    const port = nginx.routerTlsPort;
    expect(await tlsLocation('/dir?a=1')).toBe(`https://app.test:${port}/dir/?a=1`);
    expect(await tlsLocation('/nginx-redirect?a=1')).toBe(`https://app.test:${port}/nginx-redirect/?a=1`);
  });

  test('the profile sees the entry’s variables, and the request’s URI and args', async () => {
    const s = await serve('app.test', '/exact?q=1');
    expect(s.profile).toBe(profile(1));
    expect(s.vars).toEqual({
      proxy_upstream_name: 'team-a_web-svc_8080',
      ia_host: 'app.test',
      ia_route: '0123456789abcdef',
      namespace: 'team-a',
      ingress_name: 'web',
      service_name: 'web-svc',
      service_port: '8080',
      uri: '/exact',
      args: 'q=1',
    });
    // no route, no info: the server's empty values
    const w = await serve('x.wild.test', '/y');
    expect(w.vars).toMatchObject({ proxy_upstream_name: 'wild', ia_host: '*.wild.test', ia_route: '', namespace: '' });
    const r = await serve('app.test', '/re/1');
    expect(r.vars).toMatchObject({ proxy_upstream_name: '-', ia_host: 'app.test', ia_route: '' });
    const d = await serve('unknown.test', '/');
    expect(d.vars).toMatchObject({ proxy_upstream_name: 'default', ia_host: '_' });
  });

  test('without request metrics, $ia_host and $ia_route are not needed', async () => {
    const s = await serve('nometrics.test', '/x');
    expect(s.profile).toBe(profile(6));
    expect(s.vars).toMatchObject({ proxy_upstream_name: 'nm', ia_host: '', ia_route: '', namespace: 'team-a' });
  });

  test('no host and no default: 404', async () => {
    await push('serve-2', 'serve-1', [], ['_']);
    expect(await servedBy('unknown.test', '/x')).toBe('404');
    expect(await servedBy('app.test', '/exact')).toBe('p1');
    await push('serve-3', 'serve-2', [DEFAULT_HOST]);
    expect(await servedBy('unknown.test', '/x')).toBe('p3');
  });

  test('a push is seen by the next request in every worker', async () => {
    const workers = new Set<string>();
    // both workers cache the host as it is now
    for (let i = 0; i < 20; i++) {
      const s = await serve('app.test', '/other');
      expect(s.profile).toBe(profile(2));
      if (s.worker) workers.add(s.worker);
    }
    expect(workers.size).toBe(2);
    const version = (await heldVersion())!;
    await push('serve-next', version, [{ host: 'app.test', entries: [entry('prefix', '/', 6)] }]);
    const seen = new Set<string>();
    for (let i = 0; i < 20; i++) {
      const s = await serve('app.test', '/other');
      expect(s.profile).toBe(profile(6));
      if (s.worker) seen.add(s.worker);
    }
    expect(seen.size).toBe(2);
    await push('serve-back', 'serve-next', [HOSTS[0]]);
  });

  test('a version pushed again over other hosts is served as stored, not as cached', async () => {
    const version = (await heldVersion())!;
    const again = (n: number) => [
      ...HOSTS.slice(1),
      DEFAULT_HOST,
      { host: 'app.test', entries: [entry('prefix', '/', n)] },
    ];
    await push('same', null, again(4));
    for (let i = 0; i < 10; i++) expect(await servedBy('app.test', '/other')).toBe('p4');
    await push('same', null, again(5));
    for (let i = 0; i < 10; i++) expect(await servedBy('app.test', '/other')).toBe('p5');
    await push(version, null, [...HOSTS, DEFAULT_HOST]);
  });

  test('a delta costs each worker the hosts it changed: the others stay decoded', async () => {
    // one kept-alive connection: one worker answers every request
    const one = new Agent({ keepAlive: true, maxSockets: 1 });
    const on = (host: string, path: string) => text(one, host, path);
    try {
      const version = (await heldVersion())!;
      expect(await on('b.wild.test', '/x')).toMatch(/^0+4 /);
      expect(await on('app.test', '/other')).toMatch(/^0+2 /);
      const before = Number(await on('x', '/decoded-count'));
      await push('cost-1', version, [{ host: 'a.wild.test', entries: [entry('exact', '/a', 6)] }]);
      // unchanged hosts: served as before, nothing decoded again
      expect(await on('b.wild.test', '/x')).toMatch(/^0+4 /);
      expect(await on('app.test', '/other')).toMatch(/^0+2 /);
      expect(Number(await on('x', '/decoded-count'))).toBe(before);
      // the changed host: decoded once, served as pushed
      expect(await on('a.wild.test', '/a')).toMatch(/^0+6 /);
      expect(Number(await on('x', '/decoded-count'))).toBe(before + 1);
      await push('cost-2', 'cost-1', [HOSTS[2]]);
    } finally {
      one.destroy();
    }
  });

  test('made-up Host headers never grow the cache past its bound', async () => {
    const names = Array.from({ length: 10 * MAX_RESOLVED }, (_, i) => `made-up-${i}.wild.test`);
    for (const name of names) expect(await servedBy(name, '/x')).toBe('p4');
    // over-long names fall to the default server without being remembered
    expect(await servedBy(`${'a'.repeat(300)}.test`, '/x')).toBe('p3');
    // each worker remembers some request hosts (the cache is used), never more than the bound
    const counts = await Promise.all(Array.from({ length: 20 }, async () => Number(await countOf())));
    expect(Math.max(...counts)).toBeGreaterThan(0);
    expect(Math.max(...counts)).toBeLessThanOrEqual(MAX_RESOLVED);
    // what was cached before the cache emptied is still served right
    expect(await servedBy('app.test', '/exact')).toBe('p1');
  });
});

/** tlsLocation is the Location of the shared server's answer to app.test `path` over TLS. */
function tlsLocation(path: string): Promise<string | undefined> {
  return new Promise((done, fail) => {
    const req = httpsRequest(
      {
        host: '127.0.0.1',
        port: nginx.routerTlsPort,
        path,
        agent: false,
        servername: 'app.test',
        rejectUnauthorized: false,
        headers: { host: 'app.test' },
      },
      (res) => {
        res.resume();
        res.on('end', () => done(res.headers.location));
      },
    );
    req.on('error', fail);
    req.end();
  });
}

/** text is the body of one request to the shared server through `agent`. */
function text(agent: Agent | false, host: string, path: string): Promise<string> {
  return new Promise((done, fail) => {
    const req = request({ host: '127.0.0.1', port: nginx.routerPort, path, agent, headers: { host } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => done(body));
    });
    req.setTimeout(10_000, () => req.destroy(new Error(`request to ${host}${path} timed out`)));
    req.on('error', fail);
    req.end();
  });
}

/** countOf reads /resolved-count (one worker's count of remembered request hosts). */
function countOf(): Promise<string> {
  return text(false, 'x', '/resolved-count');
}

describe('a table over the shared dict', () => {
  let small: LuaNginx;
  beforeAll(async () => {
    small = await startLuaNginx({ token: newControlToken(), configSize: '128k', profiles: [profile(1)] });
  });
  afterAll(async () => {
    await small?.stop();
  });

  const send = async (version: string, base: string | null, set: unknown[]) =>
    controlRequest(small, 'POST', '/ingress-routes', JSON.stringify({ version, base, set, remove: [] }));
  const held = async () =>
    (JSON.parse((await controlRequest(small, 'GET', '/status')).body) as { ingress_routes: string | null })
      .ingress_routes;

  test('is answered 507, holds no version, and deltas are 409 until a whole table fits', async () => {
    const fits = { host: 'fits.test', entries: [entry('prefix', '/', 1)] };
    expect((await send('v1', null, [fits])).status).toBe(201);
    const huge = {
      host: 'huge.test',
      entries: Array.from({ length: 5000 }, (_, i) => entry('exact', `/${i}/${'x'.repeat(40)}`, 1)),
    };
    const over = await send('v2', 'v1', [huge]);
    expect(over.status).toBe(507);
    expect(over.body).toMatch(/no memory/);
    // what nginx holds is no version the controller knows: it must send the whole table
    expect(await held()).toBeNull();
    expect((await send('v3', 'v1', [fits])).status).toBe(409);
    expect((await send('v3', null, [fits])).status).toBe(201);
    expect(await held()).toBe('v3');
  });
});
