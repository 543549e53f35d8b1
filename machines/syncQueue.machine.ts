import { assign, enqueueActions, fromPromise, raise, setup } from 'xstate';
import { addChange, type ChangeList, mergeChanges, NO_CHANGES, summarizeTrigger } from './trigger.js';
import type { RefusedEntry, SyncDoneEvent, SyncQueueCommand, TemplateWantedEvent } from './events.js';

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
  /** least time between two sync starts: 1000 / `--sync-rate-limit` */
  readonly minSyncIntervalMs: number;
  /**
   * the kinds whose changes only alter the tables pushed to nginx, never nginx.conf (EndpointSlice with the Lua
   * balancer; none by default): a sync of only such changes reloads nothing, so it waits for neither the debounce
   * nor the rate token, and takes no token
   */
  readonly pushedKinds?: readonly string[];
}

/**
 * RunSyncInput is what each `runSync` invocation gets: the sync's number (1 for the first) and nginx's verdicts since
 * the last.
 */
export interface RunSyncInput {
  readonly generation: number;
  /** the config nginx serves, as the last `nginx.applied` said (null before any) */
  readonly applied: string | null;
  /** the last config `nginx -t` refused since the previous sync started, in nginx's words */
  readonly refused: { readonly config: string; readonly output: string } | null;
  /** the template of the last `template.changed` (compiled; opaque here), null before any */
  readonly template: unknown;
  /** the table entries nginx refused in pushes since the previous sync started (`nginx.entriesRefused`) */
  readonly entriesRefused: readonly RefusedEntry[];
  /** what caused this sync, for the logs and the nginx actor's record of applies (`Ingress default/app changed`) */
  readonly trigger: string;
}

/**
 * RunSyncOutput is what a sync leaves for the next (whether it waits for nginx's verdict on what
 * it handed over) and what it found, which the queue sends on as `sync.done`.
 */
