/**
 * ssl-passthrough behind a TCP load balancer (use-proxy-protocol), rendered by the real CLI and served by a real
 * nginx: the balancer's PROXY header reaches the stream server on the HTTPS port, which trusts it only from
 * proxy-real-ip-cidr and passes the client it names on to the http servers' TLS listener; a passthrough host's
 * backend gets the client's TLS bytes and no PROXY header at all (its handshake would fail on one).
 */
import { connect } from 'node:net';
import { connect as tlsConnect, createServer as createTlsServer, type Server } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueCertificate } from '../../src/tls/issue.js';
import { ingress } from '../support/manifests.js';
import { freePort } from '../support/net.js';
import { ALLOWED_CLIENT, allowlistedScene } from './annotations-harness.js';

const PASSTHROUGH_POD = '127.0.0.2';

let backend: Server;
let backendPort: number;

beforeAll(async () => {
  backendPort = await freePort();
  const pair = await issueCertificate({ commonName: 'pass-backend', dnsNames: ['pass.test'] });
  backend = createTlsServer({ cert: pair.certPem, key: pair.keyPem }, (socket) => {
    socket.once('data', () => socket.end('HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 4\r\n\r\npass'));
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => backend.listen(backendPort, PASSTHROUGH_POD, resolve));
});

afterAll(() => new Promise<void>((resolve) => backend.close(() => resolve())));

// 127.0.0.1 is the load balancer; 127.0.0.3 is not trusted to name clients.
const scene = allowlistedScene(
  { 'use-proxy-protocol': 'true', 'proxy-real-ip-cidr': '127.0.0.1' },
  () => [
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'pass', namespace: 'default' },
      spec: { ports: [{ name: 'https', port: 443 }] },
    },
    {
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { name: 'pass-1', namespace: 'default', labels: { 'kubernetes.io/service-name': 'pass' } },
      addressType: 'IPv4',
      ports: [{ name: 'https', port: backendPort }],
      endpoints: [{ addresses: [PASSTHROUGH_POD] }],
    },
    ingress(
      'pass',
      { 'pass.test': [{ path: '/', service: 'pass', port: 'https' }] },
      { annotations: { 'nginx.ingress.kubernetes.io/ssl-passthrough': 'true' } },
    ),
  ],
  ['--enable-ssl-passthrough'],
);

/** viaBalancer connects from `localAddress`, sends `header`, then TLS for `servername`: the certificate's CN and reply. */
function viaBalancer(localAddress: string, header: string, servername: string): Promise<{ cn: string; reply: string }> {
  const socket = connect({ host: '127.0.0.1', port: scene().httpsPort, localAddress });
  return new Promise((resolve, reject) => {
    socket.once('error', reject);
    socket.once('connect', () => {
      socket.write(header);
      let cn = '';
      let reply = '';
      const tls = tlsConnect({ socket, servername, rejectUnauthorized: false }, () => {
        cn = String(tls.getPeerCertificate().subject?.CN ?? '');
        tls.write(`GET / HTTP/1.1\r\nHost: ${servername}\r\nConnection: close\r\n\r\n`);
      });
      tls.setEncoding('utf8');
      tls.on('data', (chunk: string) => (reply += chunk));
      tls.on('end', () => resolve({ cn, reply }));
      tls.on('error', reject);
    });
  });
}

const proxyLine = (client: string) => `PROXY TCP4 ${client} 127.0.0.1 40000 443\r\n`;

describe('ssl-passthrough with use-proxy-protocol, through real nginx', () => {
  it('renders without problems', () => expect(scene().problems).toBe(''));

  it('the balancer naming an allowed client reaches an nginx-terminated host as that client', async () => {
    const { reply } = await viaBalancer('127.0.0.1', proxyLine(ALLOWED_CLIENT), 'allow.test');
    expect(reply).toMatch(/^HTTP\/1\.1 200 /);
    const headers = (JSON.parse(reply.slice(reply.indexOf('\r\n\r\n') + 4)) as { headers: Record<string, string> })
      .headers;
    expect(headers['x-real-ip']).toBe(ALLOWED_CLIENT);
    expect(headers['x-forwarded-for']).toBe(ALLOWED_CLIENT);
    expect(headers['x-forwarded-proto']).toBe('https');
  });

  it('an untrusted peer cannot name the client: the allowlist judges the peer', async () => {
    const { reply } = await viaBalancer('127.0.0.3', proxyLine(ALLOWED_CLIENT), 'allow.test');
    expect(reply).toMatch(/^HTTP\/1\.1 403 /);
  });

  // The backend is a plain node:tls server: a PROXY line before the ClientHello would fail its handshake.
  it('a passthrough host gets the TLS bytes without any PROXY header', async () => {
    const { cn, reply } = await viaBalancer('127.0.0.1', proxyLine(ALLOWED_CLIENT), 'pass.test');
    expect(cn).toBe('pass-backend');
    expect(reply).toMatch(/^HTTP\/1\.1 200 OK[\s\S]*pass$/);
  });
});
