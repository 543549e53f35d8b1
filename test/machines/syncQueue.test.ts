/**
 * The sync queue, on a real actor with a SimulatedClock, under a small parent that gives it a recorder as the
 * `nginx` actor and the Secret watcher (as the root supervisor gives it the real ones). The runSync double builds from
 * a small world the test changes: an Ingress or template change alters nginx.conf; an endpoint change (with the Lua
 * balancer) or a TLS-only Secret alters only the pushed tables. What the queue hands nginx (`nginx.reload`,
 * `nginx.push`) and when is what these tests check, beside the syncs themselves.
 */
import { describe, expect, it } from 'vitest';
import {
  SimulatedClock,
  createActor,
  fromCallback,
  fromPromise,
  initialTransition,
  sendTo,
  setup,
  spawnChild,
  transition,
  type AnyActorRef,
  type EventObject,
} from 'xstate';
import type { SyncQueueCommand } from '../../machines/events.js';
import type { RunSyncInput, RunSyncOutput } from '../../machines/syncEffects.js';
import { syncQueueMachine, type SyncQueueContext, type SyncQueueInput } from '../../machines/syncQueue.machine.js';
import { advance, deferred, flush, type Deferred } from './harness.js';

const WATCHERS = ['Ingress', 'Service', 'EndpointSlice'];

interface Call {
  readonly generation: number;
  readonly trigger: string;
  readonly entriesRefused: RunSyncInput['entriesRefused'];
  readonly memory: unknown;
  readonly at: number;
  readonly done: Deferred<void>;
  aborted: boolean;
}

/** Handed is what the nginx recorder got: a reload (its config) or a push (its tables), and when. */
interface Handed {
  readonly type: 'nginx.reload' | 'nginx.push';
  readonly config?: string;
  readonly tables: string | null;
  readonly trigger?: string;
  readonly at: number;
}

/**
 * World is what the runSync double builds from. `rendered`: endpoints are rendered into nginx.conf (no Lua balancer),
 * so their changes alter the config; `renderedSlices`: slices of these Services (a TCP service's) alter it anyway.
 */
interface WorldOptions {
  readonly rendered?: boolean;
  readonly renderedSlices?: readonly string[];
  /** what a sync's output carries besides what it serves, by its generation */
  readonly extra?: (generation: number) => Partial<RunSyncOutput>;
}

