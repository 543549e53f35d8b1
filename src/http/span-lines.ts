/**
 * The spans nginx hands over (lua/ingress_actors/tracing.lua: a line each, 13 tab-separated values) written as OTLP
 * Span messages (trace/v1) straight from the drained bytes: no string, array or object per span but the host and
 * route's lookup key. A value is copied as it is when it is ASCII (UTF-8 checked otherwise); the ids are checked and
 * read from their hex digits, the times and status from their digits. A line that is not what tracing.lua writes is
 * counted, not written. This is the controller's whole cost per span beside the export (issue 33's bench: it shares the
 * machine with nginx): about a third of parsing the values into objects and encoding those.
 */
import { LENGTH, VARINT, varintSize, Writer } from './otlp-protobuf.js';

/** values per line, in tracing.lua's order */
export const FIELDS = 13;
const SENT = 0;
const INCOMING = 1;
const START = 2;
const END = 3;
const STATUS = 4;
const METHOD = 5;
const HOST = 6;
const ROUTE = 7;
const TARGET = 8;
const SCHEME = 9;
const PEER = 10;
const UPSTREAM = 11;
const VERSION = 12;

/** the latest time a span may carry, in milliseconds: OTLP's times are nanoseconds in 64 bits (the 26th century) */
const MAX_MS = 18_446_744_073_709;
const TAB = 9;
const NEWLINE = 10;
const TRACEPARENT_LENGTH = 55;

const SPAN_KIND_SERVER = 2;
const STATUS_CODE_ERROR = 2;
/** trace flags: sampled; span flags: whether the parent is remote is known (0x100), and it is (0x200) */
const SAMPLED = 0x01;
const HAS_IS_REMOTE = 0x100;
const IS_REMOTE = 0x200;

/** RouteSpans is what the spans of one host and route share. */
export interface RouteSpans {
  /** the span name, or null when it is made per span (an operation name with $request_method or $uri) */
  readonly name: string | null;
  /** the name of a span of `method` and request URI `target` (when `name` is null) */
  readonly nameOf: (method: string, target: string) => string;
  /** the route's attributes (http.route, the Ingress, the Service) as KeyValue fields of a Span, written once */
  readonly attributes: Uint8Array;
}

/** Transcoded is what one drained text gave: how many spans were written, and the lines refused. */
export interface Transcoded {
  written: number;
  malformed: number;
  /** lines past the room given, not written */
  over: number;
}

/** a string attribute's key as a KeyValue's field 1 (tag, length, bytes): written once, copied into every span */
function keyField(key: string): { readonly key: string; readonly bytes: Uint8Array } {
  const w = new Writer(key.length + 2);
  w.string(1, key);
  return { key, bytes: Buffer.from(w.finish()) };
}

type KeyField = ReturnType<typeof keyField>;

const METHOD_KEY = keyField('http.method');
const TARGET_KEY = keyField('http.target');
const SCHEME_KEY = keyField('http.scheme');
const HOST_KEY = keyField('http.host');
const SERVER_NAME_KEY = keyField('http.server_name');
const PEER_KEY = keyField('net.peer.ip');
const UPSTREAM_KEY = keyField('upstream.address');

const isHex = (c: number): boolean => (c >= 48 && c <= 57) || (c >= 97 && c <= 102);

/** isTraceparent says whether `source` holds W3C's version-00 form at [at, at + 55) (tracing.lua checked it too). */
function isTraceparent(source: Buffer, at: number, end: number): boolean {
  if (end - at !== TRACEPARENT_LENGTH) return false;
  for (let i = 0; i < TRACEPARENT_LENGTH; i++) {
    const c = source[at + i]!;
    if (i === 2 || i === 35 || i === 52 ? c !== 45 : !isHex(c)) return false;
  }
  return true;
}

/** digits is the number the digits at [at, end) write (at most `most` of them), or -1 */
function digits(source: Buffer, at: number, end: number, most: number): number {
  if (end <= at || end - at > most) return -1;
  let value = 0;
  for (let i = at; i < end; i++) {
    const c = source[i]! - 48;
    if (c < 0 || c > 9) return -1;
    value = value * 10 + c;
  }
  return value;
}

/** flavorOf names the HTTP version as ingress-nginx's module does (Lua prints 1.0 as "1", 2.0 as "2") */
const flavorOf = (version: string): string =>
  version === '1.1' ? '1.1' : version === '2' ? '2.0' : version === '1' ? '1.0' : version === '3' ? '3.0' : version;

/**
 * SpanLines writes drained lines as Span messages; `describe` gives what the spans of a host and route share (called
 * once per key until forget(): the model changed).
 */
export class SpanLines {
  private readonly known = new Map<string, RouteSpans>();
  /** where each value of the line being read starts and ends */
  private readonly starts = new Int32Array(FIELDS);
  private readonly ends = new Int32Array(FIELDS);
  /** where each span is written before the queue copies it */
  private readonly scratch = new Writer(4096);

  constructor(private readonly describe: (host: string, route: string) => RouteSpans) {}

  /** forget drops what was described (a new model) */
  forget(): void {
    this.known.clear();
  }

