/**
 * Snapshots for tests of what reads the actors (/healthz, /metrics, the status page): each machine's real initial
 * context (getInitialSnapshot, nothing started) with the fields a case sets, and ObservedActors over them.
 */
import { getInitialSnapshot } from 'xstate';
import { nginxProcessMachine, type NginxProcessContext } from '../../machines/nginxProcess.machine.js';
import { resourceWatcherMachine, type ResourceWatcherContext } from '../../machines/resourceWatcher.machine.js';
import { watcherId } from '../../machines/events.js';
import type { NginxProcessView } from '../../machines/selectors/nginxProcess.js';
import type { ResourceWatcherView } from '../../machines/selectors/resourceWatcher.js';
import type { RootSupervisorView } from '../../machines/selectors/rootSupervisor.js';
import type { ActorState } from '../../machines/selectors/state.js';
import type { StatusView } from '../../machines/selectors/status.js';
import type { SyncQueueView } from '../../machines/selectors/syncQueue.js';
import type { TemplateView } from '../../machines/selectors/template.js';
import { statusMachine, type StatusContext } from '../../machines/status.machine.js';
import { syncQueueMachine, type SyncQueueContext } from '../../machines/syncQueue.machine.js';
import { templateMachine, type TemplateContext } from '../../machines/template.machine.js';
import type { ObservedActors } from '../../src/http/observed.js';

/** Snapshots are the actors a case has, by systemId; any other is not running. */
export interface Snapshots {
  readonly root?: Pick<RootSupervisorView, 'value' | 'status'>;
  readonly nginx?: NginxProcessView;
  readonly template?: TemplateView;
  readonly syncQueue?: SyncQueueView;
  readonly status?: StatusView;
  readonly [watcher: `watcher.${string}`]: ResourceWatcherView | undefined;
  readonly [systemId: string]: ActorState | undefined;
}

/** observedActors reads `snapshots` as a running controller's actors. */
export function observedActors(snapshots: Snapshots): ObservedActors {
  return {
    root: () => snapshots.root,
    nginx: () => snapshots.nginx,
    watcher: (kind) => snapshots[watcherId(kind) as `watcher.${string}`],
    template: () => snapshots.template,
    syncQueue: () => snapshots.syncQueue,
    status: () => snapshots.status,
    actor: (systemId) => snapshots[systemId],
  };
}

const view = <C>(value: unknown, context: C) => ({ value, status: 'active', context });

const NGINX = getInitialSnapshot(nginxProcessMachine, {
  shutdownTimeoutMs: 1000,
  drainTimeoutMs: 1000,
  backoffBaseMs: 100,
  backoffMaxMs: 1000,
  stableAfterMs: 1000,
  reloadRetryMs: 1000,
}).context;

/** nginxSnapshot is an active nginx actor in `value`, its context the initial one with `context` over it. */
export function nginxSnapshot(value: unknown, context: Partial<NginxProcessContext> = {}): NginxProcessView {
  return view(value, { ...NGINX, ...context });
}

const WATCHER = getInitialSnapshot(resourceWatcherMachine, {
  kind: 'Ingress',
  baseBackoffMs: 500,
  maxBackoffMs: 30_000,
}).context;

/** watcherSnapshot is an active watcher in `value`, its context the initial one with `context` over it. */
export function watcherSnapshot(value: unknown, context: Partial<ResourceWatcherContext> = {}): ResourceWatcherView {
  return view(value, { ...WATCHER, ...context });
}

const STATUS = getInitialSnapshot(statusMachine, {
  leaseDurationMs: 15_000,
  renewDeadlineMs: 10_000,
  retryPeriodMs: 2_000,
  updateStatus: true,
  updateStatusOnShutdown: true,
  resyncPeriodMs: 60_000,
  stopTimeoutMs: 1_000,
}).context;

/** statusSnapshot is an active status actor in `value`, its context the initial one with `context` over it. */
export function statusSnapshot(value: unknown, context: Partial<StatusContext> = {}): StatusView {
  return view(value, { ...STATUS, ...context });
}

const TEMPLATE = getInitialSnapshot(templateMachine).context;

/** templateSnapshot is an active template actor in `value`, its context the initial one with `context` over it. */
export function templateSnapshot(value: unknown, context: Partial<TemplateContext> = {}): TemplateView {
  return view(value, { ...TEMPLATE, ...context });
}

const SYNC_QUEUE = getInitialSnapshot(syncQueueMachine, {
  watchers: ['Ingress'],
  debounceMs: 100,
  maxHoldoffMs: 500,
  minSyncIntervalMs: 1000,
}).context;

/** syncQueueSnapshot is an active sync queue in `value`, its context the initial one with `context` over it. */
export function syncQueueSnapshot(value: unknown, context: Partial<SyncQueueContext> = {}): SyncQueueView {
  return view(value, { ...SYNC_QUEUE, ...context });
}
