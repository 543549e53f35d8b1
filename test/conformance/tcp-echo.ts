/**
 * echo-basic's TCP server (conformance/echo-basic/tcpserver/tcpserver.go, TCP_ECHO_SERVER) and the conformance
 * suite's client for it (conformance/utils/tcp/tcp.go MakeTCPRequestAndExpectEventuallyValidResponse), for the
 * TLSRoute Terminate and Mixed tests (tests/tls-terminate.ts). The pod says WelcomeMessage once connected (over TLS,
 * after the handshake), then answers each line: `PING` → `PONG`, `IS_TLS` → `true`/`false`, `TEST` → its JSON
 * (namespace, pod, service, ports, isTLS and, over TLS, the SNI it was sent).
 */
import { createServer, type Server, type Socket } from 'node:net';
import { connect as tlsConnect, createServer as createTlsServer, type TLSSocket } from 'node:tls';
import type { EchoPod } from './echo.js';

export const WELCOME_MESSAGE = 'Gateway API Test TCP Server\n';

/** TcpEchoPod is one tcp-backend replica: plain TCP on `port` (targetPort 3000) and, with a certificate, TLS on `tlsPort` (8443). */
export interface TcpEchoPod extends EchoPod {
  readonly tlsPort: number | null;
}

/** the Service targetPorts echo-basic's tcpserver listens on (TCP_PORT, TLS_PORT defaults) */
export const TCP_TARGET_PORT = 3000;
export const TLS_TARGET_PORT = 8443;

/** startTcpEchoPod listens on `ip`:`ports.tcp` (and `ports.tls` with `tls`) as pod `pod` of `namespace`. */
export async function startTcpEchoPod(
  ip: string,
  ports: { readonly tcp: number; readonly tls: number },
  pod: string,
  namespace: string,
  labels: Readonly<Record<string, string>>,
  tls?: { readonly cert: string; readonly key: string },
): Promise<TcpEchoPod> {
  const context = {
    namespace,
    ingress: '',
    service: '',
    pod,
    tcpport: String(TCP_TARGET_PORT),
    ...(tls ? { tlsport: String(TLS_TARGET_PORT) } : {}),
  };
  const serve = (socket: Socket, secure: TLSSocket | null) => {
    socket.on('error', () => undefined);
    const payload = JSON.stringify({
      ...context,
      isTLS: secure !== null,
      ...(secure
        ? {
            tls: {
              version: secure.getProtocol() === 'TLSv1.3' ? 'TLS 1.3' : 'TLS 1.2',
              serverName: (secure as TLSSocket & { servername?: string | false }).servername || '',
              cipherSuite: secure.getCipher().standardName,
            },
          }
        : {}),
    });
    socket.write(WELCOME_MESSAGE);
    let buffered = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      buffered += chunk;
      // bufio.Scanner's lines (64 KiB at most): a client that never sends a newline is cut off
      if (buffered.length > 65_536) return void socket.destroy();
      for (let at = buffered.indexOf('\n'); at >= 0; at = buffered.indexOf('\n')) {
        const line = buffered.slice(0, at).replace(/\r$/, '');
        buffered = buffered.slice(at + 1);
        if (line === 'TEST') socket.write(`${payload}\n`);
        else if (line === 'IS_TLS') socket.write(`${secure !== null}\n`);
        else if (line === 'PING') socket.write('PONG\n');
      }
    });
  };
  const servers: Server[] = [createServer((socket) => serve(socket, null))];
  if (tls)
    servers.push(
      createTlsServer({ cert: tls.cert, key: tls.key, minVersion: 'TLSv1.2' }, (socket) => serve(socket, socket)),
    );
  const listening = [ports.tcp, ports.tls];
  await Promise.all(
    servers.map(
      (server, i) =>
        new Promise<void>((resolve, reject) => {
          server.once('error', reject);
          server.listen(listening[i], ip, () => resolve());
        }),
    ),
  );
  return {
    pod,
    namespace,
    ip,
    port: ports.tcp,
    tlsPort: tls ? ports.tls : null,
    labels,
    echoed: [],
    close: async () => {
      await Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
    },
  };
}

/**
 * tcpEndpointSlices is the EndpointSlice controller's work for the Services that select tcp-backend pods: each
 * Service port whose targetPort the pods listen on (3000 plain; 8443 TLS when they have a certificate).
 */
