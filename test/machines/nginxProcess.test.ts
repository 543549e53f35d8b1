import { describe, expect, it } from 'vitest';
import {
  SimulatedClock,
  createActor,
  fromCallback,
  fromPromise,
  getMicrosteps,
  initialTransition,
  transition,
  type EventObject,
} from 'xstate';
import { RECENT_APPLIES } from '../../machines/applies.js';
import type {
  ApplyTiming,
  NginxMasterCommand,
  NginxMasterEvent,
  PushedTables,
  PushResult,
  ReloadResult,
} from '../../machines/events.js';
import type { DrainInput, MasterInput, PushInput, ReloadInput } from '../../machines/nginxEffects.js';
import {
  FATAL_RESTARTS,
  nginxProcessMachine,
  type NginxProcessEvent,
  type NginxProcessInput,
} from '../../machines/nginxProcess.machine.js';
import { checkHealth } from '../../src/http/health.js';
import { observedActors } from '../support/observed.js';
import { advance, deferred, flush, stateName, type Deferred } from './harness.js';

/** EPOCH is when the simulated clock's 0 is, in ms since the epoch, for the doubles' timings. */
const EPOCH = 1_700_000_000_000;

const INPUT: NginxProcessInput = {
  shutdownTimeoutMs: 5_000,
  drainTimeoutMs: 2_000,
  backoffBaseMs: 100,
  backoffMaxMs: 1_000,
  stableAfterMs: 10_000,
};

/** Master is one `master` invocation as the test sees it: what it got, and how to make it act. */
interface Master {
  readonly input: MasterInput;
  readonly received: string[];
  stopped: boolean;
  send(event: NginxMasterEvent): void;
}

type QuitBehaviour = 'exits' | 'ignoresQuit' | 'ignoresAll';

function start(options: { quit?: QuitBehaviour; autoStart?: boolean } = {}) {
  const clock = new SimulatedClock();
  const masters: Master[] = [];
  const reloads: Array<{ config: string; done: Deferred<void>; aborted: boolean }> = [];
  const drains: Array<{ input: DrainInput; done: Deferred<void>; aborted: boolean }> = [];
  const pushes: Array<{ input: PushInput; done: Deferred<void> }> = [];
  const trail: string[] = [];
  let nextPid = 100;
  const master = fromCallback<NginxMasterCommand, MasterInput>(({ input, sendBack, receive }) => {
    const m: Master = { input, received: [], stopped: false, send: (e) => sendBack(e) };
    masters.push(m);
    receive((command) => {
      m.received.push(command.type);
      const quit = options.quit ?? 'exits';
      if (command.type === 'nginx.quit' && quit === 'exits')
        queueMicrotask(() => m.send({ type: 'nginx.exited', code: 0, signal: null }));
      if (command.type === 'nginx.kill' && quit !== 'ignoresAll')
        queueMicrotask(() => m.send({ type: 'nginx.exited', code: null, signal: 'SIGKILL' }));
    });
    if (options.autoStart ?? true) queueMicrotask(() => m.send({ type: 'nginx.started', pid: ++nextPid }));
    return () => (m.stopped = true);
  });
  // The effects time their work on the (simulated) clock, as the real ones do on the wall clock: the machine reads none.
  const timed = () => {
    const at = EPOCH + clock.now();
    return (): ApplyTiming => ({ at, durationMs: EPOCH + clock.now() - at });
  };
  const reload = fromPromise<ReloadResult, ReloadInput>(({ input, signal }) => {
    const r = { config: input.config, done: deferred(), aborted: false };
    const timing = timed();
    signal.addEventListener('abort', () => (r.aborted = true));
    reloads.push(r);
    if (input.config.includes('bad')) r.done.reject(new Error('nginx: [emerg] unknown directive "bad"'));
    // The reload pushes the tables before it signals, as the real one does.
    return r.done.promise.then(
      () => ({ pushed: input.tables, timing: timing() }),
      (error: Error) => Promise.reject(Object.assign(error, { timing: timing() })),
    );
  });
  const push = fromPromise<PushResult, PushInput>(({ input }) => {
    const p = { input, done: deferred() };
    const timing = timed();
    pushes.push(p);
    return p.done.promise.then(() => ({ pushed: input.tables, refused: [], timing: timing() }));
  });
  const drain = fromPromise<void, DrainInput>(({ input, signal }) => {
    const d = { input, done: deferred(), aborted: false };
    signal.addEventListener('abort', () => (d.aborted = true));
    drains.push(d);
    return d.done.promise;
  });
  // nginx's verdicts as the wiring hears them (src/main.ts tells the sync queue).
  const verdicts: string[] = [];
  const logic = nginxProcessMachine.provide({
    actors: { master, reload, drain, push },
    actions: {
      reportApplied: (_, { config }) => void verdicts.push(`applied ${config}`),
      reportRefused: (_, { config }) => void verdicts.push(`refused ${config}`),
    },
  });
  const actor = createActor(logic, {
    clock,
    input: INPUT,
    inspect: (ev) => {
      if (ev.type === '@xstate.microstep' && ev.actorRef.sessionId === ev.rootId) {
        trail.push(stateName((ev.snapshot as { value?: unknown }).value));
      }
    },
  }).start();
  const state = () => stateName(actor.getSnapshot().value);
  const send = (event: NginxProcessEvent) => actor.send(event);
  const last = <T>(list: T[]): T => list[list.length - 1]!;
  return { clock, actor, masters, reloads, drains, pushes, trail, verdicts, state, send, last };
}

