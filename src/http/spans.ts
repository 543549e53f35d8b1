/**
 * OpenTelemetry export (issue 33): nginx's Lua makes a server span per traced request and hands each worker's spans
 * over once a second (lua/ingress_actors/tracing.lua); this module drains them through the control channel, turns
 * each into a span as ingress-nginx's tracing module names its attributes, and exports them over OTLP/HTTP
 * (protobuf: otlp-protobuf.ts, otlp-transport.ts) to the collector the ConfigMap names, in batches, from a bounded queue:
 * `otel-max-queuesize`, `otel-schedule-delay-millis`, `otel-max-export-batch-size`, one export at a time. A slow or
 * absent collector costs spans, counted in `ingress_actors_spans_dropped_total`, never a request nor memory beyond
 * the queue. Where spans go is the operator's ConfigMap's (validated), never a request's.
 */
import { Counter, type Registry } from 'prom-client';
import type { InspectionEvent } from 'xstate';
import type { Logger } from '../log.js';
import type { GlobalConfig, NginxModel } from '../model/nginx-model.js';
import { isSyncDone } from '../../machines/events.js';
import { encodeTraceRequest, Writer, type Scope } from './otlp-protobuf.js';
import { SpanLines, type RouteSpans } from './span-lines.js';
import { SpanQueue } from './span-queue.js';
import { OtlpTransport } from './otlp-transport.js';
import { routesOf, type RouteInfo } from './request-metrics.js';

/** how often nginx's list is drained (its workers hand spans over at 64 KB, and each second) */
const DRAIN_EVERY_MS = 1_000;
/** drains of one round at most (each answer up to about 1 MB: some 4,000 spans) */
const MAX_ROUNDS = 40;
/** the longest an export may take before its spans count as dropped */
const EXPORT_TIMEOUT_MS = 10_000;
/** the most spans the queue may hold whatever otel-max-queuesize says (each is about a kilobyte) */
export const MAX_QUEUE = 65_536;

/** DropReason says where spans were lost: nginx's list, the queue, the export, or no collector set. */
type DropReason = 'nginx' | 'queue' | 'export' | 'no_collector' | 'malformed';

/** ExportSettings are the ConfigMap keys the export reads. */
interface ExportSettings {
  readonly url: string | null;
  readonly serviceName: string;
  readonly operationName: string;
  readonly maxQueue: number;
  readonly delayMs: number;
  readonly batch: number;
}

/** settingsOf reads the export's keys from a model's ConfigMap; url null when otlp-collector-host is empty. */
export function settingsOf(config: GlobalConfig): ExportSettings {
  const host = config.otlpCollectorHost;
  const bracketed = host.includes(':') ? `[${host}]` : host;
  const maxQueue = Math.min(config.otelMaxQueueSize, MAX_QUEUE);
  return {
    url: host === '' ? null : `http://${bracketed}:${config.otlpCollectorPort}/v1/traces`,
    serviceName: config.otelServiceName,
    operationName: config.opentelemetryOperationName,
    maxQueue,
    delayMs: config.otelScheduleDelayMillis,
    batch: Math.min(config.otelMaxExportBatchSize, maxQueue),
  };
}

/** namesOf lists the span names opentelemetry-operation-name annotations give, by `host route-id`. */
function namesOf(model: NginxModel): Map<string, string> {
  const names = new Map<string, string>();
  for (const server of [model.defaultServer, ...model.servers])
    for (const location of server.locations) {
      const name = location.tracing?.operationName;
      if (name && location.route) names.set(`${server.host} ${location.route.id}`, name);
    }
  return names;
}

/** fillName is an operation name template with its variables replaced */
function fillName(template: string, method: string, host: string, target: string, info: RouteInfo | undefined): string {
  const uri = target.split('?')[0] ?? '';
  const values: Record<string, string> = {
    $request_method: method,
    $host: host,
    $uri: uri,
    $location_path: info?.path ?? '',
    $namespace: info?.namespace ?? '',
    $ingress_name: info?.ingress ?? '',
    $service_name: info?.service ?? '',
  };
  return template.replace(/\$[a-z_]+/g, (v) => values[v] ?? v);
}

/** SpanExportOptions are the registry to count in, the control channel's drain, the log and the release. */
export interface SpanExportOptions {
  readonly registry: Registry;
  /** one GET /spans of the control channel (ControlChannel.drainSpans) */
  readonly drain: () => Promise<Buffer[]>;
  readonly log: Logger;
  /** the instrumentation scope's version (the controller's release) */
  readonly version: string;
}

