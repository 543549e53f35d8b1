import {
  assign,
  enqueueActions,
  fromCallback,
  fromPromise,
  sendTo,
  setup,
  type AnyActorLogic,
  type AnyActorRef,
  type EventObject,
  type SnapshotFrom,
} from 'xstate';
import { type StopEvent, watcherId } from './events.js';
import { nginxProcessMachine, type NginxProcessInput, type NginxProcessOutput } from './nginxProcess.machine.js';
import { statusMachine, type StatusInput, type StatusOutput } from './status.machine.js';
import { syncQueueMachine, type SyncQueueInput } from './syncQueue.machine.js';
import { templateMachine, type TemplateOutput } from './template.machine.js';

/** RootSupervisorInput configures the supervisor and, through it, its children. */
export interface RootSupervisorInput {
  /** the kinds to watch, one `watcher` child each, started in this order */
  readonly watchers: readonly string[];
  /** more restarts than this within restartPeriodMs stop everything (OTP's MaxR) */
  readonly restartIntensity: number;
  /** the sliding window for restartIntensity, in milliseconds (OTP's MaxT) */
  readonly restartPeriodMs: number;
  /** bound on the whole `stopping` phase, in milliseconds */
  readonly shutdownTimeoutMs: number;
  /** the sync queue's input; its `watchers` are the ones above */
  readonly syncQueue: Omit<SyncQueueInput, 'watchers'>;
  readonly nginx: NginxProcessInput;
  /** extra input for every watcher (backoff settings, say), merged under `kind` */
  readonly watcherOptions?: Readonly<Record<string, unknown>>;
  /** the `status` child's input (leader election, Ingress status, Events); no such child when absent */
  readonly status?: StatusInput;
  /** run the `http` child (/healthz, /metrics), started first and stopped last; no such child when absent or false */
  readonly http?: boolean;
}

/** WatcherInput is what each `watcher` child gets. */
export interface WatcherInput {
  readonly kind: string;
  readonly [option: string]: unknown;
}

/** watchedKindOf is the kind a watcher's id names (`watcher.Ingress`: `Ingress`); null for any other child id. */
export function watchedKindOf(id: string): string | null {
  return id.startsWith('watcher.') ? id.slice('watcher.'.length) : null;
}

/** RestartExpiredEvent is the supervisor's own delayed event: one restart left the window. */
export interface RestartExpiredEvent {
  readonly type: 'restart.expired';
}

/** ChildErrorEvent is what xstate sends when a child actor fails. */
export interface ChildErrorEvent {
  readonly type: `xstate.error.actor.${string}`;
  readonly error: unknown;
}

/** WatcherDoneEvent is what xstate sends when a watcher completes, which a watcher never should. */
export interface WatcherDoneEvent {
  readonly type: `xstate.done.actor.watcher.${string}`;
  readonly output: unknown;
}

/** RootSupervisorEvent is every event the root supervisor handles. */
export type RootSupervisorEvent =
  | StopEvent
  | RestartExpiredEvent
  | ChildErrorEvent
  | WatcherDoneEvent
  | { readonly type: 'xstate.snapshot.template'; readonly snapshot: SnapshotFrom<typeof templateMachine> }
  | { readonly type: 'xstate.done.actor.template'; readonly output: TemplateOutput }
  | { readonly type: 'xstate.done.actor.nginx'; readonly output: NginxProcessOutput }
  | { readonly type: 'xstate.done.actor.status'; readonly output: StatusOutput }
  | { readonly type: 'xstate.done.actor.http'; readonly output: unknown }
  | { readonly type: 'xstate.done.actor.bootConfig'; readonly output: unknown };

/** RootSupervisorContext is the supervisor's state beyond its state value. */
export interface RootSupervisorContext extends RootSupervisorInput {
  /** restarts still inside the sliding window */
  readonly recentRestarts: number;
  /** restarts per child id, in total, for /metrics */
  readonly restarts: Readonly<Record<string, number>>;
  readonly lastCrash: string | null;
  /** the first reason the process must exit 1; null while all is well */
  readonly failure: string | null;
  /** the nginx-process actor's `clean` output once it stopped */
  readonly nginxClean: boolean | null;
  /** the status actor has stopped (true from the start when there is none) */
  readonly statusStopped: boolean;
  /** boot's config check passed and the children were started */
  readonly booted: boolean;
}

/** RootSupervisorOutput is the final `stopped` state's output: the process exit code, and why not 0. */
export interface RootSupervisorOutput {
  readonly exitCode: 0 | 1;
  readonly reason: string | null;
}

/**
 * childIds lists every child id in start order: http (if any), watchers, template, syncQueue, nginx, status (if any).
 */
