/**
 * Request metrics under ingress-nginx's names, help, labels and buckets (its socket collector,
 * internal/ingress/metric/collectors/socket.go): `nginx_ingress_controller_requests` and the request, response, connect
 * and header durations, request and response sizes and bytes sent as histograms. nginx's workers count in Lua
 * (lua/ingress_actors/monitor.lua) and hand their deltas over each second; this module drains them through the
 * control channel (every 10 s and at each scrape) and keeps the running totals, so counters never go down when nginx
 * restarts. The work per drain is one line per label set and worker-second, never per request.
 *
 * nginx counts by `host route status method canary`; the route is a hash the model gives each Ingress path
 * (RouteLabels), resolved here from the last models into namespace, ingress, service, path and the canary's upstream.
 * Label values come from bounded sets (request-labels.ts), and each Ingress has a budget of series (series-budget.ts):
 * what is over it is counted per Ingress in `ingress_actors_request_metrics_overflow_total`. /metrics renders the
 * series a slice at a time (StreamedMetric), so a scrape never holds the event loop for long.
 */
import { Counter, type Registry } from 'prom-client';
import type { InspectionEvent } from 'xstate';
import type { MetricsFlags } from '../config.js';
import type { Logger } from '../log.js';
import type { NginxModel, Server } from '../model/nginx-model.js';
import { changedModelServers } from '../model/server-diff.js';
import { isSyncDone } from '../../machines/events.js';
import { methodLabel, statusClass, statusLabel } from './request-labels.js';
import { DEFAULT_SERIES_LIMITS, SeriesBudget, type SeriesLimits } from './series-budget.js';
import { escapeLabel, nextTurn, SLICE_CHARS, type StreamedMetric } from './streamed-metric.js';

/** METRIC_BUCKETS_ENV carries the bucket bounds to nginx's master (init_by_lua reads it), as `time;length;size`. */
export const METRIC_BUCKETS_ENV = 'INGRESS_ACTORS_METRIC_BUCKETS';

/** bucketsEnv spells the flags' buckets for METRIC_BUCKETS_ENV. */
export function bucketsEnv(buckets: MetricsFlags['buckets']): string {
  return [buckets.time, buckets.length, buckets.size].map((set) => set.join(',')).join(';');
}

type BucketSet = keyof MetricsFlags['buckets'];

/** HISTOGRAMS in the slot order monitor.lua keeps (slot 0 counts requests); name, help and buckets as ingress-nginx. */
const HISTOGRAMS: readonly { readonly name: string; readonly help: string; readonly set: BucketSet }[] = [
  { name: 'request_duration_seconds', help: 'The request processing time in milliseconds', set: 'time' },
  {
    name: 'response_duration_seconds',
    help: 'The time spent on receiving the response from the upstream server',
    set: 'time',
  },
  {
    name: 'connect_duration_seconds',
    help: 'The time spent on establishing a connection with the upstream server',
    set: 'time',
  },
  {
    name: 'header_duration_seconds',
    help: 'The time spent on receiving first header from the upstream server',
    set: 'time',
  },
  {
    name: 'request_size',
    help: 'The request length (including request line, header, and request body)',
    set: 'length',
  },
  {
    name: 'response_size',
    help: 'The response length (including request line, header, and request body)',
    set: 'length',
  },
  { name: 'bytes_sent', help: 'DEPRECATED The number of bytes sent to a client', set: 'size' },
];

const PREFIX = 'nginx_ingress_controller_';
/** MAX_SERIES is the shared pool of label sets (DEFAULT_SERIES_LIMITS.total; per Ingress, see series-budget.ts) */
export const MAX_SERIES = DEFAULT_SERIES_LIMITS.total;
/** drains of one scrape at most (each takes up to 2,000 worker-seconds of deltas, about 1 MB) */
const MAX_ROUNDS = 20;
const DRAIN_EVERY_MS = 10_000;

