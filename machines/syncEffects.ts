/**
 * The sync queue's effect, as the queue sees it: what each `runSync` gets, and the one value a sync returns
 * (src/sync/run.ts implements it), which the queue forwards in events.
 */
import type { NginxConfigSet, PushedTables, RefusedEntry, SyncDoneEvent } from './events.js';

/**
 * RunSyncInput is what each `runSync` invocation gets: the sync's number (1 for the first) and nginx's verdicts since
 * the last.
 */
export interface RunSyncInput {
  readonly generation: number;
  /** the config nginx serves, as its last `nginx.applied` said (null before any) */
  readonly applied: string | null;
  /** the last config `nginx -t` refused since the previous sync started, in nginx's words */
  readonly refused: { readonly config: string; readonly output: string } | null;
  /** the template of the last `template.changed` (compiled; opaque here), null before any */
  readonly template: unknown;
  /** the table entries nginx refused in pushes since the previous sync started (`nginx.entriesRefused`) */
  readonly entriesRefused: readonly RefusedEntry[];
  /** what caused this sync, for the logs and the nginx actor's record of applies (`Ingress default/app changed`) */
  readonly trigger: string;
  /** what the last completed sync left for this one (`RunSyncOutput.memory`); null for a queue's first sync */
  readonly memory: unknown;
}

/**
 * SyncServe is what a sync wants nginx to serve: nginx.conf's text, the files it names, the Lua balancer's tables
 * (null: backends are rendered into nginx.conf), and the sync's trigger.
 */
export interface SyncServe extends NginxConfigSet {
  readonly tables: PushedTables | null;
}

/** SecretsRead are the Secrets a build read, and the namespaces where every Secret counts (`secrets.relevant`). */
export interface SecretsRead {
  readonly keys: readonly string[];
  readonly namespaces: readonly string[];
}

/**
 * RunSyncOutput is a sync's one value: what nginx should serve (config, files, tables, trigger), the Secrets that
 * matter, what it found (sent on as `sync.done`), whether it waits for nginx's verdict, and what it leaves the next
 * sync. The queue forwards each part in an event; the sync itself sends nothing to any actor.
 */
export interface RunSyncOutput {
  /** a step of bisection: the next sync must follow nginx's verdict on this one's config */
  readonly awaitingVerdict: boolean;
  /** the model, problems and served Ingresses, for the status and template actors */
  readonly done?: Omit<SyncDoneEvent, 'type'>;
  /** what nginx should serve; the queue hands it over as `nginx.reload` or `nginx.push` (absent: nothing to hand) */
  readonly serve?: SyncServe;
  /** the Secrets the build read: the Secret watcher reports only their changes from now on */
  readonly secretsRead?: SecretsRead;
  /**
   * `namespace/name` of the Secrets among `secretsRead` the cache holds differently from what the build read (changed
   * while it ran, judged by the watcher against the set before): the queue counts them as changes
   */
  readonly secretsChanged?: readonly string[];
  /**
   * what this sync leaves the next (opaque here: the build memo, the quarantines, …; src/sync/run.ts). It lives in
   * the queue's context, so a queue the supervisor restarted starts without it
   */
  readonly memory?: unknown;
}
