/**
 * decodeTraceRequest reads an OTLP ExportTraceServiceRequest (protobuf) back into plain spans through
 * opentelemetry-proto's own definitions (the protobufjs root generated from them), never a hand-written parser.
 */
import { createRequire } from 'node:module';
import { expect } from 'vitest';
import type { Scope } from '../../src/http/otlp-protobuf.js';

const require = createRequire(import.meta.url);
// biome-ignore lint/suspicious/noExplicitAny: the generated protobufjs root has no types
const root: any = require('otlp-proto-definitions/build/src/generated/root.js');
const ExportTraceServiceRequest = root.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;

const hex = (bytes: Uint8Array | undefined) => Buffer.from(bytes ?? []).toString('hex');

// biome-ignore lint/suspicious/noExplicitAny: decoded protobufjs messages
const attributeValue = (v: any): string | number => (v.intValue != null ? Number(v.intValue) : v.stringValue);

/** Span is a decoded span, as the tests compare them */
export interface Span {
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId: string;
  readonly name: string;
  readonly startMs: number;
  readonly endMs: number;
  readonly error: boolean;
  readonly attributes: readonly (string | number)[];
}

/** decodeTraceRequest reads an encoded request back into spans and its scope, through opentelemetry-proto's definitions. */
export function decodeTraceRequest(bytes: Buffer): { scope: Scope; spans: Span[]; kinds: number[]; flags: number[] } {
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
  const spans = scopeSpans.spans.map((s: any): Span => {
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