const tables = (backends: string, certificates = 'c1'): PushedTables => ({
  backends: { version: backends },
  certificates: { version: certificates },
});

describe('nginxProcess', () => {
  it('pushes the tables of nginx.push at once, but never ahead of a reload under way', async () => {
    const t = start();
    await flush();
    t.send({ type: 'nginx.reload', config: 'conf-1', files: [], tables: tables('b1'), trigger: 'start' });
    t.reloads[0]!.done.resolve();
    await flush();
    t.send({ type: 'nginx.push', tables: tables('b2'), trigger: 'EndpointSlice default/app-1 changed' });
    await flush();
    expect(t.pushes.map((p) => p.input.tables.backends.version)).toEqual(['b2']);
    t.pushes[0]!.done.resolve();
    await flush();
    // A config that names a new Service is being reloaded: the next endpoints wait for it, and go after it.
    t.send({ type: 'nginx.reload', config: 'conf-2', files: [], tables: tables('b3'), trigger: 'Ingress default/app' });
    await flush();
    expect(t.state()).toBe('alive.reloading');
    t.send({ type: 'nginx.push', tables: tables('b4'), trigger: 'EndpointSlice default/app-2 changed' });
    await flush();
    expect(t.pushes).toHaveLength(1);
    t.reloads[1]!.done.resolve();
    await flush();
    expect(t.pushes.map((p) => p.input.tables.backends.version)).toEqual(['b2', 'b4']);
    expect(t.actor.getSnapshot().context.applied?.config).toBe('conf-2');
  });

  it('pushes tables that changed alone, without a reload; a failed push is retried after a delay', async () => {
    const t = start();
    await flush();
    t.send({ type: 'nginx.reload', config: 'conf-1', files: [], tables: tables('b1') });
    t.reloads[0]!.done.resolve();
    await flush();
    expect(t.actor.getSnapshot().context.pushed).toEqual(tables('b1'));
    expect(t.pushes).toHaveLength(0);

    // The same nginx.conf with other endpoints: a push, no reload.
    t.send({ type: 'nginx.reload', config: 'conf-1', files: [], tables: tables('b2') });
    expect(t.state()).toBe('alive.pushing');
    expect(t.pushes[0]!.input).toEqual({ tables: tables('b2'), pushed: tables('b1') });
    t.pushes[0]!.done.reject(new Error('nginx answered 400: endpoint 1 of default_web_80'));
    await flush();
    expect(t.state()).toBe('alive.running');
    expect(t.actor.getSnapshot().context).toMatchObject({ pushesFailed: 1, pushFailuresInRow: 1 });
    expect(t.pushes).toHaveLength(1);
    t.clock.increment(250);
    expect(t.state()).toBe('alive.pushing');
    t.pushes[1]!.done.resolve();
    await flush();
    expect(t.actor.getSnapshot().context).toMatchObject({
      pushed: tables('b2'),
      pushesOk: 1,
      pushFailuresInRow: 0,
      reloadsOk: 1,
      lastPushError: null,
    });
    expect(t.reloads).toHaveLength(1);
  });

  it('keeps the latest tables sent during a push or a reload, and pushes them after', async () => {
    const t = start();
    await flush();
    t.send({ type: 'nginx.reload', config: 'conf-1', files: [], tables: tables('b1') });
    t.send({ type: 'nginx.reload', config: 'conf-1', files: [], tables: tables('b2') });
    t.reloads[0]!.done.resolve();
    await flush();
    // The reload pushed b1 (what it started with); b2 came meanwhile.
    expect(t.state()).toBe('alive.pushing');
    t.send({ type: 'nginx.reload', config: 'conf-1', files: [], tables: tables('b3') });
    t.pushes[0]!.done.resolve();
    await flush();
    expect(t.state()).toBe('alive.pushing');
    expect(t.pushes[1]!.input.tables).toEqual(tables('b3'));
    t.pushes[1]!.done.resolve();
    await flush();
    expect(t.state()).toBe('alive.running');
    expect(t.reloads).toHaveLength(1);
  });

  it('pushes the tables again to a restarted master, which starts without them', async () => {
    const t = start();
    await flush();
    t.send({ type: 'nginx.reload', config: 'conf-1', files: [], tables: tables('b1') });
    t.reloads[0]!.done.resolve();
    await flush();
    t.masters[0]!.send({ type: 'nginx.exited', code: null, signal: 'SIGKILL' });
    expect(t.actor.getSnapshot().context.pushed).toBeNull();
    t.drains[0]!.done.resolve();
    await flush();
    t.clock.increment(1_000);
    await flush();
    expect(t.state()).toBe('alive.pushing');
    expect(t.pushes[0]!.input).toEqual({ tables: tables('b1'), pushed: null, trigger: 'nginx restarted' });
    t.pushes[0]!.done.resolve();
    await flush();
    expect(t.actor.getSnapshot().context.pushed).toEqual(tables('b1'));
    expect(t.reloads).toHaveLength(1);
  });

  // issue 27: a failed push must end where the next change is pushed, and /healthz must not stay 500 for it.
  describe('issue 27: a failed push never wedges the pushes', () => {
    const healthOf = (t: ReturnType<typeof start>) =>
      checkHealth(observedActors({ nginx: t.actor.getSnapshot(), root: { value: 'running', status: 'active' } }), []);
    const refused = () =>
      Object.assign(new Error('POST /routes: nginx answered 400: route 1: too long'), { status: 400 });
    const running = async (t: ReturnType<typeof start>, backends = 'b1') => {
      await flush();
      t.send({ type: 'nginx.reload', config: 'conf-1', files: [], tables: tables(backends) });
      t.reloads[0]!.done.resolve();
      await flush();
    };

    it('a refused push, then a reload whose push took the latest tables: no failure left, the next change pushed at once', async () => {
      const t = start();
      await running(t);
      t.send({ type: 'nginx.reload', config: 'conf-1', files: [], tables: tables('b2') });
      t.pushes[0]!.done.reject(refused());
      await flush();
      // nginx refused b2 and holds b1: ready, with a warning.
      expect(healthOf(t)).toMatchObject({ ok: true, warnings: [{ summary: expect.stringContaining('push') }] });
      // The bad object goes with an nginx.conf change: the reload pushes b3 first, and nginx takes it.
      t.send({ type: 'nginx.reload', config: 'conf-2', files: [], tables: tables('b3') });
      t.reloads[1]!.done.resolve();
      await flush();
      expect(t.actor.getSnapshot().context).toMatchObject({
        pushed: tables('b3'),
        pushFailuresInRow: 0,
        lastPushError: null,
        failedTables: null,
      });
      expect(healthOf(t)).toEqual({ ok: true, problems: [], warnings: [] });
      // An EndpointSlice moved: pushed at once, not after a retry that never comes (main: stayed in running).
      t.send({ type: 'nginx.reload', config: 'conf-2', files: [], tables: tables('b4') });
      expect(t.state()).toBe('alive.pushing');
      expect(t.last(t.pushes).input).toEqual({ tables: tables('b4'), pushed: tables('b3') });
    });

    it('tables changed back to what nginx holds leave nothing to retry; the next change is pushed at once', async () => {
      const t = start();
      await running(t);
      t.send({ type: 'nginx.reload', config: 'conf-1', files: [], tables: tables('b2') });
      t.pushes[0]!.done.reject(refused());
      await flush();
      t.send({ type: 'nginx.reload', config: 'conf-1', files: [], tables: tables('b1') });
      expect(t.actor.getSnapshot().context).toMatchObject({ pushFailuresInRow: 0, lastPushError: null });
      await advance(t.clock, 20_000, 50);
      expect(t.pushes).toHaveLength(1);
      t.send({ type: 'nginx.reload', config: 'conf-1', files: [], tables: tables('b5') });
      expect(t.state()).toBe('alive.pushing');
    });

    it('newer tables are pushed at once; the failed ones are retried with a doubling delay until nginx takes them', async () => {
      const t = start();
      await running(t);
      t.send({ type: 'nginx.reload', config: 'conf-1', files: [], tables: tables('b2') });
      t.pushes[0]!.done.reject(new Error('POST /backends: no answer within 5000 ms'));
      await flush();
      expect(t.actor.getSnapshot().context.failedTables).toEqual(tables('b2'));
      t.send({ type: 'nginx.reload', config: 'conf-1', files: [], tables: tables('b3') });
      expect(t.state()).toBe('alive.pushing');
      t.pushes[1]!.done.reject(refused());
      await flush();
      // Second failure in a row: 500 ms, then 1 s; no further change is needed for the tables to converge.
      await advance(t.clock, 499);
      expect(t.state()).toBe('alive.running');
      await advance(t.clock, 1);
      expect(t.state()).toBe('alive.pushing');
      t.pushes[2]!.done.reject(refused());
      await advance(t.clock, 999);
      expect(t.pushes).toHaveLength(3);
      await advance(t.clock, 1);
      expect(t.pushes[3]!.input.tables).toEqual(tables('b3'));
      t.pushes[3]!.done.resolve();
      await flush();
      expect(t.actor.getSnapshot().context).toMatchObject({ pushed: tables('b3'), pushFailuresInRow: 0 });
      expect(healthOf(t)).toEqual({ ok: true, problems: [], warnings: [] });
    });

    it('tables that came while a push failed were never tried: pushed at once', async () => {
      const t = start();
      await running(t);
      t.send({ type: 'nginx.reload', config: 'conf-1', files: [], tables: tables('b2') });
      t.send({ type: 'nginx.reload', config: 'conf-1', files: [], tables: tables('b3') });
      t.pushes[0]!.done.reject(refused());
      await flush();
      expect(t.actor.getSnapshot().context.failedTables).toEqual(tables('b2'));
      expect(t.state()).toBe('alive.pushing');
      expect(t.pushes[1]!.input.tables).toEqual(tables('b3'));
    });

    it('a push that failed part-way: what nginx took is what the retry starts from', async () => {
      const t = start();
      await running(t);
      t.send({ type: 'nginx.reload', config: 'conf-1', files: [], tables: tables('b2', 'c2') });
      const held = tables('b2', 'unknown:c2');
      t.pushes[0]!.done.reject(Object.assign(new Error('POST /certificates: socket hang up'), { held }));
      await flush();
      expect(t.actor.getSnapshot().context.pushed).toEqual(held);
      await advance(t.clock, 250);
      expect(t.pushes[1]!.input).toEqual({ tables: tables('b2', 'c2'), pushed: held });
    });

    it('a master that died mid-push, after a failed push: the next master gets the tables as soon as it runs; 500 until then', async () => {
      const t = start();
      await running(t);
      t.send({ type: 'nginx.reload', config: 'conf-1', files: [], tables: tables('b2') });
      t.pushes[0]!.done.reject(refused());
      await advance(t.clock, 250);
      expect(t.state()).toBe('alive.pushing');
      t.masters[0]!.send({ type: 'nginx.exited', code: null, signal: 'SIGKILL' });
      t.drains[0]!.done.resolve();
      await advance(t.clock, 100);
      expect(t.state()).toBe('alive.pushing'); // at once, not after a retry delay
      expect(healthOf(t)).toMatchObject({
        ok: false,
        problems: [{ summary: 'nginx has no backend table yet; pushing it' }],
      });
      t.last(t.pushes).done.resolve();
      await flush();
      expect(t.actor.getSnapshot().context).toMatchObject({ pushed: tables('b2'), pushFailuresInRow: 0 });
      expect(healthOf(t).ok).toBe(true);
    });
  });

  it('pushes nothing when backends are rendered into nginx.conf (no tables)', async () => {
    const t = start();
    await flush();
    t.send({ type: 'nginx.reload', config: 'conf-1', files: [] });
    t.reloads[0]!.done.resolve();
    await flush();
    t.send({ type: 'nginx.reload', config: 'conf-1', files: [], tables: null });
    expect(t.state()).toBe('alive.running');
    expect(t.pushes).toHaveLength(0);
  });

  it('starts the master and runs once it reports its pid', async () => {
    const t = start({ autoStart: false });
    expect(t.state()).toBe('alive.starting');
    t.masters[0]!.send({ type: 'nginx.started', pid: 4242 });
    expect(t.state()).toBe('alive.running');
    expect(t.actor.getSnapshot().context.pid).toBe(4242);
    expect(t.masters[0]!.input).toEqual({ restarts: 0 });
  });

  it('reloads: ok, failed (old config kept), identical text skipped', async () => {
    const t = start();
    await flush();
    t.send({ type: 'nginx.reload', config: 'conf-1', files: [] });
    expect(t.state()).toBe('alive.reloading');
    t.reloads[0]!.done.resolve();
    await flush();
    expect(t.state()).toBe('alive.running');
    expect(t.actor.getSnapshot().context).toMatchObject({ applied: { config: 'conf-1' }, reloadsOk: 1 });

    t.send({ type: 'nginx.reload', config: 'conf-bad', files: [] });
    await flush();
    expect(t.state()).toBe('alive.running');
    expect(t.actor.getSnapshot().context).toMatchObject({
      applied: { config: 'conf-1' },
      reloadsFailed: 1,
      lastReloadError: 'nginx: [emerg] unknown directive "bad"',
    });

    t.send({ type: 'nginx.reload', config: 'conf-1', files: [] });
    expect(t.state()).toBe('alive.running');
    expect(t.reloads).toHaveLength(2);
    expect(t.actor.getSnapshot().context.reloadsSkipped).toBe(1);
  });

  it('a reverted value makes the refused config moot: no retry of it, no failure left (sent while running or queued)', async () => {
    const t = start();
    await flush();
    t.send({ type: 'nginx.reload', config: 'conf-1', files: [] });
    t.reloads[0]!.done.resolve();
    await flush();
    t.send({ type: 'nginx.reload', config: 'conf-bad', files: [] });
    await flush();
    expect(t.actor.getSnapshot().context).toMatchObject({ failed: { config: 'conf-bad' }, reloadsFailed: 1 });

    // The operator reverts: the text nginx serves comes again.
    t.send({ type: 'nginx.reload', config: 'conf-1', files: [] });
    expect(t.actor.getSnapshot().context).toMatchObject({ failed: null, lastReloadError: null, reloadsSkipped: 1 });
    await advance(t.clock, 120_000);
    expect(t.reloads.map((r) => r.config)).toEqual(['conf-1', 'conf-bad']);
    expect(t.state()).toBe('alive.running');

    // The same, with the revert queued behind a reload nginx refuses.
    t.send({ type: 'nginx.reload', config: 'conf-bad-2', files: [] });
    t.send({ type: 'nginx.reload', config: 'conf-1', files: [] });
    await flush();
    expect(t.reloads.map((r) => r.config)).toEqual(['conf-1', 'conf-bad', 'conf-bad-2']);
    expect(t.actor.getSnapshot().context).toMatchObject({ failed: null, lastReloadError: null, pending: null });
    await advance(t.clock, 120_000);
    expect(t.reloads).toHaveLength(3);
  });

  it('issue 28 §4: a revert to the served config, queued behind a refused reload, is a verdict too: applied, no failure left', async () => {
    const t = start();
    await flush();
    t.send({ type: 'nginx.reload', config: 'conf-1', files: [] });
    t.reloads[0]!.done.resolve();
    await flush();
    // A bad ConfigMap value, and its revert while nginx -t still judges the bad one.
    t.send({ type: 'nginx.reload', config: 'conf-bad-slow', files: [] });
    t.send({ type: 'nginx.reload', config: 'conf-1', files: [] });
    await flush();
    expect(t.verdicts).toEqual(['applied conf-1', 'refused conf-bad-slow', 'applied conf-1']);
    expect(t.actor.getSnapshot().context).toMatchObject({ lastReloadError: null, failed: null, pending: null });
    // The revert sent while running, as before: skipped, and said applied.
    t.send({ type: 'nginx.reload', config: 'conf-bad-2', files: [] });
    await flush();
    t.send({ type: 'nginx.reload', config: 'conf-1', files: [] });
    expect(t.verdicts.slice(3)).toEqual(['refused conf-bad-2', 'applied conf-1']);
    expect(t.actor.getSnapshot().context.lastReloadError).toBeNull();
  });

  it('queues configs sent during a reload and applies only the latest afterwards', async () => {
    const t = start();
    await flush();
    t.send({ type: 'nginx.reload', config: 'conf-1', files: [] });
    t.send({ type: 'nginx.reload', config: 'conf-2', files: [] });
    t.send({ type: 'nginx.reload', config: 'conf-3', files: [] });
    expect(t.actor.getSnapshot().context.pending?.config).toBe('conf-3');
    t.reloads[0]!.done.resolve();
    await flush();
    expect(t.state()).toBe('alive.reloading');
    expect(t.reloads.map((r) => r.config)).toEqual(['conf-1', 'conf-3']);
    t.reloads[1]!.done.resolve();
    await flush();

    // Queued text equal to what was just applied needs no reload.
    t.send({ type: 'nginx.reload', config: 'conf-4', files: [] });
    t.send({ type: 'nginx.reload', config: 'conf-4', files: [] });
    t.reloads[2]!.done.resolve();
    await flush();
    expect(t.state()).toBe('alive.running');
    expect(t.reloads).toHaveLength(3);
    expect(t.actor.getSnapshot().context).toMatchObject({ applied: { config: 'conf-4' }, pending: null, reloadsOk: 3 });
  });

  it('keeps a config sent while nginx is down for the next master', async () => {
    const t = start({ autoStart: false });
    t.send({ type: 'nginx.reload', config: 'early', files: [] });
    expect(t.state()).toBe('alive.starting');
    t.masters[0]!.send({ type: 'nginx.started', pid: 7 });
    expect(t.state()).toBe('alive.reloading');
    expect(t.reloads.map((r) => r.config)).toEqual(['early']);
  });

  it('recovers from a crash: died → draining → restarting (growing backoff) → starting → running', async () => {
    const t = start();
    await flush();
    const waits: number[] = [];
    for (let crash = 0; crash < 5; crash++) {
      const pid = t.actor.getSnapshot().context.pid;
      t.trail.length = 0;
      t.last(t.masters).send({ type: 'nginx.exited', code: null, signal: 'SIGKILL' });
      expect(t.trail.slice(0, 2)).toEqual(['died', 'draining']);
      expect(t.actor.getSnapshot().context.lastExit).toEqual({ pid, code: null, signal: 'SIGKILL', error: null });
      expect(t.last(t.drains).input).toEqual({ pid, drainTimeoutMs: 2_000 });
      expect(t.last(t.masters).stopped).toBe(true);

      t.last(t.drains).done.resolve();
      await flush();
      expect(t.state()).toBe('restarting');
      const since = t.clock.now();
      while (t.state() === 'restarting') await advance(t.clock, 10);
      waits.push(t.clock.now() - since);
      expect(t.trail.slice(-3)).toEqual(['restarting', 'alive.starting', 'alive.running']);
      expect(t.actor.getSnapshot().context.pid).not.toBe(pid);
    }
    expect(waits).toEqual([100, 200, 400, 800, 1_000]);
    expect(t.actor.getSnapshot().context).toMatchObject({ restarts: 5, attempts: 5 });
    expect(t.masters.map((m) => m.input.restarts)).toEqual([0, 1, 2, 3, 4, 5]);

    // A master that stays up resets the backoff.
    await advance(t.clock, 10_000, 100);
    expect(t.actor.getSnapshot().context.attempts).toBe(0);
    t.last(t.masters).send({ type: 'nginx.exited', code: 1, signal: null });
    t.last(t.drains).done.resolve();
    await flush();
    await advance(t.clock, 100);
    expect(t.state()).toBe('alive.running');
  });

  it('stops cleanly while running: quit, exit, stopped { clean: true }', async () => {
    const t = start();
    await flush();
    t.send({ type: 'nginx.stop' });
    expect(t.state()).toBe('alive.stopping.quitting');
    await flush();
    expect(t.actor.getSnapshot().status).toBe('done');
    expect(t.actor.getSnapshot().output).toEqual({ clean: true });
    expect(t.masters[0]!.received).toEqual(['nginx.quit']);
    expect(t.actor.getSnapshot().context.lastExit).toMatchObject({ code: 0, signal: null });
  });

  it('kills a master that does not quit in time: stopped { clean: false }', async () => {
    const t = start({ quit: 'ignoresQuit' });
    await flush();
    t.send({ type: 'nginx.stop' });
    await advance(t.clock, 4_999, 100);
    expect(t.state()).toBe('alive.stopping.quitting');
    await advance(t.clock, 100);
    expect(t.masters[0]!.received).toEqual(['nginx.quit', 'nginx.kill']);
    expect(t.actor.getSnapshot().output).toEqual({ clean: false });
    expect(t.actor.getSnapshot().context.lastExit).toMatchObject({ signal: 'SIGKILL' });
  });

  it('gives up on a master that does not even report SIGKILL', async () => {
    const t = start({ quit: 'ignoresAll' });
    await flush();
    t.send({ type: 'nginx.stop' });
    await advance(t.clock, 5_000, 100);
    expect(t.state()).toBe('alive.stopping.killing');
    await advance(t.clock, 5_000, 100);
    expect(t.actor.getSnapshot().output).toEqual({ clean: false });
    expect(t.masters[0]!.stopped).toBe(true);
  });

  it('stops while draining: the drain is cut short (its cleanup kills the orphans), not clean', async () => {
    const t = start();
    await flush();
    t.masters[0]!.send({ type: 'nginx.exited', code: null, signal: 'SIGKILL' });
    expect(t.state()).toBe('draining');
    t.send({ type: 'nginx.stop' });
    expect(t.actor.getSnapshot().status).toBe('done');
    expect(t.actor.getSnapshot().output).toEqual({ clean: false });
    expect(t.drains[0]!.aborted).toBe(true);
    expect(t.masters).toHaveLength(1);
  });

  it('stops while restarting: nothing runs, no new master, clean', async () => {
    const t = start();
    await flush();
    t.masters[0]!.send({ type: 'nginx.exited', code: 1, signal: null });
    t.drains[0]!.done.resolve();
    await flush();
    expect(t.state()).toBe('restarting');
    t.send({ type: 'nginx.stop' });
    await advance(t.clock, 5_000, 100);
    expect(t.actor.getSnapshot().output).toEqual({ clean: true });
    expect(t.masters).toHaveLength(1);
  });

  it('re-applies a config whose reload a crash cut short', async () => {
    const t = start();
    await flush();
    t.send({ type: 'nginx.reload', config: 'conf-1', files: [] });
    t.masters[0]!.send({ type: 'nginx.exited', code: null, signal: 'SIGSEGV' });
    expect(t.reloads[0]!.aborted).toBe(true);
    expect(t.actor.getSnapshot().context).toMatchObject({ pending: { config: 'conf-1' }, applied: null });
    t.drains[0]!.done.reject(new Error('port 80 still open'));
    await flush();
    expect(t.actor.getSnapshot().context.lastDrainError).toBe('port 80 still open');
    await advance(t.clock, 100);
    await flush();
    expect(t.state()).toBe('alive.reloading');
    expect(t.reloads.map((r) => r.config)).toEqual(['conf-1', 'conf-1']);
    t.reloads[1]!.done.resolve();
    await flush();
    expect(t.actor.getSnapshot().context).toMatchObject({ applied: { config: 'conf-1' }, reloadsOk: 1 });
  });

  it('treats a master that cannot be spawned as a crash', async () => {
    const clock = new SimulatedClock();
    const broken = fromCallback<NginxMasterCommand, MasterInput>(() => {
      throw new Error('spawn nginx ENOENT');
    });
    const drain = fromPromise<void, DrainInput>(async () => {});
    const actor = createActor(nginxProcessMachine.provide({ actors: { master: broken, drain } }), {
      clock,
      input: INPUT,
    }).start();
    await flush();
    expect(actor.getSnapshot().value).toBe('restarting');
    expect(actor.getSnapshot().context.lastExit).toEqual({
      pid: null,
      code: null,
      signal: null,
      error: 'spawn nginx ENOENT',
    });
  });

  it('transitions purely: a crash passes through died to draining in one step', () => {
    const [s0] = initialTransition(nginxProcessMachine, INPUT);
    expect(s0.value).toEqual({ alive: 'starting' });
    const [s1] = transition(nginxProcessMachine, s0, { type: 'nginx.started', pid: 9 });
    const [same, noActions] = transition(nginxProcessMachine, s1, { type: 'nginx.reload', config: '', files: [] });
    expect(same.value).toEqual({ alive: 'reloading' }); // '' differs from "nothing applied yet"
    expect(noActions.some((a) => a.type === 'xstate.spawnChild')).toBe(true);

    const steps = getMicrosteps(nginxProcessMachine, s1, { type: 'nginx.exited', code: null, signal: 'SIGKILL' });
    expect(steps.map(([s]) => s.value)).toEqual(['died', 'draining']);
    const [draining] = transition(nginxProcessMachine, s1, { type: 'nginx.exited', code: null, signal: 'SIGKILL' });
    // Drain finished (the event the drain actor's completion sends).
    const drained = { type: 'xstate.done.actor.drain', output: undefined } as EventObject as NginxProcessEvent;
    const [restarting, actions] = transition(nginxProcessMachine, draining, drained);
    expect(restarting.value).toBe('restarting');
    const backoff = actions.find((a) => a.type === 'xstate.raise')?.params as { delay: number };
    expect(backoff.delay).toBe(100);
    const [stopped] = transition(nginxProcessMachine, restarting, { type: 'nginx.stop' });
    expect(stopped.status).toBe('done');
    expect(stopped.output).toEqual({ clean: true });
  });
});