/** an answer's first line: entries left in nginx, spans dropped there */
const HEAD = /^left (\d+) dropped (\d+)\n$/;

/** the operation name's variables that differ from one span of a route to the next */
const PER_REQUEST = /\$(?:request_method|uri)(?![a-z_])/;

/** SpanExport drains nginx's spans and exports them while the model traces. */
export class SpanExport {
  private settings: ExportSettings | null = null;
  private transport: OtlpTransport | null = null;
  private scope: Scope | null = null;
  private model: NginxModel | null = null;
  private routes: ReturnType<typeof routesOf> | null = null;
  /** the opentelemetry-operation-name annotations' span names, by `host route-id` */
  private names: Map<string, string> | null = null;
  private readonly lines = new SpanLines((host, route) => this.describe(host, route));
  /** the spans waiting for export, written (span-lines.ts) */
  private readonly queue = new SpanQueue();
  private exporting = false;
  private lastExport = Date.now();
  private draining: Promise<void> | null = null;
  private timer: NodeJS.Timeout | null = null;
  private readonly exported: Counter;
  private readonly dropped: Counter<'reason'>;
  private readonly warned = new Set<DropReason>();
  private exportedSpans = 0;

  constructor(private readonly options: SpanExportOptions) {
    this.exported = new Counter({
      name: 'ingress_actors_spans_exported_total',
      help: 'Spans the OTLP collector accepted',
      registers: [options.registry],
    });
    this.dropped = new Counter({
      name: 'ingress_actors_spans_dropped_total',
      help:
        'Spans lost, by where: nginx (a worker over 20,000 in a second, or its list full), queue (otel-max-queuesize ' +
        'reached), export (the collector refused, failed or timed out), no_collector (otlp-collector-host empty), ' +
        'malformed',
      labelNames: ['reason'],
      registers: [options.registry],
    });
  }

  /** start drains each second, and exports what waited otel-schedule-delay-millis. */
  start(): void {
    this.timer ??= setInterval(() => void this.tick(), DRAIN_EVERY_MS).unref();
  }

