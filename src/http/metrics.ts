/**
 * /metrics: Prometheus text from prom-client, under ingress-nginx's names where it has one
 * (dashboards and alerts carry over) and `ingress_actors_*` for the rest. Counters are driven
 * by the actors' snapshots as the inspection stream delivers them, counting differences per
 * actor instance, so a restarted child (whose own counters start again at 0) never makes a
 * counter go down. Gauges are read from the snapshots at scrape time.
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { InspectionEvent } from 'xstate';
import {
  isNginxProcessSnapshot,
  selectMasterPid,
  selectNginxCounters,
  selectServedConfig,
  type NginxCounters,
} from '../../machines/selectors/nginxProcess.js';
import { watchedKindOf } from '../../machines/rootSupervisor.machine.js';
import { isRootSupervisorSnapshot, selectChildRestarts } from '../../machines/selectors/rootSupervisor.js';
import { selectWatcherSync } from '../../machines/selectors/resourceWatcher.js';
import { selectActorState } from '../../machines/selectors/state.js';
import { selectIsLeader } from '../../machines/selectors/status.js';
import { AdmissionMetrics } from './admission-metrics.js';
import type { ObservedActors } from './observed.js';
import { ModelMetrics } from './model-metrics.js';
import { registerNginxProcessMetrics } from './nginx-process-metrics.js';
import { formatLabels, isStreamed } from './streamed-metric.js';

/** MetricsOptions name this controller (ingress-nginx's constant labels) and its actors. */
export interface MetricsOptions {
  readonly controllerNamespace: string;
  readonly controllerClass: string;
  readonly controllerPod: string;
  readonly electionId: string;
  /** every systemId to report in ingress_actors_actor_state, `root` included */
  readonly actorIds: readonly string[];
  readonly now?: () => number;
  /** nginx's stub_status socket (src/nginx/stub-status.ts); without it only the /proc figures of nginx are there */
  readonly statusSocket?: string | null;
  /** `--validating-webhook` is on: the admission metrics are there */
  readonly webhook?: boolean;
}

/** ControllerMetrics owns one prom-client Registry (not the global one: tests run several controllers per process). */
export class ControllerMetrics {
  readonly registry = new Registry();
  private readonly seen = new Map<string, NginxCounters>();
  private readonly rootRestarts = new Map<string, number>();
  private readonly success: Counter;
  private readonly errors: Counter;
  private readonly restarts: Counter;
  private readonly pushes: Counter<'result'>;
  private readonly childRestarts: Counter<'child'>;
  private readonly lastReload: Gauge;
  private readonly lastReloadTime: Gauge;
  private readonly syncDuration: Histogram;
  private readonly now: () => number;
  /** takes each sync's snapshot and model: certificates, orphaned Ingresses */
  readonly model: ModelMetrics;
  /** takes each judged admission review; null without the webhook */
  readonly admission: AdmissionMetrics | null;

  /** ingress-nginx's const labels as the text format spells them, for the streamed metrics */
  private readonly defaults: string;
  /** the actors the gauges read at scrape time; none until `watch` */
  private actors: ObservedActors | null = null;

  constructor(readonly options: MetricsOptions) {
    this.now = options.now ?? Date.now;
    const registers = [this.registry];
    const defaults = {
      controller_namespace: options.controllerNamespace,
      controller_class: options.controllerClass,
      controller_pod: options.controllerPod,
    };
    this.registry.setDefaultLabels(defaults);
    this.defaults = formatLabels(defaults);
    this.success = new Counter({
      name: 'nginx_ingress_controller_success',
      help: 'Cumulative number of Ingress controller reload operations',
      registers,
    });
    this.errors = new Counter({
      name: 'nginx_ingress_controller_errors',
      help: 'Cumulative number of Ingress controller errors during reload operations',
      registers,
    });
    this.pushes = new Counter({
      name: 'ingress_actors_backend_pushes_total',
      help: 'Backend and certificate tables sent to the Lua balancer without a reload, by result (ok, failed)',
      labelNames: ['result'],
      registers,
    });
    this.lastReload = new Gauge({
      name: 'nginx_ingress_controller_config_last_reload_successful',
      help: 'Whether the last configuration reload attempt was successful',
      registers,
    });
    this.lastReloadTime = new Gauge({
      name: 'nginx_ingress_controller_config_last_reload_successful_timestamp_seconds',
      help: 'Timestamp of the last successful configuration reload',
      registers,
    });
    const actors = () => this.actors;
    const isLeader = () => selectIsLeader(actors()?.status());
    registerNginxProcessMetrics(this.registry, {
      masterPid: () => selectMasterPid(actors()?.nginx()),
      statusSocket: options.statusSocket ?? null,
    });
    this.model = new ModelMetrics(this.registry, {
      controllerClass: options.controllerClass,
      applied: () => selectServedConfig(actors()?.nginx()),
      isLeader,
    });
    this.admission = options.webhook ? new AdmissionMetrics(this.registry) : null;
    new Gauge({
      name: 'nginx_ingress_controller_leader_election_status',
      help: 'Gauge reporting status of the leader election, 0 indicates follower, 1 indicates leader',
      labelNames: ['name'],
      registers,
      collect() {
        this.set({ name: options.electionId }, isLeader() ? 1 : 0);
      },
    });
    this.restarts = new Counter({
      name: 'ingress_actors_nginx_restarts_total',
      help: 'nginx master restarts after it died',
      registers,
    });
    this.childRestarts = new Counter({
      name: 'ingress_actors_child_restarts_total',
      help: 'Child actors restarted by the root supervisor',
      labelNames: ['child'],
      registers,
    });
    this.syncDuration = new Histogram({
      name: 'ingress_actors_sync_duration_seconds',
      help: 'Time from snapshot to the rendered config handed to nginx, per sync',
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers,
    });
    new Gauge({
      name: 'ingress_actors_watcher_stale_since_seconds',
      help: 'Since when (unix time) a watcher has not been watching its kind after a failure; 0 while it watches',
      labelNames: ['kind'],
      registers,
      collect() {
        for (const id of options.actorIds) {
          const kind = watchedKindOf(id);
          if (kind === null) continue;
          const watcher = actors()?.watcher(kind);
          const since = watcher ? selectWatcherSync(watcher).staleSince : null;
          this.set({ kind }, since === null ? 0 : Math.floor(since / 1000));
        }
      },
    });
    new Gauge({
      name: 'ingress_actors_actor_state',
      help: 'The state each actor is in (1), by systemId; parallel states are named by their parent',
      labelNames: ['actor', 'state'],
      registers,
      collect() {
        this.reset();
        for (const id of options.actorIds) {
          const actor = actors()?.actor(id);
          // Machines report their state; other actors (the http server, a callback) their status.
          if (actor) this.set({ actor: id, state: selectActorState(actor) }, 1);
        }
      },
    });
  }

