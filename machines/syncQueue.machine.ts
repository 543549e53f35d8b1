import { assign, enqueueActions, fromPromise, raise, setup } from 'xstate';
import { sameConfigSet } from './applies.js';
import type { RunSyncInput, RunSyncOutput, SyncServe } from './syncEffects.js';
import {
  type ConfigFile,
  type NginxConfigSet,
  type NginxPushEvent,
  type NginxReloadEvent,
  type RefusedEntry,
  type SyncDoneEvent,
  type SyncQueueCommand,
  type TemplateWantedEvent,
  watcherId,
} from './events.js';
import type { SecretsRelevantEvent } from './resourceWatcher.machine.js';
import { addChange, type ChangeList, combineTriggers, mergeChanges, NO_CHANGES, summarizeTrigger } from './trigger.js';

/** SyncQueueInput configures the sync queue; every duration is in milliseconds. */
export interface SyncQueueInput {
  /** the kinds that must each report `k8s.synced` before the first sync */
  readonly watchers: readonly string[];
  /** quiet time after the last change before a sync, while changes come in bursts (contour's HoldoffDelay) */
  readonly debounceMs: number;
  /**
   * longest a change waits under constant churn, and how long after a sync the queue counts as
   * quiet, when a lone change syncs at once (contour's HoldoffMaxDelay)
   */
  readonly maxHoldoffMs: number;
  /** least time between two reloads handed to nginx (and between a failed sync and its retry): 1000 / `--sync-rate-limit` */
  readonly minSyncIntervalMs: number;
}

/** RateReadyEvent is the sync queue's own delayed event: the rate-limit token is back. */
export interface RateReadyEvent {
  readonly type: 'rate.ready';
}

/** SyncQueueEvent is every event the sync queue handles. */
export type SyncQueueEvent = SyncQueueCommand | RateReadyEvent;

/** SyncQueueContext is the sync queue's state beyond its state value; the counters feed /metrics. */
export interface SyncQueueContext extends SyncQueueInput {
  /** the watchers that have reported `k8s.synced` */
  readonly synced: readonly string[];
  /** a change arrived that no started sync has seen yet */
  readonly dirty: boolean;
  /**
   * the running sync may hand a reload over at once (the rate token permitting): it was not started by a change
   * that is likely one of a burst (right after a sync), whose reload waits for the debounce
   */
  readonly prompt: boolean;
  /** the rate-limit token: a reload may be handed over now */
  readonly tokenReady: boolean;
  /**
   * the config set this queue last handed to nginx in `nginx.reload` (null before any): a sync whose config equals it
   * needs no reload, only a push of its tables. What nginx serves is the nginx actor's alone; it says so in
   * `nginx.applied`
   */
  readonly handed: NginxConfigSet | null;
  /** a sync's value that needs a reload, held until the debounce and the rate token allow it (its tables with it) */
  readonly held: SyncServe | null;
  /** what the last completed sync left for the next (`RunSyncOutput.memory`), null in a new queue */
  readonly memory: unknown;
  /** the number of the last sync started */
  readonly generation: number;
  /** changes received (k8s.changed, template.changed, sync.request, sync.resync) */
  readonly changes: number;
  /** what the last change was, for logs: `k8s.changed Ingress default/web`, `template.changed`, … */
  readonly lastChange: string | null;
  /** the changes no started sync has seen yet (the first few, and how many more), for the next sync's trigger */
  readonly changed: ChangeList;
  /** the changes the running sync covers: given back to `changed` if it fails */
  readonly changedForSync: ChangeList;
  readonly syncsStarted: number;
  readonly syncsCompleted: number;
  readonly syncsFailed: number;
  readonly lastError: string | null;
  /** nginx's last `nginx.applied` verdict, passed to each sync (its quarantine reads it); the queue decides nothing by it */
  readonly applied: string | null;
  /** a refusal not yet seen by a sync */
  readonly refused: RunSyncInput['refused'];
  /** the refusal the running sync was given */
  readonly refusedForSync: RunSyncInput['refused'];
  /** table entries nginx refused, not yet seen by a sync (at most MAX_ENTRIES_REFUSED) */
  readonly entriesRefused: readonly RefusedEntry[];
  /** the entries the running sync was given */
  readonly entriesRefusedForSync: readonly RefusedEntry[];
  /** the last sync waits for nginx's verdict on its config: either verdict brings the next sync */
  readonly awaitingVerdict: boolean;
  /** the template of the last `template.changed`, handed to every sync; null before any */
  readonly template: unknown;
}

