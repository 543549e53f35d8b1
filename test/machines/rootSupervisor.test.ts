import { describe, expect, it } from 'vitest';
import {
  SimulatedClock,
  createActor,
  fromCallback,
  fromPromise,
  initialTransition,
  transition,
  type AnyActorLogic,
  type AnyActorRef,
  type EventObject,
} from 'xstate';
import type { NginxMasterCommand } from '../../machines/events.js';
import type { MasterInput } from '../../machines/nginxEffects.js';
import { nginxProcessMachine } from '../../machines/nginxProcess.machine.js';
import {
  childIds,
  rootSupervisorMachine,
  type RootSupervisorInput,
  type WatcherInput,
} from '../../machines/rootSupervisor.machine.js';
import {
  statusMachine,
  type LeaseResult,
  type PublishGatewayStatusInput,
  type PublishStatusInput,
  type RecordEventsInput,
  type ShutdownCheck,
  type StatusInput,
} from '../../machines/status.machine.js';
import type { RunSyncInput, RunSyncOutput } from '../../machines/syncEffects.js';
import { syncQueueMachine } from '../../machines/syncQueue.machine.js';
import { templateMachine, type LoadTemplateInput } from '../../machines/template.machine.js';
import { advance, flush } from './harness.js';

const INPUT: RootSupervisorInput = {
  watchers: ['Ingress', 'Service'],
  restartIntensity: 3,
  restartPeriodMs: 5_000,
  shutdownTimeoutMs: 10_000,
  syncQueue: { debounceMs: 100, maxHoldoffMs: 1_000, minSyncIntervalMs: 0 },
  nginx: {
    shutdownTimeoutMs: 2_000,
    drainTimeoutMs: 1_000,
    backoffBaseMs: 100,
    backoffMaxMs: 1_000,
    stableAfterMs: 10_000,
  },
};

interface Options {
  readonly input?: Partial<RootSupervisorInput>;
  readonly template?: 'good' | 'bad';
  /** what the nginx master double does on `nginx.quit` */
  readonly quit?: 'exits' | 'ignores';
  /** the optional children, as test doubles */
  readonly status?: typeof statusMachine;
  readonly http?: AnyActorLogic;
}

