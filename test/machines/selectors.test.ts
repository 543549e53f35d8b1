/**
 * The selectors each machine exports for others to read (machines/selectors/): pure functions of a snapshot, in
 * tables. Snapshots are the machines' real initial contexts with a case's fields over them (test/support/observed.ts);
 * the guards are checked against real actors' snapshots.
 */
import { createActor, fromCallback, fromPromise } from 'xstate';
import { describe, expect, it } from 'vitest';
import type { PushedTables } from '../../machines/events.js';
import type { ApplyRecord } from '../../machines/applies.js';
import type { NginxProcessContext } from '../../machines/nginxProcess.machine.js';
import { nginxProcessMachine } from '../../machines/nginxProcess.machine.js';
import { rootSupervisorMachine } from '../../machines/rootSupervisor.machine.js';
import {
  isNginxProcessSnapshot,
  selectMasterPid,
  selectNginxActivity,
  selectNginxCounters,
  selectNginxHealth,
  selectPushedCertificates,
  selectServedConfig,
  type NginxHealth,
} from '../../machines/selectors/nginxProcess.js';
import { isResourceWatcherSnapshot, selectWatcherSync } from '../../machines/selectors/resourceWatcher.js';
import {
  isRootSupervisorSnapshot,
  selectExit,
  selectRootPhase,
  type RootPhase,
} from '../../machines/selectors/rootSupervisor.js';
import { selectActorState, stateLabel } from '../../machines/selectors/state.js';
import { isStatusSnapshot, selectIsLeader, selectRole } from '../../machines/selectors/status.js';
import { selectSyncProgress } from '../../machines/selectors/syncQueue.js';
import { selectLastModel } from '../../machines/selectors/template.js';
import {
  nginxSnapshot,
  statusSnapshot,
  syncQueueSnapshot,
  templateSnapshot,
  watcherSnapshot,
} from '../support/observed.js';

const TABLES: PushedTables = { backends: { version: 'b1' }, certificates: { version: 'c1' } };

describe('stateLabel and selectActorState', () => {
  it.each<[unknown, string]>([
    ['running', 'running'],
    [{ alive: 'running' }, 'alive.running'],
    [{ alive: { stopping: 'quitting' } }, 'alive.stopping.quitting'],
    // parallel regions are named by their parent
    [{ leader: { lease: 'held', status: 'idle' } }, 'leader'],
    [undefined, 'undefined'],
  ])('stateLabel(%j) is %s', (value, label) => expect(stateLabel(value)).toBe(label));

  it.each<[unknown, string, string]>([
    [{ alive: 'running' }, 'active', 'alive.running'],
    [undefined, 'active', 'active'], // not a machine (the http server): its status
    [{ alive: 'running' }, 'stopped', 'stopped'],
    ['stopped', 'done', 'done'],
  ])('an actor in %j (%s) is %s', (value, status, state) => expect(selectActorState({ value, status })).toBe(state));
});

describe('selectNginxHealth', () => {
  const absent: NginxHealth = {
    state: 'absent',
    running: false,
    servesClusterConfig: false,
    lastReloadError: null,
    reloadsFailed: 0,
    lastExit: null,
    tables: null,
  };
  it.each<[string, unknown, Partial<NginxProcessContext>, Partial<NginxHealth>]>([
    ['starting, nothing applied', { alive: 'starting' }, {}, { state: 'alive.starting', running: false }],
    [
      'running a config from the cluster',
      { alive: 'running' },
      { reloadsOk: 1 },
      { running: true, servesClusterConfig: true },
    ],
    ['reloading: the master serves on', { alive: 'reloading' }, { reloadsOk: 1 }, { running: true }],
    ['pushing: the master serves on', { alive: 'pushing' }, { reloadsOk: 1 }, { running: true }],
    ['died', 'died', { reloadsOk: 2 }, { state: 'died', running: false, servesClusterConfig: true }],
    [
      'a refused reload, and its count',
      { alive: 'running' },
      { reloadsOk: 1, reloadsFailed: 2, lastReloadError: 'nginx: [emerg] x' },
      { lastReloadError: 'nginx: [emerg] x', reloadsFailed: 2 },
    ],
    ['an empty error is none', { alive: 'running' }, { lastReloadError: '' }, { lastReloadError: null }],
    [
      'the last exit',
      'restarting',
      { lastExit: { pid: 7, code: null, signal: 'SIGKILL', error: null } },
      { lastExit: { pid: 7, code: null, signal: 'SIGKILL', error: null } },
    ],
    ['rendered backends: no tables', { alive: 'running' }, { tables: null }, { tables: null }],
    [
      'tables held',
      { alive: 'running' },
      { tables: TABLES, pushed: TABLES, pid: 9 },
      { tables: { held: true, pid: 9, failing: null } },
    ],
    [
      'no table since the master started, the push failing',
      { alive: 'running' },
      { tables: TABLES, pushed: null, pid: 9, pushFailuresInRow: 1, lastPushError: 'no answer' },
      { tables: { held: false, pid: 9, failing: 'no answer' } },
    ],
    [
      'a push error no longer in a row is not failing',
      { alive: 'running' },
      { tables: TABLES, pushed: TABLES, pid: 9, pushFailuresInRow: 0, lastPushError: 'no answer' },
      { tables: { held: true, pid: 9, failing: null } },
    ],
  ])('%s', (_, value, context, expected) => {
    expect(selectNginxHealth(nginxSnapshot(value, context))).toMatchObject(expected);
  });

  it('is absent, not running and serving nothing without an nginx actor', () => {
    expect(selectNginxHealth(undefined)).toEqual(absent);
  });
});

