/**
 * OTLP's ExportTraceServiceRequest in protobuf (opentelemetry-proto: collector/trace/v1, trace/v1, common/v1,
 * resource/v1), written straight from the spans nginx hands over: one resource (service.name), one scope, server
 * spans with string and integer attributes. It replaces OpenTelemetry's exporter for cost (issue 33's bench): the SDK's
 * span objects and its serializer took about 10 µs of the controller's CPU per span, which nginx shares. The tests
 * decode what this writes with opentelemetry-proto's own definitions (test/unit/otlp-protobuf.test.ts).
 */

/** SpanRecord is one server span as nginx recorded it, checked (src/http/spans.ts). */
export interface SpanRecord {
  /** 32 lowercase hex digits */
  readonly traceId: string;
  /** 16 lowercase hex digits */
  readonly spanId: string;
  /** 16 lowercase hex digits of the trusted caller's span, or '' for a root */
  readonly parentSpanId: string;
  readonly name: string;
  /** milliseconds since the epoch, whole */
  readonly startMs: number;
  readonly endMs: number;
  /** nginx answered 5xx (the span's status is ERROR, as ingress-nginx's module sets it) */
  readonly error: boolean;
  /** key, value, key, value…: values are strings or whole numbers */
  readonly attributes: readonly (string | number)[];
}

/** Scope is what every span of a request shares: the resource's service.name and the instrumentation scope. */
export interface Scope {
  readonly serviceName: string;
  readonly name: string;
  readonly version: string;
}

// wire types
const VARINT = 0;
const FIXED64 = 1;
const LENGTH = 2;
const FIXED32 = 5;

const SPAN_KIND_SERVER = 2;
const STATUS_CODE_ERROR = 2;
/** trace flags: sampled; span flags: whether the parent is remote is known (0x100), and it is (0x200) */
const SAMPLED = 0x01;
const HAS_IS_REMOTE = 0x100;
const IS_REMOTE = 0x200;
const TWO_TO_32 = 4_294_967_296;

/**
 * Writer appends protobuf to a growing buffer. A message's length goes before it: begin() keeps one byte for it and
 * end() writes it, moving the message when its length needs more bytes (rarely: only messages of 128 bytes or more).
 */
class Writer {
  private buf: Buffer;
  private pos = 0;

  constructor(size: number) {
    this.buf = Buffer.allocUnsafe(Math.max(size, 256));
  }