  /**
   * transcode writes the span of each line of `source` (whole lines) to `sink`, one at a time (the first `length`
   * bytes of a buffer reused for the next: the sink copies them); `room` spans at most, the spans past it counted in
   * `counts.over`, the lines that are not spans in `counts.malformed`.
   */
  transcode(source: Buffer, room: number, sink: (bytes: Buffer, length: number) => void, counts: Transcoded): void {
    const w = this.scratch;
    for (let at = 0; at < source.length; ) {
      let end = source.indexOf(NEWLINE, at);
      if (end < 0) end = source.length;
      if (end > at) {
        w.reset();
        if (!this.write(w, source, at, end)) counts.malformed++;
        else if (counts.written >= room) counts.over++;
        else {
          sink(w.buffer, w.position);
          counts.written++;
        }
      }
      at = end + 1;
    }
  }

  /** write writes the line at [at, end) as a Span (tag and length first); false, writing nothing, if it is not one */
  private write(w: Writer, source: Buffer, at: number, end: number): boolean {
    const { starts, ends } = this;
    let field = 0;
    starts[0] = at;
    for (let i = at; i < end; i++) {
      if (source[i] !== TAB) continue;
      if (field === FIELDS - 1) return false;
      ends[field++] = i;
      starts[field] = i + 1;
    }
    if (field !== FIELDS - 1) return false;
    ends[field] = end;
    const sent = starts[SENT]!;
    const incoming = starts[INCOMING]!;
    const child = ends[INCOMING]! > incoming;
    if (!isTraceparent(source, sent, ends[SENT]!)) return false;
    if (child && !isTraceparent(source, incoming, ends[INCOMING]!)) return false;
    const startMs = digits(source, starts[START]!, ends[START]!, 14);
    const endMs = digits(source, starts[END]!, ends[END]!, 14);
    const status = digits(source, starts[STATUS]!, ends[STATUS]!, 3);
    if (startMs < 0 || endMs < 0 || status < 0 || startMs > MAX_MS || endMs > MAX_MS) return false;

    const route = this.routeSpans(source);
    w.tag(2, LENGTH);
    const span = w.begin(2);
    w.hexFrom(1, source, sent + 3, 32);
    w.hexFrom(2, source, sent + 36, 16);
    if (child) w.hexFrom(4, source, incoming + 36, 16);
    const name =
      route.name ??
      route.nameOf(
        source.toString('utf8', starts[METHOD], ends[METHOD]),
        source.toString('utf8', starts[TARGET], ends[TARGET]),
      );
    w.string(5, name);
    w.tag(6, VARINT);
    w.varint(SPAN_KIND_SERVER);
    w.nanos(7, startMs);
    w.nanos(8, Math.max(startMs, endMs));
    // ingress-nginx's module's attribute names, in its order; then the route's
    this.attribute(w, METHOD_KEY, source, METHOD);
    this.attribute(w, TARGET_KEY, source, TARGET);
    this.attribute(w, SCHEME_KEY, source, SCHEME);
    w.keyValue(9, 'http.flavor', flavorOf(source.toString('latin1', starts[VERSION], ends[VERSION])));
    this.attribute(w, HOST_KEY, source, HOST);
    this.attribute(w, SERVER_NAME_KEY, source, HOST);
    w.keyValue(9, 'http.status_code', status);
    this.attribute(w, PEER_KEY, source, PEER);
    if (ends[UPSTREAM]! > starts[UPSTREAM]!) this.attribute(w, UPSTREAM_KEY, source, UPSTREAM);
    w.bytes(route.attributes);
    if (status >= 500) {
      // as ingress-nginx's module: an error when nginx answered 5xx
      w.tag(15, LENGTH);
      const code = w.begin();
      w.tag(3, VARINT);
      w.varint(STATUS_CODE_ERROR);
      w.end(code);
    }
    // a trusted caller's span is remote; a root has no parent, whose remoteness is then known to be "not"
    w.fixed32(16, SAMPLED | HAS_IS_REMOTE | (child ? IS_REMOTE : 0));
    w.end(span, 2);
    return true;
  }

  /**
   * attribute writes a string attribute (a KeyValue in field 9) of the line's value `field`: its lengths worked out
   * first, its bytes copied when they are ASCII
   */
  private attribute(w: Writer, key: KeyField, source: Buffer, field: number): void {
    const start = this.starts[field]!;
    const end = this.ends[field]!;
    if (!Writer.ascii(source, start, end)) {
      w.keyValue(9, key.key, source.toString('utf8', start, end));
      return;
    }
    const n = end - start;
    const any = 1 + varintSize(n) + n; // AnyValue: string_value
    w.tag(9, LENGTH);
    w.varint(key.bytes.length + 1 + varintSize(any) + any);
    w.bytes(key.bytes);
    w.tag(2, LENGTH);
    w.varint(any);
    w.tag(1, LENGTH);
    w.varint(n);
    w.copyFrom(source, start, end);
  }

  /** routeSpans is what the spans of the line's host and route share, described once per key */
  private routeSpans(source: Buffer): RouteSpans {
    // host, a tab, route: one string per line, the key
    const key = source.toString('latin1', this.starts[HOST], this.ends[ROUTE]);
    let route = this.known.get(key);
    if (route === undefined) {
      route = this.describe(
        source.toString('utf8', this.starts[HOST], this.ends[HOST]),
        source.toString('utf8', this.starts[ROUTE], this.ends[ROUTE]),
      );
      // keys come from the configuration (nginx's $ia_host, $ia_route), but are bounded all the same
      if (this.known.size >= 10_000) this.known.clear();
      this.known.set(key, route);
    }
    return route;
  }
}