/** start runs the sync queue with a runSync double; `auto` settles every sync at once. */
function start(
  overrides: Partial<SyncQueueInput> = {},
  auto: 'resolve' | 'reject' | false = 'resolve',
  world: WorldOptions = {},
) {
  const clock = new SimulatedClock();
  const calls: Call[] = [];
  const handed: Handed[] = [];
  const relevant: EventObject[] = [];
  let config = 0;
  let tables = 0;
  const runSync = fromPromise<RunSyncOutput, RunSyncInput>(({ input, signal }) => {
    const call: Call = {
      generation: input.generation,
      trigger: input.trigger,
      entriesRefused: input.entriesRefused,
      memory: input.memory,
      at: clock.now(),
      done: deferred(),
      aborted: false,
    };
    // A build reads the cache when it starts.
    const output: RunSyncOutput = {
      awaitingVerdict: false,
      serve: {
        config: `conf-${config}`,
        files: [],
        tables: world.rendered ? null : { backends: { version: `b${tables}` }, certificates: { version: 'c' } },
        trigger: input.trigger,
      },
      memory: { generation: input.generation },
      ...world.extra?.(input.generation),
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
  const nginx = fromCallback<EventObject>(({ receive }) =>
    receive((event) => {
      const e = event as unknown as {
        type: Handed['type'];
        config?: string;
        tables?: { backends: { version: string } } | null;
        trigger?: string;
      };
      handed.push({
        type: e.type,
        ...(e.config === undefined ? {} : { config: e.config }),
        tables: e.tables?.backends.version ?? null,
        ...(e.trigger === undefined ? {} : { trigger: e.trigger }),
        at: clock.now(),
      });
    }),
  );
  const secretWatcher = fromCallback<EventObject>(({ receive }) => receive((event) => void relevant.push(event)));
  const queueLogic = syncQueueMachine.provide({ actors: { runSync } });
  const parent = setup({
    types: { events: {} as SyncQueueCommand },
    actors: { queue: queueLogic, nginx, secretWatcher },
  }).createMachine({
    entry: [
      spawnChild('nginx', { id: 'nginx', systemId: 'nginx' }),
      spawnChild('secretWatcher', { id: 'secretWatcher', systemId: 'watcher.Secret' }),
      spawnChild('queue', { id: 'queue', systemId: 'syncQueue', input }),
    ],
    // Everything the test sends goes to the queue; the queue's own end (xstate.done.actor.queue) stays here.
    on: {
      '*': { guard: ({ event }) => !event.type.startsWith('xstate.'), actions: sendTo('queue', ({ event }) => event) },
    },
  });
  const root = createActor(parent, { clock }).start();
  // Kept: a stopped queue leaves the system.
  const queueRef = root.system.get('syncQueue') as AnyActorRef;
  const queue = () => queueRef;
  // What a change alters in the world the next build reads (as the model would).
  const alter = (event: SyncQueueCommand) => {
    if (event.type === 'template.changed') config++;
    if (event.type !== 'k8s.changed') return;
    const pushed =
      (event.kind === 'EndpointSlice' &&
        !world.rendered &&
        !(world.renderedSlices ?? []).some((service) => event.key.startsWith(service))) ||
      (event.kind === 'Secret' && event.key.endsWith('-tls'));
    if (pushed) tables++;
    else config++;
  };
  // An edit undone: the config goes back to what it was before the last change.
  const revert = () => void config--;
  const actor = {
    send: (event: SyncQueueCommand) => {
      alter(event);
      root.send(event);
    },
    getSnapshot: () =>
      queue().getSnapshot() as ReturnType<ReturnType<typeof createActor<typeof queueLogic>>['getSnapshot']>,
  };
  const syncAll = () => {
    for (const kind of input.watchers) actor.send({ type: 'k8s.synced', kind });
  };
  const change = (n = 1) => {
    for (let i = 0; i < n; i++) actor.send({ type: 'k8s.changed', kind: 'Ingress', key: `default/web-${i}` });
  };
  const endpoints = (n = 1) => actor.send({ type: 'k8s.changed', kind: 'EndpointSlice', key: `default/app-${n}` });
  const reloads = () => handed.filter((h) => h.type === 'nginx.reload');
  const pushes = () => handed.filter((h) => h.type === 'nginx.push');
  const context = (): SyncQueueContext => actor.getSnapshot().context;
  return { clock, calls, handed, relevant, actor, root, syncAll, change, endpoints, revert, reloads, pushes, context };
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

  it('reloads once for a burst of 500 changes while idle: built at once, then once more after the debounce', async () => {
    const { clock, calls, actor, syncAll, change, reloads } = start();
    syncAll();
    await advance(clock, 200);
    expect(calls).toHaveLength(1);
    expect(reloads().map((r) => [r.config, r.at])).toEqual([['conf-0', 100]]);

    change(500);
    await flush();
    // The first change was built at once (it might have been an endpoint change); its reload waits with the rest.
    expect(actor.getSnapshot().value).toEqual({ pending: 'debouncing' });
    expect(calls).toHaveLength(2);
    await advance(clock, 5_000, 10);
    expect(calls).toHaveLength(3);
    expect(reloads().map((r) => [r.config, r.at])).toEqual([
      ['conf-0', 100],
      ['conf-500', 300],
    ]);
    expect(actor.getSnapshot().context).toMatchObject({
      changes: 500,
      syncsStarted: 3,
      syncsCompleted: 3,
      dirty: false,
      held: null,
    });
    expect(actor.getSnapshot().matches('idle')).toBe(true);
  });

  it('runs exactly one more sync for any number of changes during a sync', async () => {
    const { clock, calls, actor, syncAll, change, reloads } = start({}, false);
    syncAll();
    await advance(clock, 100);
    expect(actor.getSnapshot().value).toBe('syncing');

    change(250);
    actor.send({ type: 'template.changed', template: 'T' });
    await advance(clock, 3_000, 10);
    expect(calls).toHaveLength(1); // still one at a time
    calls[0]!.done.resolve();
    await flush();
    // The first sync's config is handed; the changes during it are built at once, their reload debounced.
    expect(reloads().map((r) => r.config)).toEqual(['conf-0']);
    expect(actor.getSnapshot().value).toBe('syncing');
    expect(calls).toHaveLength(2);
    calls[1]!.done.resolve();
    await flush();
    expect(actor.getSnapshot().value).toEqual({ pending: 'debouncing' });
    await advance(clock, 5_000, 10);
    expect(calls).toHaveLength(2);
    expect(reloads().map((r) => r.config)).toEqual(['conf-0', 'conf-251']);
    expect(actor.getSnapshot().matches('idle')).toBe(true);
  });

  it('spaces reloads by minSyncIntervalMs, the reload waiting in pending.throttled', async () => {
    const { clock, actor, syncAll, change, reloads } = start({ minSyncIntervalMs: 3333 });
    syncAll();
    await advance(clock, 100);
    // Three bursts, each due (debounced) before the token from the previous reload is back.
    for (const at of [200, 1_500, 4_000]) {
      await advance(clock, at - clock.now());
      change(50);
      if (at === 1_500) {
        await advance(clock, 100);
        expect(actor.getSnapshot().value).toEqual({ pending: 'throttled' });
      }
    }
    await advance(clock, 12_000);

    const at = reloads().map((r) => r.at);
    // The initial sync's, one for the first two bursts (the second arrived while the first waited), one for the third.
    expect(at).toEqual([100, 3_433, 6_766]);
    for (let i = 1; i < at.length; i++) expect(at[i]! - at[i - 1]!).toBeGreaterThanOrEqual(3333);
    expect(actor.getSnapshot().matches('idle')).toBe(true);
  });

  it('reloads by maxHoldoffMs under constant churn', async () => {
    const { clock, syncAll, change, reloads } = start({ debounceMs: 100, maxHoldoffMs: 1_000 });
    syncAll();
    await advance(clock, 100);
    const first = clock.now();
    expect(reloads()).toHaveLength(1);
    // A change every 50 ms: the debounce never expires, the max holdoff does.
    for (let t = 0; t < 3_500; t += 50) {
      change();
      await advance(clock, 50);
    }
    const during = reloads()
      .slice(1)
      .map((r) => r.at - first);
    expect(during).toEqual([1_000, 2_000, 3_000]);
  });

  it('reloads for a lone change at once once the queue is quiet, and debounces one that follows a sync', async () => {
    const { clock, actor, syncAll, change, reloads } = start({
      debounceMs: 100,
      maxHoldoffMs: 500,
      minSyncIntervalMs: 1_000,
    });
    syncAll();
    await advance(clock, 100);
    expect(actor.getSnapshot().value).toEqual({ idle: 'settling' });
    // 300 ms after the sync: likely one of a burst, so its reload waits for 100 ms of quiet, then for the token.
    await advance(clock, 300);
    change();
    await flush();
    expect(actor.getSnapshot().value).toEqual({ pending: 'debouncing' });
    await advance(clock, 100);
    expect(actor.getSnapshot().value).toEqual({ pending: 'throttled' });
    await advance(clock, 600);
    expect(reloads().map((r) => r.at)).toEqual([100, 1_100]);
    // maxHoldoffMs after that the queue is quiet; a lone change waits for nothing but the token.
    await advance(clock, 499);
    expect(actor.getSnapshot().value).toEqual({ idle: 'settling' });
    await advance(clock, 1);
    expect(actor.getSnapshot().value).toEqual({ idle: 'quiet' });
    await advance(clock, 500);
    change();
    await flush();
    expect(reloads().map((r) => r.at)).toEqual([100, 1_100, 2_100]);
    // Quiet, but the token is out (the last reload was 500 ms ago): the reload waits for the token alone.
    await advance(clock, 500);
    actor.send({ type: 'template.changed', template: 'T' });
    await flush();
    expect(actor.getSnapshot().value).toEqual({ pending: 'throttled' });
    change(20);
    await advance(clock, 500);
    expect(reloads().map((r) => r.at)).toEqual([100, 1_100, 2_100, 3_100]);
    await advance(clock, 5_000, 50);
    expect(reloads()).toHaveLength(4);
    expect(actor.getSnapshot().context).toMatchObject({ changes: 23, dirty: false });
  });

  it('pushes an endpoint change at once, without debounce or rate token, and takes no token', async () => {
    const { clock, actor, syncAll, change, endpoints, reloads, pushes, handed } = start({
      debounceMs: 100,
      maxHoldoffMs: 500,
      minSyncIntervalMs: 3_333,
    });
    syncAll();
    await advance(clock, 100);
    expect(reloads().map((r) => r.at)).toEqual([100]);
    // Right after a reload that took the token (settling, token out): an endpoint change is pushed at once.
    await advance(clock, 50);
    endpoints(1);
    await flush();
    expect(pushes().map((p) => [p.tables, p.at, p.trigger])).toEqual([
      ['b1', 150, 'EndpointSlice default/app-1 changed'],
    ]);
    await advance(clock, 200);
    endpoints(2);
    await flush();
    expect(pushes().map((p) => [p.tables, p.at])).toEqual([
      ['b1', 150],
      ['b2', 350],
    ]);
    // Those took no token: an Ingress change's reload still waits for the one the first reload took (3,433).
    change();
    await advance(clock, 100);
    expect(actor.getSnapshot().value).toEqual({ pending: 'throttled' });
    // A reload is held: an endpoint change waits with it (its tables must not run ahead of the config naming them),
    // and goes out with it, in the one reload.
    endpoints(3);
    await advance(clock, 3_433 - clock.now());
    expect(handed.map((h) => [h.type, h.tables, h.at])).toEqual([
      ['nginx.reload', 'b0', 100],
      ['nginx.push', 'b1', 150],
      ['nginx.push', 'b2', 350],
      ['nginx.reload', 'b3', 3_433],
    ]);
    await advance(clock, 5_000, 50);
    expect(handed).toHaveLength(4);
    expect(actor.getSnapshot().context).toMatchObject({ dirty: false, held: null, tokenReady: true });
  });

  it('pushes endpoint changes from during a sync at once; holds them with a reload when anything else came', async () => {
    const { clock, calls, actor, syncAll, change, endpoints, handed } = start(
      { debounceMs: 100, maxHoldoffMs: 500, minSyncIntervalMs: 3_333 },
      false,
    );
    syncAll();
    await advance(clock, 100);
    calls[0]!.done.resolve();
    await advance(clock, 100);
    endpoints(1);
    await flush();
    expect(calls.map((c) => c.at)).toEqual([100, 200]);
    // Endpoint changes during the push's sync: one more as soon as it ends, pushed too.
    endpoints(2);
    endpoints(3);
    await advance(clock, 10);
    calls[1]!.done.resolve();
    await flush();
    expect(actor.getSnapshot().value).toBe('syncing');
    expect(calls.map((c) => c.at)).toEqual([100, 200, 210]);
    // An Ingress change during that one: the sync after it needs a reload, held for the token (3,433) with the
    // endpoints that came with it.
    change();
    endpoints(4);
    await advance(clock, 10);
    calls[2]!.done.resolve();
    await advance(clock, 10);
    calls[3]!.done.resolve();
    await advance(clock, 3_433 - clock.now());
    expect(handed.map((h) => [h.type, h.tables, h.at])).toEqual([
      ['nginx.reload', 'b0', 100],
      ['nginx.push', 'b1', 210],
      ['nginx.push', 'b3', 220],
      ['nginx.reload', 'b4', 3_433],
    ]);
  });

  it('pushes a change of a TLS-only Secret at once; one nginx.conf names (an htpasswd file) is reloaded', async () => {
    const { clock, actor, syncAll, handed } = start({
      watchers: [...WATCHERS, 'Secret'],
      debounceMs: 100,
      maxHoldoffMs: 500,
      minSyncIntervalMs: 3_333,
    });
    const secret = (name: string) => actor.send({ type: 'k8s.changed', kind: 'Secret', key: `default/${name}` });
    syncAll();
    await advance(clock, 150);
    secret('site-tls');
    await flush();
    // Another Secret (an htpasswd file, say) changes nginx.conf: debounced, then the token.
    await advance(clock, 50);
    secret('users');
    await advance(clock, 200);
    expect(actor.getSnapshot().value).toEqual({ pending: 'throttled' });
    await advance(clock, 3_433 - clock.now());
    expect(handed.map((h) => [h.type, h.at])).toEqual([
      ['nginx.reload', 100],
      ['nginx.push', 150],
      ['nginx.reload', 3_433],
    ]);
  });

  it('reloads for an endpoint change the config renders (a TCP service), after the token; others are pushed', async () => {
    const { clock, actor, syncAll, handed } = start(
      { debounceMs: 100, maxHoldoffMs: 500, minSyncIntervalMs: 3_333 },
      'resolve',
      { renderedSlices: ['default/echo'] },
    );
    const slice = (name: string) => actor.send({ type: 'k8s.changed', kind: 'EndpointSlice', key: `default/${name}` });
    syncAll();
    await advance(clock, 150);
    slice('app-1');
    await flush();
    // The stream block lists the echo Service's endpoints: its slice changes nginx.conf, so it is debounced, then waits.
    await advance(clock, 50);
    slice('echo-x7k2p');
    await advance(clock, 200);
    expect(actor.getSnapshot().value).toEqual({ pending: 'throttled' });
    await advance(clock, 3_433 - clock.now());
    expect(handed.map((h) => [h.type, h.at])).toEqual([
      ['nginx.reload', 100],
      ['nginx.push', 150],
      ['nginx.reload', 3_433],
    ]);
  });

  it('without the Lua balancer, an endpoint change waits for the debounce and the token like any other', async () => {
    const { clock, actor, syncAll, handed } = start(
      { debounceMs: 100, maxHoldoffMs: 500, minSyncIntervalMs: 3_333 },
      'resolve',
      { rendered: true },
    );
    syncAll();
    await advance(clock, 150);
    actor.send({ type: 'k8s.changed', kind: 'EndpointSlice', key: 'default/app-1' });
    await flush();
    expect(actor.getSnapshot().value).toEqual({ pending: 'debouncing' });
    await advance(clock, 5_000);
    expect(handed.map((h) => [h.type, h.config, h.tables, h.at])).toEqual([
      ['nginx.reload', 'conf-0', null, 100],
      ['nginx.reload', 'conf-1', null, 3_433],
    ]);
  });

  it('drops a held reload when a later sync comes back to the config nginx was handed, and pushes at once', async () => {
    const { clock, actor, syncAll, endpoints, revert, handed, context } = start({
      debounceMs: 100,
      maxHoldoffMs: 500,
      minSyncIntervalMs: 3_333,
    });
    syncAll();
    await advance(clock, 150);
    actor.send({ type: 'k8s.changed', kind: 'Ingress', key: 'default/web' });
    await advance(clock, 200);
    expect(context().held?.config).toBe('conf-1');
    expect(actor.getSnapshot().value).toEqual({ pending: 'throttled' });
    // The edit is undone, and an endpoint changes: the sync at the token finds the handed config again.
    revert();
    endpoints(1);
    await advance(clock, 3_433 - clock.now());
    expect(handed.map((h) => [h.type, h.config ?? null, h.tables, h.at])).toEqual([
      ['nginx.reload', 'conf-0', 'b0', 100],
      ['nginx.push', null, 'b1', 3_433],
    ]);
    expect(context()).toMatchObject({ held: null, tokenReady: true });
  });

  it('hands a bisection step its config again (only a reload brings the verdict), and nginx restarted its config', async () => {
    const { clock, actor, syncAll, reloads, pushes } = start({ minSyncIntervalMs: 1_000 }, 'resolve', {
      extra: () => ({ awaitingVerdict: true }),
    });
    syncAll();
    await advance(clock, 100);
    // The verdict brings the next step, with the same config: handed again.
    actor.send({ type: 'nginx.applied', config: 'conf-0' });
    await advance(clock, 1_000);
    expect(reloads().map((r) => [r.config, r.at])).toEqual([
      ['conf-0', 100],
      ['conf-0', 1_100],
    ]);
    expect(pushes()).toEqual([]);
  });

  it('hands a restarted nginx actor the config again, though it is the one last handed', async () => {
    const { clock, actor, syncAll, reloads, pushes } = start();
    syncAll();
    await advance(clock, 100);
    actor.send({ type: 'sync.request', reason: 'status actor restarted' });
    await advance(clock, 100);
    expect(pushes().map((p) => p.at)).toEqual([100]);
    actor.send({ type: 'sync.request', reason: 'nginx actor restarted', nginxRestarted: true });
    await advance(clock, 100);
    expect(reloads().map((r) => [r.config, r.at, r.trigger])).toEqual([
      ['conf-0', 100, 'start'],
      ['conf-0', 200, 'nginx actor restarted'],
    ]);
  });

  it('forwards what a sync found: the Secrets it read to the Secret watcher, those changed meanwhile as changes', async () => {
    const { clock, calls, syncAll, relevant } = start({}, 'resolve', {
      extra: (generation) => ({
        secretsRead: { keys: ['default/site-tls'], namespaces: ['held'] },
        secretsChanged: generation === 1 ? ['default/site-tls'] : [],
      }),
    });
    syncAll();
    await advance(clock, 100);
    expect(relevant[0]).toEqual({ type: 'secrets.relevant', keys: ['default/site-tls'], namespaces: ['held'] });
    // The Secret that changed while the build ran is a change: the next sync builds it in.
    expect(calls[1]?.trigger).toBe('Secret default/site-tls changed');
  });

  it('keeps what a sync leaves the next in its context; a restarted queue starts clean', async () => {
    const first = start();
    first.syncAll();
    await advance(first.clock, 100);
    first.change();
    await advance(first.clock, 200);
    expect(first.calls.map((c) => c.memory)).toEqual([null, { generation: 1 }]);
    expect(first.context()).toMatchObject({ memory: { generation: 2 }, handed: { config: 'conf-1' } });
    // A supervisor restart is a new instance of the same logic: nothing of the last one's memory, handed config or
    // held reload, so its first sync builds from nothing and hands its config over again.
    first.root.stop();
    const restarted = start();
    restarted.actor.send({ type: 'sync.resync' });
    expect(restarted.context()).toMatchObject({ memory: null, handed: null, held: null, generation: 0 });
    await advance(restarted.clock, 100);
    expect(restarted.calls.map((c) => c.memory)).toEqual([null]);
    expect(restarted.reloads().map((r) => r.config)).toEqual(['conf-0']);
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
