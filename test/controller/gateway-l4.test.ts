/**
 * TLSRoute (Passthrough), TCPRoute and UDPRoute through the real controller, the test API server and one real nginx
 * that also serves Ingresses: a TLS listener on the https port beside an Ingress's HTTPS host (SNI decides, under
 * --enable-ssl-passthrough), a TLS listener on a port of its own, a TCP and a UDP listener, and a TCPRoute of another
 * namespace whose backend needs a ReferenceGrant. Echo servers on 127.0.0.2 stand in for pods; a TLS backend with its
 * own certificate shows the bytes went through undecrypted.
 */
import { chmod } from 'node:fs/promises';
import { createServer as createTlsServer, connect as tlsConnect, type Server as TlsServer } from 'node:tls';
import type { CustomObjectsApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueCertificate } from '../../src/tls/issue.js';
import { startCluster, waitFor, type Cluster } from '../support/cluster.js';
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
import { ingress, ingressClass } from '../support/manifests.js';
import { datagram, startUdpEcho, talk } from '../support/stream-clients.js';
import { freePort, startBackend, type Backend } from '../support/net.js';

const POD = '127.0.0.2';
/** a connection nginx closes (a route it may not serve) answers '' */
const CLOSED_IS_ANSWER = { timeoutMs: 3_000, closedIsAnswer: true };

/** tls opens TLS to nginx's `port` with `servername`: the certificate's CN and the reply, or that it was closed. */
function tls(port: number, servername: string): Promise<{ cn: string; reply: string } | { error: string }> {
  return new Promise((resolve) => {
    const socket = tlsConnect({ host: '127.0.0.1', port, servername, rejectUnauthorized: false }, () => {
      cn = String(socket.getPeerCertificate().subject?.CN ?? '');
      socket.write(`GET / HTTP/1.1\r\nHost: ${servername}\r\nConnection: close\r\n\r\n`);
    });
    let cn = '';
    let reply = '';
    socket.setEncoding('utf8');
    socket.setTimeout(3_000, () => socket.destroy(new Error('timeout')));
    socket.on('data', (chunk: string) => (reply += chunk));
    // nginx closing a name no route serves ends the connection before any handshake
    const closed = () => resolve(socket.authorized || cn !== '' ? { cn, reply } : { error: 'closed before handshake' });
    socket.on('end', closed);
    socket.on('close', closed);
    socket.on('error', () => closed());
  });
}

let cluster: Cluster;
let custom: CustomObjectsApi;
let plain: Backend;
let tlsPort: number;
let tcpPort: number;
let crossPort: number;
let udpPort: number;
let echoPort: number;
const closers: (() => unknown)[] = [];

