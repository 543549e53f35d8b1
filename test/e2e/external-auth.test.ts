/**
 * auth-url through real nginx and a real auth service (a small HTTP server): every request is
 * asked about first, without its body; 2xx lets it through with the headers auth-response-headers
 * name, 401 and 403 refuse it, auth-signin turns the 401 into a redirect carrying the escaped
 * return address, and an auth service that cannot be reached fails closed. In both modes: rendered,
 * and through the controller with the Lua balancer (the auth subrequest passes by its rewrite phase).
 */
import { createServer, request, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ingress, ingressClass, serviceWithEndpoints } from '../support/manifests.js';
import { freePort, startBackend, type Backend } from '../support/net.js';
import { ann, SCENE_MODES, startScene, type Scene } from './annotations-harness.js';

interface Asked {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  readonly bodyBytes: number;
}

let backend: Backend;
let auth: Server;
let scene: Scene;
const asked: Asked[] = [];

/**
 * The auth service: `Bearer good` passes (naming the user), `Bearer forbidden` is refused, anything else is not signed
 * in.
 */
async function startAuth(): Promise<Server> {
  const server = createServer((req, res) => {
    let bodyBytes = 0;
    req.on('data', (chunk: Buffer) => (bodyBytes += chunk.length));
    req.on('end', () => {
      asked.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, bodyBytes });
      const token = req.headers.authorization;
      if (token === 'Bearer good')
        res.writeHead(200, { 'x-auth-request-user': 'alice', 'x-not-passed': 'secret' }).end();
      else if (token === 'Bearer forbidden') res.writeHead(403).end();
      else res.writeHead(401).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

describe.each(SCENE_MODES)('%s', (mode) => {
  beforeAll(async () => {
    backend = await startBackend('app');
    auth = await startAuth();
    const authUrl = `http://127.0.0.1:${(auth.address() as AddressInfo).port}/check?app=shop`;
    const nobody = `http://127.0.0.1:${await freePort()}/check`;
    scene = await startScene(
      [
        ingressClass(),
        ...serviceWithEndpoints('app', [{ port: backend.port }]),
        ingress(
          'protected',
          { 'auth.test': [{ path: '/', service: 'app' }] },
          {
            annotations: ann({ 'auth-url': authUrl, 'auth-response-headers': 'X-Auth-Request-User' }),
          },
        ),
        ingress(
          'signin',
          { 'signin.test': [{ path: '/', service: 'app' }] },
          {
            annotations: ann({ 'auth-url': authUrl, 'auth-signin': 'https://login.example.com/start' }),
          },
        ),
        ingress('down', { 'down.test': [{ path: '/', service: 'app' }] }, { annotations: ann({ 'auth-url': nobody }) }),
      ],
      { mode },
    );
  }, 60_000);

  afterAll(async () => {
    await scene?.stop();
    await backend?.close();
    await new Promise((resolve) => auth?.close(resolve));
  });

  /** send makes one request through nginx and returns the status, the Location and what the backend saw. */
  function send(
    host: string,
    path: string,
    options: { token?: string; method?: string; body?: string; headers?: Record<string, string> } = {},
  ) {
    return new Promise<{ status: number; location?: string; seen?: Record<string, string> }>((resolve, reject) => {
      const headers: Record<string, string> = {
        host,
        ...options.headers,
        ...(options.token ? { authorization: options.token } : {}),
      };
      const req = request(
        { host: '127.0.0.1', port: scene.httpPort, path, method: options.method ?? 'GET', headers, agent: false },
        (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (body += c));
          res.on('end', () => {
            const seen =
              res.statusCode === 200 ? (JSON.parse(body) as { headers: Record<string, string> }).headers : undefined;
            resolve({ status: res.statusCode ?? 0, location: res.headers.location, ...(seen ? { seen } : {}) });
          });
        },
      );
      req.on('error', reject);
      req.end(options.body);
    });
  }

  describe('auth-url through real nginx', () => {
    it('renders without problems', () => expect(scene.problems).toBe(''));

    it('refuses a request the auth service does not know (401) or refuses (403)', async () => {
      expect((await send('auth.test', '/')).status).toBe(401);
      expect((await send('auth.test', '/', { token: 'Bearer forbidden' })).status).toBe(403);
    });

    it('lets a signed-in request through, with the auth answer headers it names and no others', async () => {
      const answer = await send('auth.test', '/orders?page=2', { token: 'Bearer good' });
      expect(answer.status).toBe(200);
      expect(answer.seen?.['x-auth-request-user']).toBe('alice');
      expect(answer.seen?.['x-not-passed']).toBeUndefined();
      expect(answer.seen?.host).toBe('auth.test');
    });

    it('a client cannot name itself: its own copy of a passed header is replaced by the auth answer', async () => {
      const answer = await send('auth.test', '/', {
        token: 'Bearer good',
        headers: { 'x-auth-request-user': 'mallory' },
      });
      expect(answer.seen?.['x-auth-request-user']).toBe('alice');
    });

    it('asks the auth URL itself, with the original URL and method, and never the body', async () => {
      asked.length = 0;
      await send('auth.test', '/upload?x=1', {
        token: 'Bearer good',
        method: 'POST',
        body: 'a'.repeat(5000),
        headers: { 'x-request-id': 'req-1', 'x-forwarded-proto': 'https' },
      });
      expect(asked).toHaveLength(1);
      expect(asked[0]).toMatchObject({ method: 'GET', url: '/check?app=shop', bodyBytes: 0 });
      expect(asked[0]!.headers['x-original-url']).toBe('http://auth.test/upload?x=1');
      expect(asked[0]!.headers['x-original-method']).toBe('POST');
      // as ingress-nginx's auth location: the client's request id, and no X-Forwarded-Proto
      expect(asked[0]!.headers['x-request-id']).toBe('req-1');
      expect(asked[0]!.headers['x-forwarded-proto']).toBeUndefined();
    });

    it('auth-signin: a 401 becomes a redirect to the sign-in page with the escaped return address', async () => {
      const answer = await send('signin.test', '/cart/view?item=7&qty=2');
      expect(answer.status).toBe(302);
      // escaped as ingress-nginx's set_escape_uri: the whole URI, `/` and `=` too
      expect(answer.location).toBe(
        'https://login.example.com/start?rd=http://signin.test%2Fcart%2Fview%3Fitem%3D7%26qty%3D2',
      );
      expect((await send('signin.test', '/', { token: 'Bearer good' })).status).toBe(200);
    });

    it('fails closed when the auth service cannot be reached', async () => {
      expect((await send('down.test', '/', { token: 'Bearer good' })).status).toBe(500);
    });
  });
});
