/**
 * use-proxy-protocol through real nginx: a TCP load balancer sends a PROXY protocol v1 header
 * before the client's bytes, on HTTP and on HTTPS (before the TLS handshake). The client address
 * it names is trusted only from proxy-real-ip-cidr, and a connection without the header is refused.
 */
import { connect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { describe, expect, it } from 'vitest';
import { allowlistedScene } from './annotations-harness.js';

// 127.0.0.1 is the load balancer; 127.0.0.2 is not trusted to name clients.
const scene = allowlistedScene({ 'use-proxy-protocol': 'true', 'proxy-real-ip-cidr': '127.0.0.1' });

interface Answer {
  readonly status: number;
  readonly realIp?: string;
  readonly forwardedFor?: string;
  readonly forwardedPort?: string;
  readonly forwardedProto?: string;
}

/** readAnswer reads one HTTP/1.1 answer (the request asked the server to close) from `socket`. */
function readAnswer(socket: Socket): Promise<Answer> {
  return new Promise((resolve, reject) => {
    let raw = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (raw += chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(raw)?.[1] ?? 0);
      const body = raw.slice(raw.indexOf('\r\n\r\n') + 4);
      if (status !== 200) return resolve({ status });
      const headers = (JSON.parse(body) as { headers: Record<string, string> }).headers;
      resolve({
        status,
        realIp: headers['x-real-ip'],
        forwardedFor: headers['x-forwarded-for'],
        forwardedPort: headers['x-forwarded-port'],
        forwardedProto: headers['x-forwarded-proto'],
      });
    });
  });
}

const request = 'GET / HTTP/1.1\r\nHost: allow.test\r\nConnection: close\r\n\r\n';

/**
 * viaBalancer connects from `localAddress` and sends `header` (a PROXY line, or nothing), then a GET over HTTP or
 * HTTPS.
 */
function viaBalancer(localAddress: string, header: string, https = false): Promise<Answer> {
  const port = https ? scene().httpsPort : scene().httpPort;
  const socket = connect({ host: '127.0.0.1', port, localAddress });
  return new Promise((resolve, reject) => {
    socket.once('error', reject);
    socket.once('connect', () => {
      socket.write(header);
      if (!https) {
        socket.write(request);
        return resolve(readAnswer(socket));
      }
      const tls = tlsConnect({ socket, servername: 'allow.test', rejectUnauthorized: false }, () => tls.write(request));
      resolve(readAnswer(tls as unknown as Socket));
    });
  });
}

const proxyLine = (client: string, port = 80) => `PROXY TCP4 ${client} 127.0.0.1 40000 ${port}\r\n`;

describe('use-proxy-protocol with proxy-real-ip-cidr, through real nginx', () => {
  it('renders without problems', () => expect(scene().problems).toBe(''));

  it(
    'the balancer naming an allowed client gets through over HTTP; ' +
      'the backend sees the client and the port it reached',
    async () => {
      expect(await viaBalancer('127.0.0.1', proxyLine('10.9.8.7'))).toEqual({
        status: 200,
        realIp: '10.9.8.7',
        forwardedFor: '10.9.8.7',
        forwardedPort: '80',
        forwardedProto: 'http',
      });
    },
  );

  it('and over HTTPS, the header coming before the TLS handshake', async () => {
    expect(await viaBalancer('127.0.0.1', proxyLine('10.9.8.7'), true)).toMatchObject({
      status: 200,
      realIp: '10.9.8.7',
    });
  });

  // ingress-nginx's lua_ingress.lua: a client that reached the balancer's port 443 used HTTPS (TLS ended there)
  it("a client that reached the balancer's port 443 is told HTTPS", async () => {
    expect(await viaBalancer('127.0.0.1', proxyLine('10.9.8.7', 443))).toMatchObject({
      status: 200,
      forwardedPort: '443',
      forwardedProto: 'https',
    });
  });

  it('a client the allowlist does not name is refused', async () => {
    expect((await viaBalancer('127.0.0.1', proxyLine('203.0.113.5'))).status).toBe(403);
  });

  it('an untrusted peer cannot name an allowed client', async () => {
    expect((await viaBalancer('127.0.0.2', proxyLine('10.9.8.7'))).status).toBe(403);
  });

  it('a connection without the PROXY header gets no answer', async () => {
    expect((await viaBalancer('127.0.0.1', '')).status).toBe(0);
  });
});
