import { assign, enqueueActions, fromCallback, fromPromise, sendTo, setup } from 'xstate';
import {
  applyRecord,
  type ApplyRecord,
  describe,
  heldAfter,
  pushSettled,
  remember,
  sameConfigSet,
  sameTables,
  timingOf,
} from './applies.js';
import type { DrainInput, MasterInput, NginxExit, PushInput, ReloadInput } from './nginxEffects.js';
import type {
  ApplyTiming,
  NginxConfigSet,
  NginxMasterCommand,
  NginxMasterEvent,
  NginxPushEvent,
  NginxReloadEvent,
  NginxStopEvent,
  PushedTables,
  PushResult,
  RefusedEntry,
  ReloadResult,
} from './events.js';
import { combineTriggers } from './trigger.js';

/** NginxProcessInput configures the nginx-process actor; every duration is in milliseconds. */
export interface NginxProcessInput {
  /** how long `nginx -s quit` may take before the group is killed (and again before giving up) */
  readonly shutdownTimeoutMs: number;
  /** `--drain-timeout`: grace for orphaned workers after the master died */
  readonly drainTimeoutMs: number;
  /** first restart delay; doubled per consecutive restart */
  readonly backoffBaseMs: number;
  readonly backoffMaxMs: number;
  /** a master up this long counts as stable: the next crash restarts after backoffBaseMs again */
  readonly stableAfterMs: number;
  /** first retry of a failed reload (doubled per failure in a row, at most 60 s); 5 s when unset */
  readonly reloadRetryMs?: number;
  /** first retry of a failed push (doubled per failure in a row, at most 10 s); 250 ms when unset */
  readonly pushRetryMs?: number;
}

/** FATAL_RESTARTS is how many restarts in a row a master that cannot bind its port gets before the actor gives up. */
export const FATAL_RESTARTS = 5;

/** NginxProcessEvent is every event the nginx-process machine handles. */
export type NginxProcessEvent = NginxReloadEvent | NginxPushEvent | NginxStopEvent | NginxMasterEvent;

/** NginxProcessContext is the nginx-process actor's state beyond its state value; the counters feed /metrics. */
export interface NginxProcessContext extends NginxProcessInput {
  readonly pid: number | null;
  /** restarts after a crash, in total (`ingress_actors_nginx_restarts_total`) */
  readonly restarts: number;
  /** consecutive restarts without a stable master; drives the backoff */
  readonly attempts: number;
  readonly lastExit: NginxExit | null;
  readonly reloadsOk: number;
  readonly reloadsFailed: number;
  /** reloads skipped because the text equals the applied config */
  readonly reloadsSkipped: number;
  readonly lastReloadError: string | null;
  readonly lastDrainError: string | null;
  /** the config and files nginx serves (null until the first reload) */
  readonly applied: NginxConfigSet | null;
  /** the config and files the running `reload` applies */
  readonly reloading: NginxConfigSet | null;
  /** the latest config and files not yet applied (only the latest is kept) */
  readonly pending: NginxConfigSet | null;
  /**
   * the config whose reload failed, retried with backoff: the cause may pass (a full disk, an
   * `nginx -t` that could not run) and no later change may come to carry it
   */
  readonly failed: NginxConfigSet | null;
  /** a master of this actor has started (served) at least once */
  readonly everStarted: boolean;
  /** why a master could not start, when the operator must fix it (a port in use, the binary gone): the actor gives up */
  readonly startFailure: string | null;
  readonly reloadFailuresInRow: number;
  readonly stopRequested: boolean;
  /** the latest tables for the Lua balancer (null: backends are rendered into nginx.conf) */
  readonly tables: PushedTables | null;
  /** the tables this master holds, as far as its answers told; null after every start */
  readonly pushed: PushedTables | null;
  readonly pushesOk: number;
  readonly pushesFailed: number;
  readonly pushFailuresInRow: number;
  readonly lastPushError: string | null;
  /**
   * the tables whose push failed last: they wait for pushRetry (backoff); any other tables are pushed at once. Null
   * once a push succeeded, nginx holds the latest tables by any way (a reload's push), or a new master started.
   */
  readonly failedTables: PushedTables | null;
  /** the tables the running push carries (the latest when it started) */
  readonly pushingTables: PushedTables | null;
  /** stopping had to kill something (the master after its timeout, or orphans mid-drain) */
  readonly killed: boolean;
  /** what caused the tables to differ from what nginx holds: the trigger of the next push */
  readonly tablesTrigger: string | null;
  /** the last RECENT_APPLIES reloads and pushes, newest last */
  readonly recent: readonly ApplyRecord[];
}

