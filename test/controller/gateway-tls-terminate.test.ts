/**
 * TLSRoute in Terminate mode (TLSRouteModeTerminate) and mixed with Passthrough and HTTPS (TLSRouteModeMixed) through
 * the real controller, the test API server and one real nginx that also serves an Ingress: on a port of its own a
 * Terminate and a Passthrough listener share the socket (SNI decides), and on the https port under
 * --enable-ssl-passthrough a Terminate listener sits beside an HTTPS listener and the Ingress's HTTPS host. The
 * Terminate backend is a plain TCP echo (it cannot speak TLS, so its bytes came out of nginx's termination); the
 * Passthrough backend answers with its own certificate.
 */
import { X509Certificate } from 'node:crypto';
import { chmod, readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { createServer as createTlsServer, connect as tlsConnect, type Server as TlsServer } from 'node:tls';
import type { CustomObjectsApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueCertificate } from '../../src/tls/issue.js';
import { nginxSettled, startCluster, waitFor, type Cluster } from '../support/cluster.js';
import {
  conditions,
  GROUP,
  gwRoute,
  installGatewayApi,
  listenerSummary,
  service,
  slice,
  startEcho,
  statusOf,
} from '../support/gateway-cluster.js';
import { ingress, ingressClass, tlsSecret } from '../support/manifests.js';
import { freePort, startBackend, type Backend } from '../support/net.js';

const POD = '127.0.0.2';

type Answer = { cn: string; issuer: string; trusted: boolean; reply: string } | { error: string };

/**
 * tls opens TLS to nginx's `port` with `servername`, sends `say` and reads until `until` matches (or the other side
 * ends): the certificate's CN and issuer, whether `ca` trusts it for that name, and the reply; or that it was closed.
 */
function tls(port: number, servername: string, say: string, until: RegExp, ca?: string): Promise<Answer> {
  return new Promise((resolve) => {
    let done = false;
    let reply = '';
    let peer: { cn: string; issuer: string; trusted: boolean } | null = null;
    const finish = (answer: Answer) => {
      if (done) return;
      done = true;
      socket.destroy();
      resolve(answer);
    };
    const socket = tlsConnect(
      { host: '127.0.0.1', port, servername, rejectUnauthorized: false, ...(ca ? { ca } : {}) },
      () => {
        const cert = socket.getPeerCertificate();
        peer = {
          cn: String(cert.subject?.CN ?? ''),
          issuer: String(cert.issuer?.CN ?? ''),
          trusted: socket.authorized,
        };
        socket.write(say);
      },
    );
    socket.setEncoding('utf8');
    socket.setTimeout(3_000, () => finish(peer ? { ...peer, reply } : { error: 'timeout' }));
    socket.on('data', (chunk: string) => {
      reply += chunk;
      if (peer && until.test(reply)) finish({ ...peer, reply });
    });
    // nginx closing a name no route serves ends the connection before any handshake
    const closed = () => finish(peer ? { ...peer, reply } : { error: 'closed before handshake' });
    socket.on('end', closed);
    socket.on('close', closed);
    socket.on('error', closed);
  });
}

let cluster: Cluster;
let custom: CustomObjectsApi;
let plain: Backend;
let mixedPort: number;
let ca: { certPem: string; keyPem: string };
const closers: (() => unknown)[] = [];

const ECHO = /^echo 127\.0\.0\.2\nping\n$/;

beforeAll(async () => {
  let echoPort: number;
  let tlsBackendPort: number;
  [echoPort, tlsBackendPort, mixedPort] = (await Promise.all([freePort(), freePort(), freePort()])) as [
    number,
    number,
    number,
  ];
  const echo = await startEcho(echoPort, POD);
  closers.push(() => echo.close());
  const backendCert = await issueCertificate({ commonName: 'tls-backend', dnsNames: ['pass.test'] });
  const tlsBackend: TlsServer = createTlsServer({ cert: backendCert.certPem, key: backendCert.keyPem }, (socket) => {
    socket.write('tls-backend\n');
    socket.on('data', (chunk) => socket.write(chunk));
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => tlsBackend.listen(tlsBackendPort, POD, resolve));
  closers.push(() => tlsBackend.close());
  plain = await startBackend('plain');
  closers.push(() => plain.close());
  ca = await issueCertificate({ commonName: 'terminate test CA', isCa: true });
  const termCert = await issueCertificate({
    commonName: 'tls.test',
    dnsNames: ['tls.test', '*.term.test'],
    issuer: ca,
  });
  const gwCert = await issueCertificate({ commonName: 'gw.test', dnsNames: ['gw.test'], issuer: ca });

  cluster = await startCluster(
    [
      ingressClass(),
      service('plain', 80),
      slice('plain', '127.0.0.1', plain.port),
      ingress('web', { 'web.test': [{ path: '/', service: 'plain', port: 80 }] }),
      service('echo', 7000),
      slice('echo', POD, echoPort),
      service('tls-backend', 443),
      slice('tls-backend', POD, tlsBackendPort),
      tlsSecret('term-cert', termCert.certPem, termCert.keyPem),
      tlsSecret('gw-cert', gwCert.certPem, gwCert.keyPem),
    ],
    ['--enable-ssl-passthrough'],
    process.env.TEST_LOG ?? 'silent',
    { unservedRecheckMs: 200 },
  );
  // nginx's workers connect to the internal sockets in the config folder (see test/controller/stream.test.ts)
  await chmod(cluster.dir, 0o711);
  custom = await installGatewayApi(cluster, ['TLSRoute', 'HTTPRoute', 'Gateway']);
  const terminate = (name: string) => ({ mode: 'Terminate', certificateRefs: [{ name }] });
  await cluster.apply({
    apiVersion: `${GROUP}/v1`,
    kind: 'Gateway',
    metadata: { name: 'tls', namespace: 'default' },
    spec: {
      gatewayClassName: 'ingress-actors',
      listeners: [
        { name: 'term', port: mixedPort, protocol: 'TLS', hostname: 'tls.test', tls: terminate('term-cert') },
        { name: 'pass', port: mixedPort, protocol: 'TLS', hostname: 'pass.test', tls: { mode: 'Passthrough' } },
        { name: 'https-term', port: 443, protocol: 'TLS', hostname: '*.term.test', tls: terminate('term-cert') },
        { name: 'https', port: 443, protocol: 'HTTPS', hostname: 'gw.test', tls: terminate('gw-cert') },
      ],
    },
  });
  const backend = (name: string, port: number) => ({ rules: [{ backendRefs: [{ name, port }] }] });
  await cluster.apply(
    gwRoute('TLSRoute', 'term', {
      parentRefs: [{ name: 'tls', sectionName: 'term' }],
      hostnames: ['tls.test'],
      ...backend('echo', 7000),
    }),
  );
  await cluster.apply(
    gwRoute('TLSRoute', 'pass', {
      parentRefs: [{ name: 'tls', sectionName: 'pass' }],
      hostnames: ['pass.test'],
      ...backend('tls-backend', 443),
    }),
  );
  await cluster.apply(
    gwRoute('TLSRoute', 'https-term', {
      parentRefs: [{ name: 'tls', sectionName: 'https-term' }],
      hostnames: ['a.term.test'],
      ...backend('echo', 7000),
    }),
  );
  await cluster.apply(
    gwRoute('HTTPRoute', 'gw', { parentRefs: [{ name: 'tls', sectionName: 'https' }], ...backend('plain', 80) }),
  );
  await waitFor(
    'the Terminate listener served',
    async () => {
      const answer = await tls(mixedPort, 'tls.test', 'ping\n', /ping\n/);
      return 'reply' in answer && ECHO.test(answer.reply);
    },
    30_000,
  );
  const get = (name: string) => `GET / HTTP/1.1\r\nHost: ${name}\r\nConnection: close\r\n\r\n`;
  // the http servers' routes are pushed data: served once a push after the last reload landed
  for (const name of ['web.test', 'gw.test'])
    await waitFor(
      `${name} served over TLS`,
      async () =>
        /^HTTP\/1.1 200/.test(
          ((await tls(cluster.httpsPort, name, get(name), /plain/)) as { reply?: string }).reply ?? '',
        ),
      30_000,
    );
}, 90_000);

afterAll(async () => {
  await cluster?.close();
  for (const close of closers) await close();
});

describe('TLSRoute Terminate, mixed with Passthrough and HTTPS, beside an Ingress on one nginx', () => {
  it('Terminate: nginx shows the listener’s certificate and the backend gets the plain bytes', async () => {
    expect(await tls(mixedPort, 'tls.test', 'ping\n', /ping\n/, ca.certPem)).toEqual({
      cn: 'tls.test',
      issuer: 'terminate test CA',
      trusted: true,
      reply: 'echo 127.0.0.2\nping\n',
    });
  });

  it('Passthrough on the same port: the backend terminates with its own certificate', async () => {
    expect(await tls(mixedPort, 'pass.test', 'ping\n', /ping\n/)).toMatchObject({
      cn: 'tls-backend',
      reply: 'tls-backend\nping\n',
    });
  });

  it('a name no listener serves is closed before any handshake', async () => {
    expect(await tls(mixedPort, 'other.test', 'ping\n', /ping\n/)).toEqual({ error: 'closed before handshake' });
  });

  it('the https port: a Terminate TLSRoute, an HTTPS listener and the Ingress share it, SNI decides', async () => {
    expect(await tls(cluster.httpsPort, 'a.term.test', 'ping\n', /ping\n/, ca.certPem)).toEqual({
      cn: 'tls.test',
      issuer: 'terminate test CA',
      trusted: true,
      reply: 'echo 127.0.0.2\nping\n',
    });
    const get = (name: string) => `GET / HTTP/1.1\r\nHost: ${name}\r\nConnection: close\r\n\r\n`;
    const gw = await tls(cluster.httpsPort, 'gw.test', get('gw.test'), /plain/, ca.certPem);
    expect(gw).toMatchObject({ cn: 'gw.test', trusted: true, reply: expect.stringMatching(/^HTTP\/1.1 200/) });
    const web = await tls(cluster.httpsPort, 'web.test', get('web.test'), /plain/);
    expect(web).toMatchObject({ reply: expect.stringMatching(/^HTTP\/1.1 200/) });
    expect((web as { cn: string }).cn).not.toBe('tls.test');
  });

  it('the certificate is a 0600 file of the config folder that nginx.conf names in the stream block', async () => {
    const conf = await readFile(join(cluster.dir, 'nginx', 'nginx.conf'), 'utf8');
    const stream = conf.slice(conf.indexOf('stream {'));
    const files = [...stream.matchAll(/ssl_certificate "([^"]+)";/g)].map((m) => m[1]!);
    expect(files.length).toBeGreaterThan(0);
    for (const file of new Set(files)) {
      const path = join(cluster.dir, 'nginx', file);
      expect((await stat(path)).mode & 0o777).toBe(0o600);
      expect(await readFile(path, 'utf8')).toContain('PRIVATE KEY');
    }
  });

  it('writes route and listener status: both modes Accepted and Programmed, TLSRoute supported, one route each', async () => {
    await waitFor(
      'statuses',
      async () => conditions(await statusOf(custom, 'tlsroutes', 'https-term')).Accepted === 'True/Accepted',
      10_000,
    );
    for (const name of ['term', 'pass', 'https-term'])
      expect(conditions(await statusOf(custom, 'tlsroutes', name)), name).toEqual({
        Accepted: 'True/Accepted',
        ResolvedRefs: 'True/ResolvedRefs',
      });
    const listeners = listenerSummary(await statusOf(custom, 'gateways', 'tls'));
    const tlsListener = { kinds: ['TLSRoute'], attached: 1, accepted: 'True', programmed: 'True' };
    expect(listeners).toEqual({
      term: tlsListener,
      pass: tlsListener,
      'https-term': tlsListener,
      https: { kinds: ['HTTPRoute', 'GRPCRoute'], attached: 1, accepted: 'True', programmed: 'True' },
    });
  });

  it('a master killed with -9 leaves the internal sockets: the next master removes them and serves again', async () => {
    await waitFor('nginx settled', () => nginxSettled(cluster.actor('nginx')), 10_000);
    const sockets = (await readdir(join(cluster.dir, 'nginx'))).filter((name) => /^tls_[0-9a-f]{16}\.sock$/.test(name));
    // tls.test on the mixed port, a.term.test on the https port
    expect(sockets).toHaveLength(2);
    const old = cluster.actor('nginx')?.context.pid as number;
    process.kill(old, 'SIGKILL');
    await waitFor(
      'a new master serving the Terminate listener',
      async () => {
        const pid = cluster.actor('nginx')?.context.pid as number | null;
        if (pid === null || pid === old || !nginxSettled(cluster.actor('nginx'))) return false;
        const answer = await tls(mixedPort, 'tls.test', 'ping\n', /ping\n/, ca.certPem);
        return 'reply' in answer && ECHO.test(answer.reply);
      },
      15_000,
    );
  });

  it('a renewed certificate is served (the Secret changes the file; nginx reloads)', async () => {
    const renewed = await issueCertificate({
      commonName: 'tls.test',
      dnsNames: ['tls.test', '*.term.test'],
      issuer: ca,
    });
    await cluster.apply(tlsSecret('term-cert', renewed.certPem, renewed.keyPem));
    const want = new X509Certificate(renewed.certPem).serialNumber;
    await waitFor(
      'the renewed certificate',
      async () =>
        new Promise<boolean>((resolve) => {
          const socket = tlsConnect(
            { host: '127.0.0.1', port: mixedPort, servername: 'tls.test', ca: ca.certPem },
            () => {
              resolve(socket.getPeerCertificate().serialNumber.toUpperCase() === want.toUpperCase());
              socket.destroy();
            },
          );
          socket.on('error', () => resolve(false));
        }),
      15_000,
    );
  });

  it('a Terminate listener whose Secret is removed stops serving its names (no fallback certificate)', async () => {
    await cluster.remove({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'gw-cert', namespace: 'default' } });
    // gw-cert is the HTTPS listener's: the Terminate listeners keep theirs
    expect(await tls(mixedPort, 'tls.test', 'ping\n', /ping\n/, ca.certPem)).toMatchObject({ trusted: true });
    await cluster.remove({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'term-cert', namespace: 'default' } });
    await waitFor(
      'the Terminate listener closed',
      async () => 'error' in (await tls(mixedPort, 'tls.test', 'ping\n', /ping\n/)),
      15_000,
    );
    // the Passthrough listener beside it is not touched
    expect(await tls(mixedPort, 'pass.test', 'ping\n', /ping\n/)).toMatchObject({ cn: 'tls-backend' });
    await waitFor(
      'ResolvedRefs=False on the listener',
      async () => {
        const term = (await statusOf(custom, 'gateways', 'tls'))?.listeners?.find((l) => l.name === 'term');
        return term?.conditions.some((c) => c.type === 'ResolvedRefs' && c.reason === 'InvalidCertificateRef') ?? false;
      },
      10_000,
    );
  });
});