beforeAll(async () => {
  let udpEchoPort: number;
  let tlsBackendPort: number;
  [echoPort, udpEchoPort, tlsBackendPort] = (await Promise.all([freePort(), freePort(), freePort()])) as [
    number,
    number,
    number,
  ];
  [tlsPort, tcpPort, crossPort, udpPort] = await Promise.all([freePort(), freePort(), freePort(), freePort()]);
  const echo = await startEcho(echoPort, POD);
  closers.push(() => echo.close());
  const udp = await startUdpEcho(POD, udpEchoPort, 'udp:');
  closers.push(() => udp.close());
  const backendCert = await issueCertificate({ commonName: 'tls-backend', dnsNames: ['a.pass.test', 'own.test'] });
  const tlsBackend: TlsServer = createTlsServer({ cert: backendCert.certPem, key: backendCert.keyPem }, (socket) => {
    socket.once('data', () =>
      socket.end('HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 11\r\n\r\ntls-backend'),
    );
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => tlsBackend.listen(tlsBackendPort, POD, resolve));
  closers.push(() => tlsBackend.close());
  plain = await startBackend('plain');
  closers.push(() => plain.close());

  cluster = await startCluster(
    [
      ingressClass(),
      service('plain', 80),
      slice('plain', '127.0.0.1', plain.port),
      ingress('web', { 'web.test': [{ path: '/', service: 'plain', port: 80 }] }),
      service('echo', 7000),
      slice('echo', POD, echoPort),
      service('dns', 53, 'UDP'),
      slice('dns', POD, udpEchoPort, 'UDP'),
      service('tls-backend', 443),
      slice('tls-backend', POD, tlsBackendPort),
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'tenant-b' } },
    ],
    ['--enable-ssl-passthrough'],
    process.env.TEST_LOG ?? 'silent',
    { unservedRecheckMs: 200 },
  );
  // nginx's workers connect to the passthrough sockets in the config folder (see test/controller/stream.test.ts)
  await chmod(cluster.dir, 0o711);
  custom = await installGatewayApi(cluster, ['TLSRoute', 'TCPRoute', 'UDPRoute', 'Gateway']);
  const all = { namespaces: { from: 'All' } };
  await cluster.apply({
    apiVersion: `${GROUP}/v1`,
    kind: 'Gateway',
    metadata: { name: 'l4', namespace: 'default' },
    spec: {
      gatewayClassName: 'ingress-actors',
      listeners: [
        { name: 'pass', port: 443, protocol: 'TLS', hostname: '*.pass.test', tls: { mode: 'Passthrough' } },
        { name: 'tls', port: tlsPort, protocol: 'TLS', tls: { mode: 'Passthrough' } },
        { name: 'tcp', port: tcpPort, protocol: 'TCP' },
        { name: 'cross', port: crossPort, protocol: 'TCP', allowedRoutes: all },
        { name: 'udp', port: udpPort, protocol: 'UDP' },
      ],
    },
  });
  const backend = (name: string, port: number, namespace?: string) => ({
    rules: [{ backendRefs: [{ name, port, ...(namespace ? { namespace } : {}) }] }],
  });
  await cluster.apply(
    gwRoute('TLSRoute', 'pass', {
      parentRefs: [{ name: 'l4', sectionName: 'pass' }],
      hostnames: ['a.pass.test'],
      ...backend('tls-backend', 443),
    }),
  );
  await cluster.apply(
    gwRoute('TLSRoute', 'own', {
      parentRefs: [{ name: 'l4', sectionName: 'tls' }],
      hostnames: ['own.test'],
      ...backend('tls-backend', 443),
    }),
  );
  await cluster.apply(
    gwRoute('TCPRoute', 'tcp', { parentRefs: [{ name: 'l4', sectionName: 'tcp' }], ...backend('echo', 7000) }),
  );
  await cluster.apply(
    gwRoute('UDPRoute', 'udp', { parentRefs: [{ name: 'l4', sectionName: 'udp' }], ...backend('dns', 53) }),
  );
  await cluster.apply(
    gwRoute(
      'TCPRoute',
      'cross',
      { parentRefs: [{ name: 'l4', namespace: 'default', sectionName: 'cross' }], ...backend('echo', 7000, 'default') },
      'tenant-b',
    ),
  );
  await waitFor(
    'the TCPRoute served',
    async () => /hello/.test(await talk(tcpPort, 'hello\n', /hello/, CLOSED_IS_ANSWER)),
    30_000,
  );
  // the Ingress's routes are pushed data: served once a push after the last reload landed
  await waitFor(
    'the Ingress served over TLS',
    async () => /^HTTP\/1.1 200/.test(((await tls(cluster.httpsPort, 'web.test')) as { reply?: string }).reply ?? ''),
    30_000,
  );
}, 90_000);

afterAll(async () => {
  await cluster?.close();
  for (const close of closers) await close();
});