describe('the record of applies (recent), for the status page', () => {
  const recent = (t: ReturnType<typeof start>) => t.actor.getSnapshot().context.recent;

  it('records each reload with its trigger and verdict, newest last', async () => {
    const t = start();
    await flush();
    t.send({ type: 'nginx.reload', config: 'conf-1', files: [], trigger: 'start' });
    await advance(t.clock, 250);
    t.reloads[0]!.done.resolve();
    await advance(t.clock, 50);
    t.send({ type: 'nginx.reload', config: 'bad-2', files: [], trigger: 'Ingress default/app changed' });
    await flush();
    // When each started and how long it took come from the effect (timed on the simulated clock here).
    expect(recent(t)).toEqual([
      { kind: 'reload', trigger: 'start', at: EPOCH, durationMs: 250, ok: true },
      {
        kind: 'reload',
        trigger: 'Ingress default/app changed',
        at: EPOCH + 300,
        durationMs: 0,
        ok: false,
        error: 'nginx: [emerg] unknown directive "bad"',
      },
    ]);
  });

  it('records the timing a push effect measured', async () => {
    const t = start();
    await flush();
    t.send({ type: 'nginx.reload', config: 'conf-1', files: [], tables: tables('b1'), trigger: 'start' });
    t.reloads[0]!.done.resolve();
    await advance(t.clock, 1_000);
    t.send({ type: 'nginx.push', tables: tables('b2'), trigger: 'EndpointSlice shop/web-x7k2p changed' });
    await advance(t.clock, 40);
    t.pushes[0]!.done.resolve();
    await flush();
    expect(recent(t).at(-1)).toEqual({
      kind: 'push',
      trigger: 'EndpointSlice shop/web-x7k2p changed',
      at: EPOCH + 1_000,
      durationMs: 40,
      ok: true,
    });
  });

  it('records a push with the trigger of the tables it sent; a skipped reload is no record', async () => {
    const t = start();
    await flush();
    t.send({ type: 'nginx.reload', config: 'conf-1', files: [], tables: tables('b1'), trigger: 'start' });
    t.reloads[0]!.done.resolve();
    await flush();
    t.send({
      type: 'nginx.reload',
      config: 'conf-1',
      files: [],
      tables: tables('b2'),
      trigger: 'EndpointSlice shop/web-x7k2p changed',
    });
    await flush();
    expect(t.pushes[0]!.input.trigger).toBe('EndpointSlice shop/web-x7k2p changed');
    t.pushes[0]!.done.resolve();
    await flush();
    expect(recent(t).map(({ kind, trigger, ok }) => [kind, trigger, ok])).toEqual([
      ['reload', 'start', true],
      ['push', 'EndpointSlice shop/web-x7k2p changed', true],
    ]);
  });

  it('gives a config that replaced a queued one both causes', async () => {
    const t = start();
    await flush();
    t.send({ type: 'nginx.reload', config: 'conf-1', files: [], trigger: 'start' });
    t.send({ type: 'nginx.reload', config: 'conf-2', files: [], trigger: 'template' });
    t.send({ type: 'nginx.reload', config: 'conf-3', files: [], trigger: 'ConfigMap ingress/config changed' });
    t.reloads[0]!.done.resolve();
    await flush();
    t.last(t.reloads).done.resolve();
    await flush();
    expect(recent(t).map((r) => r.trigger)).toEqual(['start', 'template; ConfigMap ingress/config changed']);
  });

  it(`keeps the last ${RECENT_APPLIES}`, async () => {
    const t = start();
    await flush();
    for (let i = 1; i <= RECENT_APPLIES + 5; i++) {
      t.send({ type: 'nginx.reload', config: `conf-${i}`, files: [], trigger: `change ${i}` });
      await flush();
      t.last(t.reloads).done.resolve();
      await flush();
    }
    expect(recent(t)).toHaveLength(RECENT_APPLIES);
    expect(recent(t)[0]!.trigger).toBe('change 6');
    expect(recent(t)[RECENT_APPLIES - 1]!.trigger).toBe(`change ${RECENT_APPLIES + 5}`);
  });
});

describe('a listen port taken while nginx was down', () => {
  const portTaken = 'nginx cannot listen on 127.0.0.1:80: port 80 (--http-port) is in use by another process';

  it(`restarts ${FATAL_RESTARTS} times, then gives up with the reason (exit 1), not forever`, async () => {
    const t = start();
    await flush();
    expect(t.state()).toBe('alive.running');
    // The master served, then died; another process has its port now, so every new master fails to bind.
    t.masters[0]!.send({ type: 'nginx.exited', code: null, signal: 'SIGKILL' });
    for (let restart = 1; restart <= FATAL_RESTARTS; restart++) {
      t.last(t.drains).done.resolve();
      await flush();
      t.clock.increment(2_000);
      await flush();
      expect(t.masters).toHaveLength(restart + 1);
      t.last(t.masters).send({ type: 'nginx.exited', code: 1, signal: null, fatal: portTaken });
      await flush();
    }
    expect(t.state()).toBe('failed');
    expect(t.actor.getSnapshot().output).toEqual({ clean: true, error: portTaken });
  });
});
