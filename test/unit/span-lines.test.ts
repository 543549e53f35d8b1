/**
 * src/http/span-lines.ts, span-queue.ts and otlp-protobuf.ts against opentelemetry-proto's own definitions (the
 * protobufjs root generated from them): the lines tracing.lua hands over, written as spans, queued in slabs, taken in
 * batches and sent as one request, decode to what the lines say, for chosen cases (roots and children, errors,
 * non-ASCII and bytes that are not UTF-8, lengths that take 1, 2 and 3 bytes, nanoseconds past 2^53, batches across
 * slabs) and for arbitrary ones; lines that are not what tracing.lua writes are refused and counted.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeTraceRequest, type Scope, Writer } from '../../src/http/otlp-protobuf.js';
import { type RouteSpans, SpanLines } from '../../src/http/span-lines.js';
import { SpanQueue } from '../../src/http/span-queue.js';
import { decodeTraceRequest as decode } from '../support/otlp-decode.js';

const SCOPE: Scope = { serviceName: 'nginx', name: 'ingress-actors', version: '1.2.3' };
const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const SENT = `00-${TRACE}-00f067aa0ba902b7-01`;
const CALLER = `00-${TRACE}-a1b2c3d4e5f60718-01`;

/** Line is what tracing.lua writes for a span, by name; line() joins it with tabs */
interface Line {
  sent: string;
  incoming: string;
  start: string;
  end: string;
  status: string;
  method: string;
  host: string;
  route: string;
  target: string;
  scheme: string;
  peer: string;
  upstream: string;
  version: string;
}

const LINE: Line = {
  sent: SENT,
  incoming: '',
  start: '1733430000123',
  end: '1733430000250',
  status: '200',
  method: 'GET',
  host: 'shop.example.com',
  route: '0123456789abcdef',
  target: '/api/items?page=2',
  scheme: 'https',
  peer: '10.1.2.3',
  upstream: '10.0.0.1:8080',
  version: '1.1',
};
const line = (l: Partial<Line> = {}): string => Object.values({ ...LINE, ...l }).join('\t');

/** the route's attributes and name, as SpanExport describes a known route */
function routeSpans(name: string | null = '/api'): RouteSpans {
  const w = new Writer(64);
  w.keyValue(9, 'http.route', '/api');
  w.keyValue(9, 'ingress.name', 'shop');
  return { name, nameOf: (method, target) => `${method} ${target}`, attributes: Buffer.from(w.finish()) };
}

/** transcode writes `text`'s lines (fed in chunks of `chunk` bytes, cut at line ends) and decodes them as one request */
function transcode(
  text: string | Buffer,
  options: { describe?: () => RouteSpans; scope?: Scope; batch?: number } = {},
) {
  const lines = new SpanLines(options.describe ?? (() => routeSpans()));
  const queue = new SpanQueue();
  const counts = { written: 0, malformed: 0, over: 0 };
  lines.transcode(Buffer.from(text), 1e9, (bytes, length) => queue.push(bytes, length), counts);
  const requests = [];
  while (queue.length > 0) {
    const batch = queue.take(options.batch ?? 1e9);
    requests.push(decode(Buffer.concat(encodeTraceRequest(batch.parts, options.scope ?? SCOPE))));
    queue.release(batch);
  }
  return { counts, requests, spans: requests.flatMap((r) => r.spans) };
}

/** the attributes a span of `l` carries, as ingress-nginx's module names them, then the route's */
const attributesOf = (l: Line, flavor = '1.1') => [
  ...['http.method', l.method, 'http.target', l.target, 'http.scheme', l.scheme, 'http.flavor', flavor],
  ...['http.host', l.host, 'http.server_name', l.host, 'http.status_code', Number(l.status), 'net.peer.ip', l.peer],
  ...(l.upstream === '' ? [] : ['upstream.address', l.upstream]),
  ...['http.route', '/api', 'ingress.name', 'shop'],
];

