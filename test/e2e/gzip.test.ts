/**
 * use-gzip through real nginx: a proxied JSON answer is compressed for a client that accepts
 * gzip (and decompresses to what the backend sent), sent as is to one that does not, and left
 * alone below gzip-min-length.
 */
import { request } from 'node:http';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ingress, ingressClass, serviceWithEndpoints } from '../support/manifests.js';
import { startBackend, type Backend } from '../support/net.js';
import { startScene, type Scene } from './annotations-harness.js';

let backend: Backend;
let scene: Scene;

beforeAll(async () => {
  backend = await startBackend('app');
  scene = await startScene(
    [
      ingressClass(),
      ...serviceWithEndpoints('app', [{ port: backend.port }]),
      ingress('web', { 'gzip.test': [{ path: '/', service: 'app' }] }),
    ],
    { configMap: { 'use-gzip': 'true', 'gzip-min-length': '1000', 'gzip-types': 'application/json' } },
  );
}, 60_000);

afterAll(async () => {
  await scene?.stop();
  await backend?.close();
});

/** fetchRaw GETs gzip.test`path` with `headers` and returns the status, the headers and the body's bytes as sent. */
function fetchRaw(
  path: string,
  headers: Record<string, string>,
): Promise<{ status: number; encoding?: string; vary?: string; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port: scene.httpPort, path, headers: { host: 'gzip.test', ...headers }, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            encoding: res.headers['content-encoding'],
            vary: res.headers.vary,
            body: Buffer.concat(chunks),
          }),
        );
      },
    );
    req.on('error', reject);
    req.end();
  });
}

// The backend echoes the request's headers, so a long header makes a long answer.
const long = { 'x-padding': 'p'.repeat(1500) };

describe('use-gzip, through real nginx', () => {
  it('renders without problems', () => expect(scene.problems).toBe(''));

  it('compresses a long JSON answer for a client that accepts gzip', async () => {
    const answer = await fetchRaw('/long', { 'accept-encoding': 'gzip', ...long });
    expect([answer.status, answer.encoding, answer.vary]).toEqual([200, 'gzip', 'Accept-Encoding']);
    const json = JSON.parse(gunzipSync(answer.body).toString('utf8')) as { backend: string; path: string };
    expect([json.backend, json.path]).toEqual(['app', '/long']);
  });

  it('sends it as is to a client that does not', async () => {
    const answer = await fetchRaw('/long', long);
    expect(answer.encoding).toBeUndefined();
    expect((JSON.parse(answer.body.toString('utf8')) as { backend: string }).backend).toBe('app');
  });

  it('leaves an answer shorter than gzip-min-length alone', async () => {
    const answer = await fetchRaw('/', { 'accept-encoding': 'gzip' });
    expect(answer.body.length).toBeLessThan(1000);
    expect(answer.encoding).toBeUndefined();
  });
});