const RATE_TIMER = 'rate';

/** MAX_ENTRIES_REFUSED bounds the refused table entries kept for the next sync (nginx names at most 1,000 a push). */
const MAX_ENTRIES_REFUSED = 1000;

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** changeLabel names a change for its sync's trigger (machines/trigger.ts); null for timers and verdicts. */
function changeLabel(event: SyncQueueEvent): string | null {
  switch (event.type) {
    case 'k8s.changed':
      return `${event.kind} ${event.key}`;
    case 'template.changed':
      return 'template';
    case 'sync.request':
      return event.reason ?? 'sync requested';
    case 'sync.resync':
      return 'sync queue restarted';
    default:
      return null;
  }
}

/** outputOf is the value of the sync that just ended (none for a double that resolves to nothing). */
const outputOf = (event: SyncQueueEvent): RunSyncOutput | undefined => (event as { output?: RunSyncOutput }).output;

/**
 * needsReload is the one push-or-reload decision: a sync whose config set (text and files) differs from the one last
 * handed to nginx needs a reload; one that equals it only pushes its tables. A step of bisection waits for nginx's
 * verdict on its config, which only a reload (or nginx saying it already serves it) brings.
 */
function needsReload(context: SyncQueueContext, output: RunSyncOutput | undefined): boolean {
  if (!output?.serve) return false;
  return output.awaitingVerdict || !sameConfigSet(output.serve, context.handed);
}

/** reloadEvent is the `nginx.reload` that hands a sync's value over. */
function reloadEvent(serve: SyncServe): NginxReloadEvent {
  return {
    type: 'nginx.reload',
    config: serve.config,
    files: serve.files as readonly ConfigFile[],
    tables: serve.tables,
    ...(serve.trigger === undefined ? {} : { trigger: serve.trigger }),
  };
}

