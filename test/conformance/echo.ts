/**
 * The conformance suite's pods: loopback HTTP servers that answer as gateway-api's echo-basic
 * (conformance/echo-basic/echo-basic.go) does, since the expectations read its JSON: `path` (the request URI),
 * `host`, `method`, `proto`, `headers` (name → values, names as sent), `namespace`, `pod`, `service`, and the
 * response headers asked for in `X-Echo-Set-Header` ("name:value,name:value"); `/status/<code>` answers that code,
 * and `?delay=1s` answers that much later. A WebSocket to `/ws` gets each message back as it came (echo-basic's
 * websocket.Handler: text as text, binary as binary).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { WebSocketServer } from 'ws';

/** EchoPod is one running echo server standing in for one pod. */
export interface EchoPod {
  readonly pod: string;
  readonly namespace: string;
  readonly ip: string;
  readonly port: number;
  /** the pod's labels (its Deployment's template labels), which Services select */
  readonly labels: Readonly<Record<string, string>>;
  /** the Service targetPort it stands for: 3000 (HTTP), or 8443 for a TLS_SERVER_CERT pod (HTTPS) */
  readonly targetPort?: number;
  /** the request URIs it echoed, in order (its log: "Echoing back request made to <uri> …") */
  readonly echoed: readonly string[];
  close(): Promise<void>;
}

/** canonical writes a header name as Go's net/http does (textproto.CanonicalMIMEHeaderKey). */
export function canonical(name: string): string {
  return name.toLowerCase().replace(/(^|-)([a-z])/g, (_, dash: string, c: string) => dash + c.toUpperCase());
}

function answer(pod: string, namespace: string, service: string, req: IncomingMessage, res: ServerResponse): void {
  const uri = req.url ?? '/';
  // echo-basic's mux sees the path with `//` folded; /status/<code> answers that code, other /status/… a 400
  const routed = uri.split('?')[0]!.replaceAll('//', '/');
  const status = /^\/status\/(\d\d\d)$/.exec(routed);
  if (routed.startsWith('/status/')) {
    res.statusCode = status ? Number(status[1]) : 400;
    res.end();
    return;
  }
  // ?delay=<Go duration> answers after that long (echo-basic's delayResponse); a bad duration is a 500
  const delay = new URL(uri, 'http://x').searchParams.get('delay');
  if (delay) {
    const ms = goDuration(delay);
    if (ms === null) {
      res.statusCode = 500;
      res.setHeader('Content-Type', 'application/json');
      res.end(JSON.stringify({ message: `time: invalid duration "${delay}"` }));
      return;
    }
    setTimeout(() => echo(pod, namespace, service, req, res), ms);
    return;
  }
  echo(pod, namespace, service, req, res);
}

const UNITS: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** goDuration reads a Go time.ParseDuration string ("1s", "1.5s", "300ms", "1m30s") in milliseconds, or null. */
export function goDuration(text: string): number | null {
  if (text === '0') return 0;
  const parts = [...text.matchAll(/(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join('') !== text) return null;
  return parts.reduce((sum, p) => sum + Number(p[1]) * UNITS[p[2]!]!, 0);
}

function echo(pod: string, namespace: string, service: string, req: IncomingMessage, res: ServerResponse): void {
  const uri = req.url ?? '/';
  // Go keeps each header line as its own value under the canonical name; node's headersDistinct does the same
  const headers: Record<string, string[]> = {};
  for (const [name, values] of Object.entries(req.headersDistinct)) {
    if (name === 'host' || values === undefined) continue;
    (headers[canonical(name)] ??= []).push(...values);
  }
  for (const list of req.headersDistinct['x-echo-set-header'] ?? []) {
    for (const kv of list.split(',')) {
      const trimmed = kv.trim();
      if (trimmed === '') continue;
      const at = trimmed.indexOf(':');
      const name = at < 0 ? trimmed : trimmed.slice(0, at);
      const value = at < 0 ? '' : trimmed.slice(at + 1);
      const before = res.getHeader(name);
      res.setHeader(name, before === undefined ? value : `${before},${value.trim()}`);
    }
  }
  const body = JSON.stringify(
    {
      path: uri,
      host: req.headers.host ?? '',
      method: req.method,
      proto: `HTTP/${req.httpVersion}`,
      headers,
      httpPort: String((req.socket.address() as AddressInfo).port),
      // echo-basic's TLSAssertions, over HTTPS: the SNI the client sent
      ...((req.socket as TLSSocket).encrypted ? { tls: tlsAssertions(req.socket as TLSSocket) } : {}),
      namespace,
      ingress: '',
      service,
      pod,
    },
    null,
    1,
  );
  res.setHeader('Content-Type', 'application/json');
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.end(body);
}

/** tlsAssertions is echo-basic's TLSAssertions: the SNI, and the client's certificates as PEM. */
function tlsAssertions(socket: TLSSocket): { serverName: string; peerCertificates?: string[] } {
  const raw = socket.getPeerCertificate().raw;
  const pem = raw
    ? [`-----BEGIN CERTIFICATE-----\n${raw.toString('base64').replace(/.{1,64}/g, '$&\n')}-----END CERTIFICATE-----\n`]
    : undefined;
  return { serverName: socket.servername || '', ...(pem ? { peerCertificates: pem } : {}) };
}

/** startEchoPod listens on `ip`:`port` and answers as pod `pod` of `service` in `namespace`. */
export async function startEchoPod(
  ip: string,
  port: number,
  pod: string,
  namespace: string,
  service: string,
  labels: Readonly<Record<string, string>> = {},
  /**
   * HTTPS with this certificate (echo-basic's TLS_SERVER_CERT and TLS_SERVER_PRIVKEY), and with `clientCa`
   * (TLS_CLIENT_CACERTS) a client certificate asked for and verified when given (Go's VerifyClientCertIfGiven)
   */
  tls?: { readonly cert: string; readonly key: string; readonly clientCa?: string },
): Promise<EchoPod> {
  const echoed: string[] = [];
  const handler = (req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    req.on('end', () => {
      echoed.push(req.url ?? '/');
      answer(pod, namespace, service, req, res);
    });
  };
  const server: Server = tls
    ? createTlsServer(
        {
          cert: tls.cert,
          key: tls.key,
          ...(tls.clientCa ? { ca: tls.clientCa, requestCert: true, rejectUnauthorized: false } : {}),
        },
        (req, res) => {
          // VerifyClientCertIfGiven: a certificate given must verify; none is fine
          const socket = req.socket as TLSSocket;
          if (tls.clientCa && socket.getPeerCertificate().raw && !socket.authorized) return void socket.destroy();
          handler(req, res);
        },
      )
    : createServer(handler);
  const sockets = new WebSocketServer({ noServer: true });
  server.on('upgrade', (req, socket, head) => {
    if ((req.url ?? '').split('?')[0] !== '/ws') {
      socket.end('HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    sockets.handleUpgrade(req, socket, head, (ws) => {
      ws.on('message', (data, binary) => ws.send(data, { binary }));
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, ip, () => resolve());
  });
  return {
    pod,
    namespace,
    ip,
    port,
    ...(tls ? { targetPort: 8443 } : {}),
    labels,
    echoed,
    close: () =>
      new Promise((resolve) => {
        for (const ws of sockets.clients) ws.terminate();
        sockets.close();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