  /** pause ends the periodic drain (benchmarks drain by tick() alone). */
  pause(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** stop ends the periodic drain and closes the collector's connections. */
  async stop(): Promise<void> {
    this.pause();
    this.transport?.close();
    this.transport = null;
  }

  /** exportedTotal is how many spans the collector accepted so far (benchmarks). */
  get exportedTotal(): number {
    return this.exportedSpans;
  }

  /** busy says an export is under way. */
  get busy(): boolean {
    return this.exporting || this.draining !== null;
  }

  /** observe takes the inspection stream: each `sync.done` brings the model (the ConfigMap's keys, the routes). */
  observe(event: InspectionEvent): void {
    if (event.type !== '@xstate.event') return;
    const done = event.event;
    if (isSyncDone(done) && done.model !== this.model) this.setModel(done.model);
  }

  /** setModel takes a model's settings; a new collector makes a new transport. */
  setModel(model: NginxModel): void {
    this.model = model;
    this.routes = null;
    this.names = null;
    this.lines.forget();
    const next = settingsOf(model.config);
    const last = this.settings;
    this.settings = next;
    if (last?.url !== next.url) {
      // a batch in flight to the old collector ends on its own (pump() then closes its transport); the new one need
      // not wait for it
      if (!this.exporting) this.transport?.close();
      this.exporting = false;
      this.transport = next.url
        ? new OtlpTransport(next.url, EXPORT_TIMEOUT_MS, `ingress-actors/${this.options.version}`)
        : null;
    }
    this.scope = { serviceName: next.serviceName, name: 'ingress-actors', version: this.options.version };
    this.drop('queue', this.queue.keep(next.maxQueue));
  }

  /** queued is how many spans wait for export (tests, benchmarks). */
  get queued(): number {
    return this.queue.length;
  }

  /** tick drains nginx (while the model traces) and exports what is due. */
  async tick(): Promise<void> {
    if (this.model?.tracing) await this.drainAll();
    this.pump();
  }

  /** drainAll drains nginx until its list is empty (one drain at a time). */
  drainAll(): Promise<void> {
    this.draining ??= (async () => {
      for (let round = 0; round < MAX_ROUNDS; round++) {
        let text: Buffer[];
        try {
          text = await this.options.drain();
        } catch (error) {
          // nginx restarting: the spans it held are gone with it
          this.options.log.debug({ err: error }, 'could not read the spans from nginx');
          return;
        }
        if (this.add(text) === 0) return;
      }
    })().finally(() => {
      this.draining = null;
    });
    return this.draining;
  }

  /**
   * add queues one drained answer's spans, its bytes as they were read (chunks cut anywhere: a line cut in two is put
   * together); returns how many entries nginx still holds.
   */
  add(chunks: readonly Buffer[]): number {
    const counts = { written: 0, malformed: 0, over: 0 };
    const room = this.settings?.url ? this.settings.maxQueue - this.queue.length : 0;
    const sink = (bytes: Buffer, length: number) => this.queue.push(bytes, length);
    let head: RegExpExecArray | null = null;
    // take reads whole lines: the first line of the answer, then spans; false when the answer has no first line
    const take = (lines: Buffer): boolean => {
      if (head === null) {
        const end = lines.indexOf(10) + 1;
        head = HEAD.exec(lines.toString('latin1', 0, end));
        if (head === null) return false;
        lines = lines.subarray(end);
      }
      if (lines.length > 0) this.lines.transcode(lines, room, sink, counts);
      return true;
    };
    let carry: Buffer | null = null;
    for (const chunk of chunks) {
      let from = 0;
      if (carry) {
        // the line cut at the last chunk's end, put together (a small copy: not the whole chunk)
        const end = chunk.indexOf(10);
        if (end < 0) {
          carry = Buffer.concat([carry, chunk]);
          continue;
        }
        if (!take(Buffer.concat([carry, chunk.subarray(0, end + 1)]))) return 0;
        carry = null;
        from = end + 1;
      }
      const last = Math.max(chunk.lastIndexOf(10) + 1, from);
      if (last > from && !take(chunk.subarray(from, last))) return 0;
      if (last < chunk.length) carry = chunk.subarray(last);
    }
    if (!head) return 0;
    // an answer ends with a whole line: what is left is a line cut short
    if (carry) counts.malformed++;
    this.drop('nginx', Number(head[2]));
    this.drop('malformed', counts.malformed);
    this.drop(this.settings?.url ? 'queue' : 'no_collector', counts.over);
    this.pump();
    return Number(head[1]);
  }

  /** describe is what the spans of `host` and its route `route` (a route id) share: their name and attributes */
  describe(host: string, route: string): RouteSpans {
    this.routes ??= this.model ? routesOf(this.model) : new Map();
    this.names ??= this.model ? namesOf(this.model) : new Map();
    const key = `${host} ${route}`;
    const info = this.routes.get(key);
    const attributes = new Writer(256);
    if (info) {
      attributes.keyValue(9, 'http.route', info.path);
      attributes.keyValue(9, 'ingress.namespace', info.namespace);
      attributes.keyValue(9, 'ingress.name', info.ingress);
      attributes.keyValue(9, 'ingress.service_name', info.service);
    }
    // opentelemetry-operation-name: the Ingress's annotation, else the ConfigMap's; else the location's path
    const template = this.names.get(key) ?? this.settings?.operationName ?? '';
    const nameOf = (method: string, target: string) => fillName(template, method, host, target, info);
    return {
      name: template === '' ? (info?.path ?? '/') : PER_REQUEST.test(template) ? null : nameOf('', ''),
      nameOf,
      attributes: Buffer.from(attributes.finish()),
    };
  }

  /** pump starts an export when none runs and a batch is full, or the oldest span waited the schedule delay. */
  private pump(): void {
    const settings = this.settings;
    const transport = this.transport;
    const scope = this.scope;
    if (this.exporting || !settings || !transport || !scope || this.queue.length === 0) return;
    if (this.queue.length < settings.batch && Date.now() - this.lastExport < settings.delayMs) return;
    const batch = this.queue.take(settings.batch);
    this.exporting = true;
    this.lastExport = Date.now();
    void transport.send(encodeTraceRequest(batch.parts, scope)).then((result) => {
      this.queue.release(batch);
      // a batch in flight when the collector changed does not hold up the new one's
      if (transport === this.transport) this.exporting = false;
      if (result.ok) {
        this.exported.inc(batch.count);
        this.exportedSpans += batch.count;
      } else {
        this.drop('export', batch.count);
        this.options.log.debug({ error: result.error }, 'the OTLP collector did not take a batch of spans');
      }
      if (transport === this.transport) this.pump();
      else transport.close();
    });
  }

  private drop(reason: DropReason, count: number): void {
    if (count <= 0) return;
    this.dropped.inc({ reason }, count);
    if (this.warned.has(reason)) return;
    this.warned.add(reason);
    this.options.log.warn({ reason, count }, 'spans dropped (said once per reason)');
  }
}
