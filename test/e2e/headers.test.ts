/**
 * Headers, redirects and cookies as ingress-nginx sends them, end to end in both modes (rendered by the real CLI,
 * and through the real controller with the Lua balancer): real nginx, real HTTP(S) on loopback, a backend that
 * echoes the request headers it got. Each test names the ingress-nginx e2e test it follows (its test/e2e/...), and
 * asserts the bytes that test asserts.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../support/cluster.js';
import { ingress, ingressClass, serviceWithEndpoints } from '../support/manifests.js';
import { ann, SCENE_MODES, startScene, type Scene } from './annotations-harness.js';

/** Seen is what the echo backend answers: its name, and the request as it arrived. */
interface Seen {
  backend: string;
  path: string;
  headers: Record<string, string | string[]>;
}

const seen = (body: string) => JSON.parse(body) as Seen;

/**
 * echo starts a backend that answers 200 with the request it got as JSON, and its own Strict-Transport-Security
 * header (to show HSTS replaces it); `/status/NNN` answers NNN.
 */
async function echo(name: string): Promise<Server> {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const status = /^\/status\/(\d{3})/.exec(req.url ?? '');
    res.statusCode = status ? Number(status[1]) : 200;
    res.setHeader('content-type', 'application/json');
    res.setHeader('strict-transport-security', 'max-age=1');
    res.end(JSON.stringify({ backend: name, path: req.url, headers: req.headers }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

const portOf = (server: Server) => (server.address() as AddressInfo).port;
const close = (server: Server | undefined) =>
  new Promise<void>((resolve) => (server ? (server.closeAllConnections(), server.close(() => resolve())) : resolve()));

/**
 * authService answers auth subrequests: `/cookies/set/<name>/<value>` 200 with that cookie (as the nginx of
 * ingress-nginx's auth.go), anything else 401 unless the request has an Authorization header.
 */
async function authService(): Promise<Server> {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const cookie = /^\/cookies\/set\/([^/]+)\/([^/?]+)/.exec(req.url ?? '');
    if (cookie) res.setHeader('set-cookie', `${cookie[1]}=${cookie[2]}`);
    res.statusCode = cookie || req.headers.authorization ? 200 : 401;
    res.end('OK');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

let app: Server;
let errors: Server;
let auth: Server;
beforeAll(async () => {
  app = await echo('app');
  errors = await echo('errors');
  auth = await authService();
});
afterAll(async () => {
  await close(app);
  await close(errors);
  await close(auth);
});

const services = () => [
  ingressClass(),
  ...serviceWithEndpoints('app', [{ port: portOf(app) }]),
  ...serviceWithEndpoints('errors', [{ port: portOf(errors) }]),
];

describe.each(SCENE_MODES)('headers as ingress-nginx sends them, forwarded headers not trusted (%s)', (mode) => {
  let scene: Scene;
  beforeAll(async () => {
    scene = await startScene(
      [
        ...services(),
        ingress('plain', { 'forwarded-headers': [{ path: '/', service: 'app' }] }),
        ingress(
          'redirect',
          { 'redirect.com': [{ path: '/', service: 'app' }] },
          { tls: [{ hosts: ['redirect.com'] }] },
        ),
        ingress(
          'slash',
          { 'slash.test': [{ path: '/', service: 'app' }] },
          { tls: [{ hosts: ['slash.test'] }], annotations: ann({ 'preserve-trailing-slash': 'true' }) },
        ),
        ingress(
          'forced',
          { 'forcesslredirect.bar.com': [{ path: '/', service: 'app' }] },
          { annotations: ann({ 'force-ssl-redirect': 'true' }) },
        ),
        ingress(
          'default-backend',
          { 'default-backend': [{ path: '/', service: 'invalid' }] },
          { annotations: ann({ 'default-backend': 'errors' }) },
        ),
        ingress(
          'customerrors',
          { 'customerrors.foo.com': [{ path: '/', service: 'app' }] },
          { annotations: ann({ 'custom-http-errors': '404,500', 'default-backend': 'errors' }) },
        ),
        ingress(
          'auth',
          { auth: [{ path: '/', service: 'app' }] },
          {
            annotations: ann({
              'auth-url': `http://127.0.0.1:${portOf(auth)}/basic-auth/user/password`,
              'auth-signin': 'http://$host/auth/start',
            }),
          },
        ),
        ingress('valid', { 'valid.svc.com': [{ path: '/', service: 'app' }] }),
        ingress(
          'securecookie',
          { 'securecookie.test': [{ path: '/', service: 'app' }] },
          {
            tls: [{ hosts: ['securecookie.test'] }],
            annotations: ann({
              affinity: 'cookie',
              'session-cookie-secure': 'false',
              'ssl-redirect': 'false',
            }),
          },
        ),
        ingress(
          'alwayssecure',
          { 'alwayssecure.test': [{ path: '/', service: 'app' }] },
          { annotations: ann({ affinity: 'cookie', 'session-cookie-secure': 'true' }) },
        ),
        ...serviceWithEndpoints('nobody', []),
        ingress(
          'no-endpoints',
          { 'no-endpoints.test': [{ path: '/', service: 'nobody' }] },
          { annotations: ann({ 'default-backend': 'errors' }) },
        ),
        ingress(
          'cookieexpires',
          { 'cookieexpires.foo.com': [{ path: '/', service: 'app' }] },
          {
            annotations: ann({
              affinity: 'cookie',
              'session-cookie-name': 'ExpiresCookie',
              'session-cookie-expires': '172800',
              'session-cookie-max-age': '259200',
            }),
          },
        ),
        resourceIngress('nilbackend', 'nilbackend.svc.com', [{ path: '/', resource: true }]),
        resourceIngress('mixed', 'mixed.test', [
          { path: '/bucket', resource: true },
          { path: '/', resource: false },
        ]),
        ingress(
          'cookie',
          { 'cookie.test': [{ path: '/', service: 'app' }] },
          { annotations: ann({ 'auth-url': `http://127.0.0.1:${portOf(auth)}/cookies/set/alma/armud` }) },
        ),
        ingress(
          'cookie-always',
          { 'always.test': [{ path: '/', service: 'app' }] },
          {
            annotations: ann({
              'auth-url': `http://127.0.0.1:${portOf(auth)}/cookies/set/alma/armud`,
              'auth-always-set-cookie': 'true',
            }),
          },
        ),
      ],
      { mode },
    );
  }, 60_000);
  afterAll(async () => {
    await scene?.stop();
  });

  // test/e2e/settings/forwarded_headers.go "should not trust X-Forwarded headers when setting is false"
  it("sends the connection's scheme, port and host, and the client's X-Forwarded-For/-Host as X-Original-*", async () => {
    const reply = await scene.http('forwarded-headers', '/', {
      headers: {
        'X-Forwarded-Port': '1234',
        'X-Forwarded-Proto': 'myproto',
        'X-Forwarded-Scheme': 'myproto',
        'X-Forwarded-For': '1.2.3.4',
        'X-Forwarded-Host': 'myhost',
      },
    });
    const h = seen(reply.body).headers;
    expect(h.host).toBe('forwarded-headers');
    expect(h['x-forwarded-host']).toBe('forwarded-headers');
    expect(h['x-forwarded-port']).toBe(String(scene.httpPort));
    expect(h['x-forwarded-proto']).toBe('http');
    expect(h['x-forwarded-scheme']).toBe('http');
    expect(h['x-scheme']).toBe('http');
    expect(h['x-original-forwarded-for']).toBe('1.2.3.4');
    expect(h['x-original-forwarded-host']).toBe('myhost');
    expect(h['x-forwarded-for']).toBe('127.0.0.1');
  });

  // ingress-nginx's lua_ingress.lua: the HTTPS port counts as 443 in X-Forwarded-Port, whatever nginx listens on.
  it('sends X-Forwarded-Port 443 over HTTPS, and the Host header with the port the client wrote', async () => {
    const h = seen((await scene.https('redirect.com', '/')).body).headers;
    expect([h['x-forwarded-port'], h['x-forwarded-proto']]).toEqual(['443', 'https']);
    const withPort = seen(
      (await scene.http('forwarded-headers', '/', { headers: { host: 'forwarded-headers:81' } })).body,
    ).headers;
    expect([withPort.host, withPort['x-forwarded-host']]).toEqual(['forwarded-headers:81', 'forwarded-headers:81']);
  });

  // test/e2e/annotations/default_backend.go "should use a custom default backend as upstream"
  it("keeps the client's X-Request-ID, and makes one up when there is none", async () => {
    const kept = seen(
      (await scene.http('forwarded-headers', '/', { headers: { 'x-request-id': 'something-unique' } })).body,
    );
    expect(kept.headers['x-request-id']).toBe('something-unique');
    const made = seen((await scene.http('forwarded-headers', '/')).body);
    expect(made.headers['x-request-id']).toMatch(/^[0-9a-f]{32}$/);
  });

  // test/e2e/ssl/http_redirect.go "should redirect from HTTP to HTTPS when secret is missing": Location
  // "https://redirect.com". Here nginx listens on a --https-port other than 443, which the Location names (this
  // project's choice: ingress-nginx leaves it out unless use-port-in-redirects, which is not implemented here).
  it('redirects to HTTPS without the trailing slash, the host without its port', async () => {
    const root = await scene.http('redirect.com', '/');
    expect([root.status, root.headers.location]).toEqual([308, `https://redirect.com:${scene.httpsPort}`]);
    const dir = await scene.http('redirect.com:8080', '/a/b/?q=1');
    expect(dir.headers.location).toBe(`https://redirect.com:${scene.httpsPort}/a/b/?q=1`);
    const slash = await scene.http('redirect.com', '/a/b/');
    expect(slash.headers.location).toBe(`https://redirect.com:${scene.httpsPort}/a/b`);
    const kept = await scene.http('slash.test', '/a/b/');
    expect(kept.headers.location).toBe(`https://slash.test:${scene.httpsPort}/a/b/`);
  });

  // test/e2e/annotations/forcesslredirect.go "should redirect to https"
  it('force-ssl-redirect redirects a host without TLS the same way', async () => {
    const reply = await scene.http('forcesslredirect.bar.com', '/');
    expect([reply.status, reply.headers.location]).toEqual([
      308,
      `https://forcesslredirect.bar.com:${scene.httpsPort}`,
    ]);
  });

  // ingress-nginx's lua_ingress.lua header(): over HTTPS its value replaces the backend's; over HTTP the backend's
  // passes untouched.
  it("HSTS over HTTPS replaces the backend's own header: one header goes out", async () => {
    const reply = await scene.https('redirect.com', '/');
    expect(reply.headers['strict-transport-security']).toBe('max-age=31536000; includeSubDomains');
    const raw = await rawHeaders(scene, 'redirect.com');
    expect(raw.filter((h) => h.toLowerCase() === 'strict-transport-security')).toHaveLength(1);
    expect((await scene.http('forwarded-headers', '/')).headers['strict-transport-security']).toBe('max-age=1');
  });

  // test/e2e/annotations/default_backend.go "should use a custom default backend as upstream"
  it("default-backend answers for a missing Service with ingress-nginx's headers", async () => {
    const reply = await scene.http('default-backend', '/alma/armud', {
      headers: { 'x-request-id': 'something-unique', accept: 'text/html' },
    });
    expect(reply.status).toBe(200);
    const s = seen(reply.body);
    expect(s.backend).toBe('errors');
    expect(s.path).toBe('/alma/armud');
    expect(s.headers).toMatchObject({
      'x-code': '503',
      'x-format': 'text/html',
      'x-namespace': 'default',
      'x-ingress-name': 'default-backend',
      'x-service-name': 'invalid',
      'x-service-port': '80',
      'x-request-id': 'something-unique',
    });
  });

  // ingress-nginx's controller.go: a Service without endpoints is answered by the default-backend annotation's too
  it('default-backend answers for a Service without endpoints the same way', async () => {
    const s = seen((await scene.http('no-endpoints.test', '/x')).body);
    expect(s.backend).toBe('errors');
    expect(s.headers).toMatchObject({ 'x-code': '503', 'x-service-name': 'nobody', 'x-ingress-name': 'no-endpoints' });
  });

  // With the Lua balancer endpoints are pushed, not rendered: when the Service gets one, the route goes back to it.
  it.runIf(mode === 'lua')('a Service without endpoints gets its route back when an endpoint comes', async () => {
    const [, slice] = serviceWithEndpoints('nobody', [{ port: portOf(app) }]);
    await scene.cluster!.apply(slice!);
    const backend = async () => seen((await scene.http('no-endpoints.test', '/x')).body).backend;
    await waitFor('the route back on its Service', async () => ((await backend()) === 'app' ? true : null), 20_000);
  });

  // test/e2e/annotations/customhttperrors.go, and the headers of ingress-nginx's CUSTOM_ERRORS locations
  it('custom-http-errors asks the default backend for `/` with the headers error pages read', async () => {
    const reply = await scene.http('customerrors.foo.com', '/status/404?x=1', {
      headers: { 'x-request-id': 'abc', accept: 'application/json' },
    });
    expect(reply.status).toBe(200);
    const s = seen(reply.body);
    expect(s.backend).toBe('errors');
    // `rewrite (.*) / break`, as ingress-nginx: the path is /, the query stays
    expect(s.path).toBe('/?x=1');
    expect(s.headers).toMatchObject({
      'x-code': '404',
      'x-format': 'application/json',
      'x-original-uri': '/status/404?x=1',
      'x-namespace': 'default',
      'x-ingress-name': 'customerrors',
      'x-service-name': 'app',
      'x-service-port': '80',
      'x-request-id': 'abc',
      'x-forwarded-for': '127.0.0.1',
      host: 'customerrors.foo.com',
    });
    // only ingress-nginx's list: the proxied location's own headers do not reach the error backend
    expect(s.headers['x-forwarded-host']).toBeUndefined();
    expect((await scene.http('customerrors.foo.com', '/status/503')).status).toBe(503);
  });

  // test/e2e/annotations/affinity.go "should set cookie with expires": Expires 48 hours on, in ngx.cookie_time's
  // format (`Mon, 02-Jan-06 15:04:05 GMT`, which that test matches to the minute), and Max-Age. Without Lua nginx
  // cannot compute a date: only Max-Age goes out (a deliberate difference, in the annotation's doc note).
  it('cookie affinity: session-cookie-expires is an Expires date that far on, with Max-Age', async () => {
    const before = Math.floor(Date.now() / 1000);
    const reply = await scene.http('cookieexpires.foo.com', '/');
    const after = Math.ceil(Date.now() / 1000);
    const cookie = String(reply.headers['set-cookie']);
    expect(cookie).toMatch(/^ExpiresCookie=[0-9a-f]{32}; /);
    expect(cookie).toContain('; Max-Age=259200');
    if (mode === 'rendered') {
      expect(cookie).not.toContain('Expires=');
      return;
    }
    const expires = /; Expires=([^;]+);/.exec(cookie)?.[1];
    const allowed = Array.from({ length: after - before + 1 }, (_, i) => cookieTime(before + i + 172800));
    expect(allowed).toContain(expires);
  });

  // test/e2e/annotations/affinity.go "should set secure in cookie with provided true annotation on http", "should not
  // set secure in cookie with provided false annotation on http", "should set secure in cookie with provided false
  // annotation on https"
  it('cookie affinity: Secure with session-cookie-secure, else only over HTTPS', async () => {
    const cookie = async (reply: Promise<{ headers: Record<string, unknown> }>) =>
      String((await reply).headers['set-cookie']);
    expect(await cookie(scene.http('alwayssecure.test', '/'))).toContain('; Secure');
    expect(await cookie(scene.http('securecookie.test', '/'))).not.toContain('; Secure');
    expect(await cookie(scene.https('securecookie.test', '/'))).toMatch(
      /^INGRESSCOOKIE=[0-9a-f]{32}; Path=\/; HttpOnly; Secure$/,
    );
  });

  // test/e2e/servicebackend/service_nil_backend.go "should return 404 when backend service is nil"
  it('leaves a resource backend out, as ingress-nginx: its requests reach what else matches', async () => {
    expect(seen((await scene.http('valid.svc.com', '/')).body).backend).toBe('app');
    expect((await scene.http('nilbackend.svc.com', '/')).status).toBe(404);
    expect(seen((await scene.http('mixed.test', '/bucket/x')).body).path).toBe('/bucket/x');
    expect(scene.problems).toContain('default/nilbackend: spec.rules[0].http.paths[0].backend.resource: not a Service');
  });

  // test/e2e/annotations/auth.go "should redirect to signin url when not signed in"
  it("auth-signin's rd= is the request URL, its URI escaped as a query component", async () => {
    const reply = await scene.http('auth', '/?a=b&c=d');
    expect(reply.status).toBe(302);
    expect(reply.headers.location).toBe(`http://auth/auth/start?rd=http://auth${encodeURIComponent('/?a=b&c=d')}`);
    const signedIn = await scene.http('auth', '/', { headers: { authorization: 'Basic dXNlcjpwYXNzd29yZA==' } });
    expect(seen(signedIn.body).backend).toBe('app');
  });

  // ngx.escape_uri's set, which the maps of the rendered mode follow: letters, digits and -._~!*'() stay
  it('escapes every other character of the URI, and the % of escapes already there', async () => {
    const uri = "/p/x.y~z_(1)!*'?q=%2F&r=a:b@c,d;e+f$g[h]^|{}`";
    const reply = await scene.http('auth', uri);
    const escaped = uri.replace(/[^A-Za-z0-9._~!*'()-]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
    expect(reply.headers.location).toBe(`http://auth/auth/start?rd=http://auth${escaped}`);
  });

  // Without Lua the maps escape 24 characters at most (the annotation's doc note): the URI is cut after the last.
  it('a URI with more characters to escape than the maps take is cut (rendered), whole (Lua)', async () => {
    const uri = `/${'a/'.repeat(30)}`;
    // the first 24 slashes escaped, each after its `a`; the rest of the URI left out
    const escaped = mode === 'lua' ? encodeURIComponent(uri) : `%2F${'a%2F'.repeat(23)}`;
    const location = (await scene.http('auth', uri)).headers.location;
    expect(location).toBe(`http://auth/auth/start?rd=http://auth${escaped}`);
  });

  // test/e2e/annotations/auth.go "when external authentication is configured with cookies": "user retains cookie by
  // default", "user does not retain cookie if upstream returns error status code", "user with annotated ingress
  // retains cookie if upstream returns error status code"
  it("passes the auth answer's Set-Cookie on a 2xx, and on an error only with auth-always-set-cookie", async () => {
    expect((await scene.http('cookie.test', '/?a=b&c=d')).headers['set-cookie']).toEqual(['alma=armud']);
    const error = await scene.http('cookie.test', '/status/503?a=b&c=d');
    expect([error.status, error.headers['set-cookie']]).toEqual([503, undefined]);
    const always = await scene.http('always.test', '/status/503?a=b&c=d');
    expect([always.status, always.headers['set-cookie']]).toEqual([503, ['alma=armud']]);
    expect((await scene.http('always.test', '/')).headers['set-cookie']).toEqual(['alma=armud']);
  });
});

describe.each(SCENE_MODES)('headers as ingress-nginx sends them, use-forwarded-headers (%s)', (mode) => {
  let scene: Scene;
  beforeAll(async () => {
    scene = await startScene(
      [
        ...services(),
        ingress('plain', { 'forwarded-headers': [{ path: '/', service: 'app' }] }),
        ingress(
          'forced',
          { 'forcesslredirect.bar.com': [{ path: '/', service: 'app' }] },
          { annotations: ann({ 'force-ssl-redirect': 'true' }) },
        ),
      ],
      { mode, configMap: { 'use-forwarded-headers': 'true' } },
    );
  }, 60_000);
  afterAll(async () => {
    await scene?.stop();
  });

  // test/e2e/settings/forwarded_headers.go "should trust X-Forwarded headers when setting is true"
  it('trusts X-Forwarded-*, and takes the first X-Forwarded-Host of a list', async () => {
    const headers = {
      'X-Forwarded-Port': '1234',
      'X-Forwarded-Proto': 'myproto',
      'X-Forwarded-Scheme': 'myproto',
      'X-Forwarded-For': '1.2.3.4',
      'X-Forwarded-Host': 'myhost',
    };
    const h = seen((await scene.http('forwarded-headers', '/', { headers })).body).headers;
    expect(h.host).toBe('myhost');
    expect(h['x-forwarded-host']).toBe('myhost');
    expect(h['x-forwarded-proto']).toBe('myproto');
    expect(h['x-forwarded-scheme']).toBe('myproto');
    expect(h['x-forwarded-port']).toBe('1234');
    expect(h['x-forwarded-for']).toContain('1.2.3.4');
    const list = { ...headers, 'X-Forwarded-Host': 'myhost.com, another.host,example.net' };
    const first = seen((await scene.http('forwarded-headers', '/', { headers: list })).body).headers;
    expect([first.host, first['x-forwarded-host']]).toEqual(['myhost.com', 'myhost.com']);
    expect(first['x-original-forwarded-host']).toBe('myhost.com, another.host,example.net');
  });

  // ingress-nginx's lua_ingress.lua rewrite(): the redirect reads the trusted scheme and host
  it('the HTTPS redirect follows X-Forwarded-Proto and X-Forwarded-Host', async () => {
    const behindTls = await scene.http('forcesslredirect.bar.com', '/x', { headers: { 'X-Forwarded-Proto': 'https' } });
    expect(seen(behindTls.body).backend).toBe('app');
    const plain = await scene.http('forcesslredirect.bar.com', '/x/', {
      headers: { 'X-Forwarded-Proto': 'http', 'X-Forwarded-Host': 'public.example:8080' },
    });
    expect([plain.status, plain.headers.location]).toEqual([308, `https://public.example:${scene.httpsPort}/x`]);
  });
});

const DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** cookieTime formats `seconds` as ngx.cookie_time does: `Mon, 02-Jan-06 15:04:05 GMT`. */
function cookieTime(seconds: number): string {
  const d = new Date(seconds * 1000);
  const two = (n: number) => String(n).padStart(2, '0');
  return (
    `${DAYS[d.getUTCDay()]}, ${two(d.getUTCDate())}-${MONTHS[d.getUTCMonth()]}-${two(d.getUTCFullYear() % 100)} ` +
    `${two(d.getUTCHours())}:${two(d.getUTCMinutes())}:${two(d.getUTCSeconds())} GMT`
  );
}

/** resourceIngress makes an Ingress on `host` whose paths name a resource (a bucket) or the Service app. */
function resourceIngress(name: string, host: string, paths: { path: string; resource: boolean }[]) {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'Ingress',
    metadata: { name, namespace: 'default' },
    spec: {
      ingressClassName: 'nginx',
      rules: [
        {
          host,
          http: {
            paths: paths.map((p) => ({
              path: p.path,
              pathType: 'Prefix',
              backend: p.resource
                ? { resource: { apiGroup: 'otherobj.testingress.com', kind: 'Anything', name: 'mytest' } }
                : { service: { name: 'app', port: { number: 80 } } },
            })),
          },
        },
      ],
    },
  };
}

/** rawHeaders gives the header names of one HTTPS answer as they came, repeats included. */
async function rawHeaders(scene: Scene, host: string): Promise<string[]> {
  const { request } = await import('node:https');
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: scene.httpsPort,
        path: '/',
        servername: host,
        headers: { host },
        rejectUnauthorized: false,
        agent: false,
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.rawHeaders.filter((_, i) => i % 2 === 0)));
      },
    );
    req.on('error', reject);
    req.end();
  });
}
