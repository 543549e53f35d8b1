/**
 * The Ingress path router (lua/ingress_actors/ingress_router.lua) against nginx's own `location` lookup,
 * differentially: Ingresses go through buildModel, each server's locations (toLocations' output) are rendered as the
 * template renders them (same server_name, modifiers, quoting, and a proxy_pass, so nginx's auto_redirect applies as
 * it would) into one nginx, each answering which location it is; a second server of the same nginx is the shared
 * server, serving ingressRouteTable(model) as pushed (POST /ingress-routes) through route() and a profile per
 * location. Every request goes to both, and both must name the same host and location (or the same error status).
 */
import { request } from 'node:http';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { buildModel } from '../../src/model/build.js';
import { defaultBuildOptions } from '../../src/model/build-types.js';
import { ingressRouteTable } from '../../src/model/ingress-routes.js';
import type { Server } from '../../src/model/nginx-model.js';
import { ingress, ingressClass, type PathSpec, serviceWithEndpoints, snapshotOf } from '../support/manifests.js';
import {
  agent,
  differences,
  ROUTER_CASES,
  type RouterNginx,
  startRouterNginx,
  USE_REGEX,
} from './ingress-router-nginx.js';

/** modelOf builds the model of some Ingresses (all to Service web) and checks its route table is the servers'. */
function modelOf(ingresses: { host: string; paths: PathSpec[]; annotations?: Record<string, string> }[]) {
  const snapshot = snapshotOf([
    ingressClass(),
    ...serviceWithEndpoints('web', [{ ip: '127.0.0.2', port: 8080 }]),
    ...ingresses.map((i, n) => ingress(`i${n}`, { [i.host]: i.paths }, { annotations: i.annotations ?? {} })),
  ]);
  const { model, problems } = buildModel(snapshot, defaultBuildOptions);
  const table = ingressRouteTable(model);
  const servers = [model.defaultServer, ...model.servers];
  expect(table.map((h) => h.host)).toEqual(servers.map((s) => s.host));
  expect(servers.filter((s) => s.isDefault).map((s) => s.host)).toEqual(['_']);
  return { servers, table, problems };
}

