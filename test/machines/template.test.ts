import { describe, expect, it } from 'vitest';
import {
  SimulatedClock,
  createActor,
  fromCallback,
  fromPromise,
  initialTransition,
  transition,
  type EventObject,
} from 'xstate';
import { templateMachine, type LoadTemplateInput, type ReportInvalidParams } from '../../machines/template.machine.js';
import { deferred, flush, type Deferred } from './harness.js';

/** start runs the template machine; each load takes the next Deferred the test settles. */
function start() {
  const loads: Array<{ input: LoadTemplateInput; done: Deferred<unknown>; aborted: boolean }> = [];
  const notified: number[] = [];
  const reports: ReportInvalidParams[] = [];
  const watch = { sendBack: null as null | ((e: EventObject) => void), stopped: false };
  const machine = templateMachine.provide({
    actors: {
      loadTemplate: fromPromise<unknown, LoadTemplateInput>(({ input, signal }) => {
        const load = { input, done: deferred<unknown>(), aborted: false };
        signal.addEventListener('abort', () => (load.aborted = true));
        loads.push(load);
        return load.done.promise;
      }),
      watchTemplate: fromCallback<EventObject, void>(({ sendBack }) => {
        watch.sendBack = sendBack;
        return () => (watch.stopped = true);
      }),
    },
    actions: {
      notifyChanged: ({ context }) => void notified.push(context.goodLoads),
      reportInvalid: (_, params) => void reports.push(params),
    },
  });
  const actor = createActor(machine, { clock: new SimulatedClock() }).start();
  const fileChanged = () => watch.sendBack?.({ type: 'template.fileChanged' });
  return { actor, loads, notified, reports, watch, fileChanged };
}

describe('template', () => {
  it('loads at boot, notifies, and replaces the template on a good change', async () => {
    const { actor, loads, notified, fileChanged } = start();
    expect(actor.getSnapshot().value).toBe('loading');
    loads[0]!.done.resolve('v1');
    await flush();
    expect(actor.getSnapshot().value).toBe('ready');
    expect(actor.getSnapshot().context).toMatchObject({ current: 'v1', goodLoads: 1, lastError: null });

    fileChanged();
    expect(actor.getSnapshot().value).toBe('loading');
    expect(actor.getSnapshot().context.current).toBe('v1'); // still served while loading
    loads[1]!.done.resolve('v2');
    await flush();
    expect(actor.getSnapshot().value).toBe('ready');
    expect(actor.getSnapshot().context.current).toBe('v2');
    expect(notified).toEqual([1, 2]);
    expect(loads.map((l) => l.input.attempt)).toEqual([1, 2]);
  });

  it('keeps the last good template when a change is bad, and recovers on a good one', async () => {
    const { actor, loads, notified, reports, fileChanged } = start();
    loads[0]!.done.resolve('v1');
    await flush();

    fileChanged();
    loads[1]!.done.reject(new Error('nginx.conf.hbs:12: Parse error'));
    await flush();
    expect(actor.getSnapshot().value).toBe('invalid');
    expect(actor.getSnapshot().context).toMatchObject({
      current: 'v1',
      lastError: 'nginx.conf.hbs:12: Parse error',
      badLoads: 1,
    });
    expect(reports).toEqual([{ error: 'nginx.conf.hbs:12: Parse error', fatal: false }]);
    expect(notified).toEqual([1]);

    fileChanged();
    loads[2]!.done.resolve('v3');
    await flush();
    expect(actor.getSnapshot().value).toBe('ready');
    expect(actor.getSnapshot().context).toMatchObject({ current: 'v3', lastError: null });
    expect(notified).toEqual([1, 2]);
  });

  it('fails (final, with the error as output) when the boot-time template is bad', async () => {
    const { actor, loads, reports, watch } = start();
    loads[0]!.done.reject(new Error('templates/nginx.conf.hbs:3: unknown helper'));
    await flush();
    const snapshot = actor.getSnapshot();
    expect(snapshot.value).toBe('failed');
    expect(snapshot.status).toBe('done');
    expect(snapshot.output).toEqual({ error: 'templates/nginx.conf.hbs:3: unknown helper' });
    expect(reports).toEqual([{ error: 'templates/nginx.conf.hbs:3: unknown helper', fatal: true }]);
    expect(watch.stopped).toBe(true);
  });

  it('restarts a load when the file changes mid-load, so the latest file wins', async () => {
    const { actor, loads, watch, fileChanged } = start();
    fileChanged();
    expect(watch.stopped).toBe(false);
    expect(loads).toHaveLength(2);
    expect(loads[0]!.aborted).toBe(true);
    loads[0]!.done.resolve('stale');
    loads[1]!.done.resolve('latest');
    await flush();
    expect(actor.getSnapshot().context).toMatchObject({ current: 'latest', goodLoads: 1 });
  });

  it('stops the file watch when stopped', () => {
    const { actor, watch } = start();
    actor.stop();
    expect(watch.stopped).toBe(true);
  });

  it('transitions purely: boot starts the watch and the load; a file change re-enters loading', () => {
    const [s0, actions] = initialTransition(templateMachine);
    expect(s0.value).toBe('loading');
    const spawned = actions.filter((a) => a.type === 'xstate.spawnChild').map((a) => (a.params as { id: string }).id);
    expect(spawned.sort()).toEqual(['loadTemplate', 'watchTemplate']);
    const [s1, a1] = transition(templateMachine, s0, { type: 'template.fileChanged' });
    expect(s1.value).toBe('loading');
    expect(s1.context.attempts).toBe(2);
    // Only the load restarts; the file watch lives on.
    const children = a1.map((a) => `${a.type.replace('xstate.', '')} ${(a.params as { id: string }).id}`);
    expect(children).toEqual(['stopChild loadTemplate', 'spawnChild loadTemplate']);
  });
});
