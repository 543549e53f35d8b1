/**
 * OpenTelemetry through the real controller and its nginx (issue 33): a backend that answers the traceparent and
 * tracestate it received, and an OTLP/HTTP receiver that decodes what the controller exports with
 * opentelemetry-proto's own definitions (the protobufjs root generated from it). With and without an incoming
 * traceparent, trusted or not, per Ingress on and off, hostile headers, sampling over 10,000 requests, and a
 * collector that is down. Run with routes pushed (the default) and with rendered locations (--routes-as-data=false).
 */
import { createServer, request, type Agent, type IncomingMessage, type Server } from 'node:http';
import { Agent as HttpAgent } from 'node:http';
import { createRequire } from 'node:module';
import { readFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, waitFor, type Cluster } from '../support/cluster.js';
import { ingress, ingressClass, serviceWithEndpoints } from '../support/manifests.js';
import { freePort } from '../support/net.js';

const require = createRequire(import.meta.url);
// biome-ignore lint/suspicious/noExplicitAny: the generated protobufjs root has no types
const root: any = require('otlp-proto-definitions/build/src/generated/root.js');
const ExportTraceServiceRequest = root.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;

/** ReceivedSpan is one decoded span, its ids as hex, its attributes flattened, with its resource's service.name. */
interface ReceivedSpan {
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId: string;
  readonly name: string;
  readonly kind: number;
  readonly status: number;
  readonly start: bigint;
  readonly end: bigint;
  readonly attributes: Record<string, string | number>;
  readonly service: string;
  readonly scope: string;
}

const hex = (bytes: Uint8Array | undefined) => Buffer.from(bytes ?? []).toString('hex');

// biome-ignore lint/suspicious/noExplicitAny: decoded protobufjs messages
function anyValue(v: any): string | number {
  if (v.stringValue !== undefined && v.stringValue !== null && v.stringValue !== '') return v.stringValue;
  if (v.intValue !== undefined && v.intValue !== null) return Number(v.intValue);
  if (v.doubleValue) return v.doubleValue;
  return v.stringValue ?? '';
}

/** Receiver is a loopback OTLP/HTTP collector: POST /v1/traces, protobuf, decoded; `down` answers 503. */
interface Receiver {
  readonly port: number;
  readonly spans: ReceivedSpan[];
  requests: number;
  down: boolean;
  close(): Promise<void>;
}