describe('TLSRoute, TCPRoute and UDPRoute beside Ingresses on one nginx', () => {
  it('TCPRoute: the listener port proxies to the Service', async () => {
    expect(await talk(tcpPort, 'hello\n', /hello/, CLOSED_IS_ANSWER)).toBe(`echo ${POD}\nhello\n`);
  });

  it('UDPRoute: datagrams reach the Service and come back', async () => {
    await waitFor('a UDP reply', async () => (await datagram(udpPort, 'ping')) === 'udp:ping', 10_000);
  });

  it('TLSRoute on its own port: the backend terminates TLS (its certificate), an unknown name is closed', async () => {
    expect(await tls(tlsPort, 'own.test')).toEqual({ cn: 'tls-backend', reply: expect.stringMatching(/tls-backend$/) });
    expect(await tls(tlsPort, 'other.test')).toEqual({ error: 'closed before handshake' });
  });

  it('TLSRoute on the https port beside an Ingress: SNI decides who terminates', async () => {
    expect(await tls(cluster.httpsPort, 'a.pass.test')).toEqual({
      cn: 'tls-backend',
      reply: expect.stringMatching(/tls-backend$/),
    });
    // the Ingress host is terminated by nginx and proxied to its backend
    const web = await tls(cluster.httpsPort, 'web.test');
    expect(web).toMatchObject({ reply: expect.stringMatching(/^HTTP\/1.1 200/) });
    expect((web as { cn: string }).cn).not.toBe('tls-backend');
  });

  it('writes route and listener status: Accepted, ResolvedRefs, supportedKinds, attachedRoutes', async () => {
    await waitFor(
      'statuses',
      async () => conditions(await statusOf(custom, 'udproutes', 'udp')).Accepted === 'True/Accepted',
      10_000,
    );
    for (const [plural, name] of [
      ['tlsroutes', 'pass'],
      ['tlsroutes', 'own'],
      ['tcproutes', 'tcp'],
      ['udproutes', 'udp'],
    ] as const)
      expect(conditions(await statusOf(custom, plural, name)), name).toEqual({
        Accepted: 'True/Accepted',
        ResolvedRefs: 'True/ResolvedRefs',
      });
    const listeners = listenerSummary(await statusOf(custom, 'gateways', 'l4'));
    expect(listeners).toEqual({
      pass: { kinds: ['TLSRoute'], attached: 1, accepted: 'True', programmed: 'True' },
      tls: { kinds: ['TLSRoute'], attached: 1, accepted: 'True', programmed: 'True' },
      tcp: { kinds: ['TCPRoute'], attached: 1, accepted: 'True', programmed: 'True' },
      cross: { kinds: ['TCPRoute'], attached: 1, accepted: 'True', programmed: 'True' },
      udp: { kinds: ['UDPRoute'], attached: 1, accepted: 'True', programmed: 'True' },
    });
  });

  it('follows an endpoint change of the TCPRoute’s Service (stream upstreams list endpoints: nginx reloads)', async () => {
    const other = await startEcho(echoPort, '127.0.0.3');
    closers.push(() => other.close());
    await cluster.apply(slice('echo', '127.0.0.3', echoPort));
    await waitFor(
      'the new endpoint',
      async () => (await talk(tcpPort, 'hi\n', /hi/, CLOSED_IS_ANSWER)) === 'echo 127.0.0.3\nhi\n',
      15_000,
    );
  });

  it("another namespace's TCPRoute reaches a Service only once a ReferenceGrant allows it", async () => {
    expect(conditions(await statusOf(custom, 'tcproutes', 'cross', 'tenant-b'))).toEqual({
      Accepted: 'True/Accepted',
      ResolvedRefs: 'False/RefNotPermitted',
    });
    // its share of connections is closed: no byte of the echo
    expect(await talk(crossPort, 'hello\n', /hello/, CLOSED_IS_ANSWER)).toBe('');
    await cluster.apply({
      apiVersion: `${GROUP}/v1beta1`,
      kind: 'ReferenceGrant',
      metadata: { name: 'tenant-b-echo', namespace: 'default' },
      spec: {
        from: [{ group: GROUP, kind: 'TCPRoute', namespace: 'tenant-b' }],
        to: [{ group: '', kind: 'Service', name: 'echo' }],
      },
    });
    await waitFor(
      'the granted backend',
      async () => /hello/.test(await talk(crossPort, 'hello\n', /hello/, CLOSED_IS_ANSWER)),
      15_000,
    );
    await waitFor(
      'ResolvedRefs',
      async () =>
        conditions(await statusOf(custom, 'tcproutes', 'cross', 'tenant-b')).ResolvedRefs === 'True/ResolvedRefs',
      10_000,
    );
  });
});
