/**
 * Finding 4 of issue 14 through real nginx: an auth-url whose host the client chooses. An
 * absolute-form request line (`GET http://hijack.test/ HTTP/1.1`) routes on its own host while
 * the Host header names the client's own "auth service", which says yes to everything; with
 * `auth-url: http://$http_host/check` nginx asked that one and served the protected backend.
 * Now such an Ingress is refused (a problem naming auth-url) and a request for its host finds
 * nothing, and an Ingress with a fixed auth-url asks only that service whatever Host says.
 */
import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ingress, ingressClass, serviceWithEndpoints } from '../support/manifests.js';
import { startBackend, type Backend } from '../support/net.js';
import { ann, startScene, type Scene } from './annotations-harness.js';

let backend: Backend;
let auth: Server;
let attacker: Server;
let scene: Scene;
const askedAuth: string[] = [];
const askedAttacker: string[] = [];

/** listen starts an auth service on loopback that records what it is asked and answers `status`. */
async function listen(status: (authorization: string | undefined) => number, log: string[]): Promise<Server> {
  const server = createServer((req, res) => {
    log.push(`${req.method} ${req.url}`);
    res.writeHead(status(req.headers.authorization)).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

const portOf = (server: Server) => (server.address() as AddressInfo).port;

beforeAll(async () => {
  backend = await startBackend('protected');
  auth = await listen((token) => (token === 'Bearer good' ? 200 : 401), askedAuth);
  attacker = await listen(() => 200, askedAttacker);
  scene = await startScene([
    ingressClass(),
    ...serviceWithEndpoints('app', [{ port: backend.port }]),
    ingress(
      'hijack',
      { 'hijack.test': [{ path: '/', service: 'app' }] },
      { annotations: ann({ 'auth-url': 'http://$http_host/check' }) },
    ),
    ingress(
      'fixed',
      { 'fixed.test': [{ path: '/', service: 'app' }] },
      { annotations: ann({ 'auth-url': `http://127.0.0.1:${portOf(auth)}/check` }) },
    ),
  ]);
}, 60_000);

afterAll(async () => {
  await scene?.stop();
  await backend?.close();
  await Promise.all([auth, attacker].map((s) => new Promise((resolve) => s?.close(resolve))));
});

/**
 * rawRequest writes one request as given over a plain TCP socket (node:http would not send this request line) and
 * returns the status.
 */
function rawRequest(lines: string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const socket = connect(scene.httpPort, '127.0.0.1');
    let answer = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (answer += chunk));
    socket.on('end', () => resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1] ?? 0)));
    socket.on('error', reject);
    socket.write(`${[...lines, 'Connection: close', '', ''].join('\r\n')}`);
  });
}

describe('finding 4: external auth cannot be pointed at a server the client chooses', () => {
  it('finding 4: refuses an auth-url whose host is $http_host, naming the annotation', () => {
    expect(scene.problems).toContain('default/hijack: metadata.annotations.nginx.ingress.kubernetes.io/auth-url:');
    expect(scene.problems).toContain('"$http_host", which the client chooses');
  });

  it('finding 4: an absolute-form request line with a hostile Host does not reach the backend', async () => {
    askedAttacker.length = 0;
    const status = await rawRequest(['GET http://hijack.test/ HTTP/1.1', `Host: 127.0.0.1:${portOf(attacker)}`]);
    expect(status).not.toBe(200);
    expect(status).toBe(503); // auth-url cannot be applied: the Ingress fails closed, its locations answer 503
    expect(askedAttacker).toEqual([]);
  });

  it(
    'finding 4: with a fixed auth-url, the same trick ' + 'asks the configured auth service only, and is refused',
    async () => {
      askedAuth.length = 0;
      askedAttacker.length = 0;
      const status = await rawRequest(['GET http://fixed.test/ HTTP/1.1', `Host: 127.0.0.1:${portOf(attacker)}`]);
      expect(status).toBe(401);
      expect(askedAuth).toEqual(['GET /check']);
      expect(askedAttacker).toEqual([]);
      // and a signed-in client still gets through
      expect(
        await rawRequest(['GET http://fixed.test/ HTTP/1.1', 'Host: fixed.test', 'Authorization: Bearer good']),
      ).toBe(200);
    },
  );
});
