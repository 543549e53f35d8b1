/**
 * TCP, TLS and UDP to a Gateway and the checks of their answers, as gateway-api's conformance/utils/tcp and
 * conformance/utils/udp do against echo-basic's TCP and UDP servers (test/conformance/echo.ts), and the DNS exchange
 * UDPRoute's test makes with coredns (miekg/dns Exchange).
 */
import { randomInt } from 'node:crypto';
import { createSocket } from 'node:dgram';
import { connect as tcpConnect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { TCP_WELCOME } from './echo.js';
import type { Harness } from './harness.js';
import type { Timing } from './http.js';
import type { NN } from './steps.js';

const GW = 'gateway.networking.k8s.io/v1';

/** Address is where a Gateway listener is reached: the Gateway's address and nginx's port for the listener. */
export interface Address {
  readonly host: string;
  readonly port: number;
}

/**
 * gatewayAddress is kubernetes.WaitForGatewayAddress: the Gateway's first status address, once its conditions are of
 * its latest generation, with the port of the listener named (the first listener when none is).
 */
export async function gatewayAddress(h: Harness, gw: NN, listener: string | undefined, ms: number): Promise<Address> {
  const started = Date.now();
  let last = '';
  while (Date.now() - started < ms) {
    const g = (await h.get(GW, 'Gateway', gw.namespace, gw.name)) as {
      metadata?: { generation?: number };
      spec?: { listeners?: { name: string; port: number }[] };
      status?: { addresses?: { value: string }[]; conditions?: { observedGeneration?: number }[] };
    } | null;
    const l = g?.spec?.listeners?.find((x) => listener === undefined || x.name === listener);
    const address = g?.status?.addresses?.[0]?.value;
    const current = (g?.status?.conditions ?? []).every((c) => c.observedGeneration === g?.metadata?.generation);
    if (l && address && current) return { host: address, port: h.mapPort(l.port) };
    last = g ? JSON.stringify(g.status ?? {}) : 'no such Gateway';
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`Gateway ${gw.namespace}/${gw.name} has no address for listener ${listener ?? '(first)'}: ${last}`);
}

/** LineReader reads a connection line by line (bufio.Reader's ReadString('\n')), failing on its end or error. */
class LineReader {
  private buffered = '';
  private waiting: { resolve: (line: string) => void; reject: (e: Error) => void } | null = null;
  private failure: Error | null = null;

  constructor(socket: Socket) {
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      this.buffered += chunk;
      this.deliver();
    });
    const fail = (error: Error) => {
      this.failure ??= error;
      this.deliver();
    };
    socket.on('end', () => fail(new Error('EOF')));
    socket.on('close', () => fail(new Error('connection closed')));
    socket.on('error', fail);
  }

  private deliver(): void {
    if (!this.waiting) return;
    const at = this.buffered.indexOf('\n');
    if (at >= 0) {
      const line = this.buffered.slice(0, at + 1);
      this.buffered = this.buffered.slice(at + 1);
      const { resolve } = this.waiting;
      this.waiting = null;
      resolve(line);
    } else if (this.failure) {
      const { reject } = this.waiting;
      this.waiting = null;
      reject(this.failure);
    }
  }

  line(): Promise<string> {
    return new Promise((resolve, reject) => {
      this.waiting = { resolve, reject };
      this.deliver();
    });
  }
}

/** TLS for a TCP client: the name to send and the certificate (PEM) to trust, as tcp.MakeTCPRequest… is given. */
export interface ClientTls {
  readonly serverName: string;
  readonly ca: string;
}

/** dial connects (and for TLS completes the handshake, verifying the certificate and name as Go does) or fails. */
function dial(address: Address, tls: ClientTls | undefined, timeoutMs: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = tls
      ? tlsConnect(
          {
            host: address.host,
            port: address.port,
            servername: tls.serverName,
            ca: tls.ca,
            minVersion: 'TLSv1.2',
            // Go trusts a certificate of RootCAs itself, whoever issued it
            allowPartialTrustChain: true,
          },
          () => done(),
        )
      : tcpConnect({ host: address.host, port: address.port }, () => done());
    const timer = setTimeout(() => socket.destroy(new Error(`no connection within ${timeoutMs} ms`)), timeoutMs);
    const done = () => {
      clearTimeout(timer);
      socket.off('error', failed);
      resolve(socket);
    };
    const failed = (error: Error) => {
      clearTimeout(timer);
      socket.destroy();
      reject(error);
    };
    socket.once('error', failed);
  });
}

/** TcpExpected is tcp.ExpectedResponse. */
export interface TcpExpected {
  readonly backendIsTls?: boolean;
  /** the pod name's prefix (`<backend>-`) */
  readonly backend: string;
  readonly namespace: string;
  /** the SNI name the backend's TLS got, when set */
  readonly hostname?: string;
}

interface TcpAssertions {
  namespace?: string;
  pod?: string;
  tls?: { serverName?: string };
}

