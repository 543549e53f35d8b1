/**
 * The backends of the ported ingress-nginx e2e cases: one loopback HTTP server that answers as
 * ingress-nginx's two test images do, so the cases can keep their Expect lines byte for byte.
 * - as `e2e-test-echo` (images/e2e-test-echo/rootfs/nginx.conf): a text page with `Hostname:`,
 *   `Request Information:` (client_address, method, real path, query, request_scheme, …) and
 *   `Request Headers:` (lowercase names, sorted, one `\tname=value` a line), `Server: echoserver`,
 *   and `Strict-Transport-Security` when the query has `hsts=true`;
 * - as `httpbun` on its routes the cases use: `/status/<code>`, `/basic-auth/<user>/<password>`,
 *   `/response-headers?name=value`, `/cookies/set/<name>/<value>`, `/xml`, `/html`, `/bytes/<n>`;
 * - as the slow echo (`/sleep/<seconds>`): answers after that long.
 * Kind `plain-echo` is e2e-test-echo alone, `https-echo` the echo over TLS (a self-signed certificate). Kind `cookie-with-error` is auth.go's `http-cookie-with-error` nginx instead: `/cookies/set/<name>/<value>`
 * sets that cookie and says OK, `/error…` answers 503, anything else an empty 200.
 */
import { createServer, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { issueCertificate } from '../../src/tls/issue.js';

/** EchoServer is one running backend; `name` is what it prints as its Hostname. */
export interface EchoServer {
  readonly name: string;
  readonly port: number;
  close(): Promise<void>;
}

/** echoPage is e2e-test-echo's text for one request (its template, without the pod section's values). */
function echoPage(name: string, req: IncomingMessage, body: string, scheme: string): string {
  const url = new URL(req.url ?? '/', 'http://x');
  const host = (req.headers.host ?? '').replace(/:\d+$/, '');
  const headers: string[] = [];
  for (const key of Object.keys(req.headers).sort()) {
    const value = req.headers[key];
    for (const one of Array.isArray(value) ? value : [value]) headers.push(`\t${key}=${one}`);
  }
  return [
    '',
    `Hostname: ${name}`,
    '',
    'Pod Information:',
    '\t-no pod information available-',
    '',
    'Server values:',
    '\tserver_version=nginx: 1.21.6 - lua: 10021',
    '',
    'Request Information:',
    `\tclient_address=${req.socket.remoteAddress ?? ''}`,
    `\tmethod=${req.method}`,
    `\treal path=${req.url}`,
    `\tquery=${url.search.slice(1)}`,
    `\trequest_version=${req.httpVersion}`,
    `\trequest_scheme=${scheme}`,
    // the pod's server_port in ingress-nginx's suite, and the Service port every case here uses
    `\trequest_uri=${scheme}://${host}:80${req.url}`,
    '',
    'Request Headers:',
    ...headers,
    '',
    'Request Body:',
    body === '' ? '\t-no body in request-' : body,
    '',
  ].join('\n');
}

/** httpbun answers the httpbun routes; false when the path is none of them. */
function httpbun(req: IncomingMessage, res: ServerResponse): boolean {
  const url = new URL(req.url ?? '/', 'http://x');
  // also under a prefix (/else/status/404): the cases' Ingresses pass their path on unchanged
  const status = /(?:^|\/)status\/(\d{3})$/.exec(url.pathname);
  if (status) {
    res.statusCode = Number(status[1]);
    res.end();
    return true;
  }
  const auth = /^\/basic-auth\/([^/]+)\/([^/]+)$/.exec(url.pathname);
  if (auth) {
    const expected = `Basic ${Buffer.from(`${auth[1]}:${auth[2]}`).toString('base64')}`;
    if (req.headers.authorization === expected) {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ authenticated: true, user: auth[1] }));
    } else {
      res.statusCode = 401;
      res.setHeader('www-authenticate', 'Basic realm="Fake Realm"');
      res.end();
    }
    return true;
  }
  if (url.pathname === '/response-headers') {
    for (const [key, value] of url.searchParams) res.setHeader(key, value);
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify(Object.fromEntries(url.searchParams)));
    return true;
  }
  const sleep = /^\/sleep\/(\d+(?:\.\d+)?)$/.exec(url.pathname);
  if (sleep) {
    setTimeout(() => res.end('ok\n'), Number(sleep[1]) * 1000);
    return true;
  }
  // /xml, /html, /bytes/<n>: bodies of a known type and size, for the gzip cases
  const typed: Record<string, [string, string]> = {
    '/xml': [
      'application/xml',
      `<?xml version='1.0'?>\n<slideshow>${'<slide><title>gzip me</title></slide>'.repeat(12)}</slideshow>\n`,
    ],
    '/html': [
      'text/html; charset=utf-8',
      `<!DOCTYPE html>\n<html><body>${'<p>gzip me</p>'.repeat(30)}</body></html>\n`,
    ],
  };
  const bytes = /^\/bytes\/(\d{1,6})$/.exec(url.pathname);
  const found = typed[url.pathname] ?? (bytes ? ['application/octet-stream', 'x'.repeat(Number(bytes[1]))] : undefined);
  if (found) {
    res.setHeader('content-type', found[0]);
    res.end(found[1]);
    return true;
  }
  const cookie = /^\/cookies\/set\/([^/]+)\/([^/]+)$/.exec(url.pathname);
  if (cookie) {
    res.setHeader('set-cookie', `${cookie[1]}=${cookie[2]}`);
    res.end();
    return true;
  }
  return false;
}

/**
 * EchoKind is which ingress-nginx test server a backend stands in for: `echo` answers the httpbun routes too,
 * `plain-echo` only prints the page whatever the path (an error backend is asked with the failed request's URI).
 */
export type EchoKind = 'echo' | 'plain-echo' | 'https-echo' | 'cookie-with-error';

function cookieWithError(req: IncomingMessage, res: ServerResponse): void {
  const path = new URL(req.url ?? '/', 'http://x').pathname;
  const cookie = /^\/cookies\/set\/(.*)\/(.*)$/.exec(path);
  if (cookie) {
    res.setHeader('set-cookie', `${cookie[1]}=${cookie[2]}`);
    res.end('OK\n');
  } else {
    res.statusCode = path.startsWith('/error') ? 503 : 200;
    res.end();
  }
}

/** startEchoServer starts one backend named `name` on a free loopback port. */
export async function startEchoServer(name: string, kind: EchoKind = 'echo'): Promise<EchoServer> {
  const handler: RequestListener = (req, res) => {
    if (kind === 'cookie-with-error') return cookieWithError(req, res);
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (kind === 'echo' && httpbun(req, res)) return;
      res.setHeader('server', 'echoserver');
      res.setHeader('content-type', 'text/plain');
      if (new URL(req.url ?? '/', 'http://x').searchParams.get('hsts') === 'true') {
        res.setHeader('strict-transport-security', 'max-age=3600; preload');
      }
      res.end(echoPage(name, req, Buffer.concat(chunks).toString('utf8'), kind === 'https-echo' ? 'https' : 'http'));
    });
  };
  let server: Server;
  if (kind === 'https-echo') {
    const pair = await issueCertificate({ commonName: name, dnsNames: [name] });
    server = createTlsServer({ cert: pair.certPem, key: pair.keyPem }, handler);
  } else server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    name,
    port,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