/** RouteInfo is what a route hash on a host stands for. */
export interface RouteInfo {
  readonly namespace: string;
  readonly ingress: string;
  readonly service: string;
  readonly path: string;
  readonly canary: string | null;
}

/** routesOf lists the model's labelled locations by `host id`. */
export function routesOf(model: NginxModel): Map<string, RouteInfo> {
  const routes = new Map<string, RouteInfo>();
  for (const server of [model.defaultServer, ...model.servers])
    for (const [key, info] of serverRoutes(server)) routes.set(key, info);
  return routes;
}

const routesByServer = new WeakMap<Server, readonly (readonly [string, RouteInfo])[]>();

/** serverRoutes is a server's routes by `host route-id`, worked out once per server object. */
function serverRoutes(server: Server): readonly (readonly [string, RouteInfo])[] {
  let routes = routesByServer.get(server);
  if (routes) return routes;
  const byKey = new Map<string, RouteInfo>();
  for (const location of server.locations) {
    const route = location.route;
    if (!route) continue;
    byKey.set(`${server.host} ${route.id}`, {
      namespace: route.namespace,
      ingress: route.ingressName,
      service: route.serviceName,
      path: location.path,
      canary: location.pass?.canary ?? null,
    });
  }
  routes = [...byKey];
  routesByServer.set(server, routes);
  return routes;
}

/** ownerOf is the budget's owner of a route's series: its Ingress, or '' for requests no Ingress took. */
const ownerOf = (route: RouteInfo | undefined) => (route ? `${route.namespace}/${route.ingress}` : '');

interface Series {
  readonly labels: Readonly<Record<string, string>>;
  /** the labels as the text format spells them, `k="v",…` */
  readonly text: string;
  readonly owner: string;
  readonly namespace: string;
  readonly ingress: string;
  readonly values: Float64Array;
}

/** RequestMetricsOptions are the flags, the registry to join and the control channel's drain. */
export interface RequestMetricsOptions {
  readonly registry: Registry;
  readonly flags: MetricsFlags;
  /** one GET /metrics of the control channel (ControlChannel.drainMetrics) */
  readonly drain: () => Promise<string>;
  readonly log: Logger;
  /** the shared pool of series (DEFAULT_SERIES_LIMITS.total) */
  readonly maxSeries?: number;
  /** the other limits of series-budget.ts */
  readonly limits?: Partial<Omit<SeriesLimits, 'total'>>;
}

/** RequestMetrics keeps the request totals and serves them as prom-client metrics of the registry. */
export class RequestMetrics {
  private routes = new Map<string, RouteInfo>();
  /** the last model's routes */
  private readonly current = new Map<string, RouteInfo>();
  /** the Ingresses (`namespace/name`) of the last model's routes, and how many routes each has; empty before the first */
  private readonly owners = new Map<string, number>();
  private lastModel: NginxModel | null = null;
  private readonly series = new Map<string, Series>();
  private readonly budget: SeriesBudget;
  private readonly layout: { offset: number; bounds: readonly number[] }[] = [];
  private readonly slots: number;
  private readonly dropped: Counter;
  private readonly overflow: Counter<'namespace' | 'ingress'>;
  private inFlight: Promise<void> | null = null;
  private timer: NodeJS.Timeout | null = null;
  private warned = false;
  private drainedRequests = 0;