/**
 * tcpExchange is one attempt of WaitForValidTCPResponse: the welcome line, PING, IS_TLS and TEST, each answer read
 * back. A connection or read error is null (Go retries it); a completed exchange gives what it found wrong, '' for
 * nothing (Go's asserts mark the test failed there, they do not retry).
 */
async function tcpExchange(
  address: Address,
  tls: ClientTls | undefined,
  expected: TcpExpected,
  timeoutMs: number,
): Promise<{ wrong: string } | { error: string }> {
  let socket: Socket;
  try {
    socket = await dial(address, tls, timeoutMs);
  } catch (error) {
    return { error: `client could not connect: ${(error as Error).message}` };
  }
  socket.setTimeout(timeoutMs, () => socket.destroy(new Error(`no answer within ${timeoutMs} ms`)));
  const reader = new LineReader(socket);
  const wrong: string[] = [];
  try {
    const welcome = await reader.line();
    if (welcome !== TCP_WELCOME) wrong.push(`welcome message ${JSON.stringify(welcome)}`);
    socket.write('PING\n');
    const pong = await reader.line();
    if (pong !== 'PONG\n') wrong.push(`PING answered ${JSON.stringify(pong)}`);
    socket.write('IS_TLS\n');
    const isTls = (await reader.line()).replace(/\n$/, '');
    if (isTls !== String(expected.backendIsTls ?? false))
      wrong.push(`IS_TLS answered ${isTls}, want ${expected.backendIsTls ?? false}`);
    socket.write('TEST\n');
    const line = await reader.line();
    let payload: TcpAssertions;
    try {
      payload = JSON.parse(line) as TcpAssertions;
    } catch (error) {
      return { error: `TEST answered ${JSON.stringify(line)}: ${(error as Error).message}` };
    }
    if (payload.namespace !== expected.namespace)
      wrong.push(`namespace ${payload.namespace}, want ${expected.namespace}`);
    if (!(payload.pod ?? '').startsWith(`${expected.backend}-`))
      wrong.push(`backend name does not match with pod prefix. pod=${payload.pod} and backend=${expected.backend}`);
    if (expected.hostname !== undefined && payload.tls?.serverName !== expected.hostname)
      wrong.push(`SNI ${payload.tls?.serverName}, want ${expected.hostname}`);
    return { wrong: wrong.join('; ') };
  } catch (error) {
    return { error: (error as Error).message };
  } finally {
    socket.destroy();
  }
}

/**
 * expectTcpEventually is tcp.MakeTCPRequestAndExpectEventuallyValidResponse: connections (TLS when `tls` is given)
 * until one completes the exchange, within maxMs, one every delayMs; what that exchange found wrong fails the test.
 */
export async function expectTcpEventually(
  address: Address,
  tls: ClientTls | undefined,
  expected: TcpExpected,
  timing: Timing,
): Promise<void> {
  const started = Date.now();
  let last = 'no attempt';
  while (Date.now() - started < timing.maxMs) {
    const got = await tcpExchange(address, tls, expected, 5_000);
    if ('wrong' in got) {
      if (got.wrong !== '') throw new Error(`TCP answer from ${address.host}:${address.port}: ${got.wrong}`);
      return;
    }
    last = got.error;
    await new Promise((r) => setTimeout(r, timing.delayMs));
  }
  throw new Error(`no valid TCP answer from ${address.host}:${address.port} within ${timing.maxMs} ms; last: ${last}`);
}

/** tcpEchoSendOnce is tcp.EchoSendOnce: the welcome line, then TEST, and the pod that answered. */
export async function tcpEchoSendOnce(address: Address, timeoutMs: number): Promise<string> {
  const socket = await dial(address, undefined, timeoutMs);
  socket.setTimeout(timeoutMs, () => socket.destroy(new Error(`no answer within ${timeoutMs} ms`)));
  try {
    const reader = new LineReader(socket);
    const welcome = await reader.line();
    if (welcome !== TCP_WELCOME) throw new Error(`unexpected TCP welcome message: ${JSON.stringify(welcome)}`);
    socket.write('TEST\n');
    const line = await reader.line();
    const pod = (JSON.parse(line) as TcpAssertions).pod;
    if (!pod) throw new Error(`TCP echo response missing pod name: ${JSON.stringify(line)}`);
    return pod;
  } finally {
    socket.destroy();
  }
}

/** tcpAddressAvailable is tcp.ExpectAddressBeAvailable: a TCP connection opens, within maxMs, one try per pollMs. */
export async function tcpAddressAvailable(address: Address, pollMs: number, maxMs: number): Promise<void> {
  const started = Date.now();
  let last = '';
  while (Date.now() - started < maxMs) {
    try {
      (await dial(address, undefined, 5_000)).destroy();
      return;
    } catch (error) {
      last = (error as Error).message;
    }
    await new Promise((r) => setTimeout(r, pollMs));
  }
  throw new Error(`failed waiting for TCP connection to ${address.host}:${address.port} after ${maxMs} ms: ${last}`);
}

