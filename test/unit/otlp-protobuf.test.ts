/**
 * src/http/otlp-protobuf.ts against opentelemetry-proto's own definitions (the protobufjs root generated from them):
 * what it writes decodes to the spans it was given, for chosen cases (roots and children, errors, non-ASCII, lengths
 * that take 1, 2 and 3 bytes, nanoseconds past 2^53) and for arbitrary ones.
 */
import { createRequire } from 'node:module';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeTraceRequest, type Scope, type SpanRecord } from '../../src/http/otlp-protobuf.js';

const require = createRequire(import.meta.url);
// biome-ignore lint/suspicious/noExplicitAny: the generated protobufjs root has no types
const root: any = require('otlp-proto-definitions/build/src/generated/root.js');
const ExportTraceServiceRequest = root.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;

const hex = (bytes: Uint8Array | undefined) => Buffer.from(bytes ?? []).toString('hex');

// biome-ignore lint/suspicious/noExplicitAny: decoded protobufjs messages
const attributeValue = (v: any): string | number => (v.intValue != null ? Number(v.intValue) : v.stringValue);

/** decode reads an encoded request back into SpanRecords and its scope, through opentelemetry-proto's definitions. */
function decode(bytes: Buffer): { scope: Scope; spans: SpanRecord[]; kinds: number[]; flags: number[] } {
  const message = ExportTraceServiceRequest.decode(bytes);
  expect(message.resourceSpans).toHaveLength(1);
  const [resourceSpans] = message.resourceSpans;
  expect(resourceSpans.resource.attributes).toHaveLength(1);
  expect(resourceSpans.resource.attributes[0].key).toBe('service.name');
  expect(resourceSpans.scopeSpans).toHaveLength(1);
  const [scopeSpans] = resourceSpans.scopeSpans;
  const kinds: number[] = [];
  const flags: number[] = [];
  // biome-ignore lint/suspicious/noExplicitAny: decoded protobufjs messages
  const spans = scopeSpans.spans.map((s: any): SpanRecord => {
    kinds.push(s.kind);
    flags.push(s.flags);
    const start = BigInt(s.startTimeUnixNano.toString());
    const end = BigInt(s.endTimeUnixNano.toString());
    expect(start % 1_000_000n).toBe(0n);
    expect(end % 1_000_000n).toBe(0n);
    return {
      traceId: hex(s.traceId),
      spanId: hex(s.spanId),
      parentSpanId: hex(s.parentSpanId),
      name: s.name,
      startMs: Number(start / 1_000_000n),
      endMs: Number(end / 1_000_000n),
      error: (s.status?.code ?? 0) === 2,
      // biome-ignore lint/suspicious/noExplicitAny: decoded protobufjs messages
      attributes: s.attributes.flatMap((a: any) => [a.key, attributeValue(a.value)]),
    };
  });
  return {
    scope: {
      serviceName: resourceSpans.resource.attributes[0].value.stringValue,
      name: scopeSpans.scope.name,
      version: scopeSpans.scope.version,
    },
    spans,
    kinds,
    flags,
  };
}

const SCOPE: Scope = { serviceName: 'nginx', name: 'ingress-actors', version: '1.2.3' };
const ROOT: SpanRecord = {
  traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
  spanId: '00f067aa0ba902b7',
  parentSpanId: '',
  name: '/api',
  startMs: 1_733_430_000_123,
  endMs: 1_733_430_000_250,
  error: false,
  attributes: ['http.method', 'GET', 'http.status_code', 200, 'http.target', '/api/items?page=2'],
};

describe('encodeTraceRequest', () => {
  const cases: { name: string; spans: SpanRecord[]; scope?: Scope }[] = [
    { name: 'a root span', spans: [ROOT] },
    {
      name: 'a child of a remote caller, answered 503',
      spans: [{ ...ROOT, parentSpanId: 'a1b2c3d4e5f60718', error: true }],
    },
    { name: 'no attributes, empty name', spans: [{ ...ROOT, name: '', attributes: [] }] },
    {
      name: 'non-ASCII and control characters',
      spans: [{ ...ROOT, name: 'données/日本/😀', attributes: ['http.target', '/é?q=\u0000\u007f\u0080', 'x', ''] }],
      scope: { serviceName: 'sérvice', name: 'ingress-actors', version: '' },
    },
    {
      name: 'values whose length takes 2 and 3 bytes (127, 128, 16,383, 16,384, 70,000)',
      spans: [127, 128, 16_383, 16_384, 70_000].map((n) => ({
        ...ROOT,
        name: 'n'.repeat(n),
        attributes: ['a', 'é'.repeat(n)],
      })),
    },
    {
      name: 'times at 0, at 2^32 ms, far past 2^53 ns and just below 2^64 ns',
      spans: [0, 4_294_967_296, 4_294_967_295, 1_733_430_000_123, 18_446_744_073_708].map((ms) => ({
        ...ROOT,
        startMs: ms,
        endMs: ms + 1,
      })),
    },
    { name: 'no spans', spans: [] },
    {
      name: 'a batch of 512',
      spans: Array.from({ length: 512 }, (_, i) => ({ ...ROOT, name: `/r${i}`, startMs: ROOT.startMs + i })),
    },
  ];
  it.each(cases)('decodes $name to what was written', ({ spans, scope = SCOPE }) => {
    const decoded = decode(encodeTraceRequest(spans, scope));
    expect(decoded.scope).toEqual(scope);
    expect(decoded.spans).toEqual(spans);
    // SERVER; sampled, with whether the parent is remote (only a trusted caller is a parent, and it is remote)
    expect(decoded.kinds).toEqual(spans.map(() => 2));
    expect(decoded.flags).toEqual(spans.map((s) => (s.parentSpanId === '' ? 0x101 : 0x301)));
  });

  it('decodes any spans to what was written', () => {
    const hexOf = (n: number) => fc.stringMatching(new RegExp(`^[0-9a-f]{${n}}$`));
    const span: fc.Arbitrary<SpanRecord> = fc.record({
      traceId: hexOf(32),
      spanId: hexOf(16),
      parentSpanId: fc.oneof(fc.constant(''), hexOf(16)),
      name: fc.string({ unit: 'grapheme', maxLength: 300 }),
      startMs: fc.integer({ min: 0, max: 4_102_444_800_000 }),
      endMs: fc.integer({ min: 0, max: 4_102_444_800_000 }),
      error: fc.boolean(),
      attributes: fc
        .array(
          fc.tuple(fc.string({ minLength: 1, maxLength: 40 }), fc.oneof(fc.string({ unit: 'binary' }), fc.nat(999))),
        )
        .map((pairs) => pairs.flat()),
    });
    fc.assert(
      fc.property(fc.array(span, { maxLength: 20 }), fc.string({ unit: 'grapheme' }), (spans, serviceName) => {
        const scope = { ...SCOPE, serviceName };
        const decoded = decode(encodeTraceRequest(spans, scope));
        expect(decoded.scope).toEqual(scope);
        // lone surrogates cannot be UTF-8: they are written as U+FFFD, as Buffer.from would
        const wellFormed = (v: string | number) => (typeof v === 'string' ? Buffer.from(v).toString() : v);
        expect(decoded.spans).toEqual(
          spans.map((s) => ({ ...s, name: wellFormed(s.name), attributes: s.attributes.map(wellFormed) })),
        );
      }),
      { numRuns: 300 },
    );
  });
});
