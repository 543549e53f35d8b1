/**
 * Model-based test of the sync queue, pure: paths from the machine definition (xstate/graph),
 * each run on a real actor of that machine with a SimulatedClock and a runSync the test settles.
 * The model has no time, so a timer event fires exactly that timer (any order of timers is
 * possible for some choice of debounce, max holdoff and rate), and after every step the timers
 * the actor has pending must be the ones its state implies: debounce and max holdoff while
 * pending, the rate token's timer while the token is out, nothing once stopped.
 */
import { describe, expect, it } from 'vitest';
import { SimulatedClock, createActor, fromPromise, type AnyEventObject, type AnyMachineSnapshot } from 'xstate';
import type { RunSyncInput, RunSyncOutput } from '../../machines/syncEffects.js';
import { syncQueueMachine, type SyncQueueContext, type SyncQueueInput } from '../../machines/syncQueue.machine.js';
import { deferred, flush, type Deferred } from '../machines/harness.js';
import { Coverage, pathsFor, timersAlong, type Path, type Timers } from './graph.js';
import { microstepRecorder, runPath, type RealStep, type World } from './runner.js';

const INPUT: SyncQueueInput = {
  watchers: ['Ingress', 'Service'],
  debounceMs: 100,
  maxHoldoffMs: 1000,
  minSyncIntervalMs: 300,
};
const DELAY = { debounce: INPUT.debounceMs, maxHoldoff: INPUT.maxHoldoffMs, rate: INPUT.minSyncIntervalMs };

/** serve is a sync's value for `config`, with tables of the same name (the model compares configs only). */
const serve = (config: string) => ({
  config,
  files: [],
  tables: { backends: { version: config }, certificates: { version: config } },
});

const E = {
  synced: (kind: string) => ({ type: 'k8s.synced', kind }),
  changed: { type: 'k8s.changed', kind: 'Ingress', key: 'default/web' },
  endpoints: { type: 'k8s.changed', kind: 'EndpointSlice', key: 'default/web-1' },
  template: { type: 'template.changed', template: 'compiled template' },
  request: { type: 'sync.request' },
  resync: { type: 'sync.resync' },
  stop: { type: 'sync.stop' },
  rate: { type: 'rate.ready' },
  debounce: { type: 'xstate.after.debounce.syncQueue.pending.debouncing' },
  maxHoldoff: { type: 'xstate.after.maxHoldoff.syncQueue.pending' },
  quiet: { type: 'xstate.after.maxHoldoff.syncQueue.idle.settling' },
  // A sync whose value serves `config` (`c1` or `c2`): a reload when it is not the one last handed, else a push.
  done: (config: string) => ({
    type: 'xstate.done.actor.runSync',
    output: { awaitingVerdict: false, serve: serve(config) },
  }),
  // a bisection step: the sync waits for nginx's verdict on its config, which only a reload brings
  doneAwaiting: (config: string) => ({
    type: 'xstate.done.actor.runSync',
    output: { awaitingVerdict: true, serve: serve(config) },
  }),
  // the supervisor restarted the nginx actor: the config last handed is not what it serves
  nginxRestarted: { type: 'sync.request', reason: 'nginx actor restarted', nginxRestarted: true },
  applied: { type: 'nginx.applied', config: 'c' },
  refused: { type: 'nginx.refused', config: 'c', output: 'nginx: [emerg] x' },
  // a pushed entry nginx refused: the next sync holds its objects
  entriesRefused: {
    type: 'nginx.entriesRefused',
    entries: [{ table: 'certificates', key: 'tenant/site-tls', reason: 'cert is not a PEM certificate chain' }],
  },
  failed: { type: 'xstate.error.actor.runSync', error: 'build failed' },
};

/** events lists what can happen in a state: any command, and the timers and the sync that are pending. */
function events(snapshot: AnyMachineSnapshot): AnyEventObject[] {
  const c = snapshot.context as SyncQueueContext;
  if (snapshot.status !== 'active') return [];
  const list: AnyEventObject[] = [
    E.changed,
    E.endpoints,
    E.template,
    E.request,
    E.nginxRestarted,
    E.resync,
    E.stop,
    E.applied,
    E.refused,
    E.entriesRefused,
  ];
  const unsynced = INPUT.watchers.filter((k) => !c.synced.includes(k));
  list.push(...unsynced.map(E.synced));
  if (c.synced.length > 0) list.push(E.synced(c.synced[0]!)); // a watcher reporting twice
  if (!c.tokenReady) list.push(E.rate);
  if (snapshot.matches('pending' as never)) list.push(E.maxHoldoff);
  if (snapshot.matches('idle.settling' as never)) list.push(E.quiet);
  if (snapshot.matches('pending.debouncing' as never)) list.push(E.debounce);
  if (snapshot.matches('syncing' as never)) {
    // Another config than the one handed (a reload), the same (a push), a bisection step, a failure.
    const handed = c.handed?.config ?? null;
    list.push(E.done(handed === 'c1' ? 'c2' : 'c1'), E.doneAwaiting(handed ?? 'c1'), E.failed);
    if (handed !== null) list.push(E.done(handed));
  }
  return list;
}

