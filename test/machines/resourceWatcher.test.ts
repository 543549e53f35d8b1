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
    },
  });
  const clock = new SimulatedClock();
  const actor = createActor(machine, {
    clock,
    input: { kind: 'Ingress', baseBackoffMs: 100, maxBackoffMs: 1000 },
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
});