async function startReceiver(): Promise<Receiver> {
  const port = await freePort();
  const spans: ReceivedSpan[] = [];
  const state = { requests: 0, down: false };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      state.requests++;
      if (state.down || req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(state.down ? 503 : 404).end();
        return;
      }
      const message = ExportTraceServiceRequest.decode(Buffer.concat(chunks));
      for (const rs of message.resourceSpans) {
        // biome-ignore lint/suspicious/noExplicitAny: decoded protobufjs messages
        const service = rs.resource.attributes.find((a: any) => a.key === 'service.name');
        for (const ss of rs.scopeSpans)
          for (const s of ss.spans) {
            const attributes: Record<string, string | number> = {};
            for (const a of s.attributes) attributes[a.key] = anyValue(a.value);
            spans.push({
              traceId: hex(s.traceId),
              spanId: hex(s.spanId),
              parentSpanId: hex(s.parentSpanId),
              name: s.name,
              kind: s.kind,
              status: s.status?.code ?? 0,
              start: BigInt(s.startTimeUnixNano.toString()),
              end: BigInt(s.endTimeUnixNano.toString()),
              attributes,
              service: service ? anyValue(service.value) : '',
              scope: ss.scope?.name ?? '',
            } as ReceivedSpan);
          }
      }
      res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    port,
    spans,
    get requests() {
      return state.requests;
    },
    set requests(n: number) {
      state.requests = n;
    },
    get down() {
      return state.down;
    },
    set down(v: boolean) {
      state.down = v;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** the backend answers, as JSON, the trace headers it received (null when absent) */
async function startBackend(ip: string, port: number): Promise<Server> {
  const server = createServer((req, res) => {
    req.resume();
    const status = req.url?.endsWith('/fail') ? 502 : 200;
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({ traceparent: req.headers.traceparent ?? null, tracestate: req.headers.tracestate ?? null }),
    );
  });
  await new Promise<void>((resolve) => server.listen(port, ip, resolve));
  return server;
}

interface Seen {
  readonly status: number;
  readonly traceparent: string | null;
  readonly tracestate: string | null;
}

/**
 * get sends one request through nginx (raw header values as given; a POST of `body` when there is one) and reads what
 * the backend saw
 */
function get(
  port: number,
  host: string,
  path: string,
  headers: Record<string, string> = {},
  agent?: Agent,
  body?: string,
) {
  return new Promise<Seen>((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: body === undefined ? 'GET' : 'POST',
        headers: { host, ...headers },
        ...(agent ? { agent } : { agent: false }),
      },
      (res: IncomingMessage) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => {
          const seen = res.headers['content-type'] === 'application/json' ? JSON.parse(body) : {};
          resolve({
            status: res.statusCode ?? 0,
            traceparent: seen.traceparent ?? null,
            tracestate: seen.tracestate ?? null,
          });
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** rawGet sends the header lines byte for byte on its own connection (a client library refuses control bytes) */
function rawGet(port: number, host: string, path: string, headers: Record<string, string>): Promise<Seen> {
  const head = [`GET ${path} HTTP/1.1`, `Host: ${host}`, 'Connection: close']
    .concat(Object.entries(headers).map(([k, v]) => `${k}: ${v}`))
    .join('\r\n');
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(Buffer.from(`${head}\r\n\r\n`, 'latin1')));
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', reject);
    socket.on('end', () => {
      const reply = Buffer.concat(chunks).toString('latin1');
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(reply)?.[1] ?? 0);
      // the body, whether chunked or not: the backend's one JSON object
      const body = reply.slice(reply.indexOf('{'), reply.lastIndexOf('}') + 1);
      const seen = body.startsWith('{') ? JSON.parse(body) : {};
      resolve({ status, traceparent: seen.traceparent ?? null, tracestate: seen.tracestate ?? null });
    });
  });
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-(0[01])$/;

/** parts of a traceparent nginx sent on: trace id, span id, sampled */
function parts(traceparent: string | null) {
  const m = TRACEPARENT.exec(traceparent ?? '');
  expect(m, `a valid traceparent, not ${traceparent}`).not.toBeNull();
  return { trace: m![1]!, span: m![2]!, sampled: m![3] === '01' };
}

const INCOMING_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const INCOMING_PARENT = '00f067aa0ba902b7';
const INCOMING = `00-${INCOMING_TRACE}-${INCOMING_PARENT}-01`;
const STATE = 'rojo=00f067aa0ba902b7,congo=t61rcWkgMzE,tenant@vendor=x y';

/** hostile traceparents: each must be replaced by a new trace */
const HOSTILE_TRACEPARENTS: readonly string[] = [
  INCOMING.toUpperCase(),
  `ff-${INCOMING_TRACE}-${INCOMING_PARENT}-01`,
  `00-${'0'.repeat(32)}-${INCOMING_PARENT}-01`,
  `00-${INCOMING_TRACE}-${'0'.repeat(16)}-01`,
  `${INCOMING}-extra`,
  `${INCOMING} `.repeat(40),
  INCOMING.slice(0, 54),
  `00-${INCOMING_TRACE}-${INCOMING_PARENT}-0g`,
  `00_${INCOMING_TRACE}_${INCOMING_PARENT}_01`,
  `00-${INCOMING_TRACE.slice(0, 31)}z-${INCOMING_PARENT}-01`,
  `00-${INCOMING_TRACE}-${INCOMING_PARENT}-01,00-${INCOMING_TRACE}-${INCOMING_PARENT}-01`,
  `00-${INCOMING_TRACE}-${INCOMING_PARENT}-01\u0001`,
  `00-${INCOMING_TRACE}-${INCOMING_PARENT}-\u00e91`,
];

/** hostile tracestates beside a valid traceparent: each must not reach the backend */
const HOSTILE_TRACESTATES: readonly string[] = [
  `a=${'x'.repeat(600)}`,
  Array.from({ length: 33 }, (_, i) => `k${i}=v`).join(','),
  'Upper=1',
  'k=v=w',
  'k=',
  '=v',
  'k=v\u0001',
  'k=v\u007f',
  'k=v\u00e9',
  'k=v,k2',
  'k=v,\u00a0k2=v',
  `${'a'.repeat(257)}=v`,
  'k=v, bad key=1',
];

function scene(ports: { api: number; receiver: number }, extra: Record<string, string> = {}) {
  return [
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'ingress-config', namespace: 'default' },
      data: {
        'enable-opentelemetry': 'true',
        'otlp-collector-host': '127.0.0.1',
        'otlp-collector-port': String(ports.receiver),
        'otel-service-name': 'edge',
        'otel-sampler': 'AlwaysOn',
        'otel-schedule-delay-millis': '100',
        ...extra,
      },
    },
    ingressClass(),
    ...serviceWithEndpoints('api', [{ ip: '127.0.0.2', port: ports.api }]),
    ingress('shop', { 'shop.example.com': [{ path: '/api', service: 'api' }] }),
    ingress(
      'untrusting',
      { 'untrusting.example.com': [{ path: '/', service: 'api' }] },
      { annotations: { 'nginx.ingress.kubernetes.io/opentelemetry-trust-incoming-span': 'false' } },
    ),
    ingress(
      'quiet',
      { 'quiet.example.com': [{ path: '/', service: 'api' }] },
      { annotations: { 'nginx.ingress.kubernetes.io/enable-opentelemetry': 'false' } },
    ),
  ];
}