const syncQueue = setup({
  types: {
    context: {} as SyncQueueContext,
    events: {} as SyncQueueEvent,
    input: {} as SyncQueueInput,
  },
  actors: {
    runSync: fromPromise<RunSyncOutput, RunSyncInput>(async () => {
      throw new Error('actor "runSync" not provided');
    }),
  },
  guards: {
    allSynced: ({ context }) => context.watchers.every((kind) => context.synced.includes(kind)),
    tokenReady: ({ context }) => context.tokenReady,
    dirty: ({ context }) => context.dirty,
    awaitingVerdict: ({ context }) => context.awaitingVerdict,
    // Due, with nothing new since the held value was built: it is handed over as it is.
    heldIsLatest: ({ context }) => context.held !== null && !context.dirty,
    // The sync's config is the one handed: its tables are pushed at once, whatever waits.
    pushOnly: ({ context, event }) => !needsReload(context, outputOf(event)),
    // A reload the sync may hand over now: no burst suspected, and the token is there.
    reloadNow: ({ context }) => context.prompt && context.tokenReady,
    // A reload held while changes came: they wait with it (debounced), to be built in before it goes.
    heldWhileDirty: ({ context }) => context.dirty,
    // A prompt sync's reload that only waits for the token.
    onlyTheToken: ({ context }) => context.prompt,
  },
  delays: {
    debounce: ({ context }) => context.debounceMs,
    maxHoldoff: ({ context }) => context.maxHoldoffMs,
    minSyncInterval: ({ context }) => context.minSyncIntervalMs,
  },
  actions: {
    recordChange: assign(({ context, event }) => ({
      dirty: true,
      changes: context.changes + 1,
      lastChange: event.type === 'k8s.changed' ? `k8s.changed ${event.kind} ${event.key}` : event.type,
      changed: addChange(context.changed, changeLabel(event) ?? event.type),
      template: event.type === 'template.changed' ? event.template : context.template,
      // A restarted nginx actor serves nothing this queue handed it: the next config goes to it again.
      handed: event.type === 'sync.request' && event.nginxRestarted ? null : context.handed,
    })),
    markPrompt: assign({ prompt: true }),
    markBurst: assign({ prompt: false }),
    // A queue restarted by the supervisor has no template: the template actor sends its current one.
    askForTemplate: enqueueActions(({ system, enqueue }) => {
      const template = system.get('template');
      if (template) enqueue.sendTo(template, { type: 'template.wanted' } satisfies TemplateWantedEvent);
    }),
    // What a sync found goes to those who act on it: Events and status, the template's test render; the Secrets it
    // read to the Secret watcher, and those that changed while it ran back to this queue as changes.
    sendDone: enqueueActions(({ system, enqueue }, params: { output: RunSyncOutput | undefined }) => {
      const output = params.output;
      if (output?.secretsRead) {
        const watcher = system.get(watcherId('Secret'));
        const { keys, namespaces } = output.secretsRead;
        const relevant: SecretsRelevantEvent = { type: 'secrets.relevant', keys, namespaces };
        if (watcher) enqueue.sendTo(watcher, relevant);
      }
      for (const key of output?.secretsChanged ?? []) enqueue.raise({ type: 'k8s.changed', kind: 'Secret', key });
      const done = output?.done;
      if (!done) return;
      const event: SyncDoneEvent = { type: 'sync.done', ...done };
      for (const id of ['status', 'template']) {
        const target = system.get(id);
        if (target) enqueue.sendTo(target, event);
      }
    }),
    // The sync's tables go to nginx at once; a reload held for the token is moot (its config is no longer wanted).
    push: enqueueActions(({ system, enqueue }, params: { output: RunSyncOutput | undefined }) => {
      enqueue.assign({ held: null });
      const serve = params.output?.serve;
      const nginx = system.get('nginx');
      if (!serve?.tables || !nginx) return;
      const event: NginxPushEvent = {
        type: 'nginx.push',
        tables: serve.tables,
        ...(serve.trigger === undefined ? {} : { trigger: serve.trigger }),
      };
      enqueue.sendTo(nginx, event);
    }),
    // The value that needs a reload waits (with its tables); it carries the causes of one it replaces.
    hold: assign(({ context }, params: { output: RunSyncOutput | undefined }) => {
      const serve = params.output?.serve;
      if (!serve) return {};
      const trigger = combineTriggers(context.held?.trigger, serve.trigger);
      return { held: trigger === undefined ? serve : { ...serve, trigger } };
    }),
    // A reload is handed over (the sync's, or the one held), and takes the rate token.
    reload: enqueueActions(({ context, system, enqueue }, params: { output: RunSyncOutput | undefined }) => {
      const serve = params.output?.serve ?? context.held;
      enqueue.assign({ held: null });
      if (!serve) return;
      const trigger = params.output?.serve ? combineTriggers(context.held?.trigger, serve.trigger) : serve.trigger;
      // No nginx actor (one being restarted) gets nothing; its restart brings a sync that hands the config again.
      const nginx = system.get('nginx');
      if (nginx) enqueue.sendTo(nginx, reloadEvent(trigger === undefined ? serve : { ...serve, trigger }));
      enqueue.assign({ handed: { config: serve.config, files: serve.files } });
      enqueue.cancel(RATE_TIMER);
      enqueue.assign({ tokenReady: false });
      enqueue.raise({ type: 'rate.ready' }, { delay: 'minSyncInterval', id: RATE_TIMER });
    }),
    markSynced: assign({
      synced: ({ context, event }) =>
        event.type === 'k8s.synced' && !context.synced.includes(event.kind)
          ? [...context.synced, event.kind]
          : context.synced,
    }),
    markAllSynced: assign({ synced: ({ context }) => [...new Set([...context.synced, ...context.watchers])] }),
    giveBackToken: assign({ tokenReady: true }),
    beginSync: assign(({ context }) => ({
      dirty: false,
      generation: context.generation + 1,
      syncsStarted: context.syncsStarted + 1,
      awaitingVerdict: false,
      // This sync takes the refusal; one that comes while it runs waits for the next.
      refusedForSync: context.refused,
      refused: null,
      entriesRefusedForSync: context.entriesRefused,
      entriesRefused: [],
      changedForSync: context.changed,
      changed: NO_CHANGES,
    })),
    recordApplied: assign({
      applied: ({ context, event }) => (event.type === 'nginx.applied' ? event.config : context.applied),
    }),
    recordRefused: assign({
      refused: ({ context, event }) =>
        event.type === 'nginx.refused' ? { config: event.config, output: event.output } : context.refused,
    }),
    recordEntriesRefused: assign({
      entriesRefused: ({ context, event }) =>
        event.type === 'nginx.entriesRefused'
          ? [...context.entriesRefused, ...event.entries].slice(0, MAX_ENTRIES_REFUSED)
          : context.entriesRefused,
    }),
    recordOutput: assign(({ context, event }) => {
      const output = outputOf(event);
      return {
        syncsCompleted: context.syncsCompleted + 1,
        lastError: null,
        awaitingVerdict: output?.awaitingVerdict === true,
        memory: output?.memory ?? context.memory,
      };
    }),
    // A failed sync is retried no sooner than minSyncIntervalMs later: the token is taken.
    takeToken: enqueueActions(({ enqueue }) => {
      enqueue.cancel(RATE_TIMER);
      enqueue.assign({ tokenReady: false });
      enqueue.raise({ type: 'rate.ready' }, { delay: 'minSyncInterval', id: RATE_TIMER });
    }),
    // A verdict the last sync waits for (a bisection step), or any refusal, needs a sync.
    requestSync: raise({ type: 'sync.request', reason: "nginx's verdict" }),
    countFailed: assign(({ context }, params: { error: unknown }) => ({
      syncsFailed: context.syncsFailed + 1,
      lastError: describe(params.error),
      // The failed sync's changes are not applied: they still need a sync, spaced by the token like any retry.
      dirty: true,
      changed: mergeChanges(context.changedForSync, context.changed),
      changedForSync: NO_CHANGES,
      // nor are the refused entries judged: the retry takes them
      entriesRefused: [...context.entriesRefusedForSync, ...context.entriesRefused].slice(0, MAX_ENTRIES_REFUSED),
      entriesRefusedForSync: [],
    })),
  },
});

