import { createActor, fromCallback, SimulatedClock, type AnyActorRef, type EventObject } from 'xstate';
import { describe, expect, it } from 'vitest';
import {
  resourceWatcherMachine,
  type InformerInput,
  type WatchFailureReport,
} from '../../machines/resourceWatcher.machine.js';
import { advance, flush, stateName } from './harness.js';

/** A test double informer: the test drives it through the sendBack it captured. */
function harness() {
  const starts: AnyActorRef[] = [];
  let send: ((event: { type: string; [k: string]: unknown }) => void) | null = null;
  let stops = 0;
  const reported: string[] = [];
  const failures: WatchFailureReport[] = [];
  const machine = resourceWatcherMachine.provide({
    actors: {
      informer: fromCallback<EventObject, InformerInput>(({ sendBack, self }) => {
        starts.push(self);
        send = sendBack as typeof send;
        return () => void stops++;
      }),
    },
    actions: {
      reportSynced: (_, { kind }) => void reported.push(`synced ${kind}`),
      reportChanged: (_, { kind, key }) => void reported.push(`changed ${kind} ${key}`),
      reportFailed: (_, report) => void failures.push(report),
      reportRecovered: (_, { kind, staleSince }) => void reported.push(`recovered ${kind} stale since ${staleSince}`),
      reportUnserved: (_, { kind, recheckInMs }) => void reported.push(`unserved ${kind} recheck ${recheckInMs}`),
      reportServed: (_, { kind, unservedSince }) =>
        void reported.push(`served ${kind} unserved since ${unservedSince}`),
    },
  });
  const clock = new SimulatedClock();
  const actor = createActor(machine, {
    clock,
    input: { kind: 'Ingress', baseBackoffMs: 100, maxBackoffMs: 1000, unservedRecheckMs: 30_000 },
  }).start();
  return {
    actor,
    clock,
    reported,
    failures,
    starts,
    stops: () => stops,
    send: (e: { type: string; [k: string]: unknown }) => send!(e),
  };
}