let backend: Server;
let apiPort: number;

beforeAll(async () => {
  apiPort = await freePort();
  backend = await startBackend('127.0.0.2', apiPort);
});

afterAll(async () => {
  backend.closeAllConnections();
  await new Promise((resolve) => backend.close(resolve));
});

/** spanOf waits for the span whose id is `spanId` */
async function spanOf(receiver: Receiver, spanId: string): Promise<ReceivedSpan> {
  let found: ReceivedSpan | undefined;
  await waitFor(
    `span ${spanId} exported`,
    async () => (found = receiver.spans.find((s) => s.spanId === spanId)) !== undefined,
    10_000,
  );
  return found!;
}

/** settled waits until nginx's workers handed their spans over and the controller exported them */
const settled = () => new Promise((resolve) => setTimeout(resolve, 2_500));

describe.each([
  ['routes pushed', []],
  // request metrics off too: the route labels spans read are set for tracing alone
  ['rendered locations', ['--routes-as-data=false', '--enable-metrics=false']],
])('with %s', (_mode, flags) => {
  let cluster: Cluster;
  let receiver: Receiver;

  beforeAll(async () => {
    receiver = await startReceiver();
    cluster = await startCluster(scene({ api: apiPort, receiver: receiver.port }), [
      '--configmap',
      'default/ingress-config',
      ...flags,
    ]);
    await waitFor(
      'the scene served',
      async () =>
        (await get(cluster.httpPort, 'shop.example.com', '/api/x').catch(() => ({ status: 0 }))).status === 200,
      20_000,
    );
  }, 60_000);

  afterAll(async () => {
    await cluster?.close();
    await receiver?.close();
  });

  it('starts a trace for a request without traceparent: the backend gets the span as parent, the collector the span', async () => {
    const seen = await get(cluster.httpPort, 'shop.example.com', '/api/items?page=2');
    expect(seen.status).toBe(200);
    const sent = parts(seen.traceparent);
    expect(sent.sampled).toBe(true);
    expect(seen.tracestate).toBeNull();
    const span = await spanOf(receiver, sent.span);
    expect(span.traceId).toBe(sent.trace);
    expect(span.parentSpanId).toBe('');
    expect(span.kind).toBe(2); // SPAN_KIND_SERVER
    expect(span.service).toBe('edge');
    expect(span.scope).toBe('ingress-actors');
    expect(span.name).toBe('/api');
    expect(span.end).toBeGreaterThanOrEqual(span.start);
    expect(span.attributes).toMatchObject({
      'http.method': 'GET',
      'http.target': '/api/items?page=2',
      'http.scheme': 'http',
      'http.flavor': '1.1',
      'http.host': 'shop.example.com',
      'http.status_code': 200,
      'http.route': '/api',
      'ingress.namespace': 'default',
      'ingress.name': 'shop',
      'ingress.service_name': 'api',
      'upstream.address': `127.0.0.2:${apiPort}`,
      'net.peer.ip': '127.0.0.1',
    });
  });

  it('continues a trusted incoming trace: same trace id, a new span whose parent is the caller, tracestate passed', async () => {
    const seen = await get(cluster.httpPort, 'shop.example.com', '/api/x', {
      traceparent: INCOMING,
      tracestate: STATE,
    });
    const sent = parts(seen.traceparent);
    expect(sent.trace).toBe(INCOMING_TRACE);
    expect(sent.span).not.toBe(INCOMING_PARENT);
    expect(seen.tracestate).toBe(STATE);
    const span = await spanOf(receiver, sent.span);
    expect(span.traceId).toBe(INCOMING_TRACE);
    expect(span.parentSpanId).toBe(INCOMING_PARENT);
  });

  it.runIf(flags.length === 0)(
    "serves the traced profile in the router's location, and a request with a body through the profile, alike",
    async () => {
      // the shop's profile, what an Ingress without annotations gets under this ConfigMap (traced, trusting), is the
      // balanced proxy_pass with a span's mode and headers: the router's location holds it (not the untraced one's)
      const text = await readFile(join(cluster.config.configDir, 'nginx.conf'), 'utf8');
      expect(text).toMatch(/route\(true, "\\064ia_p_[0-9a-f]{32}", "trust"\)/);
      const headers = { traceparent: INCOMING, tracestate: STATE };
      const inline = await get(cluster.httpPort, 'shop.example.com', '/api/x', headers);
      const posted = await get(cluster.httpPort, 'shop.example.com', '/api/x', headers, undefined, 'a body');
      for (const [seen, method] of [
        [inline, 'GET'],
        [posted, 'POST'],
      ] as const) {
        const sent = parts(seen.traceparent);
        expect(sent.trace).toBe(INCOMING_TRACE);
        expect(seen.tracestate).toBe(STATE);
        const span = await spanOf(receiver, sent.span);
        expect(span.parentSpanId).toBe(INCOMING_PARENT);
        expect(span.name).toBe('/api');
        expect(span.attributes).toMatchObject({ 'http.method': method, 'ingress.name': 'shop' });
      }
      expect(parts(inline.traceparent).span).not.toBe(parts(posted.traceparent).span);
    },
  );

  it('marks 5xx answers as errors', async () => {
    const seen = await get(cluster.httpPort, 'shop.example.com', '/api/fail');
    expect(seen.status).toBe(502);
    const span = await spanOf(receiver, parts(seen.traceparent).span);
    expect(span.status).toBe(2); // STATUS_CODE_ERROR
    expect(span.attributes['http.status_code']).toBe(502);
  });

  it('starts a new trace where the Ingress trusts no incoming span, and sends no tracestate', async () => {
    const seen = await get(cluster.httpPort, 'untrusting.example.com', '/', {
      traceparent: INCOMING,
      tracestate: STATE,
    });
    const sent = parts(seen.traceparent);
    expect(sent.trace).not.toBe(INCOMING_TRACE);
    expect(seen.tracestate).toBeNull();
    const span = await spanOf(receiver, sent.span);
    expect(span.parentSpanId).toBe('');
    expect(span.attributes['ingress.name']).toBe('untrusting');
  });

  it('replaces every hostile traceparent with a new trace, and sends no tracestate beside it', async () => {
    for (const hostile of HOSTILE_TRACEPARENTS) {
      const seen = await rawGet(cluster.httpPort, 'shop.example.com', '/api/x', {
        traceparent: hostile,
        tracestate: STATE,
      });
      expect(seen.status, hostile).toBe(200);
      const sent = parts(seen.traceparent);
      expect(sent.trace, hostile).not.toBe(INCOMING_TRACE);
      expect(seen.traceparent, hostile).not.toBe(hostile);
      expect(seen.tracestate, hostile).toBeNull();
      expect((await spanOf(receiver, sent.span)).parentSpanId, hostile).toBe('');
    }
  });

  it('keeps a valid traceparent but drops a hostile tracestate', async () => {
    for (const hostile of HOSTILE_TRACESTATES) {
      const seen = await rawGet(cluster.httpPort, 'shop.example.com', '/api/x', {
        traceparent: INCOMING,
        tracestate: hostile,
      });
      expect(seen.status, hostile).toBe(200);
      expect(parts(seen.traceparent).trace, hostile).toBe(INCOMING_TRACE);
      expect(seen.tracestate, hostile).toBeNull();
    }
    // the longest valid one (32 members) passes as it is
    const longest = Array.from({ length: 32 }, (_, i) => `k${i}=v`).join(',');
    const seen = await get(cluster.httpPort, 'shop.example.com', '/api/x', {
      traceparent: INCOMING,
      tracestate: longest,
    });
    expect(seen.tracestate).toBe(longest);
  });

  it('leaves an Ingress with enable-opentelemetry "false" untraced: its headers pass as the client sent them', async () => {
    const before = receiver.spans.length;
    const seen = await get(cluster.httpPort, 'quiet.example.com', '/', { traceparent: INCOMING, tracestate: STATE });
    expect(seen.traceparent).toBe(INCOMING);
    expect(seen.tracestate).toBe(STATE);
    await settled();
    expect(receiver.spans.slice(before).filter((s) => s.attributes['ingress.name'] === 'quiet')).toEqual([]);
  });

  it('costs no request when the collector is down: spans are dropped and counted', async () => {
    await settled();
    receiver.down = true;
    const requestsBefore = receiver.requests;
    const agent = new HttpAgent({ keepAlive: true, maxSockets: 8 });
    try {
      const answers = await Promise.all(
        Array.from({ length: 200 }, () => get(cluster.httpPort, 'shop.example.com', '/api/x', {}, agent)),
      );
      expect(answers.every((a) => a.status === 200)).toBe(true);
    } finally {
      agent.destroy();
    }
    await waitFor('an export refused', async () => receiver.requests > requestsBefore, 10_000);
    // the queue stays within otel-max-queuesize (2048) whatever the collector does
    expect(cluster.controller.spans!.queued).toBeLessThanOrEqual(2048);
    // the exporter retries a 503 a few times (about 15 s in all) before the batch counts as dropped
    await waitFor(
      'the refused spans counted',
      async () => {
        const text = await (await fetch(`http://127.0.0.1:${cluster.healthzPort}/metrics`)).text();
        const m = /^ingress_actors_spans_dropped_total\{reason="export"[^}]*\} (\d+)$/m.exec(text);
        return m !== null && Number(m[1]) >= 1;
      },
      45_000,
    );
    receiver.down = false;
  }, 90_000);
});

