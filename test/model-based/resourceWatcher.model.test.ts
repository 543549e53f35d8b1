/**
 * Model-based test of the resource watcher against the test API server: paths from the machine
 * definition (xstate/graph), each run on a real watcher actor with the controller's own informer
 * effect (client-node list-watch over HTTPS). The kind watched is HTTPRoute, a CRD kind (only those can be
 * unserved), served as the Gateway API's CRDs serve it. Events are real: the first list, a route created
 * through the API, the API server going away (pause) and coming back (resume), `watcher.stop`;
 * the backoff timer runs on a SimulatedClock the world advances once the API server is as the
 * next step needs it.
 */
import { KubeConfig, KubernetesObjectApi, type KubernetesObject } from '@kubernetes/client-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SimulatedClock, createActor, type AnyEventObject, type AnyMachineSnapshot } from 'xstate';
import {
  resourceWatcherMachine,
  type ResourceWatcherContext,
  type ResourceWatcherInput,
} from '../../machines/resourceWatcher.machine.js';
import { watcherActors } from '../../src/actors/watcher.js';
import { startApiServer, type ApiServer } from '../../src/dev/api-server/server.js';
import { ClusterCache } from '../../src/kube/cache.js';
import { isListening } from '../../src/nginx/probe.js';
import { waitFor } from '../support/cluster.js';
import { GATEWAY_RESOURCES } from '../support/gateway-kinds.js';
import { Coverage, pathsFor } from './graph.js';
import { microstepRecorder, runPath, type RealStep, type StepContext, type World } from './runner.js';

const INPUT: ResourceWatcherInput = {
  kind: 'HTTPRoute',
  baseBackoffMs: 200,
  maxBackoffMs: 400,
  unservedRecheckMs: 300,
};
const E = {
  synced: { type: 'watch.synced' },
  changed: { type: 'watch.changed', key: 'default/x' },
  failed: { type: 'watch.failed', error: 'connection refused', jitter: 0.5, at: 0 },
  // the API server answers 404: the kind is not served (a CRD not installed)
  unserved: { type: 'watch.unserved', error: 'the API server does not serve HTTPRoute', at: 0 },
  stop: { type: 'watcher.stop' },
  // the sync's word on which objects matter: none of this namespace, so later creations are only cached
  relevant: { type: 'secrets.relevant', keys: [], namespaces: [] },
  backoff: { type: 'xstate.after.backoff.resourceWatcher.backoff' },
  recheck: { type: 'xstate.after.unservedRecheck.resourceWatcher.unserved' },
};

/** events: what the world can make happen; a relist after a backoff is too quick to stop in. */
function events(snapshot: AnyMachineSnapshot): AnyEventObject[] {
  const c = snapshot.context as ResourceWatcherContext;
  if (snapshot.matches('running.listing' as never))
    return c.reportedSynced || c.failures > 0
      ? [E.synced, E.failed, E.unserved]
      : [E.synced, E.failed, E.unserved, E.stop];
  if (snapshot.matches('running.watching' as never))
    // a change then is only cached: no transition
    return c.relevant === null ? [E.changed, E.relevant, E.failed, E.stop] : [E.failed, E.stop];
  if (snapshot.matches('backoff' as never)) return [E.backoff, E.stop];
  if (snapshot.matches('unserved' as never)) return [E.recheck, E.stop];
  return [];
}
const key = (s: AnyMachineSnapshot) => {
  const c = s.context as ResourceWatcherContext;
  return [s.value, c.reportedSynced, c.failures > 0, c.relevant !== null, c.unservedSince !== null];
};

let api: ApiServer;
let client: KubernetesObjectApi;
let kc: KubeConfig;
let created = 0;
let worlds = 0;
const ROUTE_API = 'gateway.networking.k8s.io/v1';
const ing = (name: string, namespace: string) =>
  ({
    apiVersion: ROUTE_API,
    kind: 'HTTPRoute',
    metadata: { name, namespace },
    spec: { hostnames: [`${name}.example.com`] },
  }) as KubernetesObject;