export function childIds(context: Pick<RootSupervisorInput, 'watchers' | 'status' | 'http'>): string[] {
  return [
    ...(context.http ? ['http'] : []),
    ...context.watchers.map(watcherId),
    'template',
    'syncQueue',
    'nginx',
    ...(context.status ? ['status'] : []),
  ];
}

function childOf(event: EventObject): string {
  return event.type.replace(/^xstate\.(error|done)\.actor\./, '');
}

function crashOf(event: EventObject): string {
  const error = 'error' in event ? event.error : 'completed, but watchers must run until stopped';
  return `${childOf(event)}: ${error instanceof Error ? error.message : String(error)}`;
}

/**
 * orphansOf lists what a failed child still runs. xstate stops a machine's invocations when it stops or finishes,
 * but not when it fails (statelyai/xstate#5153): a failed nginx machine would leave its master running beside the
 * restarted machine's, and each orphan would report its end to a stopped actor.
 */
function orphansOf(child: AnyActorRef | undefined): AnyActorRef[] {
  const snapshot = child?.getSnapshot();
  if (snapshot?.status !== 'error' || !snapshot.children) return [];
  return Object.values(snapshot.children as Record<string, AnyActorRef | undefined>).filter(
    (orphan): orphan is AnyActorRef => orphan !== undefined,
  );
}