/** NginxProcessOutput is the final `stopped` state's output: clean unless stopping had to kill. */
export interface NginxProcessOutput {
  readonly clean: boolean;
  /** set when nginx could not start at all, for a reason the operator must fix (`failed`) */
  readonly error?: string;
}

const setOf = (event: NginxReloadEvent): NginxConfigSet =>
  event.trigger === undefined
    ? { config: event.config, files: event.files }
    : { config: event.config, files: event.files, trigger: event.trigger };

/** record adds the ApplyRecord of the reload or push that just ended, timed by its effect, to `recent`. */
function record(
  context: NginxProcessContext,
  kind: ApplyRecord['kind'],
  trigger: string | null | undefined,
  timing: ApplyTiming | undefined,
  error?: unknown,
): readonly ApplyRecord[] {
  return remember(context.recent, applyRecord(kind, trigger, timing, error));
}

/**
 * nginxProcessMachine owns one nginx master at a time and applies configs to it.
 *
 * States: `alive` (invokes `master`) holds `starting` → `running` ⇄ `reloading` and `stopping`;
 * when the master exits unexpectedly: `died` (records the exit, passes straight on) →
 * `draining` → `restarting` (exponential backoff) → `alive.starting`. `nginx.stop` → `stopping`
 * (`quitting`: SIGQUIT; `killing`: SIGKILL after shutdownTimeoutMs; given up after another
 * shutdownTimeoutMs) → `stopped` (final) once the master exited; from
 * `draining` or `restarting` it goes straight to `stopped`. Output: `{ clean }`, false when
 * stopping killed a master or interrupted a drain (whose cleanup kills the orphans).
 *
 * Verdicts: `reportApplied` {config} once nginx serves a config (reloaded, or already serving
 * it), `reportRefused` {config, error} when its reload failed, `reportEntriesRefused` {entries} after every push (the
 * table entries nginx refused while it applied the rest, often none); the wiring tells the sync queue.
 *
 * Record: `recent` holds the last RECENT_APPLIES reloads and pushes (ApplyRecord: kind, trigger, start, duration,
 * verdict), newest last, for the status page; start and duration are the effect's (`ApplyTiming` in its output or on
 * its error): the machine reads no clock; the trigger comes with each `nginx.reload` (the sync's cause), a config
 * that replaced a queued one carries both causes, and the push after a restart is `nginx restarted`.
 *
 * Reloads: `nginx.reload` with the text already applied is skipped; one during a reload (or
 * while nginx is down) is kept, latest wins, and applied once `running`. A config whose reload
 * was cut short by a crash is applied again after the restart.
 *
 * Pushes: `nginx.push` brings the tables of a sync whose config the sync queue already handed (it decides push or
 * reload, once); `nginx.reload` brings a config with its tables. The latest tables win either way, and while a reload
 * is queued or under way they wait for it (it pushes them before its signal), so a table never runs ahead of the
 * config that names it. Tables that differ from what nginx holds (`pushed`) are pushed from `running` (`pushing`). A failed push
 * (refused, timed out, the channel unreachable) never blocks the next: its tables (`failedTables`) are retried after
 * pushRetry (doubling per failure in a row), newer tables are pushed at once, and the failure is forgotten as soon as
 * nginx holds the latest tables by any way (a push, a reload's push, tables changed back). A master that died
 * mid-push leaves `pushed` null, and the next master gets its tables as soon as it runs.
 *
 * Effects to provide: `master` (fromCallback<NginxMasterCommand, MasterInput>: spawn
 * `nginx -g 'daemon off;'` in a process group of its own, send `nginx.started` {pid} and
 * `nginx.exited` {code, signal}; on `nginx.quit` SIGQUIT the master, on `nginx.kill` SIGKILL the
 * group; also SIGKILL the group if this machine itself fails, which xstate 5.33 does not turn
 * into a stop of its invocations (statelyai/xstate#5153): subscribe to `system.get('nginx')`
 * for `error`); `reload` (fromPromise<void, ReloadInput>: write beside, `nginx -t`, swap, `nginx -s
 * reload`; reject with nginx's message, leaving the live config untouched); `drain`
 * (fromPromise<void, DrainInput>: probe the HTTP port until closed, SIGKILL the old group after
 * drainTimeoutMs; when its AbortSignal fires, SIGKILL the old group at once).
 */