/** watcherWorld watches a namespace of its own, so one path's objects are no other path's first list. */
async function watcherWorld(): Promise<World> {
  const namespace = `path-${++worlds}`;
  await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
  const log: RealStep[] = [];
  const cache = new ClusterCache();
  const reports: string[] = [];
  const logic = resourceWatcherMachine.provide({
    actors: watcherActors(kc, cache, { namespace, configMap: null }, pino({ level: 'silent' })),
    actions: {
      reportSynced: (_, { kind }) => void reports.push(`synced ${kind}`),
      reportChanged: (_, { kind, key }) => void reports.push(`changed ${kind} ${key}`),
    },
  });
  // The backoff timer fires when the path says so, not on the wall clock: under load, a real
  // 200 ms timer fired before the world had the API server back up, and the relist failed.
  const clock = new SimulatedClock();
  const actor = createActor(logic, { input: INPUT, inspect: microstepRecorder(log), clock });
  const initial = actor.getSnapshot();
  const inCache = async () => {
    const server = (await client.list(ROUTE_API, 'HTTPRoute', namespace)).items.map((o) => o.metadata?.name).sort();
    return (
      JSON.stringify(server) ===
      JSON.stringify(
        cache
          .list('HTTPRoute')
          .map((o) => o.metadata?.name)
          .sort(),
      )
    );
  };
  // Look ahead: before a step that starts a list, the API server must be down if the list is to
  // fail, answer 404 if the kind is to be unserved, up if it is to work.
  const prepare = async ({ step, next }: StepContext) => {
    if (!step.state.matches('running.listing' as never)) return;
    if (next?.event.type === E.unserved.type) api.failRequests({ status: 404 });
    else api.failRequests(null);
    if (next?.event.type === E.failed.type && (await isListening(api.port))) await api.pause();
    if (next?.event.type !== E.failed.type && !(await isListening(api.port))) await api.resume();
  };
  return {
    log,
    ambient: new Set(),
    snapshot: () => actor.getSnapshot() as AnyMachineSnapshot,
    initial: () => initial as AnyMachineSnapshot,
    project: (s) => {
      const c = s.context as ResourceWatcherContext;
      return { failures: c.failures, reportedSynced: c.reportedSynced, changes: c.changes };
    },
    async exec(at) {
      const e = at.step.event;
      await prepare(at);
      if (e.type === 'xstate.init') actor.start();
      else if (e.type === E.changed.type) await client.create(ing(`created-${++created}`, namespace));
      else if (e.type === E.failed.type && at.previous!.state.matches('running.watching' as never)) await api.pause();
      else if (e.type === E.stop.type) actor.send({ type: 'watcher.stop' });
      else if (e.type === E.relevant.type) actor.send(E.relevant as never);
      else if (e.type === E.backoff.type)
        clock.increment(INPUT.maxBackoffMs); // the longest a backoff can be
      else if (e.type === E.recheck.type) clock.increment(INPUT.unservedRecheckMs!);
    },
    async check({ step }, current) {
      const s = step.state;
      if (s.matches('running.watching' as never)) {
        await waitFor('the cache to equal the server', inCache, 5000);
        // once, on the first list only
        expect(reports.filter((r) => r.startsWith('synced'))).toEqual(['synced HTTPRoute']);
        // After secrets.relevant named nothing here, nothing more is reported however much the cache holds.
        const c = actor.getSnapshot().context as ResourceWatcherContext;
        expect(reports.filter((r) => r.startsWith('changed'))).toHaveLength(c.changes);
      } else if (s.matches('backoff' as never) && current) {
        expect(await isListening(api.port)).toBe(false);
      } else if (s.matches('unserved' as never) && current) {
        // nothing of an unserved kind is kept; the sync queue heard of the first list once
        expect(cache.list('HTTPRoute')).toEqual([]);
        expect(reports.filter((r) => r.startsWith('synced'))).toEqual(['synced HTTPRoute']);
      } else if (s.matches('stopped' as never)) {
        api.failRequests(null);
        if (!(await isListening(api.port))) await api.resume();
        const before = reports.length;
        await client.create(ing(`after-stop-${++created}`, namespace));
        await new Promise((r) => setTimeout(r, 300));
        expect(reports.slice(before)).toEqual([]); // the informer is gone: nobody hears of it
        expect(actor.getSnapshot().status).toBe('done');
      }
    },
    async close() {
      actor.stop();
      api.failRequests(null);
      if (!(await isListening(api.port))) await api.resume();
    },
  };
}

const SCENARIOS = {
  'list, watch, a change, stop': [E.synced, E.changed, E.stop],
  'told what matters (issue 15), then the API server goes away and comes back': [
    E.synced,
    E.relevant,
    E.failed,
    E.backoff,
    E.synced,
    E.stop,
  ],
  'the API server goes away and comes back: back off, relist, watch again': [
    E.synced,
    E.failed,
    E.backoff,
    E.failed,
    E.backoff,
    E.synced,
    E.changed,
  ],
  'no API server at start: back off until it answers, report synced once': [E.failed, E.backoff, E.synced, E.stop],
  'a kind not served (no CRD): unserved, synced once, rechecked until it is served, then watched': [
    E.unserved,
    E.recheck,
    E.unserved,
    E.recheck,
    E.synced,
    E.changed,
  ],
};
const { paths } = pathsFor(resourceWatcherMachine, {
  events,
  key,
  input: INPUT,
  scenarios: SCENARIOS,
  everyStateWithin: Infinity,
});
const coverage = new Coverage(resourceWatcherMachine);
for (const path of paths) coverage.addModelPath(path);

beforeAll(async () => {
  api = await startApiServer({ seed: [ing('elsewhere', 'default')] as never, extraKinds: GATEWAY_RESOURCES });
  kc = new KubeConfig();
  kc.loadFromString(api.kubeconfigText);
  client = kc.makeApiClient(KubernetesObjectApi);
});
afterAll(() => api?.close());

describe('resource watcher: every path of the machine, against the test API server', () => {
  for (const path of paths) {
    it(
      path.name,
      async () => runPath(resourceWatcherMachine, path, await watcherWorld(), coverage, { stepTimeoutMs: 8000 }),
      30_000,
    );
  }

  it('walked every state and transition of the machine, in the model and for real', () => {
    console.log(coverage.summary());
    expect(coverage.missing()).toEqual({ model: [], real: [] });
  });
});