  constructor(private readonly options: RequestMetricsOptions) {
    this.budget = new SeriesBudget({
      ...DEFAULT_SERIES_LIMITS,
      ...options.limits,
      total: options.maxSeries ?? MAX_SERIES,
    });
    let slot = 1;
    for (const h of HISTOGRAMS) {
      const bounds = options.flags.buckets[h.set];
      this.layout.push({ offset: slot, bounds });
      slot += bounds.length + 2;
    }
    this.slots = slot;
    const excluded = new Set(options.flags.exclude);
    const registry = options.registry;
    if (!excluded.has('requests'))
      registry.registerMetric(this.metric('requests', 'The total number of client requests', 'counter', -1) as never);
    HISTOGRAMS.forEach((h, i) => {
      if (!excluded.has(h.name)) registry.registerMetric(this.metric(h.name, h.help, 'histogram', i) as never);
    });
    this.dropped = new Counter({
      name: 'ingress_actors_request_metrics_dropped_total',
      help: 'Requests left out of the request metrics: deltas nginx could not keep (a worker over 10,000 label sets in a second, or the list full)',
      registers: [registry],
    });
    const limits = this.budget.limits;
    this.overflow = new Counter({
      name: 'ingress_actors_request_metrics_overflow_total',
      help:
        `Requests of label sets left out of the request metrics because their Ingress had ${limits.perIngress} ` +
        `series, its namespace ${limits.perNamespace}, or all ${limits.total} (beyond ${limits.reserved} each), by Ingress`,
      labelNames: ['namespace', 'ingress'],
      registers: [registry],
    });
  }

  /** drained is how many requests the drains brought so far (benchmarks divide a scrape's CPU by it) */
  get drained(): number {
    return this.drainedRequests;
  }

  /** size is how many series (label sets) are kept. */
  get size(): number {
    return this.series.size;
  }

  /** start drains every 10 s, so nginx's list stays short when nothing scrapes. */
  start(): void {
    this.timer ??= setInterval(() => void this.refresh(), DRAIN_EVERY_MS).unref();
  }

  /** stop ends the periodic drain. */
  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** observe takes the inspection stream: each `sync.done` brings the model whose route hashes nginx now counts by. */
  observe(event: InspectionEvent): void {
    if (event.type !== '@xstate.event') return;
    const done = event.event;
    if (isSyncDone(done) && done.model !== this.lastModel) this.setModel(done.model);
  }

  /**
   * setModel adds a model's routes; those of older models stay while their old workers may still report. The series
   * of Ingresses the model no longer has go (as ingress-nginx removes them), and their budget with them. Only the
   * servers that changed since the last model are looked at (an incremental build keeps the others' objects).
   */
  setModel(model: NginxModel): void {
    const last = this.lastModel;
    this.lastModel = model;
    const { added, removed } = changedModelServers(last, model);
    const emptied: string[] = [];
    for (const server of removed)
      for (const [key, info] of serverRoutes(server)) {
        this.current.delete(key);
        const owner = ownerOf(info);
        const left = (this.owners.get(owner) ?? 1) - 1;
        if (left > 0) this.owners.set(owner, left);
        else {
          this.owners.delete(owner);
          emptied.push(owner);
        }
      }
    for (const server of added)
      for (const [key, info] of serverRoutes(server)) {
        this.current.set(key, info);
        this.routes.set(key, info);
        const owner = ownerOf(info);
        this.owners.set(owner, (this.owners.get(owner) ?? 0) + 1);
      }
    if (this.routes.size > 2 * this.current.size + 1_000) this.routes = new Map(this.current);
    if (emptied.some((owner) => !this.owners.has(owner))) this.evict();
  }

  /** currentRoutes are the last model's routes by `host route-id`, as routesOf gives them. */
  currentRoutes(): ReadonlyMap<string, RouteInfo> {
    return this.current;
  }

  /** currentOwners are the Ingresses (`namespace/name`) of the last model's routes. */
  currentOwners(): ReadonlySet<string> {
    return new Set(this.owners.keys());
  }

  /** evict drops the series (and the overflow count) of every Ingress the last model does not have. */
  private evict(): void {
    const released = new Set<string>();
    for (const [key, series] of this.series) {
      if (series.owner === '' || this.owners.has(series.owner)) continue;
      this.series.delete(key);
      if (released.has(series.owner)) continue;
      released.add(series.owner);
      this.budget.release(series.owner, series.namespace);
      this.overflow.remove({ namespace: series.namespace, ingress: series.ingress });
    }
  }

