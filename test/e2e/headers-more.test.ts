/**
 * Snippets with ingress-nginx's headers-more directives (more_set_headers and kin, Debian's
 * libnginx-mod-http-headers-more-filter), through real nginx in both modes: response headers set,
 * cleared and set only for some statuses; request headers set for the backend.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ingress, ingressClass, serviceWithEndpoints } from '../support/manifests.js';
import { startBackend, type Backend } from '../support/net.js';
import { ann, SCENE_MODES, startScene, type Scene } from './annotations-harness.js';

const SNIPPETS = { 'allow-snippet-annotations': 'true', 'annotations-risk-level': 'Critical' };

describe.each(SCENE_MODES)('%s', (mode) => {
  let scene: Scene;
  let backend: Backend;

  beforeAll(async () => {
    backend = await startBackend('app');
    scene = await startScene(
      [
        ingressClass(),
        ...serviceWithEndpoints('app', [{ port: backend.port }]),
        ingress(
          'more',
          { 'more.test': [{ path: '/', service: 'app' }] },
          {
            annotations: ann({
              'configuration-snippet': [
                'more_set_headers "X-Frame-Options: DENY" "X-Served-For: $host";',
                "more_set_headers -s 404 'X-Missing: yes';",
                'more_clear_headers Content-Type X-Powered-*;',
                "more_set_input_headers 'X-User: alice';",
                'more_clear_input_headers X-Debug;',
              ].join('\n'),
            }),
          },
        ),
        ingress(
          'host-wide',
          { 'wide.test': [{ path: '/', service: 'app' }] },
          { annotations: ann({ 'server-snippet': 'more_set_headers "X-Host-Wide: 1";' }) },
        ),
        // ingress-nginx's e2e "should allow an ingress if there is a default blocklist config in place"
        ingress(
          'comment-only',
          { 'comment.test': [{ path: '/', service: 'app' }] },
          { annotations: ann({ 'configuration-snippet': '\n# bla_by_lua' }) },
        ),
      ],
      { configMap: SNIPPETS, mode },
    );
  }, 60_000);

  afterAll(async () => {
    await scene?.stop();
    await backend?.close();
  });

  it('takes the snippets without a problem', () => {
    expect(scene.problems).not.toContain('snippet');
  });

  it('sets and clears response headers', async () => {
    const reply = await scene.http('more.test', '/');
    expect(reply.status).toBe(200);
    expect(reply.headers['x-frame-options']).toBe('DENY');
    expect(reply.headers['x-served-for']).toBe('more.test');
    // the backend's Content-Type, taken away
    expect(reply.headers['content-type']).toBeUndefined();
    // -s 404: only on those statuses
    expect(reply.headers['x-missing']).toBeUndefined();
  });

  it('sets and clears request headers for the backend', async () => {
    const reply = await scene.http('more.test', '/', { headers: { 'x-debug': 'on' } });
    const seen = (JSON.parse(reply.body) as { headers: Record<string, string> }).headers;
    expect(seen['x-user']).toBe('alice');
    expect(seen['x-debug']).toBeUndefined();
  });

  it('applies a server-snippet to the host', async () => {
    const reply = await scene.http('wide.test', '/');
    expect(reply.headers['x-host-wide']).toBe('1');
    expect(reply.headers['content-type']).toBe('application/json');
  });

  it('serves an Ingress whose configuration-snippet is only a comment (ingress-nginx does; no 503)', async () => {
    const reply = await scene.http('comment.test', '/');
    expect([reply.status, reply.backend]).toEqual([200, 'app']);
  });
});
