import { assign, enqueueActions, fromCallback, setup, type EventObject } from 'xstate';

/** ResourceWatcherInput configures one kind's watcher; durations in milliseconds. */
export interface ResourceWatcherInput {
  /** the watched kind, e.g. `Ingress` */
  readonly kind: string;
  /** first backoff after a failure; doubled per failure in a row */
  readonly baseBackoffMs: number;
  /** the cap of the backoff */
  readonly maxBackoffMs: number;
  /** a list, or a watch's answer, that takes longer fails (the informer's default when unset) */
  readonly requestTimeoutMs?: number;
  /** an open watch silent (not even a bookmark) for longer is reopened (the informer's default when unset) */
  readonly watchIdleTimeoutMs?: number;
  /** how often a kind the API server does not serve (a CRD not installed) is listed again; 30 s when unset */
  readonly unservedRecheckMs?: number;
}

/** UNSERVED_RECHECK_MS is how often an unserved kind is listed again unless the input says otherwise. */
export const UNSERVED_RECHECK_MS = 30_000;

/** InformerInput is what the `informer` actor gets each time it is (re)started. */
export interface InformerInput {
  readonly kind: string;
  readonly requestTimeoutMs?: number;
  readonly watchIdleTimeoutMs?: number;
}

/** WatchSyncedEvent: the informer's list is in and its watch is open. */
export interface WatchSyncedEvent {
  readonly type: 'watch.synced';
}

/** WatchChangedEvent: an object was added, updated or deleted in the cache. */
export interface WatchChangedEvent {
  readonly type: 'watch.changed';
  readonly key: string;
}

/**
 * WatchFailedEvent: the informer stopped on an error other than 410 Gone (which it handles by
 * relisting). `jitter` in [0, 1) and `at` (when, epoch ms) come from the effect side, so the
 * machine stays pure.
 */
export interface WatchFailedEvent {
  readonly type: 'watch.failed';
  readonly error: string;
  readonly jitter: number;
  readonly at: number;
}

/**
 * WatchUnservedEvent: the informer's list found that the API server does not serve the kind (404: its CRD is not
 * installed). `at` (epoch ms) comes from the effect side.
 */
export interface WatchUnservedEvent {
  readonly type: 'watch.unserved';
  readonly error: string;
  readonly at: number;
}

/**
 * SecretsRelevantEvent: after each build, the Secrets (`namespace/name`) the model read, and the
 * namespaces in which every Secret counts (those of Ingresses the quarantine holds back, which
 * a renewed Secret of theirs lets back in). From then on only their changes are reported; the
 * others are only cached. Until the first one, every change counts.
 */
export interface SecretsRelevantEvent {
  readonly type: 'secrets.relevant';
  readonly keys: readonly string[];
  readonly namespaces: readonly string[];
}

/** WatcherStopEvent stops the watcher for good. */
export interface WatcherStopEvent {
  readonly type: 'watcher.stop';
}

/** ResourceWatcherEvent is every event a watcher handles. */
export type ResourceWatcherEvent =
  | WatchSyncedEvent
  | WatchChangedEvent
  | WatchFailedEvent
  | WatchUnservedEvent
  | SecretsRelevantEvent
  | WatcherStopEvent;

/** ResourceWatcherContext is a watcher's state beyond its state value. */
export interface ResourceWatcherContext extends ResourceWatcherInput {
  /** failures in a row since the last successful list */
  readonly failures: number;
  readonly jitter: number;
  readonly lastError: string | null;
  /** `k8s.synced` is reported once, on the first list only */
  readonly reportedSynced: boolean;
  readonly changes: number;
  /** since when (epoch ms) this kind is not watched: the first failure in a row; null while watching */
  readonly staleSince: number | null;
  /** since when (epoch ms) the API server does not serve this kind; null while it does (or before the first list) */
  readonly unservedSince: number | null;
  /** the objects whose changes are reported (from `secrets.relevant`); null: all of them */
  readonly relevant: { readonly keys: ReadonlySet<string>; readonly namespaces: ReadonlySet<string> } | null;
}

