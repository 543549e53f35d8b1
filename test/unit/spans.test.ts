/**
 * src/http/spans.ts without nginx: what it makes of drained lines (test/controller/tracing.test.ts has the real drain
 * and export; test/unit/span-lines.test.ts the lines' checks). The span name from opentelemetry-operation-name, the
 * Ingress and path from the route id, answers read in whatever chunks they come, and what cannot be queued counted.
 */
import { Registry } from 'prom-client';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { encodeTraceRequest } from '../../src/http/otlp-protobuf.js';
import { SpanLines } from '../../src/http/span-lines.js';
import { SpanQueue } from '../../src/http/span-queue.js';
import { SpanExport } from '../../src/http/spans.js';
import { toSnapshot } from '../../src/manifests/load.js';
import { buildModel } from '../../src/model/build.js';
import { defaultBuildOptions } from '../../src/model/build-types.js';
import type { KubeObject } from '../../src/model/snapshot.js';
import { ingress, ingressClass, serviceWithEndpoints } from '../support/manifests.js';
import { decodeTraceRequest } from '../support/otlp-decode.js';

const DYNAMIC = {
  dynamic: { modules: [], packagePath: '/lua/?.lua;;', controlSocket: '/tmp/control.sock', requestMetrics: true },
};

function modelWith(data: Record<string, string>, annotations: Record<string, string> = {}) {
  const objects = [
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cfg', namespace: 'default' }, data },
    ingressClass(),
    ...serviceWithEndpoints('api', [{ ip: '10.0.0.1', port: 8080 }]),
    ingress('shop', { 'shop.example.com': [{ path: '/api', service: 'api' }] }, { annotations }),
  ] as unknown as KubeObject[];
  return buildModel(toSnapshot(objects), { ...defaultBuildOptions, ...DYNAMIC, configMap: 'default/cfg' }).model;
}

function exporter(data: Record<string, string>, annotations: Record<string, string> = {}) {
  const registry = new Registry();
  const spans = new SpanExport({ registry, drain: async () => [], log: pino({ level: 'silent' }), version: 'test' });
  const model = modelWith({ 'enable-opentelemetry': 'true', 'otlp-collector-host': '127.0.0.1', ...data }, annotations);
  spans.setModel(model);
  const route = model.servers.flatMap((s) => s.locations).find((l) => l.route)!.route!.id;
  return { spans, registry, route };
}

const SENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-1111111111111111-01';
const CALLER = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
/** a drained line's values, as tracing.lua writes them */
const row = (route: string, incoming = ''): string[] => [
  SENT,
  incoming,
  '1733430000123',
  '1733430000250',
  '503',
  'POST',
  'shop.example.com',
  route,
  '/api/x?y=1',
  'https',
  '10.1.2.3',
  '10.0.0.1:8080',
  '2',
];

/** spanOf is the span the exporter writes for one drained line of `values` (its describe(), decoded) */
function spanOf(spans: SpanExport, values: readonly string[]) {
  const lines = new SpanLines((host, route) => spans.describe(host, route));
  const queue = new SpanQueue();
  const counts = { written: 0, malformed: 0, over: 0 };
  lines.transcode(Buffer.from(`${values.join('\t')}\n`), 1, (bytes, length) => queue.push(bytes, length), counts);
  expect(counts.written).toBe(1);
  const scope = { serviceName: 'nginx', name: 'ingress-actors', version: 'test' };
  return decodeTraceRequest(Buffer.concat(encodeTraceRequest(queue.take(1).parts, scope))).spans[0]!;
}

