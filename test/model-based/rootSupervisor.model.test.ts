/**
 * Model-based test of the root supervisor against the whole controller: paths from the machine
 * definition src/main.ts runs (xstate/graph), each executed on a fresh controller (startController,
 * real nginx, the test API server), every step checked against the real root's own transitions,
 * and each state against the world: /healthz, the app served through nginx, no nginx left after
 * stopped, the exit code.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AnyEventObject } from 'xstate';
import { rootSupervisorMachine } from '../../machines/rootSupervisor.machine.js';
import { startApiServer, type ApiServer } from '../../src/dev/api-server/server.js';
import { ingress, ingressClass, serviceWithEndpoints } from '../support/manifests.js';
import { Coverage, pathsFor } from './graph.js';
import { runPath } from './runner.js';
import {
  HOST,
  INJECTED,
  R,
  ROOT_INPUT,
  rootEvents,
  rootFeasible,
  rootKey,
  startControllerWorld,
} from './support/controller-world.js';
import { startHoldingBackend, type HoldingBackend } from './support/processes.js';

const SCENARIOS = {
  'stop during the boot check: nothing started, exit 0 (finding: its nginx -t was left running)': [R.stop],
  'the boot check refused by nginx -t: exit 1 with its words': [R.bootFailed],
  'boot → running → stop: exit 0': [R.bootDone, R.ready, R.stop, R.statusDone, R.nginxDone(true)],
  'stop while booting: nginx not up yet is killed, exit 1': [R.bootDone, R.stop, R.statusDone, R.nginxDone(false)],
  'a broken template at boot: exit 1': [R.bootDone, R.templateFailed, R.statusDone, R.nginxDone(false)],
  'a crashed nginx machine is replaced: its nginx killed, a new one serves': [
    R.bootDone,
    R.ready,
    R.crash('nginx'),
    R.stop,
    R.statusDone,
    R.nginxDone(true),
  ],
  'restart intensity exceeded → exit 1': [R.bootDone, R.ready, R.crash('syncQueue'), R.crash('nginx'), R.statusDone],
  'the restart window slides: a restart that expired does not count': [
    R.bootDone,
    R.ready,
    R.crash('template'),
    R.expired,
    R.crash('syncQueue'),
    R.stop,
    R.statusDone,
    R.nginxDone(true),
  ],
  'a template restarted onto a broken file: exit 1': [
    R.bootDone,
    R.ready,
    R.crash('template'),
    R.templateFailed,
    R.statusDone,
    R.nginxDone(true),
  ],
  // Found by this suite: a restarted watcher used to share its predecessor's ListWatch, whose
  // stop() aborted the new one's request; each invocation now has a ListWatch of its own.
  'a watcher restarted after it ran a while syncs again': [
    R.bootDone,
    R.ready,
    R.crash('syncQueue'),
    R.expired,
    R.watcherDone('Ingress'),
    R.stop,
    R.statusDone,
    R.nginxDone(true),
  ],
};

/**
 * KNOWN_DEFECTS are paths that fail today because of a bug outside the machines; `it.fails` keeps
 * them visible and turns red the day they pass, so the entry can go.
 */
const KNOWN_DEFECTS: Record<string, readonly AnyEventObject[]> = {};

const isTimer = (type: string) => type.startsWith('xstate.after.') || type === R.expired.type;
const { paths } = pathsFor(rootSupervisorMachine, {
  events: rootEvents,
  key: rootKey,
  input: ROOT_INPUT,
  scenarios: { ...SCENARIOS, ...KNOWN_DEFECTS },
  feasible: rootFeasible,
  isTimer,
});
const coverage = new Coverage(rootSupervisorMachine);
for (const [what, why] of Object.entries(INJECTED)) coverage.injected.set(what, why);
for (const path of paths) coverage.addModelPath(path);

let api: ApiServer;
let backend: HoldingBackend;
let dir: string;
let serial = 0;
beforeAll(async () => {
  backend = await startHoldingBackend();
  api = await startApiServer({
    seed: [
      ingressClass(),
      ...serviceWithEndpoints('app', [{ port: backend.port }]),
      ingress('app', { [HOST]: [{ path: '/', service: 'app' }] }),
    ] as never,
  });
  dir = await mkdtemp(join(tmpdir(), 'ia-model-root-api-'));
  await api.writeKubeconfig(join(dir, 'kubeconfig'));
});
afterAll(async () => {
  await api?.close();
  await backend?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('root supervisor: every path of the machine, against the whole controller', () => {
  for (const path of paths) {
    (path.name in KNOWN_DEFECTS ? it.fails : it)(path.name, { timeout: 60_000 }, async () => {
      await runPath(
        rootSupervisorMachine,
        path,
        await startControllerWorld(join(dir, 'kubeconfig'), backend, ++serial),
        coverage,
        { stepTimeoutMs: 10_000 },
      );
    });
  }

  it('walked every state and transition of the machine, in the model and for real', () => {
    console.log(coverage.summary());
    expect(coverage.missing()).toEqual({ model: [], real: [] });
  });
});