describe('the nginx actor for /metrics and the status page', () => {
  const context: Partial<NginxProcessContext> = {
    pid: 42,
    restarts: 1,
    reloadsOk: 3,
    reloadsFailed: 1,
    reloadsSkipped: 4,
    pushesOk: 5,
    pushesFailed: 2,
    applied: { config: 'events {}', files: [] },
  };
  it('reads the counters, the pid and the served config', () => {
    const nginx = nginxSnapshot({ alive: 'running' }, context);
    expect(selectNginxCounters(nginx)).toEqual({
      reloadsOk: 3,
      reloadsFailed: 1,
      restarts: 1,
      pushesOk: 5,
      pushesFailed: 2,
    });
    expect(selectMasterPid(nginx)).toBe(42);
    expect(selectServedConfig(nginx)).toEqual({ config: 'events {}', files: [] });
    expect([selectMasterPid(undefined), selectServedConfig(undefined)]).toEqual([null, null]);
  });

  it('lists the activity with the recent applies newest first; zeros without the actor', () => {
    const recent: ApplyRecord[] = [
      { kind: 'reload', trigger: 'a', at: 1, durationMs: 2, ok: true },
      { kind: 'push', trigger: 'b', at: 3, durationMs: 1, ok: false, error: 'refused' },
    ];
    expect(selectNginxActivity(nginxSnapshot({ alive: 'running' }, { ...context, recent, lastPushError: '' }))).toEqual(
      {
        state: 'alive.running',
        pid: 42,
        restarts: 1,
        reloadsOk: 3,
        reloadsFailed: 1,
        reloadsSkipped: 4,
        pushesOk: 5,
        pushesFailed: 2,
        lastReloadError: null,
        lastPushError: null,
        recent: [recent[1], recent[0]],
      },
    );
    expect(selectNginxActivity(undefined)).toMatchObject({ state: 'absent', pid: null, reloadsOk: 0, recent: [] });
  });

  it.each<[string, unknown, [string, string][]]>([
    ['no tables', null, []],
    ['a certificate table with no list', { version: 'c1' }, []],
    [
      'one entry per Secret, with its hosts',
      { version: 'c1', certificates: [{ hosts: ['a.example.com', 'b.example.com'], cert: 'PEM-A' }] },
      [
        ['a.example.com', 'PEM-A'],
        ['b.example.com', 'PEM-A'],
      ],
    ],
    [
      'entries without a cert or hosts are passed over',
      {
        version: 'c1',
        certificates: [{ hosts: ['a.example.com'] }, { cert: 'PEM-B' }, null, { hosts: [7], cert: 'X' }],
      },
      [],
    ],
  ])('selectPushedCertificates: %s', (_, certificates, byHost) => {
    const tables =
      certificates === null
        ? null
        : { backends: { version: 'b1' }, certificates: certificates as PushedTables['certificates'] };
    expect([...selectPushedCertificates(nginxSnapshot({ alive: 'running' }, { tables }))]).toEqual(byHost);
  });
});

