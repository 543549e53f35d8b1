/**
 * The stream block through the real controller (test API server, real nginx, its stream module):
 * `--tcp-services-configmap` and `--udp-services-configmap` with echo servers on 127.0.0.2 standing
 * in for pods, the PROXY flags, a bad entry beside good ones, an endpoint change reaching traffic, and
 * `--enable-ssl-passthrough`: a TLS backend with its own certificate reached by SNI through the HTTPS
 * port, another host on that port still terminated by nginx with the client address intact, Argo
 * CD's documented Ingress (HTTP redirected, HTTPS passed through), and another tenant's newer Ingress
 * asking for passthrough on a host it does not own (neither flipping nor capturing its TLS).
 */
import { chmod } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { createServer as createTlsServer, connect as tlsConnect, type Server as TlsServer } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findResourceByKind } from '../../src/dev/api-server/resources.js';
import { issueCertificate, type KeyPair } from '../../src/tls/issue.js';
import { nginxSettled, startCluster, waitFor, type Cluster } from '../support/cluster.js';
import { ingress, ingressClass } from '../support/manifests.js';
import { datagram, startUdpEcho, talk } from '../support/stream-clients.js';
import { freePort, get, startBackend, type Backend } from '../support/net.js';

const POD = '127.0.0.2';
const OTHER_POD = '127.0.0.3';

/** A TCP echo server that first says who it is and what PROXY header, if any, it was sent. */
async function startEcho(ip: string, port: number): Promise<Server> {
  const server = createServer((socket) => {
    let first = true;
    socket.on('data', (chunk) => {
      let text = chunk.toString('latin1');
      if (first) {
        first = false;
        const proxy = /^PROXY [^\r]*\r\n/.exec(text)?.[0] ?? '';
        text = text.slice(proxy.length);
        socket.write(`${ip} proxy=${JSON.stringify(proxy.trim())}\n`);
      }
      socket.write(text);
    });
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(port, ip, resolve));
  return server;
}

/** The client's own address: not nginx's 127.0.0.1, so a backend seeing it knows the client's address survived. */
const CLIENT = '127.0.0.5';

/** tlsRequest opens TLS to nginx's HTTPS port with `servername`: the certificate's subject CN and the reply. */
function tlsRequest(port: number, servername: string, request: string): Promise<{ cn: string; reply: string }> {
  return new Promise((resolve, reject) => {
    const options = { host: '127.0.0.1', port, servername, rejectUnauthorized: false, localAddress: CLIENT };
    let cn = '';
    const socket = tlsConnect(options, () => {
      cn = String(socket.getPeerCertificate().subject?.CN ?? '');
      socket.write(request);
    });
    let reply = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (reply += chunk));
    socket.on('end', () => resolve({ cn, reply }));
    socket.on('error', reject);
  });
}

const service = (name: string, port: number, protocol = 'TCP', portName = 'main', namespace = 'default') => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name, namespace },
  spec: { ports: [{ name: portName, port, protocol }] },
});

const slice = (
  name: string,
  addresses: string[],
  port: number,
  protocol = 'TCP',
  portName = 'main',
  namespace = 'default',
) => ({
  apiVersion: 'discovery.k8s.io/v1',
  kind: 'EndpointSlice',
  metadata: { name: `${name}-1`, namespace, labels: { 'kubernetes.io/service-name': name } },
  addressType: 'IPv4',
  ports: [{ name: portName, port, protocol }],
  endpoints: addresses.map((address) => ({ addresses: [address], conditions: { ready: true } })),
});

const configMap = (name: string, data: Record<string, string>) => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace: 'ingress' },
  data,
});

let cluster: Cluster;
let tcpPort: number;
let proxyPort: number;
let udpPort: number;
let badPort: number;
let echoPort: number;
let udpEchoPort: number;
let argoPort: number;
let evilPort: number;
const closers: (() => unknown)[] = [];
let argoCert: KeyPair;
let plain: Backend;

/** The Argo CD server stand-in: TLS with its own certificate, answering HTTP/1.1 with the client address it saw. */
async function startArgo(port: number): Promise<TlsServer> {
  argoCert = await issueCertificate({ commonName: 'argocd-server', dnsNames: ['argocd.example.com'] });
  return startTlsBackend(port, argoCert, 'argo');
}

