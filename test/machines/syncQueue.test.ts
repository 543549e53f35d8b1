import { describe, expect, it } from 'vitest';
import { SimulatedClock, createActor, fromPromise, initialTransition, transition } from 'xstate';
import {
  syncQueueMachine,
  type RunSyncInput,
  type RunSyncOutput,
  type SyncQueueInput,
} from '../../machines/syncQueue.machine.js';
import { advance, deferred, flush, type Deferred } from './harness.js';

const WATCHERS = ['Ingress', 'Service', 'EndpointSlice'];

interface Call {
  readonly generation: number;
  readonly trigger: string;
  readonly entriesRefused: RunSyncInput['entriesRefused'];
  readonly at: number;
  readonly done: Deferred<void>;
  aborted: boolean;
}

/** start runs the sync queue with a runSync double; `auto` settles every sync at once, each with `output`. */
function start(
  overrides: Partial<SyncQueueInput> = {},
  auto: 'resolve' | 'reject' | false = 'resolve',
  output: RunSyncOutput = { awaitingVerdict: false },
) {
  const clock = new SimulatedClock();
  const calls: Call[] = [];
  const runSync = fromPromise<RunSyncOutput, RunSyncInput>(({ input, signal }) => {
    const call: Call = {
      generation: input.generation,
      trigger: input.trigger,
      entriesRefused: input.entriesRefused,
      at: clock.now(),
      done: deferred(),
      aborted: false,
    };
    signal.addEventListener('abort', () => (call.aborted = true));
    calls.push(call);
    if (auto === 'resolve') call.done.resolve();
    if (auto === 'reject') call.done.reject(new Error('render failed'));
    return call.done.promise.then(() => output);
  });
  const input: SyncQueueInput = {
    watchers: WATCHERS,
    debounceMs: 100,
    maxHoldoffMs: 1000,
    minSyncIntervalMs: 0,
    ...overrides,
  };
  const actor = createActor(syncQueueMachine.provide({ actors: { runSync } }), { clock, input }).start();
  const syncAll = () => {
    for (const kind of input.watchers) actor.send({ type: 'k8s.synced', kind });
  };
  const change = (n = 1) => {
    for (let i = 0; i < n; i++) actor.send({ type: 'k8s.changed', kind: 'Ingress', key: `default/web-${i}` });
  };
  return { clock, calls, actor, syncAll, change };
}