describe('the Ingress router picks the location nginx picks', () => {
  const cases = ROUTER_CASES.map((c) => ({ ...c, paths: c.paths.map((path) => ({ ...path, service: 'web' })) }));
  let nginx: RouterNginx;
  let built: ReturnType<typeof modelOf>;

  beforeAll(async () => {
    built = modelOf(cases);
    nginx = await startRouterNginx(built.servers, built.table);
  });
  afterAll(async () => {
    await nginx?.stop();
  });

  const hosts = [
    'plain.test',
    'PLAIN.test',
    'nofallback.test',
    'regex.test',
    'a.wild.test',
    'b.wild.test',
    'b.c.wild.test',
    'wild.test',
    'unknown.test',
    // nginx's $host drops a port and a trailing dot, and so does its server lookup
    'b.wild.test.',
    'plain.test:8080',
  ];
  const uris = [
    '/',
    '/foo',
    '/foo/',
    '/foobar',
    '/foo/bar',
    '/foo/bar/',
    '/foo/bar/baz',
    '/FOO',
    '/foo.bar',
    '/foo.bar/x',
    '/foo//bar',
    '/x/../foo',
    '/foo/%62ar',
    '/api',
    '/api/',
    '/apix',
    '/api/v1',
    '/api/v1/x',
    '/Api',
    '/API',
    '/app',
    '/app/',
    '/App/V2',
    '/app/v2/x',
    '/app/exact',
    '/app/exact/',
    '/APP/EXACT',
    '/static/a.css',
    '/STATIC/A.CSS',
    '/static/a.css/',
    '/st',
    '/st/x',
    '/stx',
    '/w',
    '/w/',
    '/wx',
    '/a',
    '/a/',
    '/../x',
    '/dir',
    '/dir?a=1&b',
    '/dir/',
    '/dir/x',
  ];

  test('the table-driven hosts and URIs: the same pick for every request', async () => {
    expect(built.problems).toEqual([]);
    const picks = new Map<string, string>();
    const authUris = built.servers.flatMap((s) =>
      s.locations.flatMap((l) => (l.externalAuth ? [l.externalAuth.location, `${l.externalAuth.location}/x`] : [])),
    );
    // `= /app`, `/app/` and `/` each have one
    expect(authUris).toHaveLength(6);
    expect(await differences(nginx, [...hosts, 'auth.test'], [...uris, ...authUris], picks)).toEqual([]);
    // the cases mean what they say: nginx itself picked these (so the comparison covers each rule)
    const at = (host: string, uri: string) => {
      const [name, index] = picks.get(`${host} ${uri}`)!.split(' ');
      const server = built.servers.find((s) => s.host === name)!;
      return `${name} ${server.locations[Number(index)]!.modifier} ${server.locations[Number(index)]!.match}`;
    };
    expect(at('plain.test', '/foo')).toBe('plain.test = /foo');
    expect(at('plain.test', '/foo/bar')).toBe('plain.test = /foo/bar');
    expect(at('plain.test', '/foo/bar/baz')).toBe('plain.test  /foo/bar/');
    expect(at('plain.test', '/foobar')).toBe('plain.test  /');
    expect(at('PLAIN.test', '/FOO')).toBe('plain.test  /');
    expect(at('regex.test', '/App/V2')).toBe('regex.test ~* ^/app/v[0-9]+');
    expect(at('regex.test', '/APP/EXACT')).toBe('regex.test  /');
    expect(at('regex.test', '/st/x')).toBe('regex.test ~ ^/st(?:/|$)');
    expect(at('regex.test', '/STATIC/A.CSS')).toBe('regex.test ~* ^/static/.*\\.css$');
    expect(at('b.wild.test', '/w/')).toBe('*.wild.test  /w/');
    expect(at('a.wild.test', '/a')).toBe('a.wild.test = /a');
    expect(at('b.c.wild.test', '/w')).toBe('_  /');
    expect(at('b.wild.test.', '/w')).toBe('*.wild.test = /w');
    expect(at('plain.test:8080', '/foo/')).toBe('plain.test  /foo/');
    expect(picks.get('plain.test /../x')).toBe('status 400');
    // nginx's auto_redirect: an Exact `/dir/` answers `/dir` with a 301 to `/dir/`, before any regex
    expect(picks.get('plain.test /dir')).toBe('redirect /dir/');
    expect(picks.get('regex.test /dir')).toBe('redirect /dir/');
    expect(picks.get('plain.test /dir?a=1&b')).toBe('redirect /dir/?a=1&b');
    expect(at('plain.test', '/dir/x')).toBe('plain.test  /');
    expect(picks.get(`auth.test ${authUris[0]}`)).toBe('status 404');
    expect(at('auth.test', authUris[1]!)).toBe('auth.test  /');
    expect(at('plain.test', authUris[0]!)).toBe('plain.test  /');
  });
});

describe('a malformed entry', () => {
  let nginx: RouterNginx;
  beforeAll(async () => {
    const { servers, table } = modelOf([]);
    nginx = await startRouterNginx(servers, table);
  });
  afterAll(async () => {
    await nginx?.stop();
  });

  const prepare = (entries: unknown) =>
    new Promise<string>((done, fail) => {
      const body = JSON.stringify(entries);
      const req = request(
        { host: '127.0.0.1', port: nginx.luaPort, path: '/prepare', method: 'POST', agent },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (text += chunk));
          res.on('end', () => done(text));
        },
      );
      req.on('error', fail);
      req.end(body);
    });
  const entry = (kind: string, path: unknown) => ({ kind, path, location: 0, autoRedirect: false, internal: false });

  test('is refused by name, not guessed at', async () => {
    expect(await prepare([entry('exact', '/a'), entry('prefix', '/a/'), entry('iregex', '^/b')])).toBe('ok');
    // a prefix not ending in `/` would need every entry tried per request: toLocations never makes one
    expect(await prepare([entry('prefix', '/a')])).toBe('prefix /a does not end in /');
    expect(await prepare([entry('glob', '/a/*')])).toBe('unknown match kind glob');
    expect(await prepare([entry('exact', 7)])).toBe('an entry without a path');
    expect(await prepare([entry('exact', '')])).toBe('an entry without a path');
  });
});