/** A TLS backend with its own certificate that answers every request with `body`. */
async function startTlsBackend(port: number, cert: KeyPair, body: string): Promise<TlsServer> {
  const server = createTlsServer({ cert: cert.certPem, key: cert.keyPem }, (socket) => {
    socket.once('data', () =>
      socket.end(`HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: ${body.length}\r\n\r\n${body}`),
    );
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(port, POD, resolve));
  return server;
}

beforeAll(async () => {
  [tcpPort, proxyPort, udpPort, badPort, echoPort, udpEchoPort, argoPort, evilPort] = (await Promise.all(
    Array.from({ length: 8 }, () => freePort()),
  )) as [number, number, number, number, number, number, number, number];
  for (const ip of [POD, OTHER_POD]) {
    const echo = await startEcho(ip, echoPort);
    closers.push(() => echo.close());
  }
  const udp = await startUdpEcho(POD, udpEchoPort, `${POD}:`);
  closers.push(() => udp.close());
  const argo = await startArgo(argoPort);
  closers.push(() => argo.close());
  const evilCert = await issueCertificate({ commonName: 'evil', dnsNames: ['shop.example.com', 'api.example.com'] });
  const evil = await startTlsBackend(evilPort, evilCert, 'evil');
  closers.push(() => evil.close());
  plain = await startBackend('plain');
  closers.push(() => plain.close());
  cluster = await startCluster(
    [
      ingressClass(),
      service('echo', 7000),
      slice('echo', [POD], echoPort),
      service('dns', 53, 'UDP', 'dns'),
      slice('dns', [POD], udpEchoPort, 'UDP', 'dns'),
      configMap('tcp-services', {
        [String(tcpPort)]: 'default/echo:7000',
        [String(proxyPort)]: 'default/echo:main:PROXY:PROXY',
        [String(badPort)]: 'default/echo:7000:PROXYY',
      }),
      configMap('udp-services', { [String(udpPort)]: 'default/dns:53' }),
      // Argo CD's documented Ingress (argo-cd docs, ingress, "Option 1: SSL-Passthrough").
      service('argocd-server', 443, 'TCP', 'https', 'argocd'),
      slice('argocd-server', [POD], argoPort, 'TCP', 'https', 'argocd'),
      ingress(
        'argocd-server-ingress',
        { 'argocd.example.com': [{ path: '/', service: 'argocd-server', port: 'https' }] },
        {
          namespace: 'argocd',
          annotations: {
            'nginx.ingress.kubernetes.io/force-ssl-redirect': 'true',
            'nginx.ingress.kubernetes.io/ssl-passthrough': 'true',
          },
        },
      ),
      service('plain', 80, 'TCP', 'http'),
      slice('plain', ['127.0.0.1'], plain.port, 'TCP', 'http'),
      ingress('plain', { 'plain.example.com': [{ path: '/', service: 'plain', port: 80 }] }),
      // The victim owns shop.example.com (its `/`) and api.example.com (only /api). A newer Ingress of another
      // namespace (after `default` in the conflict order, so it is the newer even within one second) asks for
      // passthrough on both: from an unused path, and with the `/` the victim left free. Its backend speaks TLS.
      ingress('shop', {
        'shop.example.com': [{ path: '/', service: 'plain', port: 80 }],
        'api.example.com': [{ path: '/api', service: 'plain', port: 80 }],
      }),
      service('evil', 443, 'TCP', 'https', 'tenant-b'),
      slice('evil', [POD], evilPort, 'TCP', 'https', 'tenant-b'),
      ingress(
        'squat',
        {
          'shop.example.com': [{ path: '/unused', service: 'evil', port: 'https' }],
          'api.example.com': [{ path: '/', service: 'evil', port: 'https' }],
        },
        { namespace: 'tenant-b', annotations: { 'nginx.ingress.kubernetes.io/ssl-passthrough': 'true' } },
      ),
    ],
    [
      '--tcp-services-configmap',
      'ingress/tcp-services',
      '--udp-services-configmap',
      'ingress/udp-services',
      '--enable-ssl-passthrough',
    ],
  );
  // nginx's workers (nobody, as root) connect to the passthrough sockets in the config folder: the test's temporary
  // parent folder is 0700, where the controller's default (/var/lib/ingress-actors) sits in a folder anyone may pass.
  await chmod(cluster.dir, 0o711);
  // nginx may start well after the controller (a loaded machine): wait for it, not a fixed 10 s
  await waitFor(
    'the TCP service to answer',
    async () => (await talk(tcpPort, ['hi\n'], 30).catch(() => '')) !== '',
    45_000,
  );
}, 60_000);

afterAll(async () => {
  await cluster?.close();
  for (const close of closers) await close();
});

describe('TCP and UDP services', () => {
  it('echoes over TCP through a mapped port, the backend sent no PROXY header', async () => {
    const expected = `${POD} proxy=""\nhello\n`;
    expect(await talk(tcpPort, ['hello\n'], expected.length)).toBe(expected);
  });

  it('answers a UDP datagram through a mapped port', async () => {
    expect(await datagram(udpPort, 'ping')).toBe(`${POD}:ping`);
  });

  it('with PROXY:PROXY, decodes the client PROXY header and sends the backend one naming the original client', async () => {
    // until the echo of x: the first line's length depends on the digits of nginx's own port
    const reply = await talk(proxyPort, ['PROXY TCP4 10.1.2.3 127.0.0.1 40000 9000\r\n', 'x\n'], /\nx\n$/);
    expect(reply).toMatch(
      new RegExp(`^${POD.replaceAll('.', '\\.')} proxy="PROXY TCP4 10\\.1\\.2\\.3 [0-9.]+ 40000 \\d+"\nx\n$`),
    );
  });

  it('leaves a bad entry out (nothing listens on its port) and serves the others', async () => {
    await expect(talk(badPort, ['x\n'], 10)).rejects.toThrow(/ECONNREFUSED/);
    const expected = `${POD} proxy=""\nstill\n`;
    expect(await talk(tcpPort, ['still\n'], expected.length)).toBe(expected);
  });

  it('follows an endpoint change of the TCP Service (nginx reloads: stream upstreams list endpoints)', async () => {
    await waitFor('nginx to be done reloading', () => nginxSettled(cluster.actor('nginx')));
    const reloads = () => Number(cluster.actor('nginx')?.context.reloadsOk ?? 0);
    const before = reloads();
    await cluster.apply(slice('echo', [OTHER_POD], echoPort));
    await waitFor('the new endpoint to answer', async () => (await talk(tcpPort, ['who\n'], 12)).startsWith(OTHER_POD));
    await waitFor('the reload to be confirmed', () => reloads() > before);
    for (let i = 0; i < 5; i++) expect(await talk(tcpPort, ['who\n'], 12)).toMatch(new RegExp(`^${OTHER_POD}`));
  });
});

describe('ssl-passthrough', () => {
  it("passes Argo CD's TLS through: the client sees the backend's certificate, not nginx's", async () => {
    const { cn, reply } = await tlsRequest(
      cluster.httpsPort,
      'argocd.example.com',
      'GET / HTTP/1.1\r\nHost: argocd.example.com\r\n\r\n',
    );
    expect(cn).toBe('argocd-server');
    expect(reply).toMatch(/^HTTP\/1\.1 200 OK[\s\S]*argo$/);
  });

  it('matches the SNI whatever its case, as host names are', async () => {
    const { cn } = await tlsRequest(cluster.httpsPort, 'ArgoCD.Example.com', 'GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    expect(cn).toBe('argocd-server');
  });

  it("redirects Argo CD's plain HTTP to HTTPS (force-ssl-redirect)", async () => {
    const answer = await get({ host: 'argocd.example.com', path: '/applications', port: cluster.httpPort });
    expect(answer.status).toBe(308);
    expect(answer.headers.location).toBe(`https://argocd.example.com:${cluster.httpsPort}/applications`);
  });

  it('terminates TLS in nginx for another host on the same port, the client address intact', async () => {
    const { cn, reply } = await tlsRequest(
      cluster.httpsPort,
      'plain.example.com',
      'GET /x HTTP/1.1\r\nHost: plain.example.com\r\nConnection: close\r\n\r\n',
    );
    expect(cn).not.toBe('argocd-server');
    const body = JSON.parse(reply.slice(reply.indexOf('\r\n\r\n') + 4)) as {
      backend: string;
      headers: Record<string, string>;
    };
    expect(reply).toMatch(/^HTTP\/1\.1 200 /);
    expect(body.backend).toBe('plain');
    expect(body.headers['x-real-ip']).toBe(CLIENT);
    expect(body.headers['x-forwarded-for']).toBe(CLIENT);
    expect(body.headers['x-forwarded-proto']).toBe('https');
    // as ingress-nginx: the HTTPS port is announced as 443 (its $pass_port)
    expect(body.headers['x-forwarded-port']).toBe('443');
  });

  it('a client without SNI gets nginx, not a passthrough backend', async () => {
    const { cn } = await tlsRequest(cluster.httpsPort, '', 'GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    expect(cn).not.toBe('argocd-server');
  });

  it("another namespace's newer Ingress cannot flip the owner's host to passthrough: nginx still serves its HTTPS", async () => {
    const { cn, reply } = await tlsRequest(
      cluster.httpsPort,
      'shop.example.com',
      'GET /cart HTTP/1.1\r\nHost: shop.example.com\r\nConnection: close\r\n\r\n',
    );
    expect(cn).not.toBe('evil');
    expect(reply).toMatch(/^HTTP\/1\.1 200 /);
    expect(JSON.parse(reply.slice(reply.indexOf('\r\n\r\n') + 4)).backend).toBe('plain');
  });

  it("nor catch the TLS streams of a host whose `/` it took: the ClientHello reaches nginx's HTTPS, not its backend", async () => {
    const { cn, reply } = await tlsRequest(
      cluster.httpsPort,
      'api.example.com',
      'GET /api/x HTTP/1.1\r\nHost: api.example.com\r\nConnection: close\r\n\r\n',
    );
    expect(cn).not.toBe('evil');
    expect(reply).toMatch(/^HTTP\/1\.1 200 /);
    expect(JSON.parse(reply.slice(reply.indexOf('\r\n\r\n') + 4)).backend).toBe('plain');
  });

  it('the newer Ingress gets a Warning Event naming the owner of each host', async () => {
    const events = () =>
      (
        cluster.api.registry.list(findResourceByKind('v1', 'Event')!, { namespace: 'tenant-b' }).items as {
          type?: string;
          message?: string;
          involvedObject?: { name?: string };
        }[]
      ).filter((e) => e.involvedObject?.name === 'squat');
    await waitFor('an Event on the squatting Ingress', () => events().length > 0, 10_000, 100);
    const [event] = events();
    expect(event!.type).toBe('Warning');
    for (const host of ['shop.example.com', 'api.example.com'])
      expect(event!.message).toContain(`host "${host}" belongs to Ingress default/shop`);
  });
});