/** exchangeDatagram sends one datagram from a socket of its own and gives the first reply, or fails at timeoutMs. */
function exchangeDatagram(address: Address, payload: Buffer, timeoutMs: number): Promise<Buffer> {
  const socket = createSocket('udp4');
  return new Promise<Buffer>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no UDP reply within ${timeoutMs} ms`)), timeoutMs);
    socket.on('message', (message) => {
      clearTimeout(timer);
      resolve(message);
    });
    // a refused datagram (ICMP port unreachable) is Go's read error too
    socket.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    socket.connect(address.port, address.host, () => socket.send(payload));
  }).finally(() => socket.close());
}

/** the fields of udpechoserver's EchoResponse the tests read */
interface UdpEcho {
  request?: string;
  namespace?: string;
  service?: string;
  pod?: string;
}

/** udpEchoSendOnce is the UDPRoute tests' udpEchoSendOnce: one datagram, and the pod that answered. */
export async function udpEchoSendOnce(address: Address, timeoutMs: number): Promise<string> {
  const reply = await exchangeDatagram(address, Buffer.from('gateway-api-conformance-udp-weight\n'), timeoutMs);
  const text = reply.toString('utf8');
  const pod = (JSON.parse(text) as UdpEcho).pod;
  if (!pod) throw new Error(`UDP echo response missing pod name: ${JSON.stringify(text)}`);
  return pod;
}

/**
 * expectUdpEcho is udp.ExpectEchoResponseFromBackend (udp.ExpectEchoResponse without `expected`): a probe datagram
 * once per pollMs until a reply comes (and, when given, from that Service and namespace), within `ms`.
 */
export async function expectUdpEcho(
  address: Address,
  ms: number,
  pollMs: number,
  expected: { readonly service?: string; readonly namespace?: string } = {},
): Promise<void> {
  const started = Date.now();
  let last = 'no attempt';
  while (Date.now() - started < ms) {
    try {
      const reply = await exchangeDatagram(address, Buffer.from('gateway-api-conformance-udp-echo'), 2_000);
      if (expected.service === undefined && expected.namespace === undefined) return;
      const echo = JSON.parse(reply.toString('utf8')) as UdpEcho;
      if (expected.service !== undefined && echo.service !== expected.service)
        last = `service ${echo.service}, want ${expected.service} (pod ${echo.pod})`;
      else if (expected.namespace !== undefined && echo.namespace !== expected.namespace)
        last = `namespace ${echo.namespace}, want ${expected.namespace} (pod ${echo.pod})`;
      else return;
    } catch (error) {
      last = (error as Error).message;
    }
    await new Promise((r) => setTimeout(r, pollMs));
  }
  throw new Error(`UDP echo probe never succeeded against ${address.host}:${address.port}: ${last}`);
}

/** dnsQuery is miekg/dns's SetQuestion(name, TypeA) message: a random ID, RD set, one IN A question. */
export function dnsQuery(name: string): { id: number; message: Buffer } {
  const id = randomInt(0, 0x10000);
  const header = Buffer.alloc(12);
  header.writeUInt16BE(id, 0);
  header[2] = 0x01;
  header.writeUInt16BE(1, 4);
  const labels = name
    .replace(/\.$/, '')
    .split('.')
    .map((l) => Buffer.concat([Buffer.from([l.length]), Buffer.from(l, 'latin1')]));
  return { id, message: Buffer.concat([header, ...labels, Buffer.from([0, 0, 1, 0, 1])]) };
}

/** skipName walks a (possibly compressed) name from `at`, giving where it ends, or throws when it runs off the end. */
function skipName(message: Buffer, at: number): number {
  for (;;) {
    const length = message[at];
    if (length === undefined) throw new Error('dns: name runs off the message');
    if ((length & 0xc0) === 0xc0) return at + 2;
    if (length === 0) return at + 1;
    at += 1 + length;
  }
}

/**
 * checkDnsReply is what dns.Exchange asks of a reply: a whole, parseable message whose ID is the query's (any rcode
 * is an answer); it throws why not.
 */
export function checkDnsReply(reply: Buffer, id: number): void {
  if (reply.length < 12) throw new Error('dns: reply shorter than its header');
  if (reply.readUInt16BE(0) !== id) throw new Error('dns: id mismatch');
  if ((reply[2]! & 0x80) === 0) throw new Error('dns: not a response');
  let at = 12;
  for (let i = 0; i < reply.readUInt16BE(4); i++) at = skipName(reply, at) + 4;
  const records = reply.readUInt16BE(6) + reply.readUInt16BE(8) + reply.readUInt16BE(10);
  for (let i = 0; i < records; i++) {
    at = skipName(reply, at);
    if (at + 10 > reply.length) throw new Error('dns: record runs off the message');
    at += 10 + reply.readUInt16BE(at + 8);
  }
  if (at > reply.length) throw new Error('dns: record data runs off the message');
}

/** dnsExchange is dns.Exchange over UDP: one query, its reply checked. */
export async function dnsExchange(address: Address, name: string, timeoutMs: number): Promise<void> {
  const { id, message } = dnsQuery(name);
  checkDnsReply(await exchangeDatagram(address, message, timeoutMs), id);
}