// Due (the debounce passed, or the max holdoff, and the token is there): the held value goes as it is, unless
// changes came since; then a sync builds them in and hands its reload over at once.
const due = [
  { guard: 'heldIsLatest', target: '#syncQueue.idle', actions: { type: 'reload', params: { output: undefined } } },
  { target: '#syncQueue.syncing', actions: 'markPrompt' },
] as const;

// A prompt sync (sync.request, sync.resync) while debouncing: due now if the rate token is there, else once it is back.
const promptWhilePending = [
  { guard: 'tokenReady', target: '#syncQueue.pending.due', actions: 'recordChange' },
  { target: '#syncQueue.pending.throttled', actions: 'recordChange' },
] as const;

/**
 * syncQueueMachine coalesces watcher and template changes into syncs, and makes the one decision what nginx gets of
 * each: none before every watcher has synced, at most one at a time, and any burst of changes (while idle, pending
 * or syncing) becomes exactly one further sync.
 *
 * A sync's value (RunSyncOutput) says what nginx should serve. Its config set equal to the one last handed (`handed`):
 * its tables go at once in `nginx.push` (an endpoint change: no debounce, no token). Different: it needs a reload,
 * handed in `nginx.reload` with its tables, at most one per `minSyncIntervalMs` (the rate token), and, as contour's
 * holdoff, after `debounceMs` of quiet when the change that brought it followed a sync within `maxHoldoffMs` (likely
 * one of a burst); a lone change after that (`idle.quiet`) is handed at once, rate permitting. A reload that must
 * wait is `held` in `pending`, its tables with it: no push runs ahead of the config they belong to, and changes that
 * come meanwhile wait with it, to be built in before it goes (or to make it moot: a sync whose config is the handed
 * one again pushes its tables and drops the held reload).
 *
 * States: `waitingForSync` → `pending` (`debouncing` | `throttled` → `due`) → `syncing` → `idle` (`settling` → `quiet`)
 * | `pending` | `syncing` (changes came during it: built at once, its reload held if it needs one);
 * `sync.stop` from anywhere → `stopped` (final). A sync running at `sync.stop` is cancelled: the
 * `runSync` actor is stopped (its AbortSignal fires) and its result is not counted.
 *
 * Events out: `nginx.reload` / `nginx.push` to `nginx`; `sync.done` (`done` of the output) to `status` and
 * `template`; `secrets.relevant` to the Secret watcher; `template.wanted` to `template` on start. Those that run.
 *
 * State that outlives a sync lives in the context: `memory` (the sync's memo, quarantines, …: opaque here), `handed`
 * and `held`. A queue the supervisor restarts starts without any of it: its first sync builds from nothing and hands
 * its config over again (the nginx actor skips one it already serves).
 *
 * Effects to provide: `runSync` (fromPromise<RunSyncOutput, RunSyncInput>): build the model and render it with the
 * given template; its value, not a message to another actor, carries the result. A rejection counts as a failed
 * sync, retried no sooner than `minSyncIntervalMs` later.
 */