describe('syncQueue', () => {
  it('hands the table entries nginx refused to the next sync, at once, and to that sync only', async () => {
    const { clock, calls, actor, syncAll } = start();
    syncAll();
    await advance(clock, 200);
    expect(calls).toHaveLength(1);
    const entries = [{ table: 'certificates' as const, key: 't2.example', reason: 'key is not a PEM private key' }];
    actor.send({ type: 'nginx.entriesRefused', entries });
    await advance(clock, 10);
    expect(calls).toHaveLength(2);
    expect(calls[1]!.entriesRefused).toEqual(entries);
    actor.send({ type: 'sync.request' });
    await advance(clock, 2_000, 10);
    expect(calls).toHaveLength(3);
    expect(calls[2]!.entriesRefused).toEqual([]);
  });

  it('does not sync before every watcher has synced', async () => {
    const { clock, calls, actor, change } = start();
    change(3);
    await advance(clock, 5_000, 50);
    expect(actor.getSnapshot().value).toBe('waitingForSync');
    expect(actor.getSnapshot().context.dirty).toBe(true);
    actor.send({ type: 'k8s.synced', kind: 'Ingress' });
    actor.send({ type: 'k8s.synced', kind: 'Service' });
    actor.send({ type: 'sync.request' });
    await advance(clock, 5_000, 50);
    expect(calls).toHaveLength(0);
    expect(actor.getSnapshot().context.synced).toEqual(['Ingress', 'Service']);

    actor.send({ type: 'k8s.synced', kind: 'EndpointSlice' });
    expect(actor.getSnapshot().value).toEqual({ pending: 'debouncing' });
    await advance(clock, 100);
    expect(calls.map((c) => c.generation)).toEqual([1]);
    expect(actor.getSnapshot().matches('idle')).toBe(true);
  });

  it('syncs once for a burst of 500 changes while idle', async () => {
    const { clock, calls, actor, syncAll, change } = start();
    syncAll();
    await advance(clock, 200);
    expect(calls).toHaveLength(1);

    change(500);
    expect(actor.getSnapshot().value).toEqual({ pending: 'debouncing' });
    await advance(clock, 5_000, 10);
    expect(calls).toHaveLength(2);
    expect(actor.getSnapshot().context).toMatchObject({
      changes: 500,
      syncsStarted: 2,
      syncsCompleted: 2,
      dirty: false,
    });
    expect(actor.getSnapshot().matches('idle')).toBe(true);
  });

  it('runs exactly one more sync for any number of changes during a sync', async () => {
    const { clock, calls, actor, syncAll, change } = start({}, false);
    syncAll();
    await advance(clock, 100);
    expect(actor.getSnapshot().value).toBe('syncing');

    change(250);
    actor.send({ type: 'template.changed', template: 'T' });
    await advance(clock, 3_000, 10);
    expect(calls).toHaveLength(1); // still one at a time
    calls[0]!.done.resolve();
    await flush();
    expect(actor.getSnapshot().value).toEqual({ pending: 'debouncing' });

    await advance(clock, 100);
    expect(calls).toHaveLength(2);
    calls[1]!.done.resolve();
    await advance(clock, 5_000, 10);
    expect(calls).toHaveLength(2);
    expect(actor.getSnapshot().matches('idle')).toBe(true);
  });

  it('spaces sync starts by minSyncIntervalMs, waiting in pending.throttled', async () => {
    const { clock, calls, actor, syncAll, change } = start({ minSyncIntervalMs: 3333 });
    syncAll();
    await advance(clock, 100);
    // Three bursts, each due (debounced) before the token from the previous sync is back.
    for (const at of [200, 1_500, 4_000]) {
      await advance(clock, at - clock.now());
      change(50);
      if (at === 1_500) {
        await advance(clock, 100);
        expect(actor.getSnapshot().value).toEqual({ pending: 'throttled' });
      }
    }
    await advance(clock, 12_000);

    const starts = calls.map((c) => c.at);
    // The initial sync, one for the first two bursts (the second arrived while the first waited), one for the third.
    expect(starts).toEqual([100, 3_433, 6_766]);
    for (let i = 1; i < starts.length; i++) expect(starts[i]! - starts[i - 1]!).toBeGreaterThanOrEqual(3333);
    expect(actor.getSnapshot().matches('idle')).toBe(true);
  });

  it('syncs by maxHoldoffMs under constant churn', async () => {
    const { clock, calls, syncAll, change } = start({ debounceMs: 100, maxHoldoffMs: 1_000 });
    syncAll();
    await advance(clock, 100);
    const first = clock.now();
    expect(calls).toHaveLength(1);
    // A change every 50 ms: the debounce never expires, the max holdoff does.
    for (let t = 0; t < 3_500; t += 50) {
      change();
      await advance(clock, 50);
    }
    const during = calls.slice(1).map((c) => c.at - first);
    expect(during).toEqual([1_000, 2_000, 3_000]);
  });

  it('syncs a lone change at once once the queue is quiet, and debounces one that follows a sync', async () => {
    const { clock, calls, actor, syncAll, change } = start({
      debounceMs: 100,
      maxHoldoffMs: 500,
      minSyncIntervalMs: 1_000,
    });
    syncAll();
    await advance(clock, 100);
    expect(actor.getSnapshot().value).toEqual({ idle: 'settling' });
    // 300 ms after the sync: likely one of a burst, so it waits for 100 ms of quiet, then for the token.
    await advance(clock, 300);
    change();
    expect(actor.getSnapshot().value).toEqual({ pending: 'debouncing' });
    await advance(clock, 100);
    expect(actor.getSnapshot().value).toEqual({ pending: 'throttled' });
    await advance(clock, 600);
    expect(calls.map((c) => c.at)).toEqual([100, 1_100]);
    // maxHoldoffMs after that sync the queue is quiet; a lone change waits for nothing but the token.
    await advance(clock, 499);
    expect(actor.getSnapshot().value).toEqual({ idle: 'settling' });
    await advance(clock, 1);
    expect(actor.getSnapshot().value).toEqual({ idle: 'quiet' });
    await advance(clock, 500);
    change();
    await flush();
    expect(calls.map((c) => c.at)).toEqual([100, 1_100, 2_100]);
    // Quiet, but the token is out (the last sync started 500 ms ago): the change waits for the token alone.
    await advance(clock, 500);
    actor.send({ type: 'template.changed', template: 'T' });
    expect(actor.getSnapshot().value).toEqual({ pending: 'throttled' });
    change(20);
    await advance(clock, 500);
    expect(calls.map((c) => c.at)).toEqual([100, 1_100, 2_100, 3_100]);
    await advance(clock, 5_000, 50);
    expect(calls).toHaveLength(4);
    expect(actor.getSnapshot().context).toMatchObject({ changes: 23, dirty: false });
  });

  it('syncs a change of a pushed kind at once, without debounce or rate token, and takes no token', async () => {
    const { clock, calls, actor, syncAll, change } = start({
      debounceMs: 100,
      maxHoldoffMs: 500,
      minSyncIntervalMs: 3_333,
      pushedKinds: ['EndpointSlice'],
    });
    const endpoints = (n: number) =>
      actor.send({ type: 'k8s.changed', kind: 'EndpointSlice', key: `default/app-${n}` });
    syncAll();
    await advance(clock, 100);
    expect(calls.map((c) => c.at)).toEqual([100]);
    // Right after a sync that took the token (settling, token out): an endpoint change is synced at once.
    await advance(clock, 50);
    endpoints(1);
    await flush();
    expect(calls.map((c) => c.at)).toEqual([100, 150]);
    await advance(clock, 200);
    endpoints(2);
    await flush();
    expect(calls.map((c) => c.at)).toEqual([100, 150, 350]);
    // Those took no token: an Ingress change still waits for the one the first sync took (3,433).
    change();
    await advance(clock, 100);
    expect(actor.getSnapshot().value).toEqual({ pending: 'throttled' });
    // Waiting for the token, an endpoint change goes out with the Ingress change, in one sync.
    endpoints(3);
    await advance(clock, 3_433 - clock.now());
    expect(calls.map((c) => c.at)).toEqual([100, 150, 350, 3_433]);
    await advance(clock, 5_000, 50);
    expect(calls).toHaveLength(4);
    expect(actor.getSnapshot().context).toMatchObject({ dirty: false, reloadable: false, tokenReady: true });
  });

  it('pushes endpoint changes from during a sync at once; waits for the token when anything else came', async () => {
    const { clock, calls, actor, syncAll, change } = start(
      { debounceMs: 100, maxHoldoffMs: 500, minSyncIntervalMs: 3_333, pushedKinds: ['EndpointSlice'] },
      false,
    );
    const endpoints = () => actor.send({ type: 'k8s.changed', kind: 'EndpointSlice', key: 'default/app-1' });
    syncAll();
    await advance(clock, 100);
    calls[0]!.done.resolve();
    await advance(clock, 100);
    endpoints();
    await flush();
    expect(calls.map((c) => c.at)).toEqual([100, 200]);
    // Endpoint changes during the push: one more push as soon as it ends.
    endpoints();
    endpoints();
    await advance(clock, 10);
    calls[1]!.done.resolve();
    await flush();
    expect(actor.getSnapshot().value).toBe('syncing');
    expect(calls.map((c) => c.at)).toEqual([100, 200, 210]);
    // An Ingress change during that one: the next sync may reload, so it waits for the token (3,433).
    change();
    endpoints();
    await advance(clock, 10);
    calls[2]!.done.resolve();
    await advance(clock, 3_433 - clock.now());
    expect(calls.map((c) => c.at)).toEqual([100, 200, 210, 3_433]);
  });

  it('syncs a change of an object the last sync named as pushed (a TLS-only Secret) at once, no other', async () => {
    const { clock, calls, actor, syncAll } = start(
      { watchers: [...WATCHERS, 'Secret'], debounceMs: 100, maxHoldoffMs: 500, minSyncIntervalMs: 3_333 },
      'resolve',
      { awaitingVerdict: false, pushedKeys: ['Secret/default/site-tls'] },
    );
    const secret = (name: string) => actor.send({ type: 'k8s.changed', kind: 'Secret', key: `default/${name}` });
    syncAll();
    await advance(clock, 100);
    expect(actor.getSnapshot().context.pushedKeys).toEqual(['Secret/default/site-tls']);
    await advance(clock, 50);
    secret('site-tls');
    await flush();
    expect(calls.map((c) => c.at)).toEqual([100, 150]);
    // Another Secret (an htpasswd file, say) may change nginx.conf: debounced, then the token.
    await advance(clock, 50);
    secret('users');
    await advance(clock, 200);
    expect(actor.getSnapshot().value).toEqual({ pending: 'throttled' });
    await advance(clock, 3_433 - clock.now());
    expect(calls.map((c) => c.at)).toEqual([100, 150, 3_433]);
  });

  it('makes an endpoint change the last sync rendered (a TCP service) wait for the token; others are pushed', async () => {
    const { clock, calls, actor, syncAll } = start(
      { debounceMs: 100, maxHoldoffMs: 500, minSyncIntervalMs: 3_333, pushedKinds: ['EndpointSlice'] },
      'resolve',
      { awaitingVerdict: false, renderedPrefixes: ['EndpointSlice/default/echo'] },
    );
    const slice = (name: string) => actor.send({ type: 'k8s.changed', kind: 'EndpointSlice', key: `default/${name}` });
    syncAll();
    await advance(clock, 100);
    expect(actor.getSnapshot().context.renderedPrefixes).toEqual(['EndpointSlice/default/echo']);
    await advance(clock, 50);
    slice('app-1');
    await flush();
    expect(calls.map((c) => c.at)).toEqual([100, 150]);
    // The stream block lists the echo Service's endpoints: its slice reloads nginx, so it is debounced, then waits.
    await advance(clock, 50);
    slice('echo-x7k2p');
    await advance(clock, 200);
    expect(actor.getSnapshot().value).toEqual({ pending: 'throttled' });
    await advance(clock, 3_433 - clock.now());
    expect(calls.map((c) => c.at)).toEqual([100, 150, 3_433]);
  });

  it('without pushed kinds, an endpoint change waits for the debounce and the token like any other', async () => {
    const { clock, calls, actor, syncAll } = start({ debounceMs: 100, maxHoldoffMs: 500, minSyncIntervalMs: 3_333 });
    syncAll();
    await advance(clock, 150);
    actor.send({ type: 'k8s.changed', kind: 'EndpointSlice', key: 'default/app-1' });
    expect(actor.getSnapshot().value).toEqual({ pending: 'debouncing' });
    await advance(clock, 5_000);
    expect(calls.map((c) => c.at)).toEqual([100, 3_433]);
  });

  it('counts a failed sync and retries it after the interval', async () => {
    const { clock, calls, actor, syncAll } = start({ minSyncIntervalMs: 2_000 }, 'reject');
    syncAll();
    await advance(clock, 100);
    expect(actor.getSnapshot().context).toMatchObject({ syncsFailed: 1, lastError: 'render failed', dirty: true });
    await advance(clock, 1_900);
    expect(calls).toHaveLength(1);
    await advance(clock, 200);
    expect(calls.map((c) => c.at)).toEqual([100, 2_100]);
    expect(actor.getSnapshot().context.syncsFailed).toBe(2);
  });

  it('forces a sync on sync.request without the debounce', async () => {
    const { clock, calls, actor, syncAll } = start();
    syncAll();
    await advance(clock, 100);
    actor.send({ type: 'sync.request' });
    await flush();
    expect(calls.map((c) => c.at)).toEqual([100, 100]);
  });

  it('treats every watcher as synced on sync.resync (after a supervisor restart)', async () => {
    const { clock, calls, actor } = start();
    actor.send({ type: 'sync.resync' });
    expect(actor.getSnapshot().value).toEqual({ pending: 'debouncing' });
    await advance(clock, 100);
    expect(calls).toHaveLength(1);
  });

  it('stops from idle, and cancels a running sync on sync.stop', async () => {
    const idle = start();
    idle.syncAll();
    await advance(idle.clock, 100);
    idle.actor.send({ type: 'sync.stop' });
    expect(idle.actor.getSnapshot().value).toBe('stopped');
    expect(idle.actor.getSnapshot().status).toBe('done');

    const busy = start({}, false);
    busy.syncAll();
    await advance(busy.clock, 100);
    busy.actor.send({ type: 'sync.stop' });
    expect(busy.actor.getSnapshot().status).toBe('done');
    expect(busy.calls[0]!.aborted).toBe(true);
    await advance(busy.clock, 2_000, 10);
    expect(busy.calls).toHaveLength(1);
  });

  it('transitions purely: changes before sync only mark dirty, the last synced watcher starts pending', () => {
    const input: SyncQueueInput = {
      watchers: ['Ingress', 'Service'],
      debounceMs: 100,
      maxHoldoffMs: 1_000,
      minSyncIntervalMs: 0,
    };
    const [s0] = initialTransition(syncQueueMachine, input);
    expect(s0.value).toBe('waitingForSync');
    const [s1, a1] = transition(syncQueueMachine, s0, { type: 'k8s.changed', kind: 'Ingress', key: 'a/b' });
    expect(s1.value).toBe('waitingForSync');
    expect(s1.context).toMatchObject({ dirty: true, changes: 1, lastChange: 'k8s.changed Ingress a/b' });
    expect(a1).toEqual([]);
    const [s2] = transition(syncQueueMachine, s1, { type: 'k8s.synced', kind: 'Service' });
    const [s3, a3] = transition(syncQueueMachine, s2, { type: 'k8s.synced', kind: 'Ingress' });
    expect(s3.value).toEqual({ pending: 'debouncing' });
    // Entering pending schedules the two holdoff timers; nothing runs.
    const raised = a3.filter((a) => a.type === 'xstate.raise').map((a) => (a.params as { delay?: number }).delay);
    expect(raised.sort((x, y) => (x ?? 0) - (y ?? 0))).toEqual([100, 1_000]);

    const [empty] = initialTransition(syncQueueMachine, { ...input, watchers: [] });
    expect(empty.value).toEqual({ pending: 'debouncing' });
  });
});