/** WatchFailureReport is what `reportFailed` gets: enough to log the failure and say when the retry comes. */
export interface WatchFailureReport {
  readonly kind: string;
  readonly error: string;
  /** failures in a row, this one included */
  readonly failures: number;
  readonly retryInMs: number;
  /** the first list was in before: the controller serves what it last saw of this kind, which may be stale */
  readonly afterFirstSync: boolean;
  readonly staleSince: number | null;
}

/** UnservedReport is what `reportUnserved` gets: the kind, the API server's answer, and when it is listed again. */
export interface UnservedReport {
  readonly kind: string;
  readonly error: string;
  readonly recheckInMs: number;
}

/** backoffDelayMs is the wait before the next list: exponential per failure in a row, capped, jittered. */
export function backoffDelayMs(
  context: Pick<ResourceWatcherContext, 'baseBackoffMs' | 'maxBackoffMs' | 'failures' | 'jitter'>,
): number {
  const exponential = Math.min(context.maxBackoffMs, context.baseBackoffMs * 2 ** Math.max(0, context.failures - 1));
  // Full jitter in the upper half: spreads reconnects of many replicas, never below half the step.
  return Math.round(exponential * (0.5 + 0.5 * context.jitter));
}

const recheckMs = (context: Pick<ResourceWatcherInput, 'unservedRecheckMs'>) =>
  context.unservedRecheckMs ?? UNSERVED_RECHECK_MS;

/**
 * resourceWatcherMachine is one kind's list-watch: `listing` until the first list is in, then
 * `watching`; a failure goes to `backoff` (exponential, with jitter, capped) and back to
 * `listing`; a kind the API server does not serve (`watch.unserved`: its CRD is not installed) goes to
 * `unserved`, which counts as synced (an absent Gateway API must not hold the first sync back) and lists
 * again every unservedRecheckMs; `watcher.stop` → `stopped`; `secrets.relevant` narrows which changes are reported.
 * The informer handles 410 Gone and dropped watches by itself (relist / resume); the machine
 * restarts it only when it gives up.
 *
 * Effects to provide: `informer` (fromCallback<EventObject, InformerInput>: starts the informer,
 * sends back `watch.synced`, `watch.changed`, `watch.failed`; stops it on cleanup), the actions
 * `reportSynced` and `reportChanged` (tell the sync queue `k8s.synced` / `k8s.changed`),
 * `reportFailed` / `reportRecovered` (log a failure with its retry delay; log watching again), and
 * `reportUnserved` / `reportServed` (log that the kind is not served, once; log that it is now).
 */
