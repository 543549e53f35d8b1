import type { NginxModel, Problem } from '../src/model/nginx-model.js';
import type { GatewayStatus } from '../src/model/gateway/routes.js';

/**
 * The events the actors send one another. A machine's own timers (`rate.ready`,
 * `restart.expired`) are declared beside the machine that raises them; everything that crosses
 * an actor boundary is here, so the wiring in src/ and the tests speak the same vocabulary.
 */

/** watcherId is the child id and systemId of the watcher for `kind`: `watcher.Ingress`. */
export function watcherId(kind: string): string {
  return `watcher.${kind}`;
}

// ── Kubernetes watchers → sync queue ──

/** K8sSyncedEvent says a watcher's first list is in its cache (sent once per watcher). */
export interface K8sSyncedEvent {
  readonly type: 'k8s.synced';
  /** the watched kind, as given in the sync queue's `watchers` input, e.g. `Ingress` */
  readonly kind: string;
}

/** K8sChangedEvent says an object that matters was added, updated or deleted in a watcher's cache. */
export interface K8sChangedEvent {
  readonly type: 'k8s.changed';
  readonly kind: string;
  /** `namespace/name` (or `name` for cluster-scoped kinds); for logs, never used to diff */
  readonly key: string;
}

// ── template → sync queue ──

/**
 * TemplateChangedEvent hands the sync queue a new good template (compiled; opaque to the
 * machines), which it keeps and gives each sync: configs must be re-rendered with it.
 */
export interface TemplateChangedEvent {
  readonly type: 'template.changed';
  readonly template: unknown;
}

/**
 * TemplateWantedEvent is what a sync queue sends the template actor when it starts: a restarted
 * queue has no template, so the template actor answers with `template.changed` if it has a good one.
 */
export interface TemplateWantedEvent {
  readonly type: 'template.wanted';
}

/**
 * TemplateFileChangedEvent is what the `watchTemplate` actor sends when the template file (or a partial) changed on
 * disk.
 */
export interface TemplateFileChangedEvent {
  readonly type: 'template.fileChanged';
}

// ── commands to the sync queue ──

/**
 * SyncRequestEvent forces a sync without waiting for the debounce (still rate-limited, still after the initial sync).
 */
export interface SyncRequestEvent {
  readonly type: 'sync.request';
  /** why, for the sync's trigger: `nginx restarted`, `nginx's verdict`, … */
  readonly reason?: string;
  /** the nginx actor was restarted: it serves nothing the queue handed it, so the next config is handed again */
  readonly nginxRestarted?: boolean;
}

/**
 * SyncResyncEvent is what the supervisor sends a sync queue it has just restarted: the new
 * instance missed the watchers' one-time `k8s.synced`, so it treats every watcher as synced and
 * syncs at once (rate-limited).
 */
export interface SyncResyncEvent {
  readonly type: 'sync.resync';
}

/** SyncStopEvent makes the sync queue stop accepting work and reach its final `stopped` state. */
export interface SyncStopEvent {
  readonly type: 'sync.stop';
}

/** NginxAppliedEvent tells the sync queue that nginx serves a config (reloaded, or already serving it). */
export interface NginxAppliedEvent {
  readonly type: 'nginx.applied';
  readonly config: string;
}

/** NginxRefusedEvent tells the sync queue that `nginx -t` refused a config, in nginx's words. */
export interface NginxRefusedEvent {
  readonly type: 'nginx.refused';
  readonly config: string;
  readonly output: string;
}

/**
 * NginxEntriesRefusedEvent tells the sync queue that nginx refused entries of a pushed table (and applied the rest):
 * the next sync holds the objects that made them, as it holds an Ingress `nginx -t` refused.
 */
export interface NginxEntriesRefusedEvent {
  readonly type: 'nginx.entriesRefused';
  readonly entries: readonly RefusedEntry[];
}

/** SyncQueueCommand is every event the sync queue accepts from other actors. */
export type SyncQueueCommand =
  | K8sSyncedEvent
  | K8sChangedEvent
  | TemplateChangedEvent
  | SyncRequestEvent
  | SyncResyncEvent
  | SyncStopEvent
  | NginxAppliedEvent
  | NginxRefusedEvent
  | NginxEntriesRefusedEvent;

// ── nginx process ──

/**
 * ConfigFile is a Secret-derived file nginx.conf names: its path under the config folder and its text (null: the
 * self-signed fallback).
 */
export interface ConfigFile {
  readonly file: string;
  readonly pem: string | null;
}

/** NginxConfigSet is what the nginx-process actor applies: nginx.conf's text and the files it names. */
export interface NginxConfigSet {
  readonly config: string;
  readonly files: readonly ConfigFile[];
  /**
   * what caused it (machines/trigger.ts: `Ingress default/app changed`, `template`, `start`), for the logs and the
   * record of applies; never compared
   */
  readonly trigger?: string;
}

/**
 * PushedTables are what the Lua balancer reads instead of nginx.conf: the backends, the
 * certificates and the Gateway API routes (src/model/pushed-tables.ts), each with the version nginx reports back. The
 * machine compares versions only; the effects push the rest.
 */
export interface PushedTables {
  readonly backends: { readonly version: string };
  readonly certificates: { readonly version: string };
  /** the Gateway API routes (optional: a push from before them has none) */
  readonly routes?: { readonly version: string };
  /** the shared server's Ingress routes (routes as data; absent without them) */
  readonly ingress?: { readonly version: string };
}

