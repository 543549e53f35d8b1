/**
 * End to end through the real CLI and a real nginx: `ingress-actors render --out` writes a config
 * set, nginx serves it on loopback ports, and real requests check where each host and path lands.
 */
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueCertificate } from '../../src/tls/issue.js';
import { ingress, ingressClass, serviceWithEndpoints, tlsSecret } from '../support/manifests.js';
import { freePort, get, startBackend, type Backend } from '../support/net.js';
import { startNginx, type RunningNginx } from '../support/nginx.js';

const CLI = new URL('../../bin/ingress-actors', import.meta.url).pathname;

let dir: string;
let httpPort: number;
let httpsPort: number;
let nginx: RunningNginx;
let ca: { certPem: string; keyPem: string };
const backends: Record<string, Backend> = {};

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ia-e2e-'));
  for (const name of ['root', 'api', 'exact', 'wild', 'secure']) backends[name] = await startBackend(name);
  [httpPort, httpsPort] = [await freePort(), await freePort()];
  ca = await issueCertificate({ commonName: 'e2e test CA', isCa: true });
  const leaf = await issueCertificate({
    commonName: 'secure.example.com',
    dnsNames: ['secure.example.com'],
    issuer: ca,
  });
  const port = (name: string) => backends[name]!.port;
  const objects = [
    ingressClass(),
    ...serviceWithEndpoints('root', [{ port: port('root') }]),
    ...serviceWithEndpoints('api', [{ port: port('api') }]),
    ...serviceWithEndpoints('exact', [{ port: port('exact') }]),
    ...serviceWithEndpoints('wild', [{ port: port('wild') }]),
    ...serviceWithEndpoints('secure', [{ port: port('secure') }]),
    ...serviceWithEndpoints('down', [{ port: 1, ready: false }]),
    tlsSecret('secure-tls', leaf.certPem, leaf.keyPem),
    ingress('main', {
      'a.example.com': [
        { path: '/', service: 'root', port: 'http' },
        { path: '/api', service: 'api', port: 80 },
        { path: '/foo', pathType: 'Exact', service: 'exact' },
        { path: '/foo', service: 'api' },
        { path: '/gone', service: 'down' },
      ],
      'b.example.com': [{ path: '/foo', service: 'api' }],
    }),
    ingress('wildcard', { '*.w.example.com': [{ path: '/', service: 'wild' }] }),
    ingress(
      'secure',
      { 'secure.example.com': [{ path: '/', service: 'secure' }] },
      { tls: [{ hosts: ['secure.example.com'], secretName: 'secure-tls' }] },
    ),
  ];
  await writeFile(join(dir, 'manifests.yaml'), objects.map((o) => stringify(o)).join('---\n'));
  const out = join(dir, 'conf');
  const rendered = await execa(
    CLI,
    [
      'render',
      '--manifests',
      join(dir, 'manifests.yaml'),
      '--out',
      out,
      '--http-port',
      String(httpPort),
      '--https-port',
      String(httpsPort),
    ],
    { reject: false },
  );
  expect(rendered.stderr).toBe(
    'default/main: spec.rules[0].http.paths[4].backend.service: Service default/down port 80 has no ready endpoints; ' +
      'answering 503',
  );
  expect(rendered.exitCode).toBe(0);
  nginx = await startNginx(out, httpPort);
}, 60_000);

afterAll(async () => {
  await nginx?.stop();
  await Promise.all(Object.values(backends).map((b) => b.close()));
  await rm(dir, { recursive: true, force: true });
});

const http = (host: string, path: string) => get({ host, path, port: httpPort });

describe('routing through real nginx', () => {
  it.each([
    ['a.example.com', '/', 'root'],
    ['a.example.com', '/anything', 'root'],
    ['a.example.com', '/api', 'api'],
    ['a.example.com', '/api/', 'api'],
    ['a.example.com', '/api/v1/users?x=1', 'api'],
    ['a.example.com', '/apifoo', 'root'],
    ['a.example.com', '/foo', 'exact'],
    ['a.example.com', '/foo/bar', 'api'],
    ['a.example.com', '/foobar', 'root'],
    ['b.example.com', '/foo', 'api'],
    ['b.example.com', '/foo/', 'api'],
    ['x.w.example.com', '/', 'wild'],
  ])('%s%s reaches %s', async (host, path, backend) => {
    const reply = await http(host, path);
    expect(reply.status).toBe(200);
    expect(reply.backend).toBe(backend);
    expect(JSON.parse(reply.body).path).toBe(path);
  });

  it('Prefix /foo does not match /foobar', async () => {
    expect((await http('b.example.com', '/foobar')).status).toBe(404);
  });

  it.each([['unknown.example.com'], ['w.example.com'], ['a.b.w.example.com']])(
    'unknown host %s gets the default 404',
    async (host) => {
      const reply = await http(host, '/');
      expect(reply.status).toBe(404);
      expect(reply.backend).toBeUndefined();
    },
  );

  it('a Service without ready endpoints answers 503', async () => {
    expect((await http('a.example.com', '/gone')).status).toBe(503);
  });

  it('passes the Host and X-Forwarded headers from the connection, not the client', async () => {
    const reply = await get({
      host: 'a.example.com',
      path: '/',
      port: httpPort,
      headers: { 'x-forwarded-for': '6.6.6.6' },
    });
    const seen = JSON.parse(reply.body) as { host: string; headers: Record<string, string> };
    expect(seen.host).toBe('a.example.com');
    expect(seen.headers['x-forwarded-for']).toBe('127.0.0.1');
    expect(seen.headers['x-forwarded-proto']).toBe('http');
  });

  it('serves a TLS host over HTTPS with its own certificate (SNI)', async () => {
    const reply = await get({ host: 'secure.example.com', path: '/x', port: httpsPort, https: true, ca: ca.certPem });
    expect(reply.status).toBe(200);
    expect(reply.backend).toBe('secure');
    expect(reply.peerCertificate?.subject.CN).toBe('secure.example.com');
  });

  it('answers other hosts over HTTPS with the fallback certificate', async () => {
    const reply = await get({ host: 'a.example.com', path: '/', port: httpsPort, https: true });
    expect(reply.backend).toBe('root');
    expect(reply.peerCertificate?.subject.CN).toBe('Kubernetes Ingress Controller Fake Certificate');
  });

  it('redirects plain HTTP on a TLS host to HTTPS with 308', async () => {
    const reply = await http('secure.example.com', '/x?y=1');
    expect(reply.status).toBe(308);
    expect(reply.headers.location).toBe(`https://secure.example.com:${httpsPort}/x?y=1`);
  });

  it('wrote the key files 0600', async () => {
    const mode = (await stat(join(dir, 'conf', 'certificates', 'default_secure-tls.pem'))).mode & 0o777;
    expect(mode).toBe(0o600);
  });
});