  /** watch gives the gauges the actors to read at scrape time (the controller's, once its root actor exists). */
  watch(actors: ObservedActors): void {
    this.actors = actors;
  }

  /**
   * text yields /metrics' Prometheus text in slices: the registry's small families at once, then each streamed
   * family (the request metrics, whose size grows with their series) a slice at a time, so a large scrape leaves the
   * event loop free between slices and never holds all of its text.
   */
  async *text(): AsyncGenerator<string> {
    const metrics = this.registry.getMetricsAsArray();
    const plain = metrics.filter((m) => !isStreamed(m)).map((m) => this.registry.getSingleMetricAsString(m.name));
    yield `${(await Promise.all(plain)).join('\n')}\n`;
    for (const metric of metrics) if (isStreamed(metric)) yield* metric.stream(this.defaults);
  }

  /** render is text() as one string (tests, benchmarks). */
  async render(): Promise<string> {
    let all = '';
    for await (const slice of this.text()) all += slice;
    return all;
  }

  /** observeSync records one sync's duration. */
  observeSync(durationMs: number): void {
    this.syncDuration.observe(durationMs / 1000);
  }

  /** observe takes the inspection stream (createActor's `inspect`) and moves the counters. */
  observe(event: InspectionEvent): void {
    if (event.type !== '@xstate.snapshot') return;
    const { snapshot, actorRef } = event;
    if (isRootSupervisorSnapshot(snapshot)) {
      if (actorRef.sessionId === event.rootId) this.observeRoot(selectChildRestarts(snapshot));
      return;
    }
    if (!isNginxProcessSnapshot(snapshot)) return;
    const before = this.seen.get(actorRef.sessionId) ?? {
      reloadsOk: 0,
      reloadsFailed: 0,
      restarts: 0,
      pushesOk: 0,
      pushesFailed: 0,
    };
    const after = selectNginxCounters(snapshot);
    if (after.pushesOk > before.pushesOk) this.pushes.inc({ result: 'ok' }, after.pushesOk - before.pushesOk);
    if (after.pushesFailed > before.pushesFailed)
      this.pushes.inc({ result: 'failed' }, after.pushesFailed - before.pushesFailed);
    this.seen.set(actorRef.sessionId, after);
    const ok = after.reloadsOk - before.reloadsOk;
    const failed = after.reloadsFailed - before.reloadsFailed;
    if (ok > 0) {
      this.success.inc(ok);
      this.lastReloadTime.set(Math.floor(this.now() / 1000));
    }
    if (failed > 0) this.errors.inc(failed);
    // Which came last decides; within one snapshot only one of them can move.
    if (ok > 0) this.lastReload.set(1);
    else if (failed > 0) this.lastReload.set(0);
    if (after.restarts > before.restarts) this.restarts.inc(after.restarts - before.restarts);
  }

  private observeRoot(restarts: Readonly<Record<string, number>>): void {
    for (const [child, count] of Object.entries(restarts)) {
      const before = this.rootRestarts.get(child) ?? 0;
      if (count > before) this.childRestarts.inc({ child }, count - before);
      this.rootRestarts.set(child, count);
    }
  }
}