  private ensure(more: number): void {
    if (this.pos + more <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + more));
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }

  /** varint writes a whole number in [0, 2^32) */
  varint(value: number): void {
    this.ensure(5);
    let v = value >>> 0;
    while (v > 127) {
      this.buf[this.pos++] = (v & 127) | 128;
      v >>>= 7;
    }
    this.buf[this.pos++] = v;
  }

  tag(field: number, wire: number): void {
    this.varint((field << 3) | wire);
  }

  string(field: number, value: string): void {
    this.tag(field, LENGTH);
    const n = value.length;
    if (n < 128) {
      // most values are short ASCII: copied by hand, cheaper than an encoder call each
      this.ensure(n + 1);
      const buf = this.buf;
      let p = this.pos + 1;
      let i = 0;
      for (; i < n; i++) {
        const c = value.charCodeAt(i);
        if (c > 127) break;
        buf[p++] = c;
      }
      if (i === n) {
        buf[this.pos] = n;
        this.pos = p;
        return;
      }
    }
    const at = this.begin();
    this.ensure(n * 3);
    this.pos += this.buf.write(value, this.pos, 'utf8');
    this.end(at);
  }

  /** hex writes a bytes field from its hex digits (checked by the caller) */
  hex(field: number, digits: string): void {
    this.tag(field, LENGTH);
    this.varint(digits.length / 2);
    this.ensure(digits.length / 2);
    this.pos += this.buf.write(digits, this.pos, 'hex');
  }

  /** nanos writes a fixed64 of `ms` milliseconds in nanoseconds (exact: ms × 10^6 passes 2^53, so in two halves) */
  nanos(field: number, ms: number): void {
    this.tag(field, FIXED64);
    this.ensure(8);
    const high = Math.floor(ms / TWO_TO_32);
    const low = (ms - high * TWO_TO_32) * 1_000_000; // < 2^52: exact
    const carry = Math.floor(low / TWO_TO_32);
    this.buf.writeUInt32LE(low - carry * TWO_TO_32, this.pos);
    this.buf.writeUInt32LE(carry + high * 1_000_000, this.pos + 4);
    this.pos += 8;
  }

  fixed32(field: number, value: number): void {
    this.tag(field, FIXED32);
    this.ensure(4);
    this.buf.writeUInt32LE(value >>> 0, this.pos);
    this.pos += 4;
  }

  /** begin starts a length-delimited message (after its tag); end(begin()) closes it */
  begin(): number {
    this.ensure(1);
    return this.pos++;
  }

  end(at: number): void {
    const length = this.pos - at - 1;
    if (length < 128) {
      this.buf[at] = length;
      return;
    }
    let size = 1;
    for (let v = length >>> 7; v > 0; v >>>= 7) size++;
    this.ensure(size - 1);
    this.buf.copyWithin(at + size, at + 1, this.pos);
    this.pos += size - 1;
    let v = length;
    for (let i = at; v > 127; i++, v >>>= 7) this.buf[i] = (v & 127) | 128;
    this.buf[at + size - 1] = v;
  }

  /** keyValue writes a KeyValue (common/v1) in `field`: a string value, or a whole one as int_value */
  keyValue(field: number, key: string, value: string | number): void {
    this.tag(field, LENGTH);
    const pair = this.begin();
    this.string(1, key);
    this.tag(2, LENGTH);
    const any = this.begin();
    if (typeof value === 'string') this.string(1, value);
    else {
      // int_value is an int64 varint; spans carry small non-negative numbers (status codes)
      this.tag(3, VARINT);
      this.varint(value);
    }
    this.end(any);
    this.end(pair);
  }

  finish(): Buffer {
    return this.buf.subarray(0, this.pos);
  }
}

function writeSpan(w: Writer, span: SpanRecord): void {
  w.hex(1, span.traceId);
  w.hex(2, span.spanId);
  if (span.parentSpanId !== '') w.hex(4, span.parentSpanId);
  w.string(5, span.name);
  w.tag(6, VARINT);
  w.varint(SPAN_KIND_SERVER);
  w.nanos(7, span.startMs);
  w.nanos(8, span.endMs);
  const attributes = span.attributes;
  for (let i = 0; i + 1 < attributes.length; i += 2) w.keyValue(9, attributes[i] as string, attributes[i + 1]!);
  if (span.error) {
    w.tag(15, LENGTH);
    const status = w.begin();
    w.tag(3, VARINT);
    w.varint(STATUS_CODE_ERROR);
    w.end(status);
  }
  // a trusted caller's span is remote; a root has no parent, whose remoteness is then known to be "not"
  w.fixed32(16, SAMPLED | HAS_IS_REMOTE | (span.parentSpanId !== '' ? IS_REMOTE : 0));
}

/** encodeTraceRequest writes an ExportTraceServiceRequest of `spans`, all of one resource and scope. */
export function encodeTraceRequest(spans: readonly SpanRecord[], scope: Scope): Buffer {
  const w = new Writer(256 + spans.length * 480);
  w.tag(1, LENGTH); // resource_spans
  const resourceSpans = w.begin();
  w.tag(1, LENGTH); // resource
  const resource = w.begin();
  w.keyValue(1, 'service.name', scope.serviceName);
  w.end(resource);
  w.tag(2, LENGTH); // scope_spans
  const scopeSpans = w.begin();
  w.tag(1, LENGTH); // scope
  const instrumentation = w.begin();
  w.string(1, scope.name);
  w.string(2, scope.version);
  w.end(instrumentation);
  for (const span of spans) {
    w.tag(2, LENGTH);
    const at = w.begin();
    writeSpan(w, span);
    w.end(at);
  }
  w.end(scopeSpans);
  w.end(resourceSpans);
  return w.finish();
}
