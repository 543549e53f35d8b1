/**
 * The template, sync queue and status machines talking in events (issue 15, "actors talk in
 * events"), under a small parent that gives them their systemIds as the root supervisor does:
 * the template goes to the queue in `template.changed`, each sync gets it in its input, what a
 * sync found goes to the status and template actors in `sync.done`, a new template is
 * test-rendered against the model it was sent, and a restarted queue asks for the template.
 * Every one of these events has a sender in the inspection stream (what the Stately inspector shows).
 */
import { describe, expect, it } from 'vitest';
import {
  SimulatedClock,
  createActor,
  enqueueActions,
  fromCallback,
  fromPromise,
  setup,
  spawnChild,
  type AnyActorRef,
  type EventObject,
  type InspectionEvent,
} from 'xstate';
import {
  statusMachine,
  type LeaseResult,
  type PublishGatewayStatusInput,
  type PublishStatusInput,
  type RecordEventsInput,
  type ShutdownCheck,
} from '../../machines/status.machine.js';
import type { RunSyncInput, RunSyncOutput } from '../../machines/syncEffects.js';
import { syncQueueMachine } from '../../machines/syncQueue.machine.js';
import { templateMachine, type LoadTemplateInput } from '../../machines/template.machine.js';
import type { NginxModel, Problem } from '../../src/model/nginx-model.js';
import { advance, flush } from './harness.js';

const PROBLEM: Problem = {
  kind: 'Ingress',
  namespace: 'default',
  name: 'bad',
  field: 'spec.rules[0].host',
  message: 'not a host',
};
const modelOf = (generation: number) => ({ generation }) as unknown as NginxModel;

function start() {
  const clock = new SimulatedClock();
  const loads: LoadTemplateInput[] = [];
  const syncs: RunSyncInput[] = [];
  const published: PublishStatusInput[] = [];
  const recorded: RecordEventsInput[] = [];
  const sent: { type: string; from: string | undefined; to: string }[] = [];
  let fileChanged: () => void = () => {};
  const template = templateMachine.provide({
    actors: {
      loadTemplate: fromPromise<unknown, LoadTemplateInput>(
        async ({ input }) => (loads.push(input), `template ${input.attempt}`),
      ),
      watchTemplate: fromCallback<EventObject, void>(
        ({ sendBack }) => void (fileChanged = () => sendBack({ type: 'template.fileChanged' })),
      ),
    },
  });
  const syncQueue = syncQueueMachine.provide({
    actors: {
      runSync: fromPromise<RunSyncOutput, RunSyncInput>(async ({ input }) => {
        syncs.push(input);
        return {
          awaitingVerdict: false,
          done: { model: modelOf(input.generation), problems: [PROBLEM], served: ['default/web'] },
        };
      }),
    },
  });
  const lease = fromPromise<LeaseResult, void>(async () => ({ leader: true, holder: 'me', expiresInMs: null }));
  const status = statusMachine.provide({
    actors: {
      acquireLease: lease,
      renewLease: lease,
      publishStatus: fromPromise<void, PublishStatusInput>(async ({ input }) => void published.push(input)),
      recordEvents: fromPromise<void, RecordEventsInput>(async ({ input }) => void recorded.push(input)),
      publishGatewayStatus: fromPromise<void, PublishGatewayStatusInput>(async () => {}),
      checkPeers: fromPromise<ShutdownCheck, void>(async () => ({ othersWillTakeOver: true, reason: 'test' })),
      releaseLease: fromPromise<boolean, void>(async () => true),
    },
  });
  const input = { watchers: ['Ingress'], debounceMs: 10, maxHoldoffMs: 50, minSyncIntervalMs: 0 };
  const statusInput = {
    leaseDurationMs: 3_000,
    renewDeadlineMs: 2_000,
    retryPeriodMs: 1_000,
    updateStatus: true,
    updateStatusOnShutdown: false,
    resyncPeriodMs: 60_000,
    stopTimeoutMs: 1_000,
  };
  // As the root supervisor does: children by systemId, a restart is stopChild + spawnChild under the same one.
  const parent = setup({
    actors: { template, syncQueue, status },
    actions: {
      spawnQueue: enqueueActions(({ enqueue }) => {
        enqueue.stopChild('syncQueue');
        enqueue.spawnChild('syncQueue', { id: 'syncQueue', systemId: 'syncQueue', input });
      }),
    },
  }).createMachine({
    entry: [
      spawnChild('template', { id: 'template', systemId: 'template' }),
      'spawnQueue',
      spawnChild('status', { id: 'status', systemId: 'status', input: statusInput }),
    ],
    on: { restartQueue: { actions: 'spawnQueue' } },
  });
  const names = new Map<string, string>();
  const inspect = (event: InspectionEvent) => {
    if (event.type === '@xstate.actor') names.set(event.actorRef.sessionId, (event.actorRef as AnyActorRef).id);
    if (
      event.type === '@xstate.event' &&
      ['template.changed', 'template.wanted', 'sync.done'].includes(event.event.type)
    ) {
      sent.push({
        type: event.event.type,
        from: event.sourceRef && names.get(event.sourceRef.sessionId),
        to: names.get(event.actorRef.sessionId)!,
      });
    }
  };
  const actor = createActor(parent, { clock, inspect }).start();
  const queue = () => actor.getSnapshot().children.syncQueue as AnyActorRef;
  return { clock, actor, queue, loads, syncs, published, recorded, sent, fileChanged: () => fileChanged() };
}