/** The generated cases: few names, so paths share prefixes, differ in case, end in `/`, and collide across Ingresses. */
const SEGMENTS = ['a', 'A', 'ab', 'a.b', 'a-b', 'b', 'B'];
const REGEXES = ['/a.*', '/[a-b]+', '/(a|b)/', '/a$', '/A/?', '/a\\.b', '/.+/b', '/(?:ab)+$', '/a-?b', '/b\\d*'];
const HOSTS = ['x.test', '*.x.test', 'a.x.test', 'y.test'];
const REQUEST_HOSTS = ['x.test', 'a.x.test', 'B.x.test', 'c.b.x.test', 'y.test', 'z.test'];

const plainPath = fc
  .tuple(fc.array(fc.constantFrom(...SEGMENTS), { minLength: 0, maxLength: 3 }), fc.boolean())
  .map(([segments, slash]) => `/${segments.join('/')}${slash && segments.length > 0 ? '/' : ''}`);
const pathSpec = fc.oneof(
  fc.record({
    path: plainPath,
    pathType: fc.constantFrom('Exact' as const, 'Prefix' as const),
    service: fc.constant('web'),
  }),
  fc.record({
    path: fc.oneof(fc.constantFrom(...REGEXES), plainPath),
    pathType: fc.constant('ImplementationSpecific' as const),
    service: fc.constant('web'),
  }),
);
const ingressSpec = fc.record({
  host: fc.constantFrom(...HOSTS),
  paths: fc.array(pathSpec, { minLength: 1, maxLength: 4 }),
  annotations: fc.constantFrom({}, {}, USE_REGEX, { 'nginx.ingress.kubernetes.io/rewrite-target': '/' }),
});

/** urisFor are the requests of a generated case: every path, with and without a `/` or a suffix, in other cases. */
function urisFor(paths: readonly string[]): string[] {
  const uris = new Set(['/', '/a', '/A', '/a/', '/ab', '/a/b', '/a.b', '/b/a', '/c', '/a//b', '/A/./B', '/a%2Db']);
  for (const path of paths) {
    if (!/^[A-Za-z0-9_./-]+$/.test(path)) continue;
    for (const uri of [path, `${path}/`, `${path}b`, `${path}/b`, path.toUpperCase(), path.replace(/\/$/, '')])
      if (uri.startsWith('/')) uris.add(uri);
  }
  return [...uris];
}

/** pickKind names what nginx's answer was: a location's modifier (`=`, prefix, `~`, `~*`), a redirect, or a status. */
function pickKind(servers: readonly Server[], answer: string): string {
  const [first, second] = answer.split(' ');
  if (first === 'redirect' || first === 'status') return first;
  const l = servers.find((s) => s.host === first)!.locations[Number(second)]!;
  return l.modifier || 'prefix';
}

describe('generated Ingresses', () => {
  test('the Lua router and nginx pick the same location for every host and URI', async () => {
    // what nginx picked over all runs: the runs must have covered every kind of location (else the generator rotted)
    const kinds = new Map<string, number>();
    await fc.assert(
      fc.asyncProperty(fc.array(ingressSpec, { minLength: 1, maxLength: 4 }), async (ingresses) => {
        const { servers, table } = modelOf(ingresses);
        const nginx = await startRouterNginx(servers, table);
        try {
          const uris = urisFor(ingresses.flatMap((i) => i.paths.map((p) => p.path)));
          const picks = new Map<string, string>();
          expect(await differences(nginx, REQUEST_HOSTS, uris, picks)).toEqual([]);
          for (const answer of picks.values()) {
            const kind = pickKind(servers, answer);
            kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
          }
        } finally {
          await nginx.stop();
        }
      }),
      { seed: 29, numRuns: 40, endOnFailure: true },
    );
    for (const kind of ['=', 'prefix', '~', '~*', 'redirect']) expect(kinds.get(kind) ?? 0, kind).toBeGreaterThan(10);
  }, 60_000);
});
