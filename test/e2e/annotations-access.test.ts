/**
 * Access annotations end to end: basic auth (401 without, 200 with), allowlist and denylist
 * (403 from a client bound to 127.0.0.2), CORS preflight, and limit-rps (503 past the limit).
 * In both modes: rendered, and through the controller with the Lua balancer.
 */
import { createHash } from 'node:crypto';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ingress, ingressClass, serviceWithEndpoints } from '../support/manifests.js';
import { startBackend, type Backend } from '../support/net.js';
import { ann, inBatches, SCENE_MODES, startScene, type Scene } from './annotations-harness.js';

let scene: Scene;
let backend: Backend;
const sha = (password: string) => `{SHA}${createHash('sha1').update(password).digest('base64')}`;
const basic = (user: string, password: string) => ({
  authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`,
});

describe.each(SCENE_MODES)('%s', (mode) => {
  beforeAll(async () => {
    backend = await startBackend('app');
    const secret = {
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'Opaque',
      metadata: { namespace: 'default', name: 'users' },
      data: { auth: Buffer.from(`alice:${sha('wonderland')}\n`).toString('base64') },
    };
    scene = await startScene(
      [
        ingressClass(),
        ...serviceWithEndpoints('app', [{ port: backend.port }]),
        secret,
        ingress(
          'auth',
          { 'auth.test': [{ path: '/', service: 'app' }] },
          {
            annotations: ann({ 'auth-type': 'basic', 'auth-secret': 'users', 'auth-realm': 'Members only' }),
          },
        ),
        ingress(
          'allow',
          { 'allow.test': [{ path: '/', service: 'app' }] },
          { annotations: ann({ 'allowlist-source-range': '127.0.0.1/32' }) },
        ),
        ingress(
          'deny',
          { 'deny.test': [{ path: '/', service: 'app' }] },
          { annotations: ann({ 'denylist-source-range': '127.0.0.2' }) },
        ),
        ingress(
          'cors',
          { 'cors.test': [{ path: '/', service: 'app' }] },
          { annotations: ann({ 'enable-cors': 'true' }) },
        ),
        ingress(
          'cors-list',
          { 'corslist.test': [{ path: '/', service: 'app' }] },
          {
            annotations: ann({
              'enable-cors': 'true',
              'cors-allow-origin': 'https://app.example.com',
              'cors-allow-credentials': 'false',
            }),
          },
        ),
        ingress(
          'limited',
          { 'limit.test': [{ path: '/', service: 'app' }] },
          { annotations: ann({ 'limit-rps': '1', 'limit-burst-multiplier': '1' }) },
        ),
      ],
      { mode },
    );
  }, 60_000);

  afterAll(async () => {
    await scene?.stop();
    await backend?.close();
  });

  describe('access annotations through real nginx', () => {
    it('renders without problems', () => expect(scene.problems).toBe(''));

    it('basic auth: 401 without credentials or with wrong ones, 200 with the right ones', async () => {
      const none = await scene.http('auth.test', '/');
      expect(none.status).toBe(401);
      expect(none.headers['www-authenticate']).toBe('Basic realm="Members only"');
      expect((await scene.http('auth.test', '/', { headers: basic('alice', 'nope') })).status).toBe(401);
      const ok = await scene.http('auth.test', '/x', { headers: basic('alice', 'wonderland') });
      expect(ok.status).toBe(200);
      expect(ok.backend).toBe('app');
    });

    it(
      'wrote the htpasswd file for the master and its workers only (0640 root:workers as root, else 0600), and not ' +
        'into nginx.conf',
      async () => {
        expect((await stat(join(scene.dir, 'auth', 'default_users.htpasswd'))).mode & 0o777).toBe(
          process.geteuid?.() === 0 ? 0o640 : 0o600,
        );
      },
    );

    it('allowlist-source-range: 403 from a source outside it, 200 from inside', async () => {
      expect((await scene.http('allow.test', '/', { localAddress: '127.0.0.2' })).status).toBe(403);
      expect((await scene.http('allow.test', '/', { localAddress: '127.0.0.1' })).status).toBe(200);
    });

    it('denylist-source-range: 403 from a denied source only', async () => {
      expect((await scene.http('deny.test', '/', { localAddress: '127.0.0.2' })).status).toBe(403);
      expect((await scene.http('deny.test', '/', { localAddress: '127.0.0.1' })).backend).toBe('app');
    });

    it('CORS: a preflight gets 204 and the Access-Control headers without reaching the backend', async () => {
      const preflight = await scene.http('cors.test', '/api', {
        method: 'OPTIONS',
        headers: { origin: 'https://site.example', 'access-control-request-method': 'PUT' },
      });
      expect(preflight.status).toBe(204);
      expect(preflight.body).toBe('');
      expect(preflight.headers['access-control-allow-origin']).toBe('*');
      expect(preflight.headers['access-control-allow-methods']).toBe('GET, PUT, POST, DELETE, PATCH, OPTIONS');
      expect(preflight.headers['access-control-allow-credentials']).toBe('true');
      expect(preflight.headers['access-control-max-age']).toBe('1728000');
      const get = await scene.http('cors.test', '/api', { headers: { origin: 'https://site.example' } });
      expect([get.status, get.backend, get.headers['access-control-allow-origin']]).toEqual([200, 'app', '*']);
    });

    it('CORS with an origin list: only a listed origin gets the preflight and Allow-Origin', async () => {
      const listed = await scene.http('corslist.test', '/', {
        method: 'OPTIONS',
        headers: { origin: 'https://app.example.com' },
      });
      expect(listed.status).toBe(204);
      expect(listed.headers['access-control-allow-origin']).toBe('https://app.example.com');
      expect(listed.headers['access-control-allow-credentials']).toBeUndefined();
      const other = await scene.http('corslist.test', '/', {
        method: 'OPTIONS',
        headers: { origin: 'https://evil.example.com' },
      });
      expect(other.backend).toBe('app'); // not a preflight we answer: it reaches the backend
      expect(other.headers['access-control-allow-origin']).toBeUndefined();
    });

    it('limit-rps: past the limit and its burst, requests get 503', async () => {
      const statuses = await inBatches(20, 20, () => scene.http('limit.test', '/').then((r) => r.status));
      expect(statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(1);
      expect(statuses.filter((s) => s === 503).length).toBeGreaterThanOrEqual(10);
      expect(statuses.every((s) => s === 200 || s === 503)).toBe(true);
    });
  });
});
