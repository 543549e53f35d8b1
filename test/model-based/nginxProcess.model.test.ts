/**
 * Model-based test of the nginx-process machine against real nginx: paths from the machine
 * definition the controller runs (xstate/graph), each executed on a fresh nginx with the
 * controller's own effects, every event made to happen by a real action (support/nginx-world.ts).
 * Fails if a path diverges, a state's assertion about the world fails, or a state or transition
 * of the machine is walked by no path.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nginxProcessMachine } from '../../machines/nginxProcess.machine.js';
import { Coverage, pathsFor } from './graph.js';
import { runPath } from './runner.js';
import {
  E,
  INJECTED,
  NGINX_INPUT,
  nginxEvents,
  nginxKey,
  startNginxWorld,
  symbolicTables as T,
} from './support/nginx-world.js';
import { startHoldingBackend, type HoldingBackend } from './support/processes.js';

const SCENARIOS = {
  'start → stop': [E.started, E.stop, E.exited],
  'start → crash → drain → restart → running → stop': [
    E.started,
    E.exited,
    E.drainDone,
    E.backoff,
    E.started,
    E.stop,
    E.exited,
  ],
  ['crash while a reload is in progress, the config applied after the restart ' +
    "(finding: the abandoned reload's nginx -t held the config folder)"]: [
    E.started,
    E.reload('conf-1'),
    E.exited,
    E.drainDone,
    E.backoff,
    E.started,
    E.reloadDone,
    E.stop,
    E.exited,
  ],
  'the HTTP port held by another process at the first start: failed, not restarted': [E.exitedPortInUse],
  'a first master killed before it served, the next one finds the port held: failed': [
    E.exited,
    E.drainDone,
    E.backoff,
    E.exitedPortInUse,
  ],
  'stop while draining': [E.started, E.exited, E.stop],
  'stop while restarting': [E.started, E.exited, E.drainDone, E.stop],
  'a config nginx -t refuses is never swapped in': [
    E.started,
    E.reload('conf-1'),
    E.reloadFailed,
    E.reload('conf-2'),
    E.reloadDone,
    E.stop,
    E.exited,
  ],
  'a refused config is tried again, and applied once nginx -t passes': [
    E.started,
    E.reload('conf-1'),
    E.reloadFailed,
    E.retry,
    E.reloadDone,
    E.stop,
    E.exited,
  ],
  // Issue 27: every way a push fails ends where the next change is pushed, and the tables nginx holds converge.
  'a push nginx refuses (413), the object deleted with a reload that succeeds, then new tables: pushed at once': [
    E.started,
    E.reload('conf-1'),
    E.reloadDone,
    E.tablesOnly('conf-1', 't1'),
    E.pushDone,
    E.tablesOnly('conf-1', 'big'),
    E.pushRefused(T('t1')),
    E.reloadWith('conf-2', 't1'),
    E.reloadDone,
    E.tablesOnly('conf-2', 't2'),
    E.pushDone,
    E.stop,
    E.exited,
  ],
  'a push nginx does not answer in time is retried until nginx takes it, first and later tables alike': [
    E.started,
    E.reload('conf-1'),
    E.reloadDone,
    E.tablesOnly('conf-1', 't1'),
    E.pushTimedOut(null, 't1'),
    E.pushRetry,
    E.pushDone,
    E.tablesOnly('conf-1', 't2'),
    E.pushTimedOut(T('t1'), 't2'),
    E.pushRetry,
    E.pushDone,
    E.stop,
    E.exited,
  ],
  'a control socket that is not there fails the push; newer tables are pushed at once': [
    E.started,
    E.reload('conf-1'),
    E.reloadDone,
    E.tablesOnly('conf-1', 't1'),
    E.pushUnreachable(null, 't1'),
    E.tablesOnly('conf-1', 't2'),
    E.pushDone,
    E.stop,
    E.exited,
  ],
  'a master killed while it retries a failed push: the next master gets the tables as soon as it runs': [
    E.started,
    E.reload('conf-1'),
    E.reloadDone,
    E.tablesOnly('conf-1', 't1'),
    E.pushDone,
    E.tablesOnly('conf-1', 't2'),
    E.pushTimedOut(T('t1'), 't2'),
    E.pushRetry,
    E.exited,
    E.drainDone,
    E.backoff,
    E.started,
    E.pushDone,
    E.stop,
    E.exited,
  ],
};

// Every transition, plus every distinct state within six events (queued configs, crashes between reloads).
const { paths } = pathsFor(nginxProcessMachine, {
  events: nginxEvents,
  key: nginxKey,
  input: NGINX_INPUT,
  scenarios: SCENARIOS,
  everyStateWithin: 6,
});
const coverage = new Coverage(nginxProcessMachine);
for (const [key, why] of Object.entries(INJECTED)) coverage.injected.set(key, why);
for (const path of paths) coverage.addModelPath(path);

let backend: HoldingBackend;
beforeAll(async () => {
  backend = await startHoldingBackend();
});
afterAll(async () => {
  await backend?.close();
});

describe('nginx process: every path of the machine, against real nginx', () => {
  for (const path of paths) {
    it(path.name, async () => {
      await runPath(nginxProcessMachine, path, await startNginxWorld(backend), coverage, { stepTimeoutMs: 8000 });
    }, 60_000);
  }

  it('walked every state and transition of the machine, in the model and for real', () => {
    console.log(coverage.summary());
    expect(coverage.missing()).toEqual({ model: [], real: [] });
  });
});