const key = (s: AnyMachineSnapshot) => {
  const c = s.context as SyncQueueContext;
  return [
    s.value,
    [...c.synced].sort(),
    c.dirty,
    c.prompt,
    c.handed?.config ?? null,
    c.held !== null,
    c.tokenReady,
    c.awaitingVerdict,
    c.refused !== null,
    c.entriesRefused.length > 0,
  ];
};

/** SteppingClock is a SimulatedClock whose pending timers can be listed and fired one at a time. */
class SteppingClock extends SimulatedClock {
  private readonly pendingTimers = new Map<number, { delay: number; fn: () => void }>();
  override setTimeout(fn: (...args: unknown[]) => void, timeout: number): number {
    const id = super.setTimeout(fn, timeout);
    this.pendingTimers.set(id, { delay: timeout, fn });
    return id;
  }
  override clearTimeout(id: number): void {
    this.pendingTimers.delete(id);
    super.clearTimeout(id);
  }
  delays(): number[] {
    return [...this.pendingTimers.values()].map((t) => t.delay).sort((a, b) => a - b);
  }
  fire(delay: number): void {
    const [id, timer] = [...this.pendingTimers].find(([, t]) => t.delay === delay) ?? [];
    if (id === undefined || !timer)
      throw new Error(`no ${delay} ms timer pending (pending: ${this.delays().join(', ')})`);
    this.clearTimeout(id);
    timer.fn();
  }
}

const timerCache = new Map<Path, Timers[]>();
const timersOf = (path: Path) =>
  timerCache.get(path) ?? timerCache.set(path, timersAlong(syncQueueMachine, INPUT, path.steps)).get(path)!;
const delays = (timers: Timers) => [...timers.values()].map((t) => t.delay).sort((a, b) => a - b);

function syncQueueWorld(): World {
  const clock = new SteppingClock();
  const log: RealStep[] = [];
  const templateAtStart = new Map<number, unknown>();
  const syncs: {
    generation: number;
    template: unknown;
    done: Deferred<void>;
    aborted: boolean;
    output: RunSyncOutput;
  }[] = [];
  const runSync = fromPromise<RunSyncOutput, RunSyncInput>(({ input, signal }) => {
    const sync = {
      generation: input.generation,
      template: input.template,
      done: deferred(),
      aborted: false,
      output: { awaitingVerdict: false } as RunSyncOutput,
    };
    signal.addEventListener('abort', () => (sync.aborted = true));
    syncs.push(sync);
    return sync.done.promise.then(() => sync.output);
  });
  const actor = createActor(syncQueueMachine.provide({ actors: { runSync } }), {
    input: INPUT,
    clock,
    inspect: microstepRecorder(log),
  });
  const initial = actor.getSnapshot();
  return {
    log,
    ambient: new Set(),
    snapshot: () => actor.getSnapshot() as AnyMachineSnapshot,
    initial: () => initial as AnyMachineSnapshot,
    project: (s) => {
      const c = s.context as SyncQueueContext;
      return {
        synced: [...c.synced].sort(),
        dirty: c.dirty,
        prompt: c.prompt,
        handed: c.handed?.config ?? null,
        held: c.held?.config ?? null,
        token: c.tokenReady,
        generation: c.generation,
        changes: c.changes,
        started: c.syncsStarted,
        completed: c.syncsCompleted,
        failed: c.syncsFailed,
        awaiting: c.awaitingVerdict,
        refused: c.refused,
        applied: c.applied,
        template: c.template,
      };
    },
    async exec({ step }) {
      const e = step.event;
      if (e.type === 'xstate.init') actor.start();
      else if (e.type === E.rate.type) clock.fire(DELAY.rate);
      else if (e.type === E.debounce.type) clock.fire(DELAY.debounce);
      else if (e.type === E.maxHoldoff.type || e.type === E.quiet.type) clock.fire(DELAY.maxHoldoff);
      else if (e.type === 'xstate.done.actor.runSync') {
        const sync = syncs.at(-1)!;
        sync.output = (e as unknown as { output: RunSyncOutput }).output;
        sync.done.resolve();
      } else if (e.type === E.failed.type) syncs.at(-1)!.done.reject(new Error('build failed'));
      else actor.send(e as never);
      await flush();
    },
    async check({ path, index, step }) {
      const s = step.state;
      expect(clock.delays(), 'pending timers').toEqual(delays(timersOf(path)[index]!));
      const running =
        syncs.filter((x) => !x.aborted).length -
        (s.context as SyncQueueContext).syncsCompleted -
        (s.context as SyncQueueContext).syncsFailed;
      // At most one sync at a time, and one exactly while syncing; a sync cut by sync.stop is aborted.
      expect(running, 'syncs running').toBe(s.matches('syncing' as never) ? 1 : 0);
      if (s.matches('syncing' as never))
        expect(syncs.at(-1)!.generation).toBe((s.context as SyncQueueContext).generation);
      // Each sync renders with the template of the last template.changed before it started (none
      // before any): what the context held on entering syncing, not one that came in since.
      if (s.matches('syncing' as never)) {
        const generation = (s.context as SyncQueueContext).generation;
        if (!templateAtStart.has(generation)) templateAtStart.set(generation, (s.context as SyncQueueContext).template);
        expect(syncs.at(-1)!.template, 'the template the sync was given').toBe(templateAtStart.get(generation));
      }
    },
    async close() {
      actor.stop();
    },
  };
}