export interface RunSyncOutput {
  /** a step of bisection: the next sync must follow nginx's verdict on this one's config */
  readonly awaitingVerdict: boolean;
  /** the model, problems and served Ingresses, for the status and template actors */
  readonly done?: Omit<SyncDoneEvent, 'type'>;
  /**
   * `Kind/namespace/name` of the objects whose change, as this sync built things, only alters the pushed tables
   * (with the Lua balancer: a Secret that only Ingresses' spec.tls reads): like `pushedKinds`, until the next sync says
   */
  readonly pushedKeys?: readonly string[];
  /**
   * `Kind/namespace/name` prefixes of objects of a pushed kind whose change still alters nginx.conf, as this sync built
   * things (the EndpointSlices of a TCP/UDP or ssl-passthrough Service: the stream block lists endpoints): they wait
   * for the debounce and the rate token like any change that may reload, until the next sync says
   */
  readonly renderedPrefixes?: readonly string[];
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
  /** such a change may alter nginx.conf (it is not of a pushed kind), so its sync may reload and needs the token */
  readonly reloadable: boolean;
  readonly pushedKinds: readonly string[];
  /** from the last sync's output (`RunSyncOutput.pushedKeys`) */
  readonly pushedKeys: readonly string[];
  /** from the last sync's output (`RunSyncOutput.renderedPrefixes`) */
  readonly renderedPrefixes: readonly string[];
  /** the rate-limit token: a sync may start now */
  readonly tokenReady: boolean;
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
  /** the config nginx serves, from `nginx.applied` */
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

/** reloadableChange: `event` is a change that may alter nginx.conf; timers and verdicts are no change. */
function reloadableChange(context: SyncQueueContext, event: SyncQueueEvent): boolean {
  if (event.type === 'k8s.changed') {
    const id = `${event.kind}/${event.key}`;
    if (context.renderedPrefixes.some((prefix) => id.startsWith(prefix))) return true;
    return !context.pushedKinds.includes(event.kind) && !context.pushedKeys.includes(id);
  }
  return event.type === 'template.changed' || event.type === 'sync.request' || event.type === 'sync.resync';
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

/** pushOnly: nothing waiting for a sync, `event` included, can alter nginx.conf: the sync only pushes tables. */
const pushOnly = ({ context, event }: { context: SyncQueueContext; event: SyncQueueEvent }) =>
  !context.reloadable && !reloadableChange(context, event);

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
    // A sync that may reload waits for the rate token; one that only pushes tables does not.
    mayStart: (args) => args.context.tokenReady || pushOnly(args),
    pushOnly,
    dirty: ({ context }) => context.dirty,
    dirtyPushOnly: ({ context }) => context.dirty && !context.reloadable,
    awaitingVerdict: ({ context }) => context.awaitingVerdict,
  },
  delays: {
    debounce: ({ context }) => context.debounceMs,
    maxHoldoff: ({ context }) => context.maxHoldoffMs,
    minSyncInterval: ({ context }) => context.minSyncIntervalMs,
  },
  actions: {
    recordChange: assign(({ context, event }) => ({
      dirty: true,
      reloadable: context.reloadable || reloadableChange(context, event),
      changes: context.changes + 1,
      lastChange: event.type === 'k8s.changed' ? `k8s.changed ${event.kind} ${event.key}` : event.type,
      changed: addChange(context.changed, changeLabel(event) ?? event.type),
      template: event.type === 'template.changed' ? event.template : context.template,
    })),
    // A queue restarted by the supervisor has no template: the template actor sends its current one.
    askForTemplate: enqueueActions(({ system, enqueue }) => {
      const template = system.get('template');
      if (template) enqueue.sendTo(template, { type: 'template.wanted' } satisfies TemplateWantedEvent);
    }),
    // What a sync found goes to those who act on it: Events and status, the template's test render.
    sendDone: enqueueActions(({ system, enqueue }, params: { output: RunSyncOutput }) => {
      const done = params.output.done;
      if (!done) return;
      const event: SyncDoneEvent = { type: 'sync.done', ...done };
      for (const id of ['status', 'template']) {
        const target = system.get(id);
        if (target) enqueue.sendTo(target, event);
      }
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
      reloadable: false,
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
    recordOutput: assign(({ event }) => {
      const output = (event as { output?: RunSyncOutput }).output;
      return {
        awaitingVerdict: output?.awaitingVerdict === true,
        pushedKeys: output?.pushedKeys ?? [],
        renderedPrefixes: output?.renderedPrefixes ?? [],
      };
    }),
    // The token is taken when a sync that may reload starts (or a sync fails), and a timer gives it back.
    takeToken: enqueueActions(({ enqueue }) => {
      enqueue.cancel(RATE_TIMER);
      enqueue.assign({ tokenReady: false });
      enqueue.raise({ type: 'rate.ready' }, { delay: 'minSyncInterval', id: RATE_TIMER });
    }),
    takeTokenToReload: enqueueActions(({ context, enqueue }) => {
      if (!context.reloadable) return;
      enqueue.cancel(RATE_TIMER);
      enqueue.assign({ tokenReady: false });
      enqueue.raise({ type: 'rate.ready' }, { delay: 'minSyncInterval', id: RATE_TIMER });
    }),
    countCompleted: assign({ syncsCompleted: ({ context }) => context.syncsCompleted + 1, lastError: null }),
    // A verdict the last sync waits for (a bisection step), or any refusal, needs a sync.
    requestSync: raise({ type: 'sync.request', reason: "nginx's verdict" }),
    countFailed: assign(({ context }, params: { error: unknown }) => ({
      syncsFailed: context.syncsFailed + 1,
      lastError: describe(params.error),
      // The failed sync's changes are not applied: they still need a sync, spaced by the token like any retry.
      dirty: true,
      reloadable: true,
      changed: mergeChanges(context.changedForSync, context.changed),
      changedForSync: NO_CHANGES,
      // nor are the refused entries judged: the retry takes them
      entriesRefused: [...context.entriesRefusedForSync, ...context.entriesRefused].slice(0, MAX_ENTRIES_REFUSED),
      entriesRefusedForSync: [],
    })),
  },
});

// A prompt sync (sync.request, sync.resync, or any change once idle is quiet) from idle or while
// debouncing: now if the rate token is there (or the sync only pushes), else as soon as it is back.
const promptSync = syncQueue.createStateConfig({
  on: {
    'sync.request': [
      { guard: 'mayStart', target: '#syncQueue.syncing', actions: 'recordChange' },
      { target: '#syncQueue.pending.throttled', actions: 'recordChange' },
    ],
  },
}).on!['sync.request'];

/**
 * syncQueueMachine coalesces watcher and template changes into syncs: none before every watcher
 * has synced, at most one at a time, at most one per `minSyncIntervalMs`, and any burst of
 * changes (while idle, pending or syncing) becomes exactly one further sync. As contour's holdoff:
 * a change that follows a sync within `maxHoldoffMs` is likely one of a burst and waits for
 * `debounceMs` of quiet; a lone change after that (`idle.quiet`) syncs at once, rate permitting.
 *
 * States: `waitingForSync` → `pending` (`debouncing` | `throttled`) → `syncing` → `idle`
 * (`settling` → `quiet`) | `pending`;
 * `sync.stop` from anywhere → `stopped` (final). A sync running at `sync.stop` is cancelled: the
 * `runSync` actor is stopped (its AbortSignal fires) and its result is not counted.
 *
 * The template comes in `template.changed` and is kept for every sync (on start the queue asks the
 * `template` actor for it with `template.wanted`); what a sync found (`done` of its output) goes
 * on as `sync.done` to the `status` and `template` actors, those of them that run.
 *
 * Effects to provide: `runSync` (fromPromise<RunSyncOutput, RunSyncInput>): build the model,
 * render with the given template, and hand the text to the nginx-process actor. A rejection
 * counts as a failed sync, retried no sooner than `minSyncIntervalMs` later.
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
    // The first sync renders everything.
    reloadable: true,
    pushedKinds: input.pushedKinds ?? [],
    pushedKeys: [],
    renderedPrefixes: [],
    tokenReady: true,
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
        'sync.request': promptSync,
        'sync.resync': promptSync,
      },
      states: {
        settling: {
          // A sync just ended: what comes now is likely the rest of a burst, so it is debounced.
          after: { maxHoldoff: 'quiet' },
          on: {
            // Debouncing spares reloads; a change that only alters the pushed tables is pushed at once.
            'k8s.changed': [
              { guard: 'pushOnly', target: '#syncQueue.syncing', actions: 'recordChange' },
              { target: '#syncQueue.pending', actions: 'recordChange' },
            ],
            'template.changed': { target: '#syncQueue.pending', actions: 'recordChange' },
          },
        },
        quiet: {
          // Nothing since for maxHoldoffMs: a lone change is not waited on.
          on: {
            'k8s.changed': promptSync,
            'template.changed': promptSync,
          },
        },
      },
    },
    pending: {
      initial: 'debouncing',
      // Started on entry and not restarted by changes, so constant churn still syncs.
      after: {
        maxHoldoff: [{ guard: 'mayStart', target: 'syncing' }, { target: '.throttled' }],
      },
      states: {
        debouncing: {
          after: {
            debounce: [{ guard: 'mayStart', target: '#syncQueue.syncing' }, { target: 'throttled' }],
          },
          on: {
            // Re-entering restarts the debounce timer (and only it).
            'k8s.changed': { target: 'debouncing', reenter: true, actions: 'recordChange' },
            'template.changed': { target: 'debouncing', reenter: true, actions: 'recordChange' },
            'sync.request': promptSync,
            'sync.resync': promptSync,
          },
        },
        throttled: {
          // Due, but the last sync that may reload started less than minSyncIntervalMs ago. Changes of pushed
          // kinds that come now wait too: they go out with the one sync.
          on: {
            'rate.ready': { target: '#syncQueue.syncing', actions: 'giveBackToken' },
          },
        },
      },
    },
    syncing: {
      // takeTokenToReload reads what beginSync resets.
      entry: ['takeTokenToReload', 'beginSync'],
      invoke: {
        id: 'runSync',
        src: 'runSync',
        input: ({ context }) => ({
          generation: context.generation,
          applied: context.applied,
          refused: context.refusedForSync,
          entriesRefused: context.entriesRefusedForSync,
          template: context.template,
          // Until one completes, a sync covers every object listed: it is the start, whatever the list brought.
          trigger:
            context.syncsCompleted === 0 && !context.changedForSync.labels.includes('sync queue restarted')
              ? 'start'
              : summarizeTrigger(context.changedForSync),
        }),
        onDone: [
          {
            // Only pushed kinds changed meanwhile: push them at once, as a lone one would be.
            guard: 'dirtyPushOnly',
            target: '#syncQueue.syncing',
            reenter: true,
            actions: [
              'countCompleted',
              'recordOutput',
              { type: 'sendDone', params: ({ event }) => ({ output: event.output }) },
            ],
          },
          {
            guard: 'dirty',
            target: 'pending',
            actions: [
              'countCompleted',
              'recordOutput',
              { type: 'sendDone', params: ({ event }) => ({ output: event.output }) },
            ],
          },
          {
            target: 'idle',
            actions: [
              'countCompleted',
              'recordOutput',
              { type: 'sendDone', params: ({ event }) => ({ output: event.output }) },
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
    stopped: { type: 'final' },
  },
});