/** start runs the supervisor over the real child machines, each with test-double effects. */
function start(options: Options = {}) {
  const clock = new SimulatedClock();
  const log: string[] = [];
  const watchers: Array<{ kind: string; stopped: boolean }> = [];
  const masters: Array<{ stopped: boolean }> = [];
  const syncs: number[] = [];
  const crash = { syncQueue: false, nginx: false };

  const watcher = fromCallback<EventObject, WatcherInput>(({ input, receive }) => {
    const w = { kind: input.kind, stopped: false };
    watchers.push(w);
    receive((event) => {
      if (event.type === 'test.crash') throw new Error(`${input.kind} watch failed`);
    });
    return () => {
      w.stopped = true;
      log.push(`stopped watcher.${input.kind}`);
    };
  });
  const template = templateMachine.provide({
    actors: {
      loadTemplate: fromPromise<unknown, LoadTemplateInput>(async () => {
        if (options.template === 'bad') throw new Error('nginx.conf.hbs:1: Parse error');
        return 'compiled';
      }),
      watchTemplate: fromCallback<EventObject, void>(() => {}),
    },
  });
  const syncQueue = syncQueueMachine.provide({
    actors: {
      runSync: fromPromise<RunSyncOutput, RunSyncInput>(
        async ({ input }) => (syncs.push(input.generation), { awaitingVerdict: false }),
      ),
    },
    guards: {
      // A guard that throws makes the machine fail, as a bug in it would.
      allSynced: ({ context }) => {
        if (crash.syncQueue) {
          crash.syncQueue = false; // once: the restarted instance is healthy
          throw new Error('sync queue bug');
        }
        return context.watchers.every((kind) => context.synced.includes(kind));
      },
    },
  });
  const master = fromCallback<NginxMasterCommand, MasterInput>(({ sendBack, receive }) => {
    const m = { stopped: false };
    masters.push(m);
    queueMicrotask(() => sendBack({ type: 'nginx.started', pid: 1000 + masters.length }));
    receive((command) => {
      log.push(command.type);
      const exits = command.type === 'nginx.kill' || (options.quit ?? 'exits') === 'exits';
      if (exits)
        queueMicrotask(() =>
          sendBack({ type: 'nginx.exited', code: command.type === 'nginx.kill' ? null : 0, signal: null }),
        );
    });
    // A machine whose own transition throws leaves its invocations running (xstate#5153): the supervisor stops them,
    // and the real master's cleanup kills nginx.
    return () => void (m.stopped = true);
  });
  const nginx = nginxProcessMachine.provide({
    actors: { master },
    guards: {
      isApplied: ({ context, event }) => {
        if (crash.nginx) {
          crash.nginx = false;
          throw new Error('nginx machine bug');
        }
        return event.type === 'nginx.reload' && event.config === context.applied?.config;
      },
    },
  });

  const extra = {
    ...(options.status ? { status: options.status } : {}),
    ...(options.http ? { http: options.http } : {}),
  };
  const actor = createActor(
    rootSupervisorMachine.provide({
      actors: { bootConfig: fromPromise<void, void>(async () => {}), watcher, template, syncQueue, nginx, ...extra },
    }),
    {
      clock,
      input: { ...INPUT, ...options.input },
      inspect: (ev) => {
        if (ev.type === '@xstate.event' && ['sync.stop', 'nginx.stop', 'status.stop'].includes(ev.event.type))
          log.push(ev.event.type);
      },
    },
  ).start();
  const child = (systemId: string): AnyActorRef => {
    const ref = actor.system.get(systemId);
    if (!ref) throw new Error(`no actor ${systemId}`);
    return ref;
  };
  return { clock, actor, log, watchers, masters, syncs, crash, child };
}

