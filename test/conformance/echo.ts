/**
 * The conformance suite's pods: loopback HTTP servers that answer as gateway-api's echo-basic
 * (conformance/echo-basic/echo-basic.go) does, since the expectations read its JSON: `path` (the request URI),
 * `host`, `method`, `proto`, `headers` (name → values, names as sent), `namespace`, `pod`, `service`, and the
 * response headers asked for in `X-Echo-Set-Header` ("name:value,name:value"); `/status/<code>` answers that code,
 * and `?delay=1s` answers that much later. A WebSocket to `/ws` gets each message back as it came (echo-basic's
 * websocket.Handler: text as text, binary as binary).
 * Beside them, echo-basic's TCP and UDP servers and the base's coredns, on real sockets (below).
 */
import { createSocket, type Socket as DgramSocket } from 'node:dgram';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import { type AddressInfo, createServer as createTcpServer, type Server as TcpServer, type Socket } from 'node:net';
import { createServer as createTlsSocketServer, type Server as TlsServer, type TLSSocket } from 'node:tls';
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
  /**
   * a pod of echo-basic's TCP or UDP servers, or of coredns: each container port it stands for (targetPort and
   * protocol) and the port it listens on for it (`port` is then the first's)
   */
  readonly targets?: readonly PodTarget[];
  /** the request URIs it echoed, in order (its log: "Echoing back request made to <uri> …") */
  readonly echoed: readonly string[];
  close(): Promise<void>;
}

/** PodTarget is one container port of a pod and the loopback port that stands for it. */
export interface PodTarget {
  readonly targetPort: number;
  readonly protocol: 'TCP' | 'UDP';
  readonly port: number;
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

/** echo-basic's tcpserver.WelcomeMessage, written first on every connection */
export const TCP_WELCOME = 'Gateway API Test TCP Server\n';
/** bufio.Scanner's longest line (MaxScanTokenSize): a longer one ends the connection, as Go's scanner stops */
const MAX_LINE = 64 * 1024;
/** crypto/tls's VersionName for the versions node can negotiate */
const GO_TLS_VERSION: Record<string, string> = { 'TLSv1.2': 'TLS 1.2', 'TLSv1.3': 'TLS 1.3' };

/**
 * startTcpEchoPod is echo-basic with TCP_ECHO_SERVER (conformance/echo-basic/tcpserver): plain TCP on the port standing
 * for TCP_PORT (3000) and, with a certificate (TLS_SERVER_CERT, TLS_SERVER_PRIV_KEY), TLS (1.2 and up) on the one for
 * TLS_PORT (8443). A connection gets the welcome line, then answers each line: `PING` → `PONG`, `IS_TLS` →
 * `true`/`false`, `TEST` → the pod's TCPAssertions as JSON (with the TLS version, SNI, ALPN and cipher over TLS; not
 * the curve, which node tells a client only); other lines get nothing.
 */
export async function startTcpEchoPod(
  ip: string,
  ports: { readonly tcp: number; readonly tls: number },
  pod: string,
  namespace: string,
  service: string,
  labels: Readonly<Record<string, string>>,
  tls?: { readonly cert: string; readonly key: string },
): Promise<EchoPod> {
  const context = { namespace, ingress: '', service, pod, tcpport: '3000', tlsport: '8443' };
  const sockets = new Set<Socket>();
  const serve = (socket: Socket, secure?: TLSSocket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    const cipher = secure?.getCipher();
    const assertions = {
      ...context,
      isTLS: secure !== undefined,
      ...(secure
        ? {
            tls: {
              version: GO_TLS_VERSION[secure.getProtocol() ?? ''] ?? secure.getProtocol(),
              serverName: secure.servername || '',
              ...(secure.alpnProtocol ? { negotiatedProtocol: secure.alpnProtocol } : {}),
              cipherSuite: cipher?.standardName ?? '',
            },
          }
        : {}),
    };
    socket.write(TCP_WELCOME);
    let pending = '';
    const answerLine = (line: string) => {
      const text = line.endsWith('\r') ? line.slice(0, -1) : line;
      if (text === 'TEST') socket.write(`${JSON.stringify(assertions)}\n`);
      else if (text === 'IS_TLS') socket.write(`${secure !== undefined}\n`);
      else if (text === 'PING') socket.write('PONG\n');
    };
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      pending += chunk;
      for (let at = pending.indexOf('\n'); at >= 0; at = pending.indexOf('\n')) {
        answerLine(pending.slice(0, at));
        pending = pending.slice(at + 1);
      }
      if (pending.length > MAX_LINE) socket.destroy();
    });
    // the scanner's last line needs no newline; then the server closes its side
    socket.on('end', () => {
      if (pending !== '') answerLine(pending);
      socket.end();
    });
  };
  const plain = createTcpServer((socket) => serve(socket));
  const secure = tls
    ? createTlsSocketServer({ cert: tls.cert, key: tls.key, minVersion: 'TLSv1.2' }, (socket) => serve(socket, socket))
    : undefined;
  // a failed handshake is logged and closed by echo-basic
  secure?.on('tlsClientError', (_error, socket) => socket.destroy());
  const listening: Array<TcpServer | TlsServer> = [];
  try {
    for (const [server, port] of [[plain, ports.tcp], ...(secure ? [[secure, ports.tls] as const] : [])] as const) {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, ip, () => resolve());
      });
      listening.push(server);
    }
  } catch (error) {
    await Promise.all(listening.map((s) => new Promise((resolve) => s.close(resolve))));
    throw error;
  }
  return {
    pod,
    namespace,
    ip,
    port: ports.tcp,
    labels,
    echoed: [],
    targets: [
      { targetPort: 3000, protocol: 'TCP', port: ports.tcp },
      ...(secure ? [{ targetPort: 8443, protocol: 'TCP' as const, port: ports.tls }] : []),
    ],
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await Promise.all(listening.map((s) => new Promise((resolve) => s.close(resolve))));
    },
  };
}

