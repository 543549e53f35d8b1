/**
 * The status statechart on its own: effects are test doubles, time is a SimulatedClock. It
 * checks the election (acquire, wait for the holder's expiry, renew, step down at the renew
 * deadline or when the Lease is taken), the leader's publishing (coalesced, retried, periodic,
 * off without --update-status), and the stop (clear only when nobody takes over, then release).
 */
import { describe, expect, it } from 'vitest';
import { SimulatedClock, createActor, fromPromise, initialTransition, transition } from 'xstate';
import type { SyncDoneEvent } from '../../machines/events.js';
import {
  statusMachine,
  type LeaseResult,
  type PublishGatewayStatusInput,
  type PublishStatusInput,
  type RecordEventsInput,
  type ShutdownCheck,
  type StatusInput,
} from '../../machines/status.machine.js';
import type { NginxModel, Problem } from '../../src/model/nginx-model.js';
import { advance, flush, stateName } from '../machines/harness.js';

const INPUT: StatusInput = {
  leaseDurationMs: 3_000,
  renewDeadlineMs: 2_000,
  retryPeriodMs: 400,
  updateStatus: true,
  updateStatusOnShutdown: true,
  resyncPeriodMs: 60_000,
  stopTimeoutMs: 5_000,
};

/** syncDone is what the sync queue sends after a sync; the status machine never looks at the model. */
const syncDone = (served: string[], problems: Problem[] = []): SyncDoneEvent => ({
  type: 'sync.done',
  model: {} as NginxModel,
  problems,
  served,
});
const CHANGED = syncDone(['default/web']);

const LEADER: LeaseResult = { leader: true, holder: 'me', expiresInMs: null };
const FOLLOWER = (expiresInMs: number | null, holder = 'other'): LeaseResult => ({
  leader: false,
  holder,
  expiresInMs,
});

interface Script {
  /** what each acquire/renew answers, in order; the last one repeats; an Error rejects */
  lease?: Array<LeaseResult | Error>;
  peers?: ShutdownCheck;
  /** what releaseLease answers: whether it gave up a Lease this replica held */
  released?: boolean;
  publish?: () => Promise<void>;
  publishGateway?: () => Promise<void>;
  input?: Partial<StatusInput>;
}

function start(script: Script = {}) {
  const clock = new SimulatedClock();
  const calls: string[] = [];
  const published: PublishStatusInput[] = [];
  const recorded: RecordEventsInput[] = [];
  const clearedWith: PublishStatusInput[] = [];
  const gateway: PublishGatewayStatusInput[] = [];
  const answers = [...(script.lease ?? [LEADER])];
  const lease = async (kind: string) => {
    calls.push(`${kind}@${clock.now()}`);
    const answer = answers.length > 1 ? answers.shift()! : answers[0]!;
    if (answer instanceof Error) throw answer;
    return answer;
  };
  const machine = statusMachine.provide({
    actors: {
      acquireLease: fromPromise<LeaseResult, void>(() => lease('acquire')),
      renewLease: fromPromise<LeaseResult, void>(() => lease('renew')),
      releaseLease: fromPromise<boolean, void>(async () => (calls.push('release'), script.released ?? true)),
      publishStatus: fromPromise<void, PublishStatusInput>(async ({ input }) => {
        calls.push(`publish@${clock.now()}`);
        published.push(input);
        await script.publish?.();
      }),
      recordEvents: fromPromise<void, RecordEventsInput>(
        async ({ input }) => void (calls.push('events'), recorded.push(input)),
      ),
      publishGatewayStatus: fromPromise<void, PublishGatewayStatusInput>(async ({ input }) => {
        calls.push(`gateway@${clock.now()}`);
        gateway.push(input);
        await script.publishGateway?.();
      }),
      checkPeers: fromPromise<ShutdownCheck, void>(
        async () => (calls.push('checkPeers'), script.peers ?? { othersWillTakeOver: false, reason: 'alone' }),
      ),
      clearStatus: fromPromise<void, PublishStatusInput>(
        async ({ input }) => void (calls.push('clear'), clearedWith.push(input)),
      ),
    },
  });
  const actor = createActor(machine, { clock, input: { ...INPUT, ...script.input } }).start();
  const state = () => stateName(actor.getSnapshot().value);
  const of = (prefix: string) => calls.filter((c) => c.startsWith(prefix));
  return { clock, actor, calls, state, of, published, recorded, clearedWith, gateway };
}