describe('actors talk in events', () => {
  it(
    'the template reaches each sync in events and inputs, and what a sync found reaches status and template, each ' +
      'event with its sender',
    async () => {
      const t = start();
      await flush();
      // Boot: the queue asked for the template before it had loaded (unanswered), then got it when it did.
      expect(t.sent.slice(0, 2)).toEqual([
        { type: 'template.wanted', from: 'syncQueue', to: 'template' },
        { type: 'template.changed', from: 'template', to: 'syncQueue' },
      ]);
      expect(t.queue().getSnapshot().context.template).toBe('template 1');
      expect(t.loads[0]).toEqual({ attempt: 1, model: null });

      t.queue().send({ type: 'k8s.synced', kind: 'Ingress' });
      await advance(t.clock, 20);
      expect(t.syncs.map((s) => [s.generation, s.template])).toEqual([[1, 'template 1']]);
      const done = t.sent.filter((e) => e.type === 'sync.done');
      expect(done).toEqual([
        { type: 'sync.done', from: 'syncQueue', to: 'status' },
        { type: 'sync.done', from: 'syncQueue', to: 'template' },
      ]);
      // The status actor publishes what it was sent.
      expect(t.published.at(-1)).toEqual({ served: ['default/web'] });
      expect(t.recorded.at(-1)).toEqual({ problems: [PROBLEM] });

      // A new template file is test-rendered against the model of that sync, then reaches the next sync.
      t.fileChanged();
      await flush();
      expect(t.loads.at(-1)).toEqual({ attempt: 2, model: modelOf(1) });
      await advance(t.clock, 100);
      expect(t.syncs.map((s) => [s.generation, s.template])).toEqual([
        [1, 'template 1'],
        [2, 'template 2'],
      ]);
      expect(t.sent.every((e) => e.from !== undefined)).toBe(true);
      t.actor.stop();
    },
  );

  it('a sync queue restarted after the template loaded asks for it, and its first sync has it', async () => {
    const t = start();
    await flush();
    const before = t.sent.length;
    t.actor.send({ type: 'restartQueue' });
    await flush();
    expect(t.sent.slice(before)).toEqual([
      { type: 'template.wanted', from: 'syncQueue', to: 'template' },
      { type: 'template.changed', from: 'template', to: 'syncQueue' },
    ]);
    t.queue().send({ type: 'sync.resync' });
    await advance(t.clock, 20);
    expect(t.syncs.map((s) => [s.generation, s.template])).toEqual([[1, 'template 1']]);
    t.actor.stop();
  });
});