  /** refresh drains what nginx holds (one drain at a time; a scrape during a drain waits for it). */
  refresh(): Promise<void> {
    this.inFlight ??= this.drainAll().finally(() => {
      this.inFlight = null;
    });
    return this.inFlight;
  }

  private async drainAll(): Promise<void> {
    for (let round = 0; round < MAX_ROUNDS; round++) {
      let text: string;
      try {
        text = await this.options.drain();
      } catch (error) {
        // nginx restarting: its counts since the last drain are gone with it; the totals stay.
        this.options.log.debug({ err: error }, 'could not read the request metrics from nginx');
        return;
      }
      const left = this.add(text);
      if (left === 0) return;
    }
  }

  /** add adds one drained answer to the totals; returns how many entries nginx still holds. */
  add(text: string): number {
    const lines = text.split('\n');
    const head = /^left (\d+) dropped (\d+)$/.exec(lines[0] ?? '');
    if (!head) return 0;
    if (Number(head[2]) > 0) this.dropped.inc(Number(head[2]));
    for (let i = 1; i < lines.length; i++) {
      const line = lines[i]!;
      if (line !== '') this.addLine(line);
    }
    return Number(head[1]);
  }

  private addLine(line: string): void {
    const tab = line.indexOf('\t');
    const key = line.slice(0, tab).split(' ');
    if (tab < 0 || key.length !== 5) return;
    const [host, id, status, method, canary] = key as [string, string, string, string, string];
    const route = this.routes.get(`${host} ${id}`);
    const flags = this.options.flags;
    // As ingress-nginx: per host, a request no Ingress host took is counted only with --metrics-per-undefined-host.
    if (flags.perHost && !flags.perUndefinedHost && host === '_' && !route) return;
    const owner = ownerOf(route);
    // An old worker's last requests for an Ingress that is gone: its series went with it.
    if (owner !== '' && this.lastModel !== null && !this.owners.has(owner)) return;
    // Bounded sets whatever the text says (monitor.lua maps them already).
    const bounded = statusLabel(status);
    const labels: Record<string, string> = {
      status: flags.statusClasses ? statusClass(bounded) : bounded,
      method: methodLabel(method),
      path: route?.path ?? '',
      namespace: route?.namespace ?? '',
      ingress: route?.ingress ?? '',
      service: route?.service ?? '',
      canary: canary === '1' ? (route?.canary ?? '') : '',
    };
    if (flags.perHost) labels.host = host;
    const seriesKey = Object.values(labels).join('\u0000');
    let series = this.series.get(seriesKey);
    const deltas = line.slice(tab + 1).split(',');
    if (!series) {
      const namespace = route?.namespace ?? '';
      const refused = this.budget.admit(owner, namespace);
      if (refused) {
        const requests = deltas.find((d) => d.startsWith('0:'));
        this.overflow.inc({ namespace, ingress: route?.ingress ?? '' }, requests ? Number(requests.slice(2)) || 0 : 0);
        if (!this.warned)
          this.options.log.warn({ limits: this.budget.limits, refused, owner }, 'request metrics: too many label sets');
        this.warned = true;
        return;
      }
      const text = Object.entries(labels)
        .map(([k, v]) => `${k}="${escapeLabel(v)}"`)
        .join(',');
      series = { labels, text, owner, namespace, ingress: route?.ingress ?? '', values: new Float64Array(this.slots) };
      this.series.set(seriesKey, series);
    }
    for (const delta of deltas) {
      const colon = delta.indexOf(':');
      const slot = Number(delta.slice(0, colon));
      const value = Number(delta.slice(colon + 1));
      if (Number.isInteger(slot) && slot >= 0 && slot < this.slots && Number.isFinite(value)) {
        series.values[slot]! += value;
        if (slot === 0) this.drainedRequests += value;
      }
    }
  }