describe('rootSupervisor', () => {
  it('boots its children in order, runs once the template is ready, and stops cleanly with exit 0', async () => {
    const t = start();
    expect(t.actor.getSnapshot().value).toBe('booting');
    // Boot's config check first; the children start once it passed.
    expect(Object.keys(t.actor.getSnapshot().children)).toEqual(['bootConfig']);
    await Promise.resolve();
    expect(Object.keys(t.actor.getSnapshot().children).filter((id) => id !== 'bootConfig')).toEqual([
      'watcher.Ingress',
      'watcher.Service',
      'template',
      'syncQueue',
      'nginx',
    ]);
    await flush();
    expect(t.actor.getSnapshot().value).toBe('running');

    // The children find each other by systemId, as the real watchers will.
    t.child('syncQueue').send({ type: 'k8s.synced', kind: 'Ingress' });
    t.child('syncQueue').send({ type: 'k8s.synced', kind: 'Service' });
    await advance(t.clock, 100);
    expect(t.syncs).toEqual([1]);

    t.actor.send({ type: 'stop' });
    expect(t.actor.getSnapshot().value).toBe('stopping');
    await flush();
    const snapshot = t.actor.getSnapshot();
    expect(snapshot.status).toBe('done');
    expect(snapshot.output).toEqual({ exitCode: 0, reason: null });
    // Inputs first, then nginx, which is awaited.
    expect(t.log).toEqual([
      'sync.stop',
      'stopped watcher.Service',
      'stopped watcher.Ingress',
      'nginx.stop',
      'nginx.quit',
    ]);
    expect(t.masters.every((m) => m.stopped)).toBe(true);
  });

  it('exits 1 when nginx had to be killed', async () => {
    const t = start({ quit: 'ignores' });
    await flush();
    t.actor.send({ type: 'stop' });
    await advance(t.clock, 2_000, 100);
    expect(t.log.slice(-2)).toEqual(['nginx.quit', 'nginx.kill']);
    expect(t.actor.getSnapshot().output).toEqual({ exitCode: 1, reason: 'nginx did not stop cleanly' });
  });

  it('restarts a crashing watcher (one_for_one) under the same systemId, in a sliding window', async () => {
    const t = start();
    await flush();
    const before = t.child('watcher.Service');
    before.send({ type: 'test.crash' });
    await flush();
    expect(t.actor.getSnapshot().value).toBe('running');
    expect(t.watchers.map((w) => w.kind)).toEqual(['Ingress', 'Service', 'Service']);
    expect(t.child('watcher.Service')).not.toBe(before);
    expect(t.actor.getSnapshot().context).toMatchObject({
      restarts: { 'watcher.Service': 1 },
      recentRestarts: 1,
      lastCrash: 'watcher.Service: Service watch failed',
    });
    await advance(t.clock, 5_000, 100);
    expect(t.actor.getSnapshot().context.recentRestarts).toBe(0);
  });

  it('stops everything with exit 1 past the restart intensity, but not when restarts are spread out', async () => {
    const spread = start({ input: { restartIntensity: 2 } });
    await flush();
    for (let round = 0; round < 3; round++) {
      spread.child('watcher.Ingress').send({ type: 'test.crash' });
      spread.child('watcher.Ingress').send({ type: 'test.crash' });
      await advance(spread.clock, 5_000, 100);
    }
    expect(spread.actor.getSnapshot().value).toBe('running');
    expect(spread.actor.getSnapshot().context.restarts).toEqual({ 'watcher.Ingress': 6 });

    const t = start({ input: { restartIntensity: 2 } });
    await flush();
    for (let i = 0; i < 3; i++) {
      t.child('watcher.Ingress').send({ type: 'test.crash' });
      await advance(t.clock, 1_000, 100);
    }
    const snapshot = t.actor.getSnapshot();
    expect(snapshot.output).toEqual({
      exitCode: 1,
      reason:
        'restart intensity exceeded: more than 2 restarts within 5000 ms (last: watcher.Ingress: Ingress watch failed)',
    });
    expect(t.log).toContain('nginx.quit'); // still an orderly stop
  });

  it('exits 1 when the template fails at boot', async () => {
    const t = start({ template: 'bad' });
    await flush();
    const snapshot = t.actor.getSnapshot();
    expect(snapshot.status).toBe('done');
    expect(snapshot.output).toEqual({ exitCode: 1, reason: 'template failed: nginx.conf.hbs:1: Parse error' });
  });

  it('exits 1 when stopping takes longer than the shutdown timeout, stopping what is left', async () => {
    const t = start({
      quit: 'ignores',
      input: { shutdownTimeoutMs: 3_000, nginx: { ...INPUT.nginx, shutdownTimeoutMs: 60_000 } },
    });
    await flush();
    t.actor.send({ type: 'stop' });
    await advance(t.clock, 2_900, 100);
    expect(t.actor.getSnapshot().value).toBe('stopping');
    await advance(t.clock, 100);
    expect(t.actor.getSnapshot().output).toEqual({ exitCode: 1, reason: 'shutdown timed out after 3000 ms' });
    expect(t.masters[0]!.stopped).toBe(true);
  });

  it('resyncs a restarted sync queue, and asks for a config for a restarted nginx', async () => {
    const t = start();
    await flush();
    t.crash.syncQueue = true;
    t.child('syncQueue').send({ type: 'k8s.synced', kind: 'Ingress' });
    await advance(t.clock, 100);
    // The new sync queue never saw `k8s.synced` from the watchers, yet it synced.
    expect(t.syncs).toEqual([1]);
    expect(t.actor.getSnapshot().context.restarts).toEqual({ syncQueue: 1 });

    t.crash.nginx = true;
    t.child('nginx').send({ type: 'nginx.reload', config: 'x' });
    await flush();
    expect(t.masters).toHaveLength(2);
    expect(t.masters[0]!.stopped).toBe(true); // the failed machine's master went with it (see the double)
    expect(t.actor.getSnapshot().context.restarts).toEqual({ syncQueue: 1, nginx: 1 });
    await advance(t.clock, 0);
    expect(t.syncs).toEqual([1, 2]);
  });

  it('does not wait for a failed nginx machine when it exceeds the budget', async () => {
    const t = start({ input: { restartIntensity: 0 } });
    await flush();
    t.crash.nginx = true;
    t.child('nginx').send({ type: 'nginx.reload', config: 'x' });
    await flush();
    expect(t.actor.getSnapshot().output).toEqual({
      exitCode: 1,
      reason: expect.stringMatching(
        /^restart intensity exceeded: more than 0 restarts within 5000 ms \(last: nginx: .*nginx machine bug\)$/s,
      ),
    });
    expect(t.masters[0]!.stopped).toBe(true);
  });

  it('transitions purely: start order on boot, and the stop order', () => {
    const [checking] = initialTransition(rootSupervisorMachine, INPUT);
    const [booting, spawned] = transition(rootSupervisorMachine, checking, {
      type: 'xstate.done.actor.bootConfig',
      output: undefined,
    });
    expect(booting.value).toBe('booting');
    expect(spawned.filter((a) => a.type === 'xstate.spawnChild').map((a) => (a.params as { id: string }).id)).toEqual(
      childIds(INPUT),
    );

    const [stopping, actions] = transition(rootSupervisorMachine, booting, { type: 'stop' });
    expect(stopping.value).toBe('stopping');
    const steps = actions
      .filter(
        (a) =>
          ['xstate.sendTo', 'xstate.stopChild'].includes(a.type) && (a.params as { id?: string }).id !== 'bootConfig',
      )
      .map((a) => {
        const p = a.params as { event?: EventObject; targetId?: string; id?: string };
        return a.type === 'xstate.sendTo' ? `${p.targetId} ← ${p.event?.type}` : `stop ${p.id}`;
      });
    expect(steps).toEqual([
      'syncQueue ← sync.stop',
      'stop watcher.Service',
      'stop watcher.Ingress',
      'nginx ← nginx.stop',
    ]);
  });

  describe('with the status and http children', () => {
    const STATUS: StatusInput = {
      leaseDurationMs: 3_000,
      renewDeadlineMs: 2_000,
      retryPeriodMs: 400,
      updateStatus: true,
      updateStatusOnShutdown: true,
      resyncPeriodMs: 60_000,
      stopTimeoutMs: 4_000,
    };
    const WITH: Partial<RootSupervisorInput> = { status: STATUS, http: true };

    /** a status machine whose release the test finishes by hand, and an http double that counts its runs */
    function doubles(options: { httpFails?: number } = {}) {
      const events: string[] = [];
      let finishRelease!: () => void;
      const released = new Promise<void>((r) => (finishRelease = r));
      const status = statusMachine.provide({
        actors: {
          acquireLease: fromPromise<LeaseResult, void>(async () => ({ leader: true, holder: 'me', expiresInMs: null })),
          renewLease: fromPromise<LeaseResult, void>(async () => ({ leader: true, holder: 'me', expiresInMs: null })),
          publishStatus: fromPromise<void, PublishStatusInput>(async () => void events.push('publish')),
          recordEvents: fromPromise<void, RecordEventsInput>(async () => {}),
          publishGatewayStatus: fromPromise<void, PublishGatewayStatusInput>(async () => {}),
          checkPeers: fromPromise<ShutdownCheck, void>(async () => ({ othersWillTakeOver: true, reason: 'test' })),
          releaseLease: fromPromise<boolean, void>(async () => (events.push('release'), await released, true)),
        },
      });
      let failures = options.httpFails ?? 0;
      const http = fromPromise<void, void>(({ signal }) => {
        events.push('http started');
        if (failures-- > 0) return Promise.reject(new Error('listen EACCES'));
        return new Promise<void>((resolve) =>
          signal.addEventListener('abort', () => (events.push('http stopped'), resolve())),
        );
      });
      return { status, http, events, finishRelease };
    }

    it('starts http first and status last, and on stop waits for the status to release its Lease', async () => {
      const d = doubles();
      const t = start({ input: WITH, status: d.status, http: d.http });
      await Promise.resolve();
      expect(Object.keys(t.actor.getSnapshot().children).filter((id) => id !== 'bootConfig')).toEqual([
        'http',
        'watcher.Ingress',
        'watcher.Service',
        'template',
        'syncQueue',
        'nginx',
        'status',
      ]);
      await flush();
      expect(t.actor.getSnapshot().value).toBe('running');
      expect(stateOf(t.child('status'))).toMatch(/^leader/);
      t.actor.send({ type: 'stop' });
      await flush();
      // nginx has stopped, but the status actor still releases: the supervisor waits.
      expect(t.log).toEqual([
        'sync.stop',
        'stopped watcher.Service',
        'stopped watcher.Ingress',
        'status.stop',
        'nginx.stop',
        'nginx.quit',
      ]);
      expect(d.events).toContain('release');
      expect(t.actor.getSnapshot().value).toBe('stopping');
      d.finishRelease();
      await flush();
      expect(t.actor.getSnapshot().output).toEqual({ exitCode: 0, reason: null });
      expect(d.events.at(-1)).toBe('http stopped'); // stopped last
    });

    it('restarts a failing http child one_for_one, counting it against the budget', async () => {
      const d = doubles({ httpFails: 1 });
      const t = start({ input: WITH, status: d.status, http: d.http });
      await flush();
      await flush();
      expect(d.events.filter((e) => e === 'http started')).toHaveLength(2);
      expect(t.actor.getSnapshot().value).toBe('running');
      expect(t.actor.getSnapshot().context.restarts).toEqual({ http: 1 });
    });

    it('does not wait for a status machine that crashed while stopping', async () => {
      const d = doubles();
      const crashing = d.status.provide({
        actors: {
          checkPeers: fromPromise<ShutdownCheck, void>(async () => {
            throw new Error('x');
          }),
        },
        guards: {
          clearOnShutdown: () => {
            throw new Error('status bug');
          },
        },
      });
      const t = start({ input: WITH, status: crashing, http: d.http });
      await flush();
      t.actor.send({ type: 'stop' });
      await flush();
      const snapshot = t.actor.getSnapshot();
      expect(snapshot.status).toBe('done');
      expect(snapshot.output).toMatchObject({
        exitCode: 1,
        reason: expect.stringMatching(/^status: .*status bug.*\(while stopping\)$/s),
      });
    });

    it('transitions purely: status.stop is sent between the watchers and nginx', () => {
      const input = { ...INPUT, ...WITH };
      const [checking] = initialTransition(rootSupervisorMachine, input);
      const [booting, spawned] = transition(rootSupervisorMachine, checking, {
        type: 'xstate.done.actor.bootConfig',
        output: undefined,
      });
      expect(spawned.filter((a) => a.type === 'xstate.spawnChild').map((a) => (a.params as { id: string }).id)).toEqual(
        childIds(input),
      );
      const [, actions] = transition(rootSupervisorMachine, booting, { type: 'stop' });
      const sends = actions
        .filter((a) => a.type === 'xstate.sendTo')
        .map((a) => (a.params as { targetId?: string }).targetId);
      expect(sends).toEqual(['syncQueue', 'status', 'nginx']);
    });
  });
});

function stateOf(ref: AnyActorRef): string {
  return JSON.stringify(ref.getSnapshot().value).replace(/[{}"]/g, '').split(':')[0] ?? '';
}
