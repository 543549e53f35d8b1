/**
 * src/http/spans.ts without nginx: what it makes of drained values (test/controller/tracing.test.ts has the real
 * drain and export). The span name from opentelemetry-operation-name, the Ingress and path from the route id, the
 * parent from the trusted incoming traceparent, and drained values that are not their kind refused and counted.
 */
import { Registry } from 'prom-client';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { SpanExport } from '../../src/http/spans.js';
import { toSnapshot } from '../../src/manifests/load.js';
import { buildModel } from '../../src/model/build.js';
import { defaultBuildOptions } from '../../src/model/build-types.js';
import type { KubeObject } from '../../src/model/snapshot.js';
import { ingress, ingressClass, serviceWithEndpoints } from '../support/manifests.js';

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
  const spans = new SpanExport({ registry, drain: async () => '', log: pino({ level: 'silent' }), version: 'test' });
  const model = modelWith({ 'enable-opentelemetry': 'true', 'otlp-collector-host': '127.0.0.1', ...data }, annotations);
  spans.setModel(model);
  const route = model.servers.flatMap((s) => s.locations).find((l) => l.route)!.route!.id;
  return { spans, registry, route };
}

const SENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-1111111111111111-01';
const CALLER = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
const row = (route: string, incoming = ''): unknown[] => [
  SENT,
  incoming,
  1733430000.123,
  1733430000.25,
  503,
  'POST',
  'shop.example.com',
  route,
  '/api/x?y=1',
  'https',
  '10.1.2.3',
  '10.0.0.1:8080',
  2,
];

describe('SpanExport.spanOf', () => {
  it('names the span by the location path, with the Ingress, Service and route from the route id', () => {
    const { spans, route } = exporter({});
    const span = spans.spanOf(row(route, CALLER), 0)!;
    expect(span).toEqual({
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

  it('starts a root span without a caller, its end never before its start', () => {
    const { spans, route } = exporter({});
    const values = row(route);
    values[3] = 1733430000.1;
    expect(spans.spanOf(values, 0)).toMatchObject({ parentSpanId: '', startMs: 1733430000123, endMs: 1733430000123 });
  });

  it('names it by opentelemetry-operation-name, its variables replaced', () => {
    const { spans, route } = exporter({
      'opentelemetry-operation-name':
        'HTTP $request_method $service_name $uri ($namespace/$ingress_name $location_path)',
    });
    expect(spans.spanOf(row(route), 0)!.name).toBe('HTTP POST api /api/x (default/shop /api)');
  });

  it("names an Ingress's spans by its opentelemetry-operation-name annotation, over the ConfigMap's", () => {
    const { spans, route } = exporter(
      { 'opentelemetry-operation-name': 'HTTP $request_method' },
      { 'nginx.ingress.kubernetes.io/opentelemetry-operation-name': 'shop $request_method $location_path' },
    );
    expect(spans.spanOf(row(route), 0)!.name).toBe('shop POST /api');
  });

  it('refuses drained values that are not their kind', () => {
    const { spans, route } = exporter({});
    const good = row(route);
    for (const [at, bad] of [
      [0, 'not a traceparent'],
      [0, `${SENT}\n`],
      [1, 'a caller that is not one'],
      [2, '1733430000'],
      [4, null],
      [4, 200.5],
      [2, -1],
      [3, 1e11],
      [2, Number.NaN],
    ] as const) {
      const values: unknown[] = [...good];
      values[at] = bad;
      expect(spans.spanOf(values, 0), `${at}: ${bad}`).toBeNull();
    }
  });

  it("counts the spans it cannot queue: nginx's, without a collector, malformed", async () => {
    const { spans, registry, route } = exporter({ 'otlp-collector-host': '' });
    spans.add(`left 0 dropped 3\n${JSON.stringify([...row(route), ...row(route)])}\n[1,2]\n`);
    const text = await registry.metrics();
    expect(text).toMatch(/ingress_actors_spans_dropped_total\{reason="nginx"\} 3/);
    expect(text).toMatch(/ingress_actors_spans_dropped_total\{reason="no_collector"\} 2/);
    expect(text).toMatch(/ingress_actors_spans_dropped_total\{reason="malformed"\} 1/);
  });
});
