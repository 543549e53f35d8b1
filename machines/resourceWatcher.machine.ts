import { assign, fromCallback, setup, type EventObject } from 'xstate';

/** ResourceWatcherInput configures one kind's watcher; durations in milliseconds. */
export interface ResourceWatcherInput {
  /** the watched kind, e.g. `Ingress` */
  readonly kind: string;
  /** first backoff after a failure; doubled per failure in a row */
  readonly baseBackoffMs: number;
  /** the cap of the backoff */
  readonly maxBackoffMs: number;
}

/** InformerInput is what the `informer` actor gets each time it is (re)started. */
export interface InformerInput {
  readonly kind: string;
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
 * relisting). `jitter` in [0, 1) comes from the effect side, so the machine stays pure.
 */
export interface WatchFailedEvent {
  readonly type: 'watch.failed';
  readonly error: string;
  readonly jitter: number;
}

/** WatcherStopEvent stops the watcher for good. */
export interface WatcherStopEvent {
  readonly type: 'watcher.stop';
}

/** ResourceWatcherEvent is every event a watcher handles. */
export type ResourceWatcherEvent = WatchSyncedEvent | WatchChangedEvent | WatchFailedEvent | WatcherStopEvent;

/** ResourceWatcherContext is a watcher's state beyond its state value. */
export interface ResourceWatcherContext extends ResourceWatcherInput {
  /** failures in a row since the last successful list */
  readonly failures: number;
  readonly jitter: number;
  readonly lastError: string | null;
  /** `k8s.synced` is reported once, on the first list only */
  readonly reportedSynced: boolean;
  readonly changes: number;
}

/**
 * resourceWatcherMachine is one kind's list-watch: `listing` until the first list is in, then
 * `watching`; a failure goes to `backoff` (exponential, with jitter, capped) and back to
 * `listing`; `watcher.stop` → `stopped`. The informer handles 410 Gone and dropped watches by
 * itself (relist / resume); the machine restarts it only when it gives up.
 *
 * Effects to provide: `informer` (fromCallback<EventObject, InformerInput>: starts the informer,
 * sends back `watch.synced`, `watch.changed`, `watch.failed`; stops it on cleanup), and the
 * actions `reportSynced` and `reportChanged` (tell the sync queue `k8s.synced` / `k8s.changed`).
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
  },
  guards: {
    firstSync: ({ context }) => !context.reportedSynced,
  },
  delays: {
    backoff: ({ context }) => {
      const exponential = Math.min(context.maxBackoffMs, context.baseBackoffMs * 2 ** Math.max(0, context.failures - 1));
      // Full jitter in the upper half: spreads reconnects of many replicas, never below half the step.
      return Math.round(exponential * (0.5 + 0.5 * context.jitter));
    },
  },
}).createMachine({
  id: 'resourceWatcher',
  context: ({ input }) => ({ ...input, failures: 0, jitter: 0, lastError: null, reportedSynced: false, changes: 0 }),
  initial: 'running',
  on: {
    'watcher.stop': '.stopped',
  },
  states: {
    running: {
      invoke: { src: 'informer', input: ({ context }) => ({ kind: context.kind }) },
      initial: 'listing',
      on: {
        'watch.changed': {
          actions: [
            assign({ changes: ({ context }) => context.changes + 1 }),
            { type: 'reportChanged', params: ({ context, event }) => ({ kind: context.kind, key: event.key }) },
          ],
        },
        'watch.failed': {
          target: 'backoff',
          actions: assign({
            failures: ({ context }) => context.failures + 1,
            jitter: ({ event }) => Math.min(Math.max(event.jitter, 0), 1),
            lastError: ({ event }) => event.error,
          }),
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
                  assign({ reportedSynced: true, failures: 0 }),
                  { type: 'reportSynced', params: ({ context }) => ({ kind: context.kind }) },
                ],
              },
              { target: 'watching', actions: assign({ failures: 0 }) },
            ],
          },
        },
        watching: {},
      },
    },
    backoff: {
      after: { backoff: 'running' },
    },
    stopped: { type: 'final' },
  },
});
