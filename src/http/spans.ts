/**
 * OpenTelemetry export (issue 33): nginx's Lua makes a server span per traced request and hands each worker's spans
 * over once a second (lua/ingress_actors/tracing.lua); this module drains them through the control channel, turns
 * each into a span as ingress-nginx's tracing module names its attributes, and exports them over OTLP/HTTP
 * (protobuf, OpenTelemetry's own exporter) to the collector the ConfigMap names, in batches, from a bounded queue:
 * `otel-max-queuesize`, `otel-schedule-delay-millis`, `otel-max-export-batch-size`, one export at a time. A slow or
 * absent collector costs spans, counted in `ingress_actors_spans_dropped_total`, never a request nor memory beyond
 * the queue. Where spans go is the operator's ConfigMap's (validated), never a request's.
 */
import { SpanKind, SpanStatusCode, type Attributes, type HrTime } from '@opentelemetry/api';
import { ExportResultCode } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes, type Resource } from '@opentelemetry/resources';
import type { ReadableSpan } from '@opentelemetry/sdk-trace';
import { Counter, type Registry } from 'prom-client';
import type { InspectionEvent } from 'xstate';
import type { Logger } from '../log.js';
import type { GlobalConfig, NginxModel } from '../model/nginx-model.js';
import { isSyncDone } from '../../machines/events.js';
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

const hrTimeOf = (seconds: number): HrTime => {
  const ms = Math.round(seconds * 1000);
  return [Math.floor(ms / 1000), (ms % 1000) * 1_000_000];
};

const FLAVORS: Readonly<Record<string, string>> = { '1': '1.0', '1.1': '1.1', '2': '2.0', '3': '3.0' };

/** SpanExport drains nginx's spans and exports them while the model traces. */
export class SpanExport {
  private settings: ExportSettings | null = null;
  private exporter: OTLPTraceExporter | null = null;
  private resource: Resource | null = null;
  private model: NginxModel | null = null;
  private routes: ReturnType<typeof routesOf> | null = null;
  /** the opentelemetry-operation-name annotations' span names, by `host route-id` */
  private names: Map<string, string> | null = null;
  private queue: ReadableSpan[] = [];
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

  /** stop ends the periodic drain and shuts the exporter down. */
  async stop(): Promise<void> {
    this.pause();
    await this.exporter?.shutdown().catch(() => {});
    this.exporter = null;
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

  /** setModel takes a model's settings; a new collector or service name makes a new exporter. */
  setModel(model: NginxModel): void {
    this.model = model;
    this.routes = null;
    this.names = null;
    const next = settingsOf(model.config);
    const last = this.settings;
    this.settings = next;
    if (last?.url !== next.url || last?.serviceName !== next.serviceName) {
      void this.exporter?.shutdown().catch(() => {});
      // a batch in flight to the old collector ends on its own; the new one need not wait for it
      this.exporting = false;
      this.exporter = next.url
        ? // one export at a time is pump()'s rule; the exporter's own count frees a slot only after the callback
          new OTLPTraceExporter({ url: next.url, timeoutMillis: EXPORT_TIMEOUT_MS, concurrencyLimit: 2 })
        : null;
      this.resource = resourceFromAttributes({ 'service.name': next.serviceName });
    }
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

  /** spanOf turns one drained span (FIELDS values from `at`) into a ReadableSpan; null when a value is not its kind. */
  spanOf(values: readonly unknown[], at: number): ReadableSpan | null {
    const [sent, incoming, start, end, status, method, host, route, target, scheme, peer, upstream, version] =
      values.slice(at, at + FIELDS);
    const ids = typeof sent === 'string' ? TRACEPARENT.exec(sent) : null;
    const caller = typeof incoming === 'string' && incoming !== '' ? TRACEPARENT.exec(incoming) : null;
    if (ids === null || (incoming !== '' && caller === null)) return null;
    if (typeof start !== 'number' || typeof end !== 'number' || typeof status !== 'number') return null;
    const trace = ids[1]!;
    const id = ids[2]!;
    const parent = caller?.[2] ?? '';
    const text = (v: unknown) => (typeof v === 'string' ? v : '');
    this.routes ??= this.model ? routesOf(this.model) : new Map();
    this.names ??= this.model ? namesOf(this.model) : new Map();
    const key = `${text(host)} ${text(route)}`;
    const info = this.routes.get(key);
    const attributes: Attributes = {
      'http.method': text(method),
      'http.target': text(target),
      'http.scheme': text(scheme),
      'http.flavor': FLAVORS[String(version)] ?? String(version),
      'http.host': text(host),
      'http.server_name': text(host),
      'http.status_code': status,
      'net.peer.ip': text(peer),
    };
    if (text(upstream) !== '') attributes['upstream.address'] = text(upstream);
    if (info) {
      attributes['http.route'] = info.path;
      attributes['ingress.namespace'] = info.namespace;
      attributes['ingress.name'] = info.ingress;
      attributes['ingress.service_name'] = info.service;
    }
    const context = { traceId: trace, spanId: id, traceFlags: 1 };
    const startTime = hrTimeOf(start);
    const endTime = hrTimeOf(Math.max(start, end));
    const durationMs = Math.round(Math.max(0, end - start) * 1000);
    return {
      name: this.nameOf(this.names.get(key), text(method), text(host), text(target), info),
      kind: SpanKind.SERVER,
      spanContext: () => context,
      ...(parent === ''
        ? {}
        : { parentSpanContext: { traceId: trace, spanId: parent, traceFlags: 1, isRemote: true } }),
      startTime,
      endTime,
      duration: [Math.floor(durationMs / 1000), (durationMs % 1000) * 1_000_000],
      // as ingress-nginx's module: an error when nginx answered 5xx
      status: { code: status >= 500 ? SpanStatusCode.ERROR : SpanStatusCode.UNSET },
      attributes,
      links: [],
      events: [],
      ended: true,
      resource: this.resource!,
      instrumentationScope: { name: 'ingress-actors', version: this.options.version },
      droppedAttributesCount: 0,
      droppedEventsCount: 0,
      droppedLinksCount: 0,
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
    const exporter = this.exporter;
    if (this.exporting || !settings || !exporter || this.queue.length === 0) return;
    if (this.queue.length < settings.batch && Date.now() - this.lastExport < settings.delayMs) return;
    const batch = this.queue.splice(0, settings.batch);
    this.exporting = true;
    this.lastExport = Date.now();
    exporter.export(batch, (result) => {
      if (exporter === this.exporter) this.exporting = false;
      if (result.code === ExportResultCode.SUCCESS) {
        this.exported.inc(batch.length);
        this.exportedSpans += batch.length;
      } else {
        this.drop('export', batch.length);
        this.options.log.debug({ err: result.error }, 'the OTLP collector did not take a batch of spans');
      }
      // the next batch once the exporter has let this one go (its promise settles after this callback)
      if (exporter === this.exporter) setImmediate(() => this.pump());
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