export const syncQueueMachine = syncQueue.createMachine({
  id: 'syncQueue',
  context: ({ input }) => ({
    watchers: input.watchers,
    debounceMs: input.debounceMs,
    maxHoldoffMs: input.maxHoldoffMs,
    minSyncIntervalMs: input.minSyncIntervalMs,
    synced: [],
    dirty: false,
    prompt: false,
    tokenReady: true,
    handed: null,
    held: null,
    memory: null,
    generation: 0,
    changes: 0,
    lastChange: null,
    changed: NO_CHANGES,
    changedForSync: NO_CHANGES,
    syncsStarted: 0,
    syncsCompleted: 0,
    syncsFailed: 0,
    lastError: null,
    applied: null,
    refused: null,
    refusedForSync: null,
    entriesRefused: [],
    entriesRefusedForSync: [],
    awaitingVerdict: false,
    template: null,
  }),
  entry: 'askForTemplate',
  initial: 'waitingForSync',
  // Defaults for every state; the states below override what they treat differently.
  on: {
    'k8s.changed': { actions: 'recordChange' },
    'template.changed': { actions: 'recordChange' },
    'sync.request': { actions: 'recordChange' },
    'sync.resync': { actions: 'recordChange' },
    'k8s.synced': { actions: 'markSynced' },
    'rate.ready': { actions: 'giveBackToken' },
    'sync.stop': { target: '.stopped' },
    'nginx.applied': [
      { guard: 'awaitingVerdict', actions: ['recordApplied', 'requestSync'] },
      { actions: 'recordApplied' },
    ],
    'nginx.refused': { actions: ['recordRefused', 'requestSync'] },
    'nginx.entriesRefused': { actions: ['recordEntriesRefused', 'requestSync'] },
  },
  states: {
    waitingForSync: {
      // Changes here only mark dirty (root handler); the initial sync covers them.
      always: { guard: 'allSynced', target: 'pending' },
      on: {
        'sync.resync': { target: 'pending', actions: ['markAllSynced', 'recordChange'] },
      },
    },
    idle: {
      initial: 'settling',
      on: {
        'sync.request': { target: '#syncQueue.syncing', actions: ['recordChange', 'markPrompt'] },
        'sync.resync': { target: '#syncQueue.syncing', actions: ['recordChange', 'markPrompt'] },
      },
      states: {
        settling: {
          // A sync just ended: what comes now is likely the rest of a burst. It is built at once (an endpoint
          // change is pushed at once), and a reload it needs waits for the debounce.
          after: { maxHoldoff: 'quiet' },
          on: {
            'k8s.changed': { target: '#syncQueue.syncing', actions: ['recordChange', 'markBurst'] },
            'template.changed': { target: '#syncQueue.syncing', actions: ['recordChange', 'markBurst'] },
          },
        },
        quiet: {
          // Nothing since for maxHoldoffMs: a lone change is not waited on.
          on: {
            'k8s.changed': { target: '#syncQueue.syncing', actions: ['recordChange', 'markPrompt'] },
            'template.changed': { target: '#syncQueue.syncing', actions: ['recordChange', 'markPrompt'] },
          },
        },
      },
    },
    pending: {
      // A reload is held, or changes wait to be built (the first sync, a retry): after the debounce and the token.
      initial: 'debouncing',
      // Started on entry and not restarted by changes, so constant churn still syncs.
      after: {
        maxHoldoff: [{ guard: 'tokenReady', target: '.due' }, { target: '.throttled' }],
      },
      states: {
        debouncing: {
          after: {
            debounce: [{ guard: 'tokenReady', target: 'due' }, { target: 'throttled' }],
          },
          on: {
            // Re-entering restarts the debounce timer (and only it).
            'k8s.changed': { target: 'debouncing', reenter: true, actions: 'recordChange' },
            'template.changed': { target: 'debouncing', reenter: true, actions: 'recordChange' },
            'sync.request': promptWhilePending,
            'sync.resync': promptWhilePending,
          },
        },
        throttled: {
          // Due, but the last reload was handed less than minSyncIntervalMs ago. Changes that come now (endpoint
          // changes too) wait with it: they go out with the one reload.
          on: {
            'rate.ready': { target: 'due', actions: 'giveBackToken' },
          },
        },
        due: { always: due },
      },
    },
    syncing: {
      entry: 'beginSync',
      invoke: {
        id: 'runSync',
        src: 'runSync',
        input: ({ context }) => ({
          generation: context.generation,
          applied: context.applied,
          refused: context.refusedForSync,
          entriesRefused: context.entriesRefusedForSync,
          template: context.template,
          memory: context.memory,
          // Until one completes, a sync covers every object listed: it is the start, whatever the list brought.
          trigger:
            context.syncsCompleted === 0 && !context.changedForSync.labels.includes('sync queue restarted')
              ? 'start'
              : summarizeTrigger(context.changedForSync),
        }),
        onDone: [
          {
            // The config nginx was handed: the tables go at once; changes that came meanwhile are built at once too.
            guard: 'pushOnly',
            target: 'settled',
            // The push first: sync.done's receivers (the status writer, the request metrics) read every Ingress.
            actions: [
              'recordOutput',
              { type: 'push', params: ({ event }) => ({ output: event.output }) },
              { type: 'sendDone', params: ({ event }) => ({ output: event.output }) },
            ],
          },
          {
            guard: 'reloadNow',
            target: 'settled',
            actions: [
              'recordOutput',
              { type: 'reload', params: ({ event }) => ({ output: event.output }) },
              { type: 'sendDone', params: ({ event }) => ({ output: event.output }) },
            ],
          },
          {
            // The reload waits: for the debounce (a burst, or changes came during the sync), or only the token.
            guard: 'heldWhileDirty',
            target: 'pending',
            actions: [
              'recordOutput',
              { type: 'sendDone', params: ({ event }) => ({ output: event.output }) },
              { type: 'hold', params: ({ event }) => ({ output: event.output }) },
            ],
          },
          {
            guard: 'onlyTheToken',
            target: 'pending.throttled',
            actions: [
              'recordOutput',
              { type: 'sendDone', params: ({ event }) => ({ output: event.output }) },
              { type: 'hold', params: ({ event }) => ({ output: event.output }) },
            ],
          },
          {
            target: 'pending',
            actions: [
              'recordOutput',
              { type: 'sendDone', params: ({ event }) => ({ output: event.output }) },
              { type: 'hold', params: ({ event }) => ({ output: event.output }) },
            ],
          },
        ],
        // Taking the token again spaces the retry minSyncIntervalMs after the failure.
        onError: {
          target: 'pending',
          actions: [{ type: 'countFailed', params: ({ event }) => ({ error: event.error }) }, 'takeToken'],
        },
      },
    },
    // A sync's value was handed over (or pushed): changes that came during it are built at once, as likely ones of
    // a burst; else the queue is idle.
    settled: {
      always: [{ guard: 'dirty', target: 'syncing', actions: 'markBurst' }, { target: 'idle' }],
    },
    stopped: { type: 'final' },
  },
});