const SCENARIOS = {
  'no sync before every watcher synced, then one, its config handed': [
    E.changed,
    E.synced('Ingress'),
    E.changed,
    E.synced('Service'),
    E.debounce,
    E.done('c1'),
  ],
  'a burst while syncing becomes exactly one more sync, its reload held for the debounce and the token': [
    E.synced('Ingress'),
    E.synced('Service'),
    E.debounce,
    E.changed,
    E.changed,
    E.template,
    E.done('c1'),
    E.done('c2'),
    E.debounce,
    E.rate,
  ],
  'constant churn still syncs at the max holdoff': [
    E.synced('Ingress'),
    E.synced('Service'),
    E.changed,
    E.changed,
    E.changed,
    E.maxHoldoff,
    E.done('c1'),
  ],
  'a failed sync is retried after the rate interval': [
    E.resync,
    E.debounce,
    E.failed,
    E.debounce,
    E.rate,
    E.done('c1'),
  ],
  'stop while syncing cancels the sync': [E.resync, E.request, E.stop],
  'a lone change once quiet is reloaded without the debounce': [
    E.resync,
    E.debounce,
    E.done('c1'),
    E.quiet,
    E.rate,
    E.changed,
    E.done('c2'),
  ],
  'an endpoint change right after a sync is pushed at once, without the debounce or the token': [
    E.resync,
    E.debounce,
    E.done('c1'),
    E.endpoints,
    E.done('c1'),
  ],
  'an endpoint change during a sync is pushed as soon as it ends': [
    E.resync,
    E.debounce,
    E.endpoints,
    E.done('c1'),
    E.done('c1'),
  ],
  'an endpoint change beside a held reload goes out with it': [
    E.resync,
    E.debounce,
    E.done('c1'),
    E.changed,
    E.done('c2'),
    E.endpoints,
    E.debounce,
    E.rate,
    E.done('c2'),
  ],
  'a held reload made moot by a sync of the handed config: its tables pushed at once': [
    E.resync,
    E.debounce,
    E.done('c1'),
    E.changed,
    E.done('c2'),
    E.endpoints,
    E.debounce,
    E.rate,
    E.done('c1'),
  ],
  'a refusal brings a sync that is given it': [
    E.resync,
    E.debounce,
    E.done('c1'),
    E.quiet,
    E.rate,
    E.refused,
    E.done('c2'),
  ],
  'a bisection step waits for the verdict, which brings the next sync, handed though its config is the same': [
    E.resync,
    E.debounce,
    E.doneAwaiting('c1'),
    E.quiet,
    E.rate,
    E.applied,
    E.doneAwaiting('c1'),
  ],
  'a restarted nginx actor is handed the config again': [
    E.resync,
    E.debounce,
    E.done('c1'),
    E.quiet,
    E.rate,
    E.nginxRestarted,
    E.done('c1'),
  ],
};

const isTimer = (type: string) => type.startsWith('xstate.after.') || type === E.rate.type;
// Cheap to run, so: every transition, every state, and every simple path of the coarser graph.
const simplePathsKey = (s: AnyMachineSnapshot) => [s.value, (s.context as SyncQueueContext).tokenReady];
const { paths } = pathsFor(syncQueueMachine, {
  events,
  key,
  input: INPUT,
  scenarios: SCENARIOS,
  everyStateWithin: Infinity,
  simplePathsKey,
  isTimer,
});
const coverage = new Coverage(syncQueueMachine);
for (const path of paths) coverage.addModelPath(path);

describe('sync queue: every path of the machine, on a real actor with a SimulatedClock', () => {
  it(`walks ${paths.length} paths`, async () => {
    for (const path of paths)
      await runPath(syncQueueMachine, path, syncQueueWorld(), coverage, { stepTimeoutMs: 1000 });
  });

  it('walked every state and transition of the machine, in the model and for real', () => {
    console.log(coverage.summary());
    expect(coverage.missing()).toEqual({ model: [], real: [] });
  });
});