describe('resourceWatcherMachine', () => {
  it('lists, then watches, reporting synced once and every change', async () => {
    const h = harness();
    expect(stateName(h.actor.getSnapshot().value)).toBe('running.listing');
    h.send({ type: 'watch.changed', key: 'default/a' });
    h.send({ type: 'watch.synced' });
    expect(stateName(h.actor.getSnapshot().value)).toBe('running.watching');
    h.send({ type: 'watch.changed', key: 'default/b' });
    expect(h.reported).toEqual(['changed Ingress default/a', 'synced Ingress', 'changed Ingress default/b']);
  });

  it(
    'backs off exponentially with jitter and a cap, ' + 'restarting the informer, and reports synced only once',
    async () => {
      const h = harness();
      h.send({ type: 'watch.synced' });
      const delays: number[] = [];
      for (const jitter of [1, 1, 1, 1, 1, 0]) {
        h.send({ type: 'watch.failed', error: 'connection refused', jitter, at: 1_000 });
        expect(h.actor.getSnapshot().value).toBe('backoff');
        let waited = 0;
        while (h.actor.getSnapshot().value === 'backoff') {
          await advance(h.clock, 10, 10);
          waited += 10;
        }
        delays.push(waited);
        expect(stateName(h.actor.getSnapshot().value)).toBe('running.listing');
      }
      // 100, 200, 400, 800, then capped at 1000; jitter 0 halves the capped step.
      expect(delays).toEqual([100, 200, 400, 800, 1000, 500]);
      expect(h.starts.length).toBe(7);
      expect(h.stops()).toBe(6);
      h.send({ type: 'watch.synced' });
      expect(h.actor.getSnapshot().context.failures).toBe(0);
      expect(h.reported.filter((r) => r.startsWith('synced'))).toEqual(['synced Ingress']);
    },
  );

  it(
    'finding 7: reports each failure with its retry delay, knows ' + 'since when it is stale, and reports the recovery',
    async () => {
      const h = harness();
      h.send({ type: 'watch.synced' });
      h.send({
        type: 'watch.failed',
        error: 'list Ingress: the API server did not answer within 300 ms',
        jitter: 1,
        at: 5_000,
      });
      expect(h.actor.getSnapshot().context.staleSince).toBe(5_000);
      await advance(h.clock, 100, 100);
      h.send({ type: 'watch.failed', error: 'again', jitter: 0, at: 9_000 });
      expect(h.actor.getSnapshot().context.staleSince).toBe(5_000); // since the first failure in a row
      expect(h.failures).toEqual([
        {
          kind: 'Ingress',
          error: 'list Ingress: the API server did not answer within 300 ms',
          failures: 1,
          retryInMs: 100,
          afterFirstSync: true,
          staleSince: 5_000,
        },
        { kind: 'Ingress', error: 'again', failures: 2, retryInMs: 100, afterFirstSync: true, staleSince: 5_000 },
      ]);
      await advance(h.clock, 100, 100);
      h.send({ type: 'watch.synced' });
      expect(h.actor.getSnapshot().context.staleSince).toBeNull();
      expect(h.reported).toEqual(['synced Ingress', 'recovered Ingress stale since 5000']);
    },
  );

  it('stops from any state and stops its informer', async () => {
    const h = harness();
    h.send({ type: 'watch.failed', error: 'boom', jitter: 0.5, at: 1_000 });
    h.actor.send({ type: 'watcher.stop' });
    await flush();
    expect(h.actor.getSnapshot().status).toBe('done');
    expect(h.actor.getSnapshot().value).toBe('stopped');
    const other = harness();
    other.actor.send({ type: 'watcher.stop' });
    expect(other.stops()).toBe(1);
  });

  it(
    'issue 15: reports every change until secrets.relevant, then only those of the named keys and namespaces, in ' +
      'any state',
    async () => {
      const h = harness();
      h.send({ type: 'watch.synced' });
      h.send({ type: 'watch.changed', key: 'default/any' });
      h.actor.send({ type: 'secrets.relevant', keys: ['default/read'], namespaces: ['held'] });
      for (const key of ['default/read', 'default/unread', 'held/any', 'heldnot/x'])
        h.send({ type: 'watch.changed', key });
      expect(h.reported).toEqual([
        'synced Ingress',
        'changed Ingress default/any',
        'changed Ingress default/read',
        'changed Ingress held/any',
      ]);
      expect(h.actor.getSnapshot().context.changes).toBe(3);
      // Kept through a restart of the informer: the set is the machine's, not the informer's.
      h.send({ type: 'watch.failed', error: 'boom', jitter: 0, at: 1_000 });
      h.actor.send({ type: 'secrets.relevant', keys: ['default/unread'], namespaces: [] });
      await advance(h.clock, 100);
      h.send({ type: 'watch.synced' });
      h.send({ type: 'watch.changed', key: 'default/read' });
      h.send({ type: 'watch.changed', key: 'default/unread' });
      expect(h.reported.slice(-1)).toEqual(['changed Ingress default/unread']);
    },
  );

  it('unserved (no CRD): synced once for the sync queue, said once, listed again every 30 s; served: watching', async () => {
    const h = harness();
    h.send({ type: 'watch.unserved', error: 'the API server does not serve Ingress', at: 5 });
    expect(stateName(h.actor.getSnapshot().value)).toBe('unserved');
    expect(h.reported).toEqual(['unserved Ingress recheck 30000', 'synced Ingress']);
    expect(h.stops()).toBe(1);
    await advance(h.clock, 29_999);
    expect(stateName(h.actor.getSnapshot().value)).toBe('unserved');
    await advance(h.clock, 1);
    expect(stateName(h.actor.getSnapshot().value)).toBe('running.listing');
    expect(h.starts).toHaveLength(2);
    // Still unserved: nothing said again, no failure counted.
    h.send({ type: 'watch.unserved', error: 'the API server does not serve Ingress', at: 30_005 });
    expect(h.reported).toHaveLength(2);
    expect(h.actor.getSnapshot().context).toMatchObject({ failures: 0, unservedSince: 5, staleSince: null });
    await advance(h.clock, 30_000);
    h.send({ type: 'watch.changed', key: 'default/a' });
    h.send({ type: 'watch.synced' });
    expect(stateName(h.actor.getSnapshot().value)).toBe('running.watching');
    expect(h.reported.slice(2)).toEqual(['changed Ingress default/a', 'served Ingress unserved since 5']);
    expect(h.actor.getSnapshot().context).toMatchObject({ unservedSince: null, lastError: null });
    expect(h.failures).toEqual([]);
  });

  it('a watched kind that stops being served goes unserved without a second synced', () => {
    const h = harness();
    h.send({ type: 'watch.synced' });
    h.send({ type: 'watch.unserved', error: 'gone', at: 7 });
    expect(stateName(h.actor.getSnapshot().value)).toBe('unserved');
    expect(h.reported).toEqual(['synced Ingress', 'unserved Ingress recheck 30000']);
    h.actor.send({ type: 'watcher.stop' });
    expect(h.actor.getSnapshot().status).toBe('done');
  });
});