/** the UDP echo server's read buffer: a longer datagram is cut there, as Go's ReadFromUDP does */
const UDP_BUFFER = 1024;

/**
 * startUdpEchoPod is echo-basic with UDP_ECHO_SERVER (conformance/echo-basic/udpechoserver) on the port standing for
 * UDP_PORT (8080): each datagram is answered with one datagram, its EchoResponse as JSON — the request's text and the
 * pod's namespace, service (SERVICE_NAME) and name.
 */
export async function startUdpEchoPod(
  ip: string,
  port: number,
  pod: string,
  namespace: string,
  service: string,
  labels: Readonly<Record<string, string>>,
): Promise<EchoPod> {
  return startUdpPod(ip, port, { pod, namespace, labels }, 8080, (message) => {
    const request = message.subarray(0, UDP_BUFFER).toString('utf8');
    return Buffer.from(JSON.stringify({ request, namespace, ingress: '', service, pod }));
  });
}

function bindUdp(socket: DgramSocket, ip: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    socket.once('error', reject);
    socket.bind(port, ip, () => {
      socket.off('error', reject);
      resolve();
    });
  });
}

/**
 * startUdpPod is a UDP pod on `ip:port` standing for `targetPort`: each datagram gets `answer`'s reply (none when it
 * gives null).
 */
async function startUdpPod(
  ip: string,
  port: number,
  who: { readonly pod: string; readonly namespace: string; readonly labels: Readonly<Record<string, string>> },
  targetPort: number,
  answer: (message: Buffer, from: { address: string; port: number }) => Buffer | null,
): Promise<EchoPod> {
  const socket = createSocket('udp4');
  socket.on('message', (message, from) => {
    const reply = answer(message, from);
    if (reply) socket.send(reply, from.port, from.address);
  });
  await bindUdp(socket, ip, port);
  return {
    ...who,
    ip,
    port,
    echoed: [],
    targets: [{ targetPort, protocol: 'UDP', port }],
    close: () => new Promise((resolve) => socket.close(() => resolve())),
  };
}

/**
 * startCorednsPod stands for the base's coredns Deployment with its Corefile: names in `foo.bar.com` are answered by
 * the whoami plugin (no answer; the additional section holds the client's address as an A record and its port as the
 * SRV record `_udp.<name>`, authoritative); every other name is forwarded to 8.8.8.8 and 9.9.9.9, which a loopback
 * cluster cannot reach, so it is answered as coredns answers when its upstreams fail: SERVFAIL. A datagram that is not
 * a DNS query is dropped.
 */
export async function startCorednsPod(
  ip: string,
  port: number,
  pod: string,
  namespace: string,
  labels: Readonly<Record<string, string>>,
): Promise<EchoPod> {
  return startUdpPod(ip, port, { pod, namespace, labels }, 53, (message, from) =>
    corednsReply(message, from.address, from.port),
  );
}

/** DNS: the question's name as wire-format labels and as text, or null when the query is malformed */
function readQuestion(query: Buffer): { wire: Buffer; name: string; end: number } | null {
  if (query.length < 12 || query.readUInt16BE(4) !== 1) return null;
  const labels: string[] = [];
  let at = 12;
  for (;;) {
    const length = query[at];
    // a query's name is never compressed; 63 is a label's longest
    if (length === undefined || length > 63) return null;
    at++;
    if (length === 0) break;
    if (at + length > query.length) return null;
    labels.push(query.toString('latin1', at, at + length));
    at += length;
  }
  if (at + 4 > query.length || at - 12 > 255) return null;
  return { wire: query.subarray(12, at), name: labels.join('.').toLowerCase(), end: at + 4 };
}

/** corednsReply is the base's Corefile's answer to one datagram, or null (dropped). */
export function corednsReply(query: Buffer, clientIp: string, clientPort: number): Buffer | null {
  const question = readQuestion(query);
  // a response (QR set) is not a query
  if (question === null || (query[2]! & 0x80) !== 0) return null;
  const whoami = question.name === 'foo.bar.com' || question.name.endsWith('.foo.bar.com');
  const header = Buffer.alloc(12);
  header.writeUInt16BE(query.readUInt16BE(0), 0);
  // QR, the query's opcode and RD; AA for the zone's own answer, else RA and SERVFAIL (2)
  const opcodeRd = query[2]! & 0x79;
  header[2] = 0x80 | opcodeRd | (whoami ? 0x04 : 0);
  header[3] = whoami ? 0 : 0x80 | 2;
  header.writeUInt16BE(1, 4);
  header.writeUInt16BE(whoami ? 2 : 0, 10);
  const questionSection = query.subarray(12, question.end);
  if (!whoami) return Buffer.concat([header, questionSection]);
  const qclass = query.readUInt16BE(question.end - 2);
  const record = (name: Buffer, type: number, data: Buffer) => {
    const fixed = Buffer.alloc(10);
    fixed.writeUInt16BE(type, 0);
    fixed.writeUInt16BE(qclass, 2);
    fixed.writeUInt32BE(0, 4);
    fixed.writeUInt16BE(data.length, 8);
    return Buffer.concat([name, fixed, data]);
  };
  const address = Buffer.from(clientIp.split('.').map(Number));
  const srv = Buffer.alloc(7);
  srv.writeUInt16BE(clientPort, 4);
  return Buffer.concat([
    header,
    questionSection,
    record(question.wire, 1, address),
    record(Buffer.concat([Buffer.from([4]), Buffer.from('_udp'), question.wire]), 33, srv),
  ]);
}