export function tcpEndpointSlices(
  services: readonly {
    metadata: { name: string; namespace: string };
    spec: {
      selector?: Record<string, string>;
      ports?: { name?: string; port: number; targetPort?: number | string }[];
    };
  }[],
  pods: readonly TcpEchoPod[],
): object[] {
  const slices: object[] = [];
  for (const s of services) {
    const selector = Object.entries(s.spec.selector ?? {});
    const selected = pods.filter(
      (p) =>
        selector.length > 0 && p.namespace === s.metadata.namespace && selector.every(([k, v]) => p.labels[k] === v),
    );
    const first = selected[0];
    if (first === undefined) continue;
    const ports = (s.spec.ports ?? []).flatMap((p) => {
      const target = p.targetPort ?? p.port;
      if (target === TCP_TARGET_PORT) return [{ name: p.name ?? '', port: first.port, protocol: 'TCP' }];
      if (target === TLS_TARGET_PORT && first.tlsPort !== null)
        return [{ name: p.name ?? '', port: first.tlsPort, protocol: 'TCP' }];
      return [];
    });
    slices.push({
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: {
        name: `${s.metadata.name}-tcp-echo`,
        namespace: s.metadata.namespace,
        labels: { 'kubernetes.io/service-name': s.metadata.name },
      },
      addressType: 'IPv4',
      ports,
      endpoints: selected.map((pod) => ({
        addresses: [pod.ip],
        conditions: { ready: true, serving: true, terminating: false },
        targetRef: { kind: 'Pod', name: pod.pod, namespace: pod.namespace },
      })),
    });
  }
  return slices;
}

/** ExpectedTcpResponse is tcp.ExpectedResponse. */
export interface ExpectedTcpResponse {
  readonly backendIsTLS: boolean;
  /** the pod name's prefix */
  readonly backend: string;
  readonly namespace: string;
  /** when set, the SNI the backend's TLS server saw */
  readonly hostname?: string;
}

/**
 * tcpExchange is one pass of WaitForValidTCPResponse's loop: dial (TLS with `serverName`, TLS 1.2 at least, trusting
 * `ca`), read the welcome, PING, IS_TLS and TEST. A failed dial or read is `{ retry }` (Go logs it and tries again); a
 * wrong answer is `{ wrong }` (Go's assertions fail the test); null when every answer is the expected one.
 */
export function tcpExchange(
  address: string,
  port: number,
  serverName: string,
  ca: string,
  expected: ExpectedTcpResponse,
): Promise<{ retry: string } | { wrong: string } | null> {
  return new Promise((resolve) => {
    let settled = false;
    const finish = (result: { retry: string } | { wrong: string } | null) => {
      if (settled) return;
      settled = true;
      socket.destroy();
      resolve(result);
    };
    const socket = tlsConnect({ host: address, port, servername: serverName, ca, minVersion: 'TLSv1.2' });
    socket.setTimeout(5_000, () => finish({ retry: 'timeout' }));
    socket.on('error', (error) => finish({ retry: error.message }));
    socket.on('close', () => finish({ retry: 'connection closed' }));
    socket.setEncoding('utf8');
    const asked = ['PING', 'IS_TLS', 'TEST'];
    const lines: string[] = [];
    let buffered = '';
    socket.on('data', (chunk: string) => {
      buffered += chunk;
      for (let at = buffered.indexOf('\n'); at >= 0; at = buffered.indexOf('\n')) {
        lines.push(buffered.slice(0, at + 1));
        buffered = buffered.slice(at + 1);
        const answered = lines.length;
        if (answered === 1 && lines[0] !== WELCOME_MESSAGE)
          return finish({ wrong: `TCPServer welcome message does not match: ${JSON.stringify(lines[0])}` });
        if (answered === 2 && lines[1] !== 'PONG\n')
          return finish({ wrong: `PING answered ${JSON.stringify(lines[1])}` });
        if (answered === 3 && lines[2] !== `${expected.backendIsTLS}\n`)
          return finish({ wrong: `IS_TLS answered ${JSON.stringify(lines[2])}, want ${expected.backendIsTLS}` });
        if (answered === 4) {
          let payload: { namespace?: string; pod?: string; tls?: { serverName?: string } };
          try {
            payload = JSON.parse(lines[3]!) as typeof payload;
          } catch (error) {
            return finish({ retry: `TEST answered no JSON: ${(error as Error).message}` });
          }
          if (payload.namespace !== expected.namespace)
            return finish({ wrong: `namespace ${payload.namespace}, want ${expected.namespace}` });
          if (!payload.pod?.startsWith(`${expected.backend}-`))
            return finish({ wrong: `pod ${payload.pod} is not of backend ${expected.backend}` });
          if (expected.hostname && payload.tls?.serverName !== expected.hostname)
            return finish({ wrong: `the backend saw SNI ${payload.tls?.serverName}, want ${expected.hostname}` });
          return finish(null);
        }
        socket.write(`${asked[answered - 1]}\n`);
      }
    });
  });
}
