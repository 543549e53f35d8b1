import {
  createServer as createHttpServer,
  request as httpRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { createServer as createHttpsServer, request as httpsRequest } from 'node:https';
import { createServer, type AddressInfo } from 'node:net';
import type { PeerCertificate, TLSSocket } from 'node:tls';

const handedOut = new Set<number>();

/**
 * TEST_PORTS are where freePort looks: below the kernel's ephemeral range (32768 and up on Linux), so no outgoing
 * connection of a test takes a port between freePort and the listen that wants it, and one slice per vitest worker,
 * so two workers never hand out the same port.
 */
const WORKER = Number(process.env.VITEST_POOL_ID ?? '1') % 4;
const TEST_PORTS = { from: 20_000 + WORKER * 3_000, count: 3_000 };

/**
 * freePort gives a port of this worker's slice that is free on every IPv4 address (bound, then released at once),
 * never one it gave this process before: two flags given one port are refused (src/cli/controller-flags.ts
 * samePort). Every address, not only 127.0.0.1: nginx listens on all of them, and a test's pod on 127.0.0.2 may hold
 * a port 127.0.0.1 has free.
 */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = TEST_PORTS.from + Math.floor(Math.random() * TEST_PORTS.count);
    if (handedOut.has(port)) continue;
    const server = createServer();
    const bound = await new Promise<boolean>((resolve) => {
      server.once('error', () => resolve(false));
      server.listen(port, '0.0.0.0', () => resolve(true));
    });
    if (!bound) continue;
    await new Promise((resolve) => server.close(resolve));
    handedOut.add(port);
    return port;
  }
}

export { waitForPort } from '../../src/nginx/probe.js';

/** Backend is a small HTTP server on loopback that answers with its name, the path and the Host it saw. */
export interface Backend {
  readonly name: string;
  readonly port: number;
  /** the TCP connections it accepted so far (upstream keepalive reuses them) */
  readonly connections: number;
  close(): Promise<void>;
}

/**
 * startBackend starts a Backend that answers `{"backend": name, "path": ..., "host": ...}`; over TLS with `tls`'s
 * certificate and key when given.
 */
export async function startBackend(name: string, tls?: { certPem: string; keyPem: string }): Promise<Backend> {
  const answer = (req: IncomingMessage, res: ServerResponse) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ backend: name, path: req.url, host: req.headers.host, headers: req.headers }));
  };
  const server: Server = tls
    ? createHttpsServer({ cert: tls.certPem, key: tls.keyPem }, answer)
    : createHttpServer(answer);
  let connections = 0;
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    name,
    port,
    get connections() {
      return connections;
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Reply is what a test request got back. */
export interface Reply {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
  readonly peerCertificate?: PeerCertificate;
  /** the `backend` field of a Backend's answer, when it was one */
  readonly backend?: string;
}

export interface RequestOptions {
  readonly host: string;
  readonly path: string;
  readonly port: number;
  readonly https?: boolean;
  readonly method?: string;
  readonly headers?: Record<string, string>;
  /** the request body, sent with its Content-Length */
  readonly body?: string;
  readonly localAddress?: string;
  /** CA to trust for https; without it the certificate is not verified (it is still returned) */
  readonly ca?: string;
}

/** get sends one request to 127.0.0.1 with the given Host (and SNI for https). */
export function get(options: RequestOptions): Promise<Reply> {
  const send = options.https ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = send(
      {
        host: '127.0.0.1',
        port: options.port,
        path: options.path,
        method: options.method ?? 'GET',
        headers: { host: options.host, ...options.headers },
        agent: false,
        localAddress: options.localAddress,
        ...(options.https
          ? { servername: options.host, ca: options.ca, rejectUnauthorized: options.ca !== undefined }
          : {}),
      },
      (res) => {
        const peerCertificate = options.https ? (res.socket as TLSSocket).getPeerCertificate() : undefined;
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => {
          let backend: string | undefined;
          try {
            backend = (JSON.parse(body) as { backend?: string }).backend;
          } catch {
            backend = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body, peerCertificate, backend });
        });
      },
    );
    req.setTimeout(10_000, () => req.destroy(new Error(`request to ${options.host}${options.path} timed out`)));
    req.on('error', reject);
    req.end(options.body);
  });
}