describe('the trigger each sync is given (what caused it, for the logs and the record of applies)', () => {
  it('is start for the first sync, then the first change and how many more came with it', async () => {
    const { clock, calls, actor, syncAll, change } = start();
    change(40);
    syncAll();
    await advance(clock, 200);
    actor.send({ type: 'k8s.changed', kind: 'Ingress', key: 'default/app' });
    await advance(clock, 2_000, 50);
    // Quiet: the first change syncs alone at once; the rest come while it runs, one of them twice.
    change(3);
    actor.send({ type: 'k8s.changed', kind: 'Ingress', key: 'default/web-1' });
    await advance(clock, 2_000, 50);
    actor.send({ type: 'template.changed', template: {} });
    await advance(clock, 2_000, 50);
    actor.send({ type: 'sync.request', reason: 'nginx actor restarted' });
    await advance(clock, 2_000, 50);
    expect(calls.map((c) => c.trigger)).toEqual([
      'start',
      'Ingress default/app changed',
      'Ingress default/web-0 changed',
      'Ingress default/web-1 changed (1 more)',
      'template',
      'nginx actor restarted',
    ]);
  });

  it("gives a failed sync's changes to the retry, and keeps start until a sync completed", async () => {
    const { clock, calls, actor, syncAll, change } = start({ minSyncIntervalMs: 1_000 }, false);
    syncAll();
    await advance(clock, 200);
    calls[0]!.done.reject(new Error('render failed'));
    await advance(clock, 1_500, 50);
    expect(calls.map((c) => c.trigger)).toEqual(['start', 'start']);
    calls[1]!.done.resolve();
    await advance(clock, 1_500, 50);
    change(1);
    await advance(clock, 1_500, 50);
    calls[2]!.done.reject(new Error('render failed'));
    actor.send({ type: 'k8s.changed', kind: 'Service', key: 'default/web' });
    await advance(clock, 3_000, 50);
    expect(calls.map((c) => c.trigger)).toEqual([
      'start',
      'start',
      'Ingress default/web-0 changed',
      'Ingress default/web-0 changed (1 more)',
    ]);
  });
});
