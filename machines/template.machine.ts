import { assign, enqueueActions, fromCallback, fromPromise, setup, type EventObject } from 'xstate';
import type { NginxModel } from '../src/model/nginx-model.js';
import type { SyncDoneEvent, TemplateChangedEvent, TemplateFileChangedEvent, TemplateWantedEvent } from './events.js';

/**
 * CompiledTemplate is whatever `loadTemplate` produces (a compiled handlebars template, say);
 * the machine only keeps it, so it stays opaque here.
 */
export type CompiledTemplate = unknown;

/**
 * LoadTemplateInput is what each `loadTemplate` invocation gets: the load's number (1 at boot)
 * and the model of the last sync to test-render against (null before the first `sync.done`).
 */
export interface LoadTemplateInput {
  readonly attempt: number;
  readonly model: NginxModel | null;
}

/** TemplateContext holds the last good template and why the last load failed, if it did. */
export interface TemplateContext {
  /** the last template that compiled and test-rendered; meaningful only when `goodLoads > 0` */
  readonly current: CompiledTemplate;
  readonly goodLoads: number;
  readonly badLoads: number;
  /** loads started; `attempt` of the next LoadTemplateInput */
  readonly attempts: number;
  readonly lastError: string | null;
  /** the model of the last `sync.done`: a new template must render it */
  readonly model: NginxModel | null;
}

/** TemplateEvent is every event the template machine handles. */
export type TemplateEvent = TemplateFileChangedEvent | TemplateWantedEvent | SyncDoneEvent;

/** TemplateOutput is the output of the final `failed` state: the boot-time load failed, and why. */
export interface TemplateOutput {
  readonly error: string;
}

/** ReportInvalidParams is what the `reportInvalid` action gets. */
export interface ReportInvalidParams {
  readonly error: string;
  /** true at boot, when there is no good template to keep and the machine fails */
  readonly fatal: boolean;
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * templateMachine loads the nginx.conf template, keeps the last good one, and reloads it when
 * the file changes. States: `loading` → `ready`; a bad load → `invalid` (the last good template
 * stays `current`), or, when there never was a good one, the final `failed` state whose output
 * says why (the supervisor then exits 1, as the seed's glog.Fatalf does). A file change in any
 * state starts a new load; one during a load restarts it, so the latest file wins.
 *
 * After every good load, including the first, it sends the sync queue (systemId `syncQueue`)
 * `template.changed` with the template, and again when a (restarted) queue asks `template.wanted`.
 * It keeps the model of the last `sync.done` and hands it to each load to test-render against.
 *
 * Effects to provide: `loadTemplate` (fromPromise<CompiledTemplate, LoadTemplateInput>: read,
 * compile and test-render; reject with a message naming the file and line), `watchTemplate`
 * (fromCallback: send `template.fileChanged` on changes, stop watching in its cleanup), and
 * the action `reportInvalid` (log the failure loudly; a no-op by default).
 */
export const templateMachine = setup({
  types: {
    context: {} as TemplateContext,
    events: {} as TemplateEvent,
    output: {} as TemplateOutput,
  },
  actors: {
    loadTemplate: fromPromise<CompiledTemplate, LoadTemplateInput>(async () => {
      throw new Error('actor "loadTemplate" not provided');
    }),
    watchTemplate: fromCallback<EventObject, void>(() => {
      throw new Error('actor "watchTemplate" not provided');
    }),
  },
  guards: {
    hadGoodTemplate: ({ context }) => context.goodLoads > 0,
  },
  actions: {
    countAttempt: assign({ attempts: ({ context }) => context.attempts + 1 }),
    keepTemplate: assign(({ context }, params: { template: CompiledTemplate }) => ({
      current: params.template,
      goodLoads: context.goodLoads + 1,
      lastError: null,
    })),
    recordError: assign(({ context }, params: { error: unknown }) => ({
      badLoads: context.badLoads + 1,
      lastError: describe(params.error),
    })),
    keepModel: assign({ model: ({ context, event }) => (event.type === 'sync.done' ? event.model : context.model) }),
    // The sync queue may be absent (tests, a queue being restarted): then nothing is sent.
    notifyChanged: enqueueActions(({ context, system, enqueue }) => {
      const queue = system.get('syncQueue');
      const event: TemplateChangedEvent = { type: 'template.changed', template: context.current };
      if (queue && context.goodLoads > 0) enqueue.sendTo(queue, event);
    }),
    reportInvalid: (_, _params: ReportInvalidParams) => {},
  },
}).createMachine({
  id: 'template',
  context: { current: undefined, goodLoads: 0, badLoads: 0, attempts: 0, lastError: null, model: null },
  // The watch lasts the machine's life, so a change while loading is not missed.
  invoke: { id: 'watchTemplate', src: 'watchTemplate' },
  on: {
    'sync.done': { actions: 'keepModel' },
    'template.wanted': { actions: 'notifyChanged' },
  },
  initial: 'loading',
  states: {
    loading: {
      entry: 'countAttempt',
      // Re-entering restarts the load (the old one is stopped); the watch is not touched.
      on: {
        'template.fileChanged': { target: 'loading', reenter: true },
      },
      invoke: {
        id: 'loadTemplate',
        src: 'loadTemplate',
        input: ({ context }) => ({ attempt: context.attempts, model: context.model }),
        onDone: {
          target: 'ready',
          actions: [{ type: 'keepTemplate', params: ({ event }) => ({ template: event.output }) }, 'notifyChanged'],
        },
        onError: [
          {
            guard: 'hadGoodTemplate',
            target: 'invalid',
            actions: [
              { type: 'recordError', params: ({ event }) => ({ error: event.error }) },
              { type: 'reportInvalid', params: ({ event }) => ({ error: describe(event.error), fatal: false }) },
            ],
          },
          {
            target: 'failed',
            actions: [
              { type: 'recordError', params: ({ event }) => ({ error: event.error }) },
              { type: 'reportInvalid', params: ({ event }) => ({ error: describe(event.error), fatal: true }) },
            ],
          },
        ],
      },
    },
    ready: {
      on: { 'template.fileChanged': 'loading' },
    },
    // Serving with the last good template until a good one arrives.
    invalid: {
      on: { 'template.fileChanged': 'loading' },
    },
    failed: { type: 'final' },
  },
  output: ({ context }) => ({ error: context.lastError ?? 'template failed to load' }),
});