export const nginxProcessMachine = setup({
  types: {
    context: {} as NginxProcessContext,
    events: {} as NginxProcessEvent,
    input: {} as NginxProcessInput,
    output: {} as NginxProcessOutput,
  },
  actors: {
    master: fromCallback<NginxMasterCommand, MasterInput>(() => {
      throw new Error('actor "master" not provided');
    }),
    reload: fromPromise<ReloadResult, ReloadInput>(async () => {
      throw new Error('actor "reload" not provided');
    }),
    push: fromPromise<PushResult, PushInput>(async () => {
      throw new Error('actor "push" not provided');
    }),
    drain: fromPromise<void, DrainInput>(async () => {
      throw new Error('actor "drain" not provided');
    }),
  },
  guards: {
    isApplied: ({ context, event }) => event.type === 'nginx.reload' && sameConfigSet(setOf(event), context.applied),
    hasFailedConfig: ({ context }) => context.failed !== null,
    hasPendingChange: ({ context }) => context.pending !== null && !sameConfigSet(context.pending, context.applied),
    // A port another process holds at the very first start will not pass by restarting: give up, saying which. Taken
    // later (nginx died, and another process bound its port meanwhile), or the binary gone, it gets FATAL_RESTARTS
    // restarts first: an orphan of the dead master may still hold the port for a moment.
    fatalStart: ({ context, event }) =>
      event.type === 'nginx.exited' && !!event.fatal && (!context.everStarted || context.attempts >= FATAL_RESTARTS),
    stopRequested: ({ context }) => context.stopRequested,
    // The tables whose push failed wait for pushRetry; any other difference (newer tables) is pushed at once.
    mayPush: ({ context }) =>
      context.tables !== null &&
      !sameTables(context.tables, context.pushed) &&
      !sameTables(context.tables, context.failedTables),
    pushRetryDue: ({ context }) => context.tables !== null && !sameTables(context.tables, context.pushed),
  },
  delays: {
    shutdownTimeout: ({ context }) => context.shutdownTimeoutMs,
    stableAfter: ({ context }) => context.stableAfterMs,
    reloadRetry: ({ context }) =>
      Math.min((context.reloadRetryMs ?? 5000) * 2 ** Math.max(0, context.reloadFailuresInRow - 1), 60_000),
    restartBackoff: ({ context }) => Math.min(context.backoffBaseMs * 2 ** context.attempts, context.backoffMaxMs),
    pushRetry: ({ context }) =>
      Math.min((context.pushRetryMs ?? 250) * 2 ** Math.max(0, context.pushFailuresInRow - 1), 10_000),
  },
  actions: {
    // The latest config wins; it carries the causes of the one it replaces, which nginx never got.
    queueConfig: assign({
      pending: ({ context, event }) => {
        if (event.type !== 'nginx.reload') return context.pending;
        const set = setOf(event);
        const trigger = combineTriggers(context.pending?.trigger, set.trigger);
        return trigger === undefined ? set : { ...set, trigger };
      },
    }),
    // The latest tables win, whatever happens to the config they came with (a push waits for a reload under way).
    keepTables: assign(({ context, event }) => {
      if (event.type !== 'nginx.reload' && event.type !== 'nginx.push') return {};
      const tables = event.tables ?? null;
      if (sameTables(tables, context.tables)) return { tables };
      // Tables nginx does not hold yet keep the cause of what they change.
      const waiting = !sameTables(context.tables, context.pushed);
      return {
        ...pushSettled(tables, context.pushed),
        tables,
        tablesTrigger: waiting
          ? (combineTriggers(context.tablesTrigger ?? undefined, event.trigger) ?? null)
          : (event.trigger ?? null),
      };
    }),
    markPushStart: assign({ pushingTables: ({ context }) => context.tables }),
    recordPushed: assign(
      ({ context }, params: { pushed: PushedTables | undefined; timing: ApplyTiming | undefined }) => ({
        // What the push resolved to: the tables it was given (a model run without effects has no output).
        pushed: params.pushed ?? context.tables,
        pushesOk: context.pushesOk + 1,
        pushFailuresInRow: 0,
        lastPushError: null,
        failedTables: null,
        recent: record(context, 'push', context.tablesTrigger, params.timing),
      }),
    ),
    // Refused, timed out, or the channel unreachable: these tables wait for pushRetry, newer ones are pushed at once.
    recordPushFailed: assign(({ context }, params: { error: unknown }) => ({
      pushed: heldAfter(params.error, context.pushed),
      // the tables this push carried: newer ones that came meanwhile are pushed at once
      failedTables: context.pushingTables,
      pushesFailed: context.pushesFailed + 1,
      pushFailuresInRow: context.pushFailuresInRow + 1,
      lastPushError: describe(params.error),
      recent: record(context, 'push', context.tablesTrigger, timingOf(params.error), params.error),
    })),
    countSkipped: assign({ reloadsSkipped: ({ context }) => context.reloadsSkipped + 1 }),
    // Something queued but equal to what nginx serves needs no reload.
    // A queued config nginx already serves needs no reload; and as the latest wish, it makes an older refused one
    // moot: no retry of that one, and no "last reload failed" left on /healthz after the bad value was reverted.
    dropRedundantPending: assign(({ context }) =>
      context.pending !== null && sameConfigSet(context.pending, context.applied)
        ? { pending: null, failed: null, lastReloadError: null }
        : {},
    ),
    // A queued config nginx already serves is nginx's verdict on it too (applied), for a sync that waits for one.
    reportPendingApplied: enqueueActions(({ context, enqueue }) => {
      if (context.pending !== null && sameConfigSet(context.pending, context.applied))
        // reportApplied is one of these actions, which setup cannot type while it defines them
        enqueue({ type: 'reportApplied', params: { config: context.pending.config } } as never);
    }),
    forgetFailed: assign({ failed: null, lastReloadError: null }),
    takePending: assign(({ context }) => ({
      reloading: context.pending,
      pending: null,
      failed: null,
    })),
    retryFailed: assign(({ context }) => ({ pending: context.pending ?? context.failed, failed: null })),
    recordReloadOk: assign(({ context }, params: { pushed: PushedTables | null; timing: ApplyTiming | undefined }) => ({
      ...pushSettled(context.tables, params.pushed ?? context.pushed),
      pushed: params.pushed ?? context.pushed,
      applied: context.reloading,
      reloading: null,
      reloadsOk: context.reloadsOk + 1,
      lastReloadError: null,
      reloadFailuresInRow: 0,
      recent: record(context, 'reload', context.reloading?.trigger, params.timing),
    })),
    recordReloadFailed: assign(({ context }, params: { error: unknown }) => ({
      failed: context.reloading,
      reloadFailuresInRow: context.reloadFailuresInRow + 1,
      reloading: null,
      reloadsFailed: context.reloadsFailed + 1,
      lastReloadError: describe(params.error),
      recent: record(context, 'reload', context.reloading?.trigger, timingOf(params.error), params.error),
    })),
    recordPid: assign({
      pid: ({ context, event }) => (event.type === 'nginx.started' ? event.pid : context.pid),
      everStarted: true,
    }),
    recordStartFailure: assign({
      startFailure: ({ event }) => (event.type === 'nginx.exited' ? (event.fatal ?? null) : null),
    }),
    recordExit: assign(({ context }, params: { code: number | null; signal: string | null; error: string | null }) => ({
      lastExit: { pid: context.pid, ...params },
      pid: null,
      // A new master starts with empty tables, and gets them at once (the failure counted on stays for the backoff).
      pushed: null,
      failedTables: null,
      tablesTrigger: 'nginx restarted',
      // A reload cut short is applied again to the next master, unless something newer is queued.
      pending: context.pending ?? context.reloading,
      reloading: null,
    })),
    resetAttempts: assign({ attempts: 0 }),
    countRestart: assign(({ context }) => ({ restarts: context.restarts + 1, attempts: context.attempts + 1 })),
    recordDrainError: assign({ lastDrainError: (_, params: { error: unknown }) => describe(params.error) }),
    markStopRequested: assign({ stopRequested: true }),
    markKilled: assign({ killed: true }),
    // nginx's verdicts, for whoever hands it configs (the sync queue): provided by the wiring.
    reportApplied: (_, _params: { config: string }) => {},
    reportRefused: (_, _params: { config: string; error: unknown }) => {},
    // entries of a pushed table nginx refused (it applied the rest): the wiring tells the sync queue
    reportEntriesRefused: (_, _params: { entries: readonly RefusedEntry[] }) => {},
    quitMaster: sendTo('master', { type: 'nginx.quit' }),
    killMaster: sendTo('master', { type: 'nginx.kill' }),
  },
}).createMachine({
  id: 'nginxProcess',
  context: ({ input }) => ({
    shutdownTimeoutMs: input.shutdownTimeoutMs,
    drainTimeoutMs: input.drainTimeoutMs,
    backoffBaseMs: input.backoffBaseMs,
    backoffMaxMs: input.backoffMaxMs,
    stableAfterMs: input.stableAfterMs,
    ...(input.reloadRetryMs === undefined ? {} : { reloadRetryMs: input.reloadRetryMs }),
    ...(input.pushRetryMs === undefined ? {} : { pushRetryMs: input.pushRetryMs }),
    pid: null,
    restarts: 0,
    attempts: 0,
    lastExit: null,
    reloadsOk: 0,
    reloadsFailed: 0,
    reloadsSkipped: 0,
    lastReloadError: null,
    lastDrainError: null,
    applied: null,
    reloading: null,
    pending: null,
    failed: null,
    everStarted: false,
    startFailure: null,
    reloadFailuresInRow: 0,
    stopRequested: false,
    tables: null,
    pushed: null,
    pushesOk: 0,
    pushesFailed: 0,
    pushFailuresInRow: 0,
    lastPushError: null,
    failedTables: null,
    pushingTables: null,
    killed: false,
    tablesTrigger: null,
    recent: [],
  }),
  // By default a config is kept for later; `running` applies it.
  on: {
    'nginx.reload': { actions: ['queueConfig', 'keepTables'] },
    'nginx.push': { actions: 'keepTables' },
  },
  initial: 'alive',
  states: {
    alive: {
      // The one owner of the master process: leaving `alive` stops this invocation.
      invoke: {
        id: 'master',
        src: 'master',
        input: ({ context }) => ({ restarts: context.restarts }),
        onError: [
          {
            // The master actor failed while stopping: its cleanup killed what was left.
            guard: 'stopRequested',
            target: 'stopped',
            actions: [
              {
                type: 'recordExit',
                params: ({ event }) => ({ code: null, signal: null, error: describe(event.error) }),
              },
              'markKilled',
            ],
          },
          {
            target: 'died',
            actions: {
              type: 'recordExit',
              params: ({ event }) => ({ code: null, signal: null, error: describe(event.error) }),
            },
          },
        ],
      },
      after: {
        stableAfter: { actions: 'resetAttempts' },
      },
      on: {
        'nginx.exited': [
          {
            guard: 'fatalStart',
            target: 'failed',
            actions: [
              {
                type: 'recordExit',
                params: ({ event }) => ({ code: event.code, signal: event.signal, error: event.fatal ?? null }),
              },
              'recordStartFailure',
            ],
          },
          {
            target: 'died',
            actions: {
              type: 'recordExit',
              params: ({ event }) => ({ code: event.code, signal: event.signal, error: null }),
            },
          },
        ],
        'nginx.stop': { target: '.stopping', actions: 'markStopRequested' },
      },
      initial: 'starting',
      states: {
        starting: {
          on: {
            'nginx.started': { target: 'running', actions: 'recordPid' },
          },
        },
        running: {
          entry: ['reportPendingApplied', 'dropRedundantPending'],
          always: [
            { guard: 'hasPendingChange', target: 'reloading' },
            { guard: 'mayPush', target: 'pushing' },
          ],
          after: {
            reloadRetry: { guard: 'hasFailedConfig', target: 'reloading', actions: 'retryFailed' },
            pushRetry: { guard: 'pushRetryDue', target: 'pushing' },
          },
          on: {
            'nginx.reload': [
              {
                guard: 'isApplied',
                actions: [
                  'countSkipped',
                  // what nginx serves is wanted again: a config refused since then is no longer to be retried
                  'forgetFailed',
                  'keepTables',
                  { type: 'reportApplied', params: ({ context }) => ({ config: context.applied?.config ?? '' }) },
                ],
              },
              { target: 'reloading', actions: ['queueConfig', 'keepTables'] },
            ],
          },
        },
        // Only the Lua balancer's tables changed: sent over the control channel, no reload.
        pushing: {
          entry: 'markPushStart',
          invoke: {
            id: 'push',
            src: 'push',
            input: ({ context }) => ({
              tables: context.tables!,
              pushed: context.pushed,
              ...(context.tablesTrigger === null ? {} : { trigger: context.tablesTrigger }),
            }),
            // The push succeeded even when nginx refused entries (it applied the rest, and holds the new versions):
            // those go to the sync queue, which holds the objects that made them.
            onDone: {
              target: 'running',
              actions: [
                {
                  type: 'recordPushed',
                  params: ({ event }) => ({ pushed: event.output?.pushed, timing: event.output?.timing }),
                },
                {
                  type: 'reportEntriesRefused',
                  params: ({ event }) => ({ entries: event.output?.refused ?? [] }),
                },
              ],
            },
            onError: {
              target: 'running',
              actions: { type: 'recordPushFailed', params: ({ event }) => ({ error: event.error }) },
            },
          },
        },
        reloading: {
          entry: 'takePending',
          invoke: {
            id: 'reload',
            src: 'reload',
            input: ({ context }) => ({
              config: context.reloading?.config ?? '',
              files: context.reloading?.files ?? [],
              ...(context.reloading?.trigger === undefined ? {} : { trigger: context.reloading.trigger }),
              applied: context.applied,
              tables: context.tables,
              pushed: context.pushed,
            }),
            onDone: {
              target: 'running',
              actions: [
                { type: 'reportApplied', params: ({ context }) => ({ config: context.reloading?.config ?? '' }) },
                {
                  type: 'recordReloadOk',
                  params: ({ event }) => ({ pushed: event.output?.pushed ?? null, timing: event.output?.timing }),
                },
              ],
            },
            // nginx keeps serving the old config; the error is kept for status and metrics.
            onError: {
              target: 'running',
              actions: [
                {
                  type: 'reportRefused',
                  params: ({ context, event }) => ({ config: context.reloading?.config ?? '', error: event.error }),
                },
                { type: 'recordReloadFailed', params: ({ event }) => ({ error: event.error }) },
              ],
            },
          },
        },
        stopping: {
          entry: 'quitMaster',
          on: {
            'nginx.exited': {
              target: '#nginxProcess.stopped',
              actions: {
                type: 'recordExit',
                params: ({ event }) => ({ code: event.code, signal: event.signal, error: null }),
              },
            },
            'nginx.stop': {},
          },
          initial: 'quitting',
          states: {
            quitting: {
              after: { shutdownTimeout: { target: 'killing', actions: ['killMaster', 'markKilled'] } },
            },
            // Not even SIGKILL reported back: give up rather than hang the shutdown.
            killing: {
              after: { shutdownTimeout: { target: '#nginxProcess.stopped' } },
            },
          },
        },
      },
    },
    died: {
      always: { target: 'draining' },
    },
    draining: {
      invoke: {
        id: 'drain',
        src: 'drain',
        input: ({ context }) => ({ pid: context.lastExit?.pid ?? null, drainTimeoutMs: context.drainTimeoutMs }),
        onDone: { target: 'restarting' },
        onError: {
          target: 'restarting',
          actions: { type: 'recordDrainError', params: ({ event }) => ({ error: event.error }) },
        },
      },
      // Leaving stops `drain`, whose cleanup kills the orphans now instead of after the timeout.
      on: {
        'nginx.stop': { target: 'stopped', actions: ['markStopRequested', 'markKilled'] },
      },
    },
    restarting: {
      after: {
        restartBackoff: { target: 'alive', actions: 'countRestart' },
      },
      // Nothing is running: stopping now is clean.
      on: {
        'nginx.stop': { target: 'stopped', actions: 'markStopRequested' },
      },
    },
    // A master could not start for a reason restarting will not cure (a listen port in use, the binary gone): at the
    // first start, or FATAL_RESTARTS restarts in a row.
    failed: { type: 'final' },
    stopped: { type: 'final' },
  },
  output: ({ context }) =>
    context.startFailure === null
      ? { clean: !context.killed }
      : { clean: !context.killed, error: context.startFailure },
});
