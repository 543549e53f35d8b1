/**
 * Routing annotations end to end, in both modes (rendered by the real CLI, and through the real controller
 * with the Lua balancer, where error pages and the default backend also go through it): real nginx, real
 * requests. rewrite-target with
 * captures, app-root, permanent and temporal redirects, ssl-redirect and force-ssl-redirect,
 * upstream-vhost, x-forwarded-prefix, custom-http-errors with default-backend, and --default-backend-service.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ingress, ingressClass, serviceWithEndpoints } from '../support/manifests.js';
import { startBackend, type Backend } from '../support/net.js';
import { ann, SCENE_MODES, startScene, type Scene } from './annotations-harness.js';

const backends: Record<string, Backend> = {};
let failing: Server;
const port = (name: string) => backends[name]!.port;

beforeAll(async () => {
  for (const name of ['app', 'fallback', 'errors']) backends[name] = await startBackend(name);
  // A backend that answers 404 for /missing, to show custom-http-errors at work.
  failing = createServer((req, res) => {
    res.statusCode = req.url === '/missing' ? 404 : 200;
    res.end(JSON.stringify({ backend: 'failing', path: req.url }));
  });
  await new Promise<void>((resolve) => failing.listen(0, '127.0.0.1', resolve));
}, 60_000);

afterAll(async () => {
  await Promise.all(Object.values(backends).map((b) => b.close()));
  await new Promise((resolve) => failing?.close(resolve));
});

const seen = (body: string) => JSON.parse(body) as { path: string; host: string; headers: Record<string, string> };

describe.each(SCENE_MODES)('routing annotations through real nginx (%s)', (mode) => {
  let scene: Scene;
  beforeAll(async () => {
    scene = await startScene(
      [
        ingressClass(),
        ...serviceWithEndpoints('app', [{ port: port('app') }]),
        ...serviceWithEndpoints('fallback', [{ port: port('fallback') }]),
        ...serviceWithEndpoints('errors', [{ port: port('errors') }]),
        ...serviceWithEndpoints('failing', [{ port: (failing.address() as AddressInfo).port }]),
        ingress(
          'rewrite',
          { 'rw.test': [{ path: '/something(/|$)(.*)', pathType: 'ImplementationSpecific', service: 'app' }] },
          {
            annotations: ann({ 'use-regex': 'true', 'rewrite-target': '/$2' }),
          },
        ),
        ingress(
          'approot',
          { 'root.test': [{ path: '/', service: 'app' }] },
          { annotations: ann({ 'app-root': '/app1' }) },
        ),
        ingress(
          'moved',
          { 'moved.test': [{ path: '/', service: 'app' }] },
          { annotations: ann({ 'permanent-redirect': 'https://new.example.com/here' }) },
        ),
        ingress(
          'moved308',
          { 'moved308.test': [{ path: '/', service: 'app' }] },
          {
            annotations: ann({ 'permanent-redirect': 'https://new.example.com/', 'permanent-redirect-code': '308' }),
          },
        ),
        ingress(
          'temp',
          { 'temp.test': [{ path: '/', service: 'app' }] },
          { annotations: ann({ 'temporal-redirect': 'https://elsewhere.example.com/' }) },
        ),
        ingress('secure', { 'secure.test': [{ path: '/', service: 'app' }] }, { tls: [{ hosts: ['secure.test'] }] }),
        ingress(
          'lax',
          { 'lax.test': [{ path: '/', service: 'app' }] },
          { tls: [{ hosts: ['lax.test'] }], annotations: ann({ 'ssl-redirect': 'false' }) },
        ),
        ingress(
          'forced',
          { 'forced.test': [{ path: '/', service: 'app' }] },
          { annotations: ann({ 'force-ssl-redirect': 'true' }) },
        ),
        ingress(
          'vhost',
          { 'vhost.test': [{ path: '/', service: 'app' }] },
          { annotations: ann({ 'upstream-vhost': 'internal.example' }) },
        ),
        ingress(
          'prefixed',
          { 'prefix.test': [{ path: '/', service: 'app' }] },
          { annotations: ann({ 'x-forwarded-prefix': '/shop' }) },
        ),
        ingress(
          'errs',
          { 'errs.test': [{ path: '/', service: 'failing' }] },
          { annotations: ann({ 'custom-http-errors': '404', 'default-backend': 'errors' }) },
        ),
        ingress('partial', { 'partial.test': [{ path: '/only', service: 'app' }] }),
      ],
      { flags: ['--default-backend-service', 'default/fallback'], mode },
    );
  }, 60_000);
  afterAll(async () => {
    await scene?.stop();
  });

  it('renders without problems', () => expect(scene.problems).toBe(''));

  it.each([
    ['/something', '/'],
    ['/something/', '/'],
    ['/something/new', '/new'],
    ['/something/new/deeper?q=1', '/new/deeper?q=1'],
    ['/SOMETHING/case', '/case'],
  ])('rewrite-target /$2 sends %s upstream as %s', async (path, upstream) => {
    const reply = await scene.http('rw.test', path);
    expect(reply.backend).toBe('app');
    expect(seen(reply.body).path).toBe(upstream);
  });

  it('app-root redirects / with 302 and leaves other paths alone', async () => {
    const root = await scene.http('root.test', '/');
    expect(root.status).toBe(302);
    expect(root.headers.location).toBe('http://root.test/app1');
    const other = await scene.http('root.test', '/app1');
    expect(other.backend).toBe('app');
  });

  it('permanent-redirect answers 301 (or its code) for every path, temporal-redirect 302', async () => {
    const moved = await scene.http('moved.test', '/any/path');
    expect([moved.status, moved.headers.location]).toEqual([301, 'https://new.example.com/here']);
    expect((await scene.http('moved308.test', '/')).status).toBe(308);
    const temp = await scene.http('temp.test', '/x');
    expect([temp.status, temp.headers.location]).toEqual([302, 'https://elsewhere.example.com/']);
  });

  it('ssl-redirect: a TLS host redirects HTTP with 308, unless ssl-redirect is false', async () => {
    const secure = await scene.http('secure.test', '/a?b=1');
    expect(secure.status).toBe(308);
    expect(secure.headers.location).toBe(`https://secure.test:${scene.httpsPort}/a?b=1`);
    expect((await scene.http('lax.test', '/')).backend).toBe('app');
  });

  it('force-ssl-redirect redirects a host without TLS of its own', async () => {
    const forced = await scene.http('forced.test', '/x');
    expect(forced.status).toBe(308);
    expect(forced.headers.location).toBe(`https://forced.test:${scene.httpsPort}/x`);
    expect((await scene.https('forced.test', '/x')).backend).toBe('app');
  });

  it('sends HSTS over HTTPS on a TLS host, and not over HTTP', async () => {
    const https = await scene.https('secure.test', '/');
    expect(https.headers['strict-transport-security']).toBe('max-age=31536000; includeSubDomains');
    expect((await scene.http('lax.test', '/')).headers['strict-transport-security']).toBeUndefined();
  });

  it('upstream-vhost sends another Host upstream, with the forwarded headers still set', async () => {
    const reply = seen((await scene.http('vhost.test', '/')).body);
    expect(reply.host).toBe('internal.example');
    expect(reply.headers['x-forwarded-host']).toBe('vhost.test');
    expect(reply.headers['x-real-ip']).toBe('127.0.0.1');
  });

  it('x-forwarded-prefix sends X-Forwarded-Prefix upstream, the Host and forwarded headers unchanged', async () => {
    const reply = seen((await scene.http('prefix.test', '/cart')).body);
    expect(reply.headers['x-forwarded-prefix']).toBe('/shop');
    expect(reply.host).toBe('prefix.test');
    expect(reply.headers['x-forwarded-host']).toBe('prefix.test');
  });

  it('custom-http-errors has the default-backend annotation render the error, told the code', async () => {
    const reply = await scene.http('errs.test', '/missing');
    expect(reply.backend).toBe('errors');
    expect(seen(reply.body).headers['x-code']).toBe('404');
    expect(seen(reply.body).headers['x-original-uri']).toBe('/missing');
    expect((await scene.http('errs.test', '/fine')).backend).toBe('failing');
  });

  it('--default-backend-service answers unknown hosts and unmatched paths', async () => {
    expect((await scene.http('unknown.test', '/')).backend).toBe('fallback');
    expect((await scene.http('partial.test', '/elsewhere')).backend).toBe('fallback');
    expect((await scene.http('partial.test', '/only/x')).backend).toBe('app');
  });
});