  /**
   * metric is a prom-client metric object whose values are read from the totals after a drain; as a StreamedMetric
   * it also gives its text a slice at a time (ControllerMetrics.text()).
   */
  private metric(short: string, help: string, type: 'counter' | 'histogram', histogram: number) {
    const name = PREFIX + short;
    const get = async () => {
      await this.refresh();
      return { name, help, type, aggregator: 'sum', values: histogram < 0 ? this.counts() : this.buckets(histogram) };
    };
    const stream = (defaults: string) => this.stream(name, help, type, histogram, defaults);
    const metric = { name, help, type, aggregator: 'sum', get, reset: () => {}, stream };
    return metric satisfies StreamedMetric;
  }

  private async *stream(
    name: string,
    help: string,
    type: string,
    histogram: number,
    defaults: string,
  ): AsyncGenerator<string> {
    await this.refresh();
    // the series as they are now: a drain while the slices are written moves values, never this list
    const all = [...this.series.values()];
    const tail = defaults === '' ? '}' : `,${defaults}}`;
    let parts: string[] = [`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`];
    let size = 0;
    for (const s of all) {
      size +=
        histogram < 0 ? this.countText(parts, name, s, tail) : this.histogramText(parts, name, histogram, s, tail);
      if (size >= SLICE_CHARS) {
        yield `${parts.join('\n')}\n`;
        parts = [];
        size = 0;
        await nextTurn();
      }
    }
    if (parts.length > 0) yield `${parts.join('\n')}\n`;
  }

  /** countText adds a series' request count; returns the characters added. */
  private countText(parts: string[], name: string, s: Series, tail: string): number {
    const line = `${name}{${s.text}${tail} ${s.values[0]!}`;
    parts.push(line);
    return line.length;
  }

  /** histogramText adds a series' buckets, sum and count of one histogram; returns the characters added. */
  private histogramText(parts: string[], name: string, histogram: number, s: Series, tail: string): number {
    const { offset, bounds } = this.layout[histogram]!;
    const v = s.values;
    let count = 0;
    for (let i = 0; i <= bounds.length; i++) count += v[offset + i]!;
    // As ingress-nginx's vectors: a label set that never observed this histogram (no upstream) has no series.
    if (count === 0) return 0;
    let size = 0;
    const push = (line: string) => {
      parts.push(line);
      size += line.length;
    };
    let cumulative = 0;
    for (let i = 0; i < bounds.length; i++) {
      cumulative += v[offset + i]!;
      push(`${name}_bucket{${s.text},le="${bounds[i]!}"${tail} ${cumulative}`);
    }
    push(`${name}_bucket{${s.text},le="+Inf"${tail} ${count}`);
    push(`${name}_sum{${s.text}${tail} ${v[offset + bounds.length + 1]!}`);
    push(`${name}_count{${s.text}${tail} ${count}`);
    return size;
  }

  private counts() {
    return [...this.series.values()].map((s) => ({ labels: s.labels, value: s.values[0]! }));
  }

  private buckets(histogram: number) {
    const { offset, bounds } = this.layout[histogram]!;
    const name = PREFIX + HISTOGRAMS[histogram]!.name;
    const values: { labels: Record<string, string | number>; value: number; metricName: string }[] = [];
    for (const s of this.series.values()) {
      const v = s.values;
      let count = 0;
      for (let i = 0; i <= bounds.length; i++) count += v[offset + i]!;
      // As ingress-nginx's vectors: a label set that never observed this histogram (no upstream) has no series.
      if (count === 0) continue;
      let cumulative = 0;
      for (let i = 0; i < bounds.length; i++) {
        cumulative += v[offset + i]!;
        values.push({ labels: { ...s.labels, le: bounds[i]! }, value: cumulative, metricName: `${name}_bucket` });
      }
      values.push({ labels: { ...s.labels, le: '+Inf' }, value: count, metricName: `${name}_bucket` });
      values.push({ labels: s.labels, value: v[offset + bounds.length + 1]!, metricName: `${name}_sum` });
      values.push({ labels: s.labels, value: count, metricName: `${name}_count` });
    }
    return values;
  }
}