describe('sampling', () => {
  let cluster: Cluster;
  let receiver: Receiver;
  const RATIO = 0.25;

  beforeAll(async () => {
    receiver = await startReceiver();
    cluster = await startCluster(
      scene(
        { api: apiPort, receiver: receiver.port },
        {
          'otel-sampler': 'TraceIdRatioBased',
          'otel-sampler-ratio': String(RATIO),
          'otel-sampler-parent-based': 'true',
          'otel-max-queuesize': '20000',
          'otel-max-export-batch-size': '2000',
        },
      ),
      ['--configmap', 'default/ingress-config'],
    );
    await waitFor(
      'the scene served',
      async () =>
        (await get(cluster.httpPort, 'shop.example.com', '/api/x').catch(() => ({ status: 0 }))).status === 200,
      20_000,
    );
    await settled();
  }, 60_000);

  afterAll(async () => {
    await cluster?.close();
    await receiver?.close();
  });

  it('samples new traces at otel-sampler-ratio over 10,000 requests, and exports exactly the sampled ones', async () => {
    const N = 10_000;
    const before = new Set(receiver.spans.map((s) => s.spanId));
    const sampled = new Set<string>();
    const unsampled = new Set<string>();
    const agent = new HttpAgent({ keepAlive: true, maxSockets: 16 });
    try {
      let next = 0;
      await Promise.all(
        Array.from({ length: 16 }, async () => {
          while (next < N) {
            next++;
            const seen = await get(cluster.httpPort, 'shop.example.com', '/api/s', {}, agent);
            const sent = parts(seen.traceparent);
            (sent.sampled ? sampled : unsampled).add(sent.span);
          }
        }),
      );
    } finally {
      agent.destroy();
    }
    expect(sampled.size + unsampled.size).toBe(N);
    // Binomial(10,000, 0.25): sd 43.3; 6 sd either side fails a correct sampler with probability about 2e-9
    const sd = Math.sqrt(N * RATIO * (1 - RATIO));
    expect(Math.abs(sampled.size - N * RATIO)).toBeLessThan(6 * sd);
    await waitFor(
      'every sampled span exported',
      async () => receiver.spans.filter((s) => sampled.has(s.spanId)).length === sampled.size,
      20_000,
    );
    await settled();
    const exported = receiver.spans.filter((s) => !before.has(s.spanId) && s.attributes['http.target'] === '/api/s');
    expect(exported.length).toBe(sampled.size);
    expect(exported.some((s) => unsampled.has(s.spanId))).toBe(false);
  }, 180_000);

  it("follows a trusted parent's sampled flag with otel-sampler-parent-based", async () => {
    const on = `00-${INCOMING_TRACE}-${INCOMING_PARENT}-01`;
    const off = `00-${INCOMING_TRACE}-${INCOMING_PARENT}-00`;
    for (let i = 0; i < 20; i++) {
      expect(
        parts((await get(cluster.httpPort, 'shop.example.com', '/api/p', { traceparent: on })).traceparent).sampled,
      ).toBe(true);
      expect(
        parts((await get(cluster.httpPort, 'shop.example.com', '/api/p', { traceparent: off })).traceparent).sampled,
      ).toBe(false);
    }
  });
});