describe('selectWatcherSync', () => {
  it.each<[string, unknown, Parameters<typeof watcherSnapshot>[1], ReturnType<typeof selectWatcherSync>]>([
    [
      'listing for the first time',
      { running: 'listing' },
      {},
      { state: 'running.listing', synced: false, staleSince: null, failures: 0, lastError: null },
    ],
    [
      'failing after its first sync',
      'backoff',
      { reportedSynced: true, staleSince: 1000, failures: 2, lastError: 'timeout' },
      { state: 'backoff', synced: true, staleSince: 1000, failures: 2, lastError: 'timeout' },
    ],
    [
      'an empty error is none',
      { running: 'watching' },
      { reportedSynced: true, lastError: '' },
      { state: 'running.watching', synced: true, staleSince: null, failures: 0, lastError: null },
    ],
  ])('%s', (_, value, context, expected) =>
    expect(selectWatcherSync(watcherSnapshot(value, context))).toEqual(expected),
  );
});

describe('the status, sync queue, template and root supervisor selectors', () => {
  it.each<[unknown, string, boolean, string]>([
    [{ follower: 'campaigning' }, 'active', false, 'follower'],
    [{ leader: { lease: 'held', status: 'idle', events: 'idle' } }, 'active', true, 'leader'],
    ['stopped', 'done', false, 'unknown'],
  ])('a status actor in %j (%s): leader %s, role %s', (value, status, leader, role) => {
    const snapshot = { ...statusSnapshot(value), status };
    expect([selectIsLeader(snapshot), selectRole(snapshot)]).toEqual([leader, role]);
  });

  it('has no role and leads nothing without a status actor', () => {
    expect([selectIsLeader(undefined), selectRole(undefined)]).toEqual([false, 'unknown']);
  });

  it('reads the sync queue’s progress, and zeros without it', () => {
    const queue = syncQueueSnapshot(
      { idle: 'quiet' },
      { generation: 4, syncsCompleted: 3, syncsFailed: 1, lastChange: 'template.changed', lastError: '' },
    );
    expect(selectSyncProgress(queue)).toEqual({
      state: 'idle.quiet',
      generation: 4,
      syncsCompleted: 3,
      syncsFailed: 1,
      lastChange: 'template.changed',
      lastError: null,
    });
    expect(selectSyncProgress(undefined)).toEqual({
      state: 'absent',
      generation: 0,
      syncsCompleted: 0,
      syncsFailed: 0,
      lastChange: null,
      lastError: null,
    });
  });

  it('reads the template’s last model, null before the first sync or without the actor', () => {
    expect([selectLastModel(templateSnapshot('ready')), selectLastModel(undefined)]).toEqual([null, null]);
  });

  it.each<[unknown, RootPhase]>([
    ['booting', { phase: 'booting' }],
    ['running', { phase: 'running' }],
    ['stopping', { phase: 'other', state: 'stopping' }],
    ['stopped', { phase: 'other', state: 'stopped' }],
  ])('the root supervisor in %j is %j', (value, phase) => expect(selectRootPhase({ value })).toEqual(phase));

  it('reads the exit once stopped', () => {
    expect(selectExit({ output: { exitCode: 1, reason: 'x' } })).toEqual({ exitCode: 1, reason: 'x' });
    expect(selectExit({})).toBeNull();
  });
});

describe('the guards that type a looked-up snapshot', () => {
  it('know each machine’s snapshots, and nothing else', () => {
    const nginx = createActor(nginxProcessMachine.provide({ actors: { master: fromCallback(() => {}) } }), {
      input: nginxSnapshot('x').context,
    }).getSnapshot();
    const root = createActor(rootSupervisorMachine.provide({ actors: { bootConfig: fromPromise(async () => {}) } }), {
      input: {
        watchers: [],
        restartIntensity: 1,
        restartPeriodMs: 1,
        shutdownTimeoutMs: 1,
        syncQueue: syncQueueSnapshot('x').context,
        nginx: nginxSnapshot('x').context,
      },
    }).getSnapshot();
    const promise = createActor(fromPromise(async () => {})).getSnapshot();
    expect([nginx, root, promise, null, {}].map(isNginxProcessSnapshot)).toEqual([true, false, false, false, false]);
    expect([nginx, root, promise].map(isRootSupervisorSnapshot)).toEqual([false, true, false]);
    expect([nginx, root].map(isResourceWatcherSnapshot)).toEqual([false, false]);
    expect([nginx, root].map(isStatusSnapshot)).toEqual([false, false]);
  });
});