describe('statusMachine', () => {
  it('becomes leader when the Lease is free, renews every retry period, and publishes once', async () => {
    const t = start();
    await flush();
    expect(t.state()).toMatch(/^leader\./);
    expect(t.of('publish')).toEqual(['publish@0']);
    expect(t.of('events')).toHaveLength(1);
    await advance(t.clock, 2_000, 100);
    expect(t.of('renew')).toEqual(['renew@400', 'renew@800', 'renew@1200', 'renew@1600', 'renew@2000']);
    expect(t.actor.getSnapshot().context).toMatchObject({ elected: 1, renewals: 5 });
  });

  it('as follower, tries again when the holder’s Lease runs out, if sooner than the retry period', async () => {
    const t = start({ lease: [FOLLOWER(150), FOLLOWER(1_000), LEADER] });
    await flush();
    expect(t.state()).toBe('follower.waiting');
    await advance(t.clock, 600, 10);
    // 150 ms (the expiry) then 400 ms (the retry period caps the 1 s expiry).
    expect(t.of('acquire')).toEqual(['acquire@0', 'acquire@150', 'acquire@550']);
    expect(t.state()).toMatch(/^leader\./);
  });

  it('keeps leading through failed renewals until the renew deadline, then steps down', async () => {
    const t = start({ lease: [LEADER, new Error('connection refused')] });
    await flush();
    await advance(t.clock, 1_900, 100);
    expect(t.state()).toMatch(/^leader\./);
    expect(t.actor.getSnapshot().context.lastError).toBe('connection refused');
    await advance(t.clock, 100, 10);
    expect(t.state()).toMatch(/^follower\./);
  });

  it('a successful renewal restarts the renew deadline', async () => {
    // Every other renew fails: the deadline (2 s) is never reached.
    const t = start({
      lease: [LEADER, ...Array.from({ length: 20 }, (_, i) => (i % 2 ? LEADER : new Error('timeout')))],
    });
    await flush();
    await advance(t.clock, 6_000, 100);
    expect(t.state()).toMatch(/^leader\./);
  });

  it('steps down at once when a renewal finds the Lease taken (409: lost the race)', async () => {
    const t = start({ lease: [LEADER, FOLLOWER(3_000, 'other')] });
    await flush();
    await advance(t.clock, 400, 100);
    expect(t.state()).toBe('follower.waiting');
    expect(t.actor.getSnapshot().context.holder).toBe('other');
  });

  it('coalesces changes during a publish into one more publish, and resyncs periodically', async () => {
    let release!: () => void;
    let slow = true;
    const t = start({ publish: () => (slow ? new Promise<void>((r) => (release = r)) : Promise.resolve()) });
    await flush();
    for (let i = 0; i < 5; i++) t.actor.send(CHANGED);
    slow = false;
    release();
    await flush();
    await flush();
    expect(t.of('publish')).toHaveLength(2);
    t.actor.send(CHANGED);
    await flush();
    expect(t.of('publish')).toHaveLength(3);
    await advance(t.clock, 60_000, 1_000);
    expect(t.of('publish')).toHaveLength(4);
  });

  it('publishes status and Events from what sync.done sent it, the latest one, kept while following', async () => {
    const problem: Problem = {
      kind: 'Ingress',
      namespace: 'default',
      name: 'bad',
      field: 'spec.rules[0].host',
      message: 'not a host',
    };
    const t = start({ lease: [FOLLOWER(150), LEADER] });
    await flush();
    expect(t.state()).toBe('follower.waiting');
    // Sent while following: kept, and published as soon as this replica leads.
    t.actor.send(syncDone(['default/old']));
    t.actor.send(syncDone(['default/a', 'default/b'], [problem]));
    await advance(t.clock, 150, 10);
    expect(t.state()).toMatch(/^leader\./);
    expect(t.published).toEqual([{ served: ['default/a', 'default/b'] }]);
    expect(t.recorded).toEqual([{ problems: [problem] }]);
    t.actor.send(syncDone(['default/a']));
    await flush();
    expect(t.published.at(-1)).toEqual({ served: ['default/a'] });
    expect(t.recorded.at(-1)).toEqual({ problems: [] });
    t.actor.send({ type: 'status.stop' });
    await flush();
    expect(t.clearedWith).toEqual([{ served: ['default/a'] }]);
  });

  it('before any sync.done, the publishes are told there is nothing yet (null), not an empty cluster', async () => {
    const t = start();
    await flush();
    expect(t.published).toEqual([{ served: null }]);
    expect(t.recorded).toEqual([{ problems: null }]);
  });

  it('retries a failed publish after the retry period', async () => {
    let fail = true;
    const t = start({
      publish: async () => {
        if (fail) throw new Error('422');
      },
    });
    await flush();
    expect(stateName(t.actor.getSnapshot().value)).toContain('status.failed');
    fail = false;
    await advance(t.clock, 400, 100);
    expect(t.of('publish')).toHaveLength(2);
    expect(t.actor.getSnapshot().context.publishFailures).toBe(1);
  });

  it('never publishes the status with --update-status=false, but still records Events', async () => {
    const t = start({ input: { updateStatus: false } });
    await flush();
    t.actor.send(CHANGED);
    await flush();
    expect(t.of('publish')).toEqual([]);
    expect(t.of('events')).toHaveLength(2);
    t.actor.send({ type: 'status.stop' });
    await flush();
    expect(t.calls.slice(-1)).toEqual(['release']);
    expect(t.actor.getSnapshot().output).toEqual({ wasLeader: true, cleared: false, released: true });
  });

  it('on stop, the leader clears the status when no other replica will take over, then releases', async () => {
    const t = start();
    await flush();
    t.actor.send({ type: 'status.stop' });
    await flush();
    expect(t.calls.slice(-3)).toEqual(['checkPeers', 'clear', 'release']);
    expect(t.actor.getSnapshot().output).toEqual({ wasLeader: true, cleared: true, released: true });
  });

  it('on stop, the leader leaves the status to the next leader when another replica runs', async () => {
    const t = start({ peers: { othersWillTakeOver: true, reason: '1 other' } });
    await flush();
    t.actor.send({ type: 'status.stop' });
    await flush();
    expect(t.calls.slice(-2)).toEqual(['checkPeers', 'release']);
    expect(t.actor.getSnapshot().output).toEqual({ wasLeader: true, cleared: false, released: true });
  });

  it('a follower stopped while its acquire is in flight releases, in case that acquire won', async () => {
    let answer!: (r: LeaseResult) => void;
    const calls: string[] = [];
    const slow = statusMachine.provide({
      actors: {
        acquireLease: fromPromise<LeaseResult, void>(
          () => new Promise((resolve) => (calls.push('acquire'), (answer = resolve))),
        ),
        releaseLease: fromPromise<boolean, void>(async () => (calls.push('release'), true)),
      },
    });
    const actor = createActor(slow, { clock: new SimulatedClock(), input: INPUT }).start();
    actor.send({ type: 'status.stop' });
    await flush();
    answer(LEADER);
    expect(calls).toEqual(['acquire', 'release']);
    expect(actor.getSnapshot().status).toBe('done');
    expect(actor.getSnapshot().output).toEqual({ wasLeader: false, cleared: false, released: true });
  });

  it('a waiting follower stops at once, touching nothing', async () => {
    const t = start({ lease: [FOLLOWER(3_000)] });
    await flush();
    t.actor.send({ type: 'status.stop' });
    expect(t.actor.getSnapshot().status).toBe('done');
    expect(t.calls).toEqual(['acquire@0']);
    expect(t.actor.getSnapshot().output).toEqual({ wasLeader: false, cleared: false, released: false });
  });

  it('bounds the stop by its timeout', async () => {
    const t = start();
    const hang = statusMachine.provide({
      actors: {
        acquireLease: fromPromise<LeaseResult, void>(async () => LEADER),
        renewLease: fromPromise<LeaseResult, void>(async () => LEADER),
        publishStatus: fromPromise<void, PublishStatusInput>(async () => {}),
        recordEvents: fromPromise<void, RecordEventsInput>(async () => {}),
        checkPeers: fromPromise<ShutdownCheck, void>(() => new Promise(() => {})),
      },
    });
    const actor = createActor(hang, { clock: t.clock, input: INPUT }).start();
    await flush();
    actor.send({ type: 'status.stop' });
    await advance(t.clock, 5_000, 500);
    expect(actor.getSnapshot().status).toBe('done');
    expect(actor.getSnapshot().context.lastError).toBe('stopping timed out after 5000 ms');
  });

  it('transitions purely: a campaigning follower’s stop goes to releasing', () => {
    const [follower] = initialTransition(statusMachine, INPUT);
    expect(stateName(follower.value)).toBe('follower.campaigning');
    const [stopping] = transition(statusMachine, follower, { type: 'status.stop' });
    expect(stateName(stopping.value)).toBe('stopping.releasing');
  });

  it('serialises with the states the design names (follower ↔ leader)', () => {
    const json = JSON.parse(JSON.stringify(statusMachine.toJSON())) as {
      id: string;
      states: Record<string, { states?: Record<string, unknown> }>;
    };
    expect(json.id).toBe('status');
    expect(Object.keys(json.states)).toEqual(['follower', 'leader', 'stopping', 'stopped']);
    expect(Object.keys(json.states.leader!.states!)).toEqual(['lease', 'status', 'events', 'gateway']);
  });

  it('the leader writes the Gateway API status of each sync.done (coalesced, retried, periodic); a follower never', async () => {
    const status = (name: string) => ({
      gatewayClasses: [{ name, conditions: [] }],
      gateways: [],
      httpRoutes: [],
    });
    const follower = start({ lease: [FOLLOWER(null)] });
    await flush();
    follower.actor.send({ ...syncDone([]), gatewayStatus: status('a') });
    await advance(follower.clock, 1_000, 100);
    expect(follower.of('gateway')).toEqual([]);

    let fail = true;
    const t = start({
      publishGateway: async () => {
        if (fail) throw new Error('500');
      },
    });
    await flush();
    expect(t.gateway).toEqual([{ status: null }]);
    expect(stateName(t.actor.getSnapshot().value)).toContain('gateway.failed');
    t.actor.send({ ...syncDone([]), gatewayStatus: status('b') });
    fail = false;
    await advance(t.clock, 400, 100);
    expect(t.gateway.at(-1)).toEqual({ status: status('b') });
    expect(stateName(t.actor.getSnapshot().value)).toContain('gateway.idle');
    // --update-status=false is about Ingress addresses: the Gateway API status is written all the same.
    const off = start({ input: { updateStatus: false } });
    await flush();
    off.actor.send({ ...syncDone([]), gatewayStatus: status('c') });
    await flush();
    expect(off.gateway.at(-1)).toEqual({ status: status('c') });
    await advance(off.clock, 60_000, 1_000);
    expect(off.of('gateway').length).toBeGreaterThanOrEqual(3);
  });
});