describe('SpanLines.transcode', () => {
  it('writes a root span as ingress-nginx names it, a server span of the sampled trace', () => {
    const { requests, spans } = transcode(`${line()}\n`);
    expect(spans).toEqual([
      {
        traceId: TRACE,
        spanId: '00f067aa0ba902b7',
        parentSpanId: '',
        name: '/api',
        startMs: 1_733_430_000_123,
        endMs: 1_733_430_000_250,
        error: false,
        attributes: attributesOf(LINE),
      },
    ]);
    expect(requests[0]!.scope).toEqual(SCOPE);
    // SERVER; sampled, and whether the parent is remote known: a root has none
    expect(requests[0]!.kinds).toEqual([2]);
    expect(requests[0]!.flags).toEqual([0x101]);
  });

  it('writes a child of a trusted caller (remote), an error for a 5xx, its end never before its start', () => {
    const l = { ...LINE, incoming: CALLER, status: '503', end: '1733430000100', upstream: '', version: '2' };
    const { requests, spans } = transcode(`${line(l)}\n`);
    expect(spans).toEqual([
      {
        traceId: TRACE,
        spanId: '00f067aa0ba902b7',
        parentSpanId: 'a1b2c3d4e5f60718',
        name: '/api',
        startMs: 1_733_430_000_123,
        endMs: 1_733_430_000_123,
        error: true,
        attributes: attributesOf(l, '2.0'),
      },
    ]);
    expect(requests[0]!.flags).toEqual([0x301]);
  });

  it.each([
    ['1', '1.0'],
    ['1.1', '1.1'],
    ['2', '2.0'],
    ['3', '3.0'],
    ['0.9', '0.9'],
  ])('names HTTP version %s %s', (version, flavor) => {
    expect(transcode(`${line({ version })}\n`).spans[0]!.attributes).toContain(flavor);
  });

  it('names a span per request when the operation name needs the method or URI', () => {
    expect(transcode(`${line({ method: 'POST' })}\n`, { describe: () => routeSpans(null) }).spans[0]!.name).toBe(
      'POST /api/items?page=2',
    );
  });

  it('copies ASCII as it is, reads other bytes as UTF-8 (what is not becomes U+FFFD)', () => {
    const utf8 = transcode(`${line({ target: '/données/日本/😀' })}\n`).spans[0]!;
    expect(utf8.attributes).toContain('/données/日本/😀');
    const bytes = Buffer.concat([Buffer.from(line({ target: '/x' }).replace('/x', '/\u0001')), Buffer.from('\n')]);
    bytes[bytes.indexOf(1)] = 0xff;
    expect(transcode(bytes).spans[0]!.attributes).toContain('/\ufffd');
  });

  it.each([127, 128, 16_383, 16_384, 70_000])('writes a value of %i bytes (lengths of 1, 2, 3 bytes)', (n) => {
    const target = `/${'a'.repeat(n - 1)}`;
    const name = 'n'.repeat(n);
    const { spans } = transcode(`${line({ target })}\n`, { describe: () => routeSpans(name) });
    expect(spans[0]!.attributes[3]).toBe(target);
    expect(spans[0]!.name).toBe(name);
  });

  it.each([0, 4_294_967_296, 4_294_967_295, 1_733_430_000_123, 18_446_744_073_708])('writes the time %i ms', (ms) => {
    const { spans } = transcode(`${line({ start: String(ms), end: String(ms + 1) })}\n`);
    expect(spans[0]).toMatchObject({ startMs: ms, endMs: ms + 1 });
  });

  it('writes thousands of spans across slabs, taken in batches, in order', () => {
    const text = Array.from(
      { length: 3000 },
      (_, i) => `${line({ target: `/r${i}`, status: String(200 + (i % 400)) })}\n`,
    );
    const { requests, spans } = transcode(text.join(''), { batch: 512 });
    expect(requests.map((r) => r.spans.length)).toEqual([512, 512, 512, 512, 512, 440]);
    expect(spans.map((s) => s.attributes[3])).toEqual(text.map((_, i) => `/r${i}`));
    // statuses 200 + i % 400: those of i % 400 >= 300 are 5xx, 100 in each 400 of the first 2,800
    expect(spans.filter((s) => s.error)).toHaveLength(700);
  });

  it('refuses and counts a line that is not what tracing.lua writes', () => {
    const bad: Partial<Line>[] = [
      { sent: 'not a traceparent' },
      { sent: `${SENT}0` },
      { sent: SENT.toUpperCase() },
      { incoming: 'a caller that is not one' },
      { start: '1733430000.5' },
      { start: '' },
      { status: '' },
      { status: '200.5' },
      { status: '1000' },
      { start: '-1' },
      { start: ' 1733430000123' },
      { end: '1e11' },
      { end: '18446744073710' },
      { start: '123456789012345' },
    ];
    const text = [...bad.map((l) => line(l)), line().split('\t').slice(1).join('\t'), `${line()}\textra`, line()];
    const { counts, spans } = transcode(`${text.join('\n')}\n`);
    expect(counts).toEqual({ written: 1, malformed: bad.length + 2, over: 0 });
    expect(spans).toHaveLength(1);
  });

  it('decodes any lines to what they say', () => {
    const hexOf = (n: number) => fc.stringMatching(new RegExp(`^[0-9a-f]{${n}}$`));
    const value = fc.string({ unit: 'binary', maxLength: 300 }).map((v) => v.replace(/[\t\n]/g, ' '));
    const arbitraryLine: fc.Arbitrary<Line> = fc.record({
      sent: fc.tuple(hexOf(2), hexOf(32), hexOf(16), hexOf(2)).map((p) => p.join('-')),
      incoming: fc.oneof(
        fc.constant(''),
        fc.tuple(hexOf(32), hexOf(16)).map(([t, s]) => `00-${t}-${s}-01`),
      ),
      start: fc.integer({ min: 0, max: 4_102_444_800_000 }).map(String),
      end: fc.integer({ min: 0, max: 4_102_444_800_000 }).map(String),
      status: fc.integer({ min: 0, max: 999 }).map(String),
      method: value,
      host: value,
      route: value,
      target: value,
      scheme: value,
      peer: value,
      upstream: value,
      version: fc.constantFrom('1', '1.1', '2'),
    });
    fc.assert(
      fc.property(
        fc.array(arbitraryLine, { minLength: 1, maxLength: 20 }),
        fc.string({ unit: 'grapheme' }),
        (ls, serviceName) => {
          const scope = { ...SCOPE, serviceName };
          const { requests, spans } = transcode(ls.map((l) => `${line(l)}\n`).join(''), { scope });
          expect(requests[0]!.scope).toEqual(scope);
          // lone surrogates cannot be UTF-8: they are written as U+FFFD, as Buffer.from would
          const wellFormed = (v: string) => Buffer.from(v).toString();
          expect(spans).toEqual(
            ls.map((l) => ({
              traceId: l.sent.slice(3, 35),
              spanId: l.sent.slice(36, 52),
              parentSpanId: l.incoming === '' ? '' : l.incoming.slice(36, 52),
              name: '/api',
              startMs: Number(l.start),
              endMs: Math.max(Number(l.start), Number(l.end)),
              error: Number(l.status) >= 500,
              attributes: attributesOf(
                Object.fromEntries(Object.entries(l).map(([k, v]) => [k, wellFormed(v)])) as unknown as Line,
                l.version === '2' ? '2.0' : l.version === '1' ? '1.0' : '1.1',
              ),
            })),
          );
        },
      ),
      { numRuns: 300 },
    );
  });
});