const supervisor = setup({
  types: {
    context: {} as RootSupervisorContext,
    events: {} as RootSupervisorEvent,
    input: {} as RootSupervisorInput,
    output: {} as RootSupervisorOutput,
  },
  actors: {
    // Opaque: any actor logic that watches one kind (input WatcherInput) and runs until stopped.
    watcher: fromCallback<EventObject, WatcherInput>(() => {
      throw new Error('actor "watcher" not provided');
    }) as AnyActorLogic,
    template: templateMachine,
    syncQueue: syncQueueMachine,
    nginx: nginxProcessMachine,
    status: statusMachine,
    // Opaque: any actor logic that serves /healthz and /metrics until stopped, and fails when it cannot.
    http: fromPromise<void, void>(async () => {
      throw new Error('actor "http" not provided');
    }) as AnyActorLogic,
    // Writes a config from an empty cluster and has `nginx -t` check it, so nginx can start at once.
    bootConfig: fromPromise<void, void>(async () => {
      throw new Error('actor "bootConfig" not provided');
    }),
  },
  guards: {
    templateReady: ({ event }) => event.type === 'xstate.snapshot.template' && event.snapshot.value === 'ready',
    notBooted: ({ context }) => !context.booted,
    restartBudgetExceeded: ({ context }) => context.recentRestarts + 1 > context.restartIntensity,
    childrenStopped: ({ context }) => context.nginxClean !== null && context.statusStopped,
  },
  delays: {
    restartPeriod: ({ context }) => context.restartPeriodMs,
    shutdownTimeout: ({ context }) => context.shutdownTimeoutMs,
  },
  actions: {
    // Boot spawns every child in order; a restart (one_for_one) replaces only the failed one,
    // under the same id and systemId (stopChild unregisters the old systemId at once).
    startChildren: enqueueActions(({ context, enqueue }, params: { ids: readonly string[]; restart: boolean }) => {
      for (const id of params.ids) {
        if (params.restart) enqueue.stopChild(id);
        if (id === 'template') {
          // syncSnapshot lets booting see the template become ready.
          enqueue.spawnChild('template', { id, systemId: id, syncSnapshot: true });
        } else if (id === 'syncQueue') {
          enqueue.spawnChild('syncQueue', {
            id,
            systemId: id,
            input: { ...context.syncQueue, watchers: context.watchers },
          });
        } else if (id === 'nginx') {
          enqueue.spawnChild('nginx', { id, systemId: id, input: context.nginx });
        } else if (id === 'status' && context.status) {
          enqueue.spawnChild('status', { id, systemId: id, input: context.status });
        } else if (id === 'http') {
          enqueue.spawnChild('http', { id, systemId: id });
        } else {
          const input: WatcherInput = { ...context.watcherOptions, kind: id.slice('watcher.'.length) };
          enqueue.spawnChild('watcher', { id, systemId: id, input });
        }
        if (!params.restart) continue;
        // A new sync queue missed the watchers' one-time `k8s.synced`; a new nginx has no config
        // yet, a new status actor no sync.done to publish.
        if (id === 'syncQueue') enqueue.sendTo('syncQueue', { type: 'sync.resync' });
        if (id === 'nginx' || id === 'status')
          enqueue.sendTo('syncQueue', {
            type: 'sync.request',
            reason: `${id === 'nginx' ? 'nginx' : 'status'} actor restarted`,
            ...(id === 'nginx' ? { nginxRestarted: true } : {}),
          });
        enqueue.raise({ type: 'restart.expired' }, { delay: 'restartPeriod' });
      }
    }),
    // What stopChild would do for a child that stops normally (xstate.stop is what it sends); each orphan's cleanup
    // releases what it holds (the nginx master's kills the master).
    stopOrphans: enqueueActions(({ event, self, enqueue }) => {
      // A pure transition (a model walk) has no snapshot of self, and nothing running.
      const children: Readonly<Record<string, AnyActorRef | undefined>> = self.getSnapshot()?.children ?? {};
      for (const orphan of orphansOf(children[childOf(event)])) enqueue.sendTo(orphan, { type: 'xstate.stop' });
    }),
    countRestart: assign(({ context, event }) => {
      const id = childOf(event);
      return {
        recentRestarts: context.recentRestarts + 1,
        restarts: { ...context.restarts, [id]: (context.restarts[id] ?? 0) + 1 },
        lastCrash: crashOf(event),
      };
    }),
    expireRestart: assign({ recentRestarts: ({ context }) => Math.max(0, context.recentRestarts - 1) }),
    recordGiveUp: assign(({ context, event }) => ({
      lastCrash: crashOf(event),
      // A failed nginx (or status) machine will never report done: do not wait for it.
      nginxClean: childOf(event) === 'nginx' ? false : context.nginxClean,
      statusStopped: context.statusStopped || childOf(event) === 'status',
      failure:
        context.failure ??
        `restart intensity exceeded: more than ${context.restartIntensity} restarts within ${context.restartPeriodMs}` +
          ` ms (last: ${crashOf(event)})`,
    })),
    markBooted: assign({ booted: true }),
    // Stopped before any child started: nothing to wait for.
    recordNothingStarted: assign({ nginxClean: true, statusStopped: true }),
    recordBootFailed: assign(({ context, event }) => {
      const error = 'error' in event ? event.error : 'unknown error';
      return {
        failure: context.failure ?? `boot: ${error instanceof Error ? error.message : String(error)}`,
        nginxClean: false,
        statusStopped: true,
      };
    }),
    recordTemplateFailed: assign(({ context, event }) => ({
      failure:
        context.failure ??
        `template failed: ${event.type === 'xstate.done.actor.template' ? event.output.error : 'unknown error'}`,
    })),
    recordNginxStopped: assign({
      nginxClean: ({ event }) => (event.type === 'xstate.done.actor.nginx' ? event.output.clean : false),
    }),
    recordNginxGone: assign({
      failure: ({ context, event }) =>
        context.failure ??
        (event.type === 'xstate.done.actor.nginx' && event.output.error
          ? `nginx: ${event.output.error}`
          : 'nginx stopped before the controller did'),
    }),
    recordCrashWhileStopping: assign(({ context, event }) => ({
      failure: context.failure ?? `${crashOf(event)} (while stopping)`,
      nginxClean: childOf(event) === 'nginx' ? false : context.nginxClean,
      statusStopped: context.statusStopped || childOf(event) === 'status',
    })),
    recordStatusStopped: assign({ statusStopped: true }),
    recordShutdownTimeout: assign(({ context }) => ({
      failure: context.failure ?? `shutdown timed out after ${context.shutdownTimeoutMs} ms`,
    })),
    stopSyncQueue: sendTo('syncQueue', { type: 'sync.stop' }),
    stopWatchers: enqueueActions(({ context, enqueue }) => {
      for (const kind of [...context.watchers].reverse()) enqueue.stopChild(watcherId(kind));
    }),
    stopStatus: enqueueActions(({ context, enqueue }) => {
      if (!context.statusStopped) enqueue.sendTo('status', { type: 'status.stop' });
    }),
    stopNginx: enqueueActions(({ context, enqueue }) => {
      if (context.nginxClean === null) enqueue.sendTo('nginx', { type: 'nginx.stop' });
    }),
    // Reverse start order; whatever is still running (nginx after a timeout) is stopped here.
    stopAllChildren: enqueueActions(({ context, enqueue }) => {
      for (const id of childIds(context).reverse()) enqueue.stopChild(id);
    }),
  },
});

// How booting and running treat their children; stopping has its own rules.
const supervising = supervisor.createStateConfig({
  on: {
    stop: { target: 'stopping' },
    'xstate.done.actor.template': { target: 'stopping', actions: 'recordTemplateFailed' },
    'xstate.done.actor.nginx': { target: 'stopping', actions: ['recordNginxStopped', 'recordNginxGone'] },
    'xstate.error.actor.*': [
      { guard: 'restartBudgetExceeded', target: 'stopping', actions: ['stopOrphans', 'recordGiveUp'] },
      {
        actions: [
          'stopOrphans',
          'countRestart',
          { type: 'startChildren', params: ({ event }) => ({ ids: [childOf(event)], restart: true }) },
        ],
      },
    ],
    'xstate.done.actor.watcher.*': [
      { guard: 'restartBudgetExceeded', target: 'stopping', actions: 'recordGiveUp' },
      {
        actions: [
          'countRestart',
          { type: 'startChildren', params: ({ event }) => ({ ids: [childOf(event)], restart: true }) },
        ],
      },
    ],
    // Like a watcher, the status and http children run until told to stop: finishing early is a crash.
    'xstate.done.actor.status': [
      { guard: 'restartBudgetExceeded', target: 'stopping', actions: 'recordGiveUp' },
      { actions: ['countRestart', { type: 'startChildren', params: { ids: ['status'], restart: true } }] },
    ],
    'xstate.done.actor.http': [
      { guard: 'restartBudgetExceeded', target: 'stopping', actions: 'recordGiveUp' },
      { actions: ['countRestart', { type: 'startChildren', params: { ids: ['http'], restart: true } }] },
    ],
  },
}).on;