describe('SpanExport.describe', () => {
  it('names the span by the location path, with the Ingress, Service and route from the route id', () => {
    const { spans, route } = exporter({});
    expect(spanOf(spans, row(route, CALLER))).toEqual({
      traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
      spanId: '1111111111111111',
      parentSpanId: '00f067aa0ba902b7',
      name: '/api',
      startMs: 1733430000123,
      endMs: 1733430000250,
      error: true,
      attributes: [
        ['http.method', 'POST'],
        ['http.target', '/api/x?y=1'],
        ['http.scheme', 'https'],
        ['http.flavor', '2.0'],
        ['http.host', 'shop.example.com'],
        ['http.server_name', 'shop.example.com'],
        ['http.status_code', 503],
        ['net.peer.ip', '10.1.2.3'],
        ['upstream.address', '10.0.0.1:8080'],
        ['http.route', '/api'],
        ['ingress.namespace', 'default'],
        ['ingress.name', 'shop'],
        ['ingress.service_name', 'api'],
      ].flat(),
    });
  });

  it('names a span of an unknown route by its path alone, without the Ingress', () => {
    const { spans } = exporter({});
    const span = spanOf(spans, row('ffffffffffffffff'));
    expect(span.name).toBe('/');
    expect(span.attributes).not.toContain('ingress.name');
  });

  it('names it by opentelemetry-operation-name, its variables replaced', () => {
    const { spans, route } = exporter({
      'opentelemetry-operation-name':
        'HTTP $request_method $service_name $uri ($namespace/$ingress_name $location_path)',
    });
    expect(spanOf(spans, row(route)).name).toBe('HTTP POST api /api/x (default/shop /api)');
  });

  it("names an Ingress's spans by its opentelemetry-operation-name annotation, over the ConfigMap's", () => {
    const { spans, route } = exporter(
      { 'opentelemetry-operation-name': 'HTTP $request_method' },
      { 'nginx.ingress.kubernetes.io/opentelemetry-operation-name': 'shop $request_method $location_path' },
    );
    expect(spanOf(spans, row(route)).name).toBe('shop POST /api');
  });
});

describe('SpanExport.add', () => {
  it("counts the spans it cannot queue: nginx's, without a collector, malformed", async () => {
    const { spans, registry, route } = exporter({ 'otlp-collector-host': '' });
    const line = row(route).join('\t');
    spans.add([Buffer.from(`left 0 dropped 3\n${line}\n\n${line}\n${row(route).slice(1).join('\t')}\n`)]);
    const text = await registry.metrics();
    expect(text).toMatch(/ingress_actors_spans_dropped_total\{reason="nginx"\} 3/);
    expect(text).toMatch(/ingress_actors_spans_dropped_total\{reason="no_collector"\} 2/);
    expect(text).toMatch(/ingress_actors_spans_dropped_total\{reason="malformed"\} 1/);
  });

  it('reads an answer cut anywhere into chunks as the whole answer', () => {
    const { spans, route } = exporter({
      'otel-schedule-delay-millis': '600000',
      'otel-max-queuesize': '65536',
      'otel-max-export-batch-size': '65536',
    });
    const answer = Buffer.from(
      `left 7 dropped 0\n${Array.from({ length: 40 }, () => `${row(route).join('\t')}\n`).join('')}`,
    );
    fc.assert(
      fc.property(fc.uniqueArray(fc.integer({ min: 1, max: answer.length - 1 }), { maxLength: 12 }), (cuts) => {
        const at = [0, ...cuts.sort((a, b) => a - b), answer.length];
        const before = spans.queued;
        expect(spans.add(at.slice(1).map((end, i) => answer.subarray(at[i], end)))).toBe(7);
        expect(spans.queued - before).toBe(40);
      }),
      { numRuns: 50 },
    );
  });

  it('counts an answer that ends in a line cut short as malformed, and refuses one without its first line', async () => {
    const { spans, registry, route } = exporter({ 'otel-schedule-delay-millis': '600000' });
    expect(spans.add([Buffer.from(`left 0 dropped 0\n${row(route).join('\t')}`)])).toBe(0);
    expect(await registry.metrics()).toMatch(/ingress_actors_spans_dropped_total\{reason="malformed"\} 1/);
    expect(spans.add([Buffer.from(`${row(route).join('\t')}\n`)])).toBe(0);
    expect(spans.queued).toBe(0);
  });
});