/**
 * RefusedEntry is one table entry nginx refused while it applied the rest (lua/ingress_actors/validate.lua): the
 * table, the entry's key there (a backend's name, a certificate's host or `server <key>`, a route rule's `<server key>
 * <namespace>/<name>#<rule>`) and nginx's one-line reason. The entry keeps its previous value, or stays absent.
 */
export interface RefusedEntry {
  readonly table: 'backends' | 'certificates' | 'routes' | 'ingress';
  readonly key: string;
  readonly reason: string;
}

/**
 * PushResult is what a push ended with: the tables nginx now holds (every version moved forward, refused entries or
 * not) and the entries it refused, for the sync queue to blame on their objects.
 */
export interface PushResult {
  readonly pushed: PushedTables;
  readonly refused: readonly RefusedEntry[];
  /** when the push started and how long it took, as the effect measured it */
  readonly timing?: ApplyTiming;
}

/**
 * ApplyTiming is when a reload or push started (ms since the epoch) and how long it took: the `reload` and `push`
 * effects measure it and hand it back in their output, or on their error (`timing`), so the machine reads no clock.
 */
export interface ApplyTiming {
  readonly at: number;
  readonly durationMs: number;
}

/** ReloadResult is what a reload ended with: the tables nginx holds after the push before its signal, and its timing. */
export interface ReloadResult {
  readonly pushed: PushedTables | null;
  readonly timing?: ApplyTiming;
}

/**
 * NginxReloadEvent hands the nginx-process actor a rendered nginx.conf and the Secret-derived
 * files it names (the model's certificates), and the tables that go with it: the sync queue decided that
 * the config differs from the one it last handed (src/sync/run.ts, machines/syncQueue.machine.ts). A set equal
 * to the one nginx serves (a revert to it after a refusal) is skipped and reported applied.
 */
export interface NginxReloadEvent extends NginxConfigSet {
  readonly type: 'nginx.reload';
  readonly tables?: PushedTables | null;
}

/**
 * NginxPushEvent hands the nginx-process actor the Lua balancer's tables of a sync whose config is the one the
 * sync queue last handed: they are pushed without a reload (after that config's reload, if it is still under way).
 */
export interface NginxPushEvent {
  readonly type: 'nginx.push';
  readonly tables: PushedTables;
  /** what caused it (machines/trigger.ts), for the log and the record of applies */
  readonly trigger?: string;
}

/** NginxStopEvent asks the nginx-process actor to quit nginx gracefully (and kill it after its shutdown timeout). */
export interface NginxStopEvent {
  readonly type: 'nginx.stop';
}

/** NginxStartedEvent is what the `master` actor sends once the nginx master process is spawned. */
export interface NginxStartedEvent {
  readonly type: 'nginx.started';
  /** the master's pid, which is also its process group id (nginx runs in a group of its own) */
  readonly pid: number;
}

/** NginxExitedEvent is what the `master` actor sends when the nginx master process exited, for whatever reason. */
export interface NginxExitedEvent {
  readonly type: 'nginx.exited';
  readonly code: number | null;
  readonly signal: string | null;
  /**
   * why it exited, when the operator can fix it (a listen port another process holds, naming its flag; a binary that
   * cannot be run)
   */
  readonly fatal?: string | null;
}

/** NginxQuitCommand tells the `master` actor to send SIGQUIT (graceful shutdown, `nginx -s quit`). */
export interface NginxQuitCommand {
  readonly type: 'nginx.quit';
}

/** NginxKillCommand tells the `master` actor to SIGKILL the whole nginx process group. */
export interface NginxKillCommand {
  readonly type: 'nginx.kill';
}

/** NginxMasterEvent is every event the `master` actor sends back to the nginx-process machine. */
export type NginxMasterEvent = NginxStartedEvent | NginxExitedEvent;

/** NginxMasterCommand is every event the nginx-process machine sends to its `master` actor. */
export type NginxMasterCommand = NginxQuitCommand | NginxKillCommand;

// ── root supervisor ──

/** StopEvent is SIGTERM or SIGINT, sent to the root supervisor. */
export interface StopEvent {
  readonly type: 'stop';
}

// ── status (leader election, Ingress status, Kubernetes Events) ──

/**
 * SyncDoneEvent is what the sync queue sends the status and template actors after each sync:
 * the model it handed nginx (the template actor test-renders new templates against it), the
 * problems found (the status actor's Events) and `namespace/name` of every Ingress served (the
 * status actor's addresses), and the Gateway API status the leader writes. Each receiver keeps the latest, so any
 * number coalesce.
 */
export interface SyncDoneEvent {
  readonly type: 'sync.done';
  readonly model: NginxModel;
  readonly problems: readonly Problem[];
  readonly served: readonly string[];
  /** the Gateway API status the build worked out (the status actor writes it); null or absent when it is off */
  readonly gatewayStatus?: GatewayStatus | null;
}

/** isSyncDone tells a `sync.done` among the events an observer sees (the inspection stream carries every event). */
export function isSyncDone(event: { readonly type: string }): event is SyncDoneEvent {
  return event.type === 'sync.done';
}

/**
 * StatusStopEvent makes the status actor step down: clear the status if no replica takes over, release the Lease, stop.
 */
export interface StatusStopEvent {
  readonly type: 'status.stop';
}

/** StatusCommand is every event the status actor accepts from other actors. */
export type StatusCommand = SyncDoneEvent | StatusStopEvent;
