/**
 * OTLP/HTTP protobuf (opentelemetry-proto: collector/trace/v1, trace/v1, common/v1, resource/v1) as the controller
 * writes it: Writer, which span-lines.ts writes each span with straight from the drained bytes, and the request around
 * written spans (encodeTraceRequest: one resource with its service.name, one scope). It replaces OpenTelemetry's
 * exporter for cost (issue 33's bench): the SDK's span objects and its serializer took about 10 µs of the controller's
 * CPU per span, which nginx shares. The tests decode what this writes with opentelemetry-proto's own definitions
 * (test/unit/span-lines.test.ts).
 */

/** Scope is what every span of a request shares: the resource's service.name and the instrumentation scope. */
export interface Scope {
  readonly serviceName: string;
  readonly name: string;
  readonly version: string;
}

// wire types
export const VARINT = 0;
const FIXED64 = 1;
export const LENGTH = 2;
const FIXED32 = 5;

const TWO_TO_32 = 4_294_967_296;

/**
 * Writer appends protobuf to a growing buffer. A message's length goes before it: begin() keeps bytes for it (one, or
 * two for a message likely longer than 127 bytes, as a span) and end() writes it, moving the message only when its
 * length takes another number of bytes.
 */
export class Writer {
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

  get position(): number {
    return this.pos;
  }

  /** buffer is where the writer writes (its first `position` bytes written): valid until the next write */
  get buffer(): Buffer {
    return this.buf;
  }

  /** reset empties the writer, keeping its buffer */
  reset(): void {
    this.pos = 0;
  }

  /** bytes copies `bytes` as they are */
  bytes(bytes: Uint8Array): void {
    this.copyFrom(bytes, 0, bytes.length);
  }

  /** copyFrom copies the bytes of `source` in [start, end) as they are (by hand when few: a call costs more then) */
  copyFrom(source: Uint8Array, start: number, end: number): void {
    const n = end - start;
    this.ensure(n);
    const buf = this.buf;
    if (n > 64) buf.set(source.subarray(start, end), this.pos);
    else for (let i = start, p = this.pos; i < end; i++, p++) buf[p] = source[i]!;
    this.pos += n;
  }

  /** ascii says whether the bytes of `source` in [start, end) are all ASCII */
  static ascii(source: Uint8Array, start: number, end: number): boolean {
    for (let i = start; i < end; i++) if (source[i]! > 127) return false;
    return true;
  }

  /**
   * stringFrom writes a string field of the bytes of `source` in [start, end): copied when they are ASCII, read as
   * UTF-8 otherwise (what is not UTF-8 becomes U+FFFD: a collector refuses a string field that is not).
   */
  stringFrom(field: number, source: Buffer, start: number, end: number): void {
    if (!Writer.ascii(source, start, end)) {
      this.string(field, source.toString('utf8', start, end));
      return;
    }
    this.tag(field, LENGTH);
    this.varint(end - start);
    this.copyFrom(source, start, end);
  }

  /** hexFrom writes a bytes field of the `digits` lowercase hex digits of `source` at `at` (checked by the caller) */
  hexFrom(field: number, source: Buffer, at: number, digits: number): void {
    this.tag(field, LENGTH);
    this.varint(digits / 2);
    this.ensure(digits / 2);
    const buf = this.buf;
    for (let i = 0; i < digits; i += 2) buf[this.pos++] = (nibble(source[at + i]!) << 4) | nibble(source[at + i + 1]!);
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

  /** begin starts a length-delimited message (after its tag), keeping `reserve` bytes for its length (1 or 2) */
  begin(reserve = 1): number {
    this.ensure(reserve);
    const at = this.pos;
    this.pos += reserve;
    return at;
  }

  /** end closes the message begin(reserve) started at `at` */
  end(at: number, reserve = 1): void {
    const length = this.pos - at - reserve;
    const size = varintSize(length);
    if (size !== reserve) {
      this.ensure(size - reserve);
      this.buf.copyWithin(at + size, at + reserve, this.pos);
      this.pos += size - reserve;
    }
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

/** varintSize is how many bytes a varint of `value` (in [0, 2^32)) takes */
export function varintSize(value: number): number {
  let size = 1;
  for (let v = value >>> 7; v > 0; v >>>= 7) size++;
  return size;
}

/** nibble is the value of a lowercase hex digit's character code */
const nibble = (c: number): number => (c >= 97 ? c - 87 : c - 48);

/** delimited writes a length-delimited field's tag and length */
function delimited(w: Writer, field: number, length: number): void {
  w.tag(field, LENGTH);
  w.varint(length);
}

/** fieldSize is the size of a length-delimited field (below field 16) of `length` bytes, tag and length included */
const fieldSize = (length: number): number => 1 + varintSize(length) + length;

/**
 * encodeTraceRequest is an ExportTraceServiceRequest of written spans (span-lines.ts), all of one resource and scope:
 * its header, whose lengths are known from the spans' sizes, then the spans' bytes as they are (sent one after the
 * other, never copied into one buffer).
 */
export function encodeTraceRequest(spans: readonly Buffer[], scope: Scope): Buffer[] {
  let size = 0;
  for (const span of spans) size += span.length;
  const resource = new Writer(64);
  resource.keyValue(1, 'service.name', scope.serviceName);
  const resourceBytes = resource.finish();
  const instrumentation = new Writer(64);
  instrumentation.string(1, scope.name);
  instrumentation.string(2, scope.version);
  const scopeBytes = instrumentation.finish();
  const scopeSpansSize = fieldSize(scopeBytes.length) + size;
  const head = new Writer(256);
  delimited(head, 1, fieldSize(resourceBytes.length) + fieldSize(scopeSpansSize)); // resource_spans
  delimited(head, 1, resourceBytes.length); // resource
  head.bytes(resourceBytes);
  delimited(head, 2, scopeSpansSize); // scope_spans
  delimited(head, 1, scopeBytes.length); // scope
  head.bytes(scopeBytes);
  return [head.finish(), ...spans];
}