export const resourceWatcherMachine = setup({
  types: {
    context: {} as ResourceWatcherContext,
    events: {} as ResourceWatcherEvent,
    input: {} as ResourceWatcherInput,
  },
  actors: {
    informer: fromCallback<EventObject, InformerInput>(() => {
      throw new Error('actor "informer" not provided');
    }),
  },
  actions: {
    reportSynced: (_, _params: { kind: string }) => {},
    reportChanged: (_, _params: { kind: string; key: string }) => {},
    reportFailed: (_, _params: WatchFailureReport) => {},
    reportRecovered: (_, _params: { kind: string; staleSince: number | null }) => {},
    reportUnserved: (_, _params: UnservedReport) => {},
    reportServed: (_, _params: { kind: string; unservedSince: number | null }) => {},
  },
  guards: {
    firstSync: ({ context }) => !context.reportedSynced,
    wasUnserved: ({ context }) => context.unservedSince !== null,
    relevant: ({ context, event }) => {
      if (context.relevant === null || event.type !== 'watch.changed') return true;
      const slash = event.key.indexOf('/');
      return (
        context.relevant.keys.has(event.key) ||
        (slash > 0 && context.relevant.namespaces.has(event.key.slice(0, slash)))
      );
    },
  },
  delays: {
    backoff: ({ context }) => backoffDelayMs(context),
    unservedRecheck: ({ context }) => recheckMs(context),
  },
}).createMachine({
  id: 'resourceWatcher',
  context: ({ input }) => ({
    ...input,
    failures: 0,
    jitter: 0,
    lastError: null,
    reportedSynced: false,
    changes: 0,
    staleSince: null,
    unservedSince: null,
    relevant: null,
  }),
  initial: 'running',
  on: {
    'watcher.stop': '.stopped',
    'secrets.relevant': {
      actions: assign({
        relevant: ({ event }) => ({ keys: new Set(event.keys), namespaces: new Set(event.namespaces) }),
      }),
    },
  },
  states: {
    running: {
      invoke: {
        src: 'informer',
        input: ({ context }) => ({
          kind: context.kind,
          ...(context.requestTimeoutMs === undefined ? {} : { requestTimeoutMs: context.requestTimeoutMs }),
          ...(context.watchIdleTimeoutMs === undefined ? {} : { watchIdleTimeoutMs: context.watchIdleTimeoutMs }),
        }),
      },
      initial: 'listing',
      on: {
        // A change of an object no build read (a Secret no Ingress names) is only cached.
        'watch.changed': {
          guard: 'relevant',
          actions: [
            assign({ changes: ({ context }) => context.changes + 1 }),
            { type: 'reportChanged', params: ({ context, event }) => ({ kind: context.kind, key: event.key }) },
          ],
        },
        // The first unserved list counts as the first sync; the kind is said to be unserved once, not at every recheck.
        'watch.unserved': {
          target: 'unserved',
          actions: enqueueActions(({ context, event, enqueue }) => {
            if (context.unservedSince === null)
              enqueue({
                type: 'reportUnserved',
                params: { kind: context.kind, error: event.error, recheckInMs: recheckMs(context) },
              });
            if (!context.reportedSynced) enqueue({ type: 'reportSynced', params: { kind: context.kind } });
            enqueue.assign({
              reportedSynced: true,
              failures: 0,
              staleSince: null,
              lastError: event.error,
              unservedSince: context.unservedSince ?? event.at,
            });
          }),
        },
        'watch.failed': {
          target: 'backoff',
          actions: [
            assign({
              failures: ({ context }) => context.failures + 1,
              jitter: ({ event }) => Math.min(Math.max(event.jitter, 0), 1),
              lastError: ({ event }) => event.error,
              staleSince: ({ context, event }) => context.staleSince ?? event.at,
            }),
            {
              type: 'reportFailed',
              params: ({ context }) => ({
                kind: context.kind,
                error: context.lastError ?? '',
                failures: context.failures,
                retryInMs: backoffDelayMs(context),
                afterFirstSync: context.reportedSynced,
                staleSince: context.staleSince,
              }),
            },
          ],
        },
      },
      states: {
        listing: {
          on: {
            'watch.synced': [
              {
                guard: 'firstSync',
                target: 'watching',
                actions: [
                  assign({ reportedSynced: true, failures: 0, staleSince: null }),
                  { type: 'reportSynced', params: ({ context }) => ({ kind: context.kind }) },
                ],
              },
              // The API server serves the kind now (its CRD was installed): its objects came as changes.
              {
                guard: 'wasUnserved',
                target: 'watching',
                actions: [
                  {
                    type: 'reportServed',
                    params: ({ context }) => ({ kind: context.kind, unservedSince: context.unservedSince }),
                  },
                  assign({ failures: 0, staleSince: null, unservedSince: null, lastError: null }),
                ],
              },
              // Listing again only ever follows a failure: this is a recovery.
              {
                target: 'watching',
                actions: [
                  {
                    type: 'reportRecovered',
                    params: ({ context }) => ({ kind: context.kind, staleSince: context.staleSince }),
                  },
                  assign({ failures: 0, staleSince: null }),
                ],
              },
            ],
          },
        },
        watching: {},
      },
    },
    backoff: {
      after: { backoff: 'running' },
    },
    // Not a failure: nothing of this kind exists to serve. Listed again now and then, for the CRD may come.
    unserved: {
      after: { unservedRecheck: 'running' },
    },
    stopped: { type: 'final' },
  },
});
