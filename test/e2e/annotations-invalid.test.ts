/**
 * An invalid annotation costs its feature, not the site, end to end through real nginx: a typo in
 * limit-rps is ignored (the Ingress answers 200); an auth-url that is not a URL fails closed on that
 * Ingress's paths (503, the backend never asked) while another Ingress on the same host answers 200
 * and a newer Ingress cannot take the denied path over; a CORS origin list keeps its good entry; a
 * configuration-snippet is ignored while snippets are disabled. No bad value reaches nginx.conf.
 * In both modes: rendered, and through the controller with the Lua balancer.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ingress, ingressClass, serviceWithEndpoints } from '../support/manifests.js';
import { startBackend, type Backend } from '../support/net.js';
import { ann, SCENE_MODES, startScene, type Scene } from './annotations-harness.js';

let scene: Scene;
let app: Backend;
let admin: Backend;

/** BAD_VALUES would each add a directive to nginx.conf if they were printed as they are. */
const BAD_VALUES = { limitRps: '5; return 200', authUrl: 'http://x/;}', snippet: 'more_set_headers "X-Snip: 1";' };

describe.each(SCENE_MODES)('%s', (mode) => {
  beforeAll(async () => {
    app = await startBackend('app');
    admin = await startBackend('admin');
    scene = await startScene(
      [
        ingressClass(),
        ...serviceWithEndpoints('app', [{ port: app.port }]),
        ...serviceWithEndpoints('admin', [{ port: admin.port }]),
        ingress(
          'typo',
          { 'typo.test': [{ path: '/', service: 'app' }] },
          { annotations: ann({ 'limit-rps': BAD_VALUES.limitRps, 'proxy-read-timeout': '30' }) },
        ),
        ingress(
          'guarded',
          { 'shared.test': [{ path: '/admin', service: 'admin' }] },
          { annotations: ann({ 'auth-url': BAD_VALUES.authUrl }) },
        ),
        ingress('public', { 'shared.test': [{ path: '/', service: 'app' }] }),
        // Named after guarded, so it is the younger on the same path in both modes.
        ingress('takeover', { 'shared.test': [{ path: '/admin', service: 'admin' }] }),
        ingress(
          'cors',
          { 'cors.test': [{ path: '/', service: 'app' }] },
          {
            annotations: ann({
              'enable-cors': 'true',
              'cors-allow-origin': 'https://good.example.com, https://bad.example.com/path',
            }),
          },
        ),
        ingress(
          'snippet',
          { 'snippet.test': [{ path: '/', service: 'app' }] },
          { annotations: ann({ 'configuration-snippet': BAD_VALUES.snippet }) },
        ),
      ],
      { mode },
    );
  }, 60_000);

  afterAll(async () => {
    await scene?.stop();
    await app?.close();
    await admin?.close();
  });

  describe('a bad annotation costs its feature, not the Ingress', () => {
    it('reports each bad value with what it cost', () => {
      const at = (ingressName: string, key: string) =>
        `default/${ingressName}: metadata.annotations.nginx.ingress.kubernetes.io/${key}:`;
      expect(scene.problems).toContain(`${at('typo', 'limit-rps')} "5; return 200" is not a whole number`);
      expect(scene.problems).toMatch(/default\/typo: .*limit-rps: .*; ignored, the default applies/);
      expect(scene.problems).toMatch(/default\/guarded: .*auth-url: .*; its locations answer 503/);
      expect(scene.problems).toMatch(
        /default\/cors: .*cors-allow-origin: "https:\/\/bad\.example\.com\/path" .*; dropped, the valid entries are kept/,
      );
      expect(scene.problems).toContain(`${at('snippet', 'configuration-snippet')} is Critical risk`);
      expect(scene.problems).toMatch(/default\/takeover: .*is already served by Ingress default\/guarded/);
    });

    it('limit-rps with a typo: ignored, the Ingress answers 200 and is not limited', async () => {
      const replies = await Promise.all(Array.from({ length: 12 }, () => scene.http('typo.test', '/')));
      expect(replies.map((r) => [r.status, r.backend])).toEqual(replies.map(() => [200, 'app']));
    });

    it('auth-url that is not a URL: 503 on its paths, the backend never asked', async () => {
      for (const path of ['/admin', '/admin/', '/admin/users']) {
        const reply = await scene.http('shared.test', path);
        expect([path, reply.status, reply.backend]).toEqual([path, 503, undefined]);
      }
    });

    it('another Ingress on the same host answers 200 (the denied one costs only its own paths)', async () => {
      for (const path of ['/', '/administrator', '/other']) {
        const reply = await scene.http('shared.test', path);
        expect([path, reply.status, reply.backend]).toEqual([path, 200, 'app']);
      }
    });

    it('a CORS origin list with one bad entry still allows the good origin, and only it', async () => {
      const good = await scene.http('cors.test', '/', { headers: { origin: 'https://good.example.com' } });
      expect([good.status, good.backend]).toEqual([200, 'app']);
      expect(good.headers['access-control-allow-origin']).toBe('https://good.example.com');
      const bad = await scene.http('cors.test', '/', { headers: { origin: 'https://bad.example.com' } });
      expect([bad.status, bad.headers['access-control-allow-origin']]).toEqual([200, undefined]);
    });

    it('a configuration-snippet while snippets are disabled: ignored, the Ingress served', async () => {
      const reply = await scene.http('snippet.test', '/');
      expect([reply.status, reply.backend, reply.headers['x-snip']]).toEqual([200, 'app', undefined]);
    });

    it('no bad value reaches nginx.conf', async () => {
      const conf = await readFile(join(scene.dir, 'nginx.conf'), 'utf8');
      for (const value of [...Object.values(BAD_VALUES), 'return 200', 'http://x/', 'X-Snip'])
        expect(conf).not.toContain(value);
      expect(conf).toContain('proxy_read_timeout "30s";');
    });
  });
});
