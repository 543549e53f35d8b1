/**
 * proxy-redirect-from/-to and limit-rate through real nginx, against a backend that redirects to
 * its own internal address and serves a large body: the Location is rewritten only where the
 * annotation asks (elsewhere it passes as is), and a limited answer takes as long as its rate says
 * (with proxy-buffering on: nginx does not pace unbuffered answers).
 */
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ingress, ingressClass, serviceWithEndpoints } from '../support/manifests.js';
import { ann, startScene, type Scene } from './annotations-harness.js';

const BODY_BYTES = 300 * 1024;
let backend: Server;
let scene: Scene;

beforeAll(async () => {
  backend = createServer((req, res) => {
    if (req.url === '/login') return res.writeHead(302, { location: 'http://internal.local:8080/welcome' }).end();
    res
      .writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': BODY_BYTES })
      .end(Buffer.alloc(BODY_BYTES, 7));
  });
  await new Promise<void>((resolve) => backend.listen(0, '127.0.0.1', resolve));
  const port = (backend.address() as AddressInfo).port;
  scene = await startScene([
    ingressClass(),
    ...serviceWithEndpoints('app', [{ port }]),
    ingress(
      'rewritten',
      { 'rewritten.test': [{ path: '/', service: 'app' }] },
      {
        annotations: ann({
          'proxy-redirect-from': 'http://internal.local:8080/',
          'proxy-redirect-to': 'https://$host/app/',
          'limit-rate': '100',
          'proxy-buffering': 'on',
        }),
      },
    ),
    ingress('plain', { 'plain.test': [{ path: '/', service: 'app' }] }),
  ]);
}, 60_000);

afterAll(async () => {
  await scene?.stop();
  await new Promise((resolve) => backend?.close(resolve));
});

/** fetch GETs `path` on `host` and reports the status, the Location, the body's length and how long it took. */
function fetch(host: string, path: string) {
  const started = performance.now();
  return new Promise<{ status: number; location?: string; bytes: number; ms: number }>((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: scene.httpPort, path, headers: { host }, agent: false }, (res) => {
      let bytes = 0;
      res.on('data', (c: Buffer) => (bytes += c.length));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          location: res.headers.location,
          bytes,
          ms: performance.now() - started,
        }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

describe('proxy-redirect and limit-rate, through real nginx', () => {
  it('renders without problems', () => expect(scene.problems).toBe(''));

  it("rewrites the backend's own address in Location to the one the client used", async () => {
    expect(await fetch('rewritten.test', '/login')).toMatchObject({
      status: 302,
      location: 'https://rewritten.test/app/welcome',
    });
  });

  it('leaves Location alone without the annotation', async () => {
    expect(await fetch('plain.test', '/login')).toMatchObject({
      status: 302,
      location: 'http://internal.local:8080/welcome',
    });
  });

  it('sends a limited answer no faster than limit-rate (300 KB at 100 KB/s), an unlimited one at once', async () => {
    const limited = await fetch('rewritten.test', '/file');
    expect(limited.bytes).toBe(BODY_BYTES);
    // nginx counts in whole seconds from the request's: the first second's 100 KB goes at once, the
    // last 100 KB waits for the third second to begin, so more than one second in any case.
    expect(limited.ms).toBeGreaterThan(900);
    const plain = await fetch('plain.test', '/file');
    expect(plain.bytes).toBe(BODY_BYTES);
    expect(plain.ms).toBeLessThan(limited.ms);
  });
});
