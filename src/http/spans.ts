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
import { encodeTraceRequest, type Scope, type SpanRecord } from './otlp-protobuf.js';
import { OtlpTransport } from './otlp-transport.js';
import { routesOf, type RouteInfo } from './request-metrics.js';

/** how often nginx's list is drained (its workers hand spans over each second) */
const DRAIN_EVERY_MS = 1_000;
/** drains of one round at most (each takes up to 2,000 worker-seconds of spans) */
const MAX_ROUNDS = 20;
/** values per span in the drained arrays, in tracing.lua's order */
const FIELDS = 13;
/** the longest an export may take before its spans count as dropped */
const EXPORT_TIMEOUT_MS = 10_000;
/** the most spans the queue may hold whatever otel-max-queuesize says (each is about a kilobyte) */
export const MAX_QUEUE = 65_536;

/** the latest time a span may carry: OTLP's times are nanoseconds in 64 bits (a year in the 26th century) */
const MAX_SECONDS = 18_446_744_073;

/** the traceparent nginx sent on, and a trusted incoming one (tracing.lua checked it: its parent is read here) */
const TRACEPARENT = /^[0-9a-f]{2}-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$/;

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

/** SpanExportOptions are the registry to count in, the control channel's drain, the log and the release. */
export interface SpanExportOptions {
  readonly registry: Registry;
  /** one GET /spans of the control channel (ControlChannel.drainSpans) */
  readonly drain: () => Promise<string>;
  readonly log: Logger;
  /** the instrumentation scope's version (the controller's release) */
  readonly version: string;
}

/** flavorOf names $server_protocol's version as ingress-nginx's module does (a switch: no number made a string) */
const flavorOf = (version: unknown): string =>
  version === 1.1 ? '1.1' : version === 2 ? '2.0' : version === 1 ? '1.0' : version === 3 ? '3.0' : String(version);

const text = (v: unknown): string => (typeof v === 'string' ? v : '');

/** SpanExport drains nginx's spans and exports them while the model traces. */
export class SpanExport {
  private settings: ExportSettings | null = null;
  private transport: OtlpTransport | null = null;
  private scope: Scope | null = null;
  private model: NginxModel | null = null;
  private routes: ReturnType<typeof routesOf> | null = null;
  /** the opentelemetry-operation-name annotations' span names, by `host route-id` */
  private names: Map<string, string> | null = null;
  private queue: SpanRecord[] = [];
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
    if (this.queue.length > next.maxQueue) this.drop('queue', this.queue.splice(next.maxQueue).length);
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
        let text: string;
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

  /** add queues one drained answer's spans; returns how many entries nginx still holds. */
  add(text: string): number {
    const lines = text.split('\n');
    const head = /^left (\d+) dropped (\d+)$/.exec(lines[0] ?? '');
    if (!head) return 0;
    this.drop('nginx', Number(head[2]));
    for (let i = 1; i < lines.length; i++) {
      const line = lines[i]!;
      if (line === '') continue;
      let values: unknown;
      try {
        values = JSON.parse(line);
      } catch {
        values = null;
      }
      if (!Array.isArray(values) || values.length % FIELDS !== 0) {
        this.drop('malformed', 1);
        continue;
      }
      for (let at = 0; at < values.length; at += FIELDS) this.enqueue(values, at);
    }
    this.pump();
    return Number(head[1]);
  }

  private enqueue(values: unknown[], at: number): void {
    const settings = this.settings;
    if (!settings?.url) {
      this.drop('no_collector', 1);
      return;
    }
    if (this.queue.length >= settings.maxQueue) {
      this.drop('queue', 1);
      return;
    }
    const span = this.spanOf(values, at);
    if (span === null) this.drop('malformed', 1);
    else this.queue.push(span);
  }

  /** spanOf turns one drained span (FIELDS values from `at`) into a SpanRecord; null when a value is not its kind. */
  spanOf(values: readonly unknown[], at: number): SpanRecord | null {
    const sent = values[at];
    const incoming = values[at + 1];
    const start = values[at + 2];
    const end = values[at + 3];
    const status = values[at + 4];
    const ids = typeof sent === 'string' ? TRACEPARENT.exec(sent) : null;
    const caller = typeof incoming === 'string' && incoming !== '' ? TRACEPARENT.exec(incoming) : null;
    if (ids === null || (incoming !== '' && caller === null)) return null;
    if (typeof start !== 'number' || typeof end !== 'number' || typeof status !== 'number') return null;
    if (!Number.isInteger(status) || status < 0 || status > 999) return null;
    if (!(start >= 0 && start <= MAX_SECONDS && end >= 0 && end <= MAX_SECONDS)) return null;
    const method = text(values[at + 5]);
    const host = text(values[at + 6]);
    const target = text(values[at + 8]);
    this.routes ??= this.model ? routesOf(this.model) : new Map();
    this.names ??= this.model ? namesOf(this.model) : new Map();
    const key = `${host} ${text(values[at + 7])}`;
    const info = this.routes.get(key);
    // ingress-nginx's module's attribute names; the route, Ingress and Service where the route id is known
    const attributes: (string | number)[] = [
      'http.method',
      method,
      'http.target',
      target,
      'http.scheme',
      text(values[at + 9]),
      'http.flavor',
      flavorOf(values[at + 12]),
      'http.host',
      host,
      'http.server_name',
      host,
      'http.status_code',
      status,
      'net.peer.ip',
      text(values[at + 10]),
    ];
    const upstream = text(values[at + 11]);
    if (upstream !== '') attributes.push('upstream.address', upstream);
    if (info)
      attributes.push(
        'http.route',
        info.path,
        'ingress.namespace',
        info.namespace,
        'ingress.name',
        info.ingress,
        'ingress.service_name',
        info.service,
      );
    const startMs = Math.round(start * 1000);
    return {
      traceId: ids[1]!,
      spanId: ids[2]!,
      parentSpanId: caller?.[2] ?? '',
      name: this.nameOf(this.names.get(key), method, host, target, info),
      startMs,
      endMs: Math.max(startMs, Math.round(end * 1000)),
      // as ingress-nginx's module: an error when nginx answered 5xx
      error: status >= 500,
      attributes,
    };
  }

  /**
   * nameOf is opentelemetry-operation-name (the Ingress's annotation, else the ConfigMap's) with its variables replaced,
   * or the location's path.
   */
  private nameOf(
    annotated: string | undefined,
    method: string,
    host: string,
    target: string,
    info: RouteInfo | undefined,
  ): string {
    const template = annotated ?? this.settings?.operationName ?? '';
    if (template === '') return info?.path ?? '/';
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

  /** pump starts an export when none runs and a batch is full, or the oldest span waited the schedule delay. */
  private pump(): void {
    const settings = this.settings;
    const transport = this.transport;
    const scope = this.scope;
    if (this.exporting || !settings || !transport || !scope || this.queue.length === 0) return;
    if (this.queue.length < settings.batch && Date.now() - this.lastExport < settings.delayMs) return;
    const batch = this.queue.splice(0, settings.batch);
    this.exporting = true;
    this.lastExport = Date.now();
    void transport.send(encodeTraceRequest(batch, scope)).then((result) => {
      // a batch in flight when the collector changed does not hold up the new one's
      if (transport === this.transport) this.exporting = false;
      if (result.ok) {
        this.exported.inc(batch.length);
        this.exportedSpans += batch.length;
      } else {
        this.drop('export', batch.length);
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