/**
 * rootSupervisorMachine owns every actor of the controller, OTP-style.
 *
 * States: `booting` first runs `bootConfig` (a config from an empty cluster, checked with `nginx
 * -t`; its failure stops with exit 1 and its reason, a `stop` meanwhile exits 0), then spawns the children in order
 * (`http` if configured, one `watcher` per kind,
 * `template`, `syncQueue`, `nginx`, `status` if configured, each with its id as systemId) and
 * becomes `running` once the template is ready; `stop` (SIGTERM/SIGINT) → `stopping`: the sync
 * queue stops accepting (`sync.stop`), watchers are stopped, status gets `status.stop` (clear,
 * release the Lease), nginx gets `nginx.stop`, and the machine waits for nginx's and status's
 * done events (at most shutdownTimeoutMs) → `stopped` (final), which stops the rest, `http`
 * last. Output `{ exitCode, reason }`: 0 only when no failure was recorded and nginx stopped
 * cleanly.
 *
 * Supervision: a child that fails (or a watcher that completes) is restarted one_for_one under
 * the same id and systemId; a restarted sync queue gets `sync.resync`, and a restarted nginx
 * makes the sync queue `sync.request` a config for it. Each restart raises `restart.expired`
 * restartPeriodMs later (a sliding window); a restart beyond restartIntensity within the window
 * stops everything with exit 1, as does the template machine reaching `failed`.
 *
 * Children to provide: `bootConfig` (fromPromise<void, void>), `watcher` (any actor logic, input WatcherInput), `http`
 * (any actor logic
 * that runs until stopped), and the `template`, `syncQueue`, `nginx`, `status` machines with
 * their own effects provided. A `status` or `http` child that completes early counts as a crash. A restart does not
 * back off
 * (as OTP); the watchers and nginx back off inside themselves.
 */
export const rootSupervisorMachine = supervisor.createMachine({
  id: 'rootSupervisor',
  context: ({ input }) => ({
    ...input,
    recentRestarts: 0,
    restarts: {},
    lastCrash: null,
    failure: null,
    nginxClean: null,
    statusStopped: !input.status,
    booted: false,
  }),
  on: {
    'restart.expired': { actions: 'expireRestart' },
  },
  initial: 'booting',
  states: {
    booting: {
      // The children start only once the boot config passed `nginx -t`; a failure there ends it all.
      invoke: {
        id: 'bootConfig',
        src: 'bootConfig',
        onDone: {
          actions: [
            'markBooted',
            { type: 'startChildren', params: ({ context }) => ({ ids: childIds(context), restart: false }) },
          ],
        },
        onError: { target: 'stopped', actions: 'recordBootFailed' },
      },
      on: {
        ...supervising,
        stop: [{ guard: 'notBooted', target: 'stopped', actions: 'recordNothingStarted' }, { target: 'stopping' }],
        'xstate.snapshot.template': { guard: 'templateReady', target: 'running' },
      },
    },
    running: {
      on: supervising,
    },
    stopping: {
      entry: ['stopSyncQueue', 'stopWatchers', 'stopStatus', 'stopNginx'],
      // nginx (or status) may already be gone (stopped or failed before `stop`); both are awaited.
      always: { guard: 'childrenStopped', target: 'stopped' },
      after: {
        shutdownTimeout: { target: 'stopped', actions: 'recordShutdownTimeout' },
      },
      on: {
        'xstate.done.actor.nginx': { actions: 'recordNginxStopped' },
        'xstate.done.actor.status': { actions: 'recordStatusStopped' },
        'xstate.error.actor.*': { actions: ['stopOrphans', 'recordCrashWhileStopping'] },
      },
    },
    stopped: {
      type: 'final',
      entry: 'stopAllChildren',
    },
  },
  output: ({ context }) => ({
    exitCode: context.failure === null && context.nginxClean === true ? 0 : 1,
    reason: context.failure ?? (context.nginxClean === true ? null : 'nginx did not stop cleanly'),
  }),
});
