/**
 * Endpoints without reloads, through the controller in its own process at default flags, each
 * benchmark once with the Lua balancer (`--dynamic-backends`, the default) and once with endpoints
 * rendered into nginx.conf (`--dynamic-backends=false`), side by side in one run:
 * rolling updates under keep-alive load, and an EndpointSlice write to the first request on the new pod.
 */
import { startChildController, type ChildController, type LogLine } from './child-controller.js';
import {
  appObjects,
  ask,
  failures,
  keepAliveClients,
  Pods,
  sliceEndpoints,
  SLICE_PATH,
  type EndpointState,
} from './pods.js';
import { groupPssBytes } from './proc.js';
import { freePort } from '../test/support/net.js';
import { waitFor } from '../test/support/wait.js';
import { median, percentile } from './stats.js';

/** MODES are the two ways the controller gives nginx its endpoints. */
const MODES = [
  { name: 'lua', flags: [] as string[] },
  { name: 'rendered', flags: ['--dynamic-backends=false'] },
] as const;

const mb1 = (bytes: number) => (bytes / 2 ** 20).toFixed(1);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const count = (c: ChildController, msg: string) => c.logs.filter((l) => l.msg === msg).length;
/** nginxPgid: nginx's master leads its own process group; the last one the controller started. */
const nginxPgid = (c: ChildController) => Number(c.logs.findLast((l) => l.msg === 'nginx master started')?.nginxPid);

/** withApp runs `run` on a child controller serving Service `app` with `ready` fresh pods, once it routes to them. */
async function withApp<T>(
  flags: readonly string[],
  ready: number,
  run: (c: ChildController, pods: Pods, live: string[]) => Promise<T>,
): Promise<T> {
  const pods = new Pods(await freePort());
  const live: string[] = [];
  for (let i = 0; i < ready; i++) live.push(await pods.start());
  const c = await startChildController(appObjects(pods.port, live), [...flags]);
  try {
    await waitFor('the first route', async () => (await ask(c.httpPort, false)).ok, 30_000, 20);
    // The new workers answer before the reload that started them is confirmed and logged: count from after it.
    await waitFor('the first reload', () => count(c, 'nginx reloaded') > 0, 30_000, 20);
    return await run(c, pods, live);
  } finally {
    await c.close();
    await pods.stopAll();
  }
}

/** sliceWriter writes the slice from `state()` each call, one write at a time, in call order. */
function sliceWriter(c: ChildController, state: () => (readonly [string, EndpointState])[]): () => Promise<void> {
  let chain = Promise.resolve();
  return () => {
    chain = chain.then(async () => {
      const status = await c.rawPatch(SLICE_PATH, { endpoints: sliceEndpoints(state()) });
      if (status !== 200) throw new Error(`the slice write answered ${status}`);
    });
    return chain;
  };
}

const ROLL_CLIENTS = 6;
const STEP_MS = 250;
const PRE_STOP_MS = 5000;

/**
 * rollingUpdates rolls Service `app` (3 pods) `rolls` times as a Deployment with maxSurge 1 and
 * maxUnavailable 0 does, under keep-alive clients that never retry: a new pod starts and is added
 * ready; STEP_MS later the oldest turns terminating (ready false, serving true) and the next pod
 * surges STEP_MS after that; PRE_STOP_MS after it turned terminating, the old pod stops and its
 * endpoint leaves the slice. Requests, failures, reloads and nginx's PSS before and after.
 */
async function rollingUpdates(mode: (typeof MODES)[number], rolls: number): Promise<void> {
  await withApp(mode.flags, 3, async (c, pods, live) => {
    const terminating = new Set<string>();
    const write = sliceWriter(c, () => [
      ...[...terminating].map((ip) => [ip, 'terminating'] as const),
      ...live.map((ip) => [ip, 'ready'] as const),
    ]);
    const load = keepAliveClients(c.httpPort, ROLL_CLIENTS, pods);
    await sleep(2000); // every worker has served and the clients' connections are open
    const failedCount = () => [...load.counts.failed.values()].reduce((a, b) => a + b, 0);
    const before = {
      pss: groupPssBytes(nginxPgid(c)),
      reloads: count(c, 'nginx reloaded'),
      syncs: count(c, 'sync done'),
      ok: load.counts.ok,
      failed: failedCount(),
      startedPods: pods.started,
    };
    pods.answered.clear();
    // Every 500 ms: one sample swings with the workers' Lua garbage collector, so "flat" compares the medians of
    // the first and the last tenth of the samples rather than two single readings.
    const samples: number[] = [before.pss];
    const sampler = setInterval(() => samples.push(groupPssBytes(nginxPgid(c))), 500);
    const started = performance.now();
    const stops: Promise<void>[] = [];
    // nginx's PSS after each quarter of the pods rolled: a leak grows with the rolls, noise does not.
    const trend: number[] = [before.pss];
    const quarter = Math.max(1, Math.round((rolls * 3) / 4));
    for (let step = 0; step < rolls * 3; step++) {
      if (step > 0 && step % quarter === 0) trend.push(groupPssBytes(nginxPgid(c)));
      live.push(await pods.start());
      await write();
      await sleep(STEP_MS);
      const old = live.shift()!;
      terminating.add(old);
      await write();
      stops.push(
        sleep(PRE_STOP_MS).then(async () => {
          terminating.delete(old);
          await Promise.all([write(), pods.stop(old)]);
        }),
      );
      await sleep(STEP_MS);
    }
    await Promise.all(stops);
    const rolledMs = performance.now() - started;
    // With rendered endpoints the last change may still wait for the rate token (1 / 0.3 s) and its reload.
    await sleep(5000);
    clearInterval(sampler);
    const after = { pss: groupPssBytes(nginxPgid(c)), ok: load.counts.ok, failed: failedCount() };
    trend.push(after.pss);
    samples.push(after.pss);
    const peak = Math.max(...samples);
    const tenth = Math.max(1, Math.floor(samples.length / 10));
    const [firstTenth, lastTenth] = [median(samples.slice(0, tenth)), median(samples.slice(-tenth))];
    await load.stop();
    const requests = after.ok + after.failed - before.ok - before.failed;
    const newPods = pods.started - before.startedPods;
    // Pods that answered a client during the rolls, of all that served in them (the first 3 and the new ones).
    const answered = `${pods.answered.size}/${pods.started}`;
    console.log(
      `bench rolling-updates: mode=${mode.name} rolls=${rolls} new_pods=${newPods} clients=${ROLL_CLIENTS} ` +
        `requests=${requests} errors=${after.failed - before.failed} ` +
        `reloads=${count(c, 'nginx reloaded') - before.reloads} ` +
        `syncs=${count(c, 'sync done') - before.syncs} nginx_pss_mb_before=${mb1(before.pss)} ` +
        `nginx_pss_mb_after=${mb1(after.pss)} nginx_pss_ratio=${(after.pss / before.pss).toFixed(3)} ` +
        `nginx_pss_mb_peak=${mb1(peak)} nginx_pss_mb_by_quarter=${trend.map(mb1).join(',')} ` +
        `nginx_pss_samples=${samples.length} nginx_pss_median_first_tenth=${mb1(firstTenth)} ` +
        `nginx_pss_median_last_tenth=${mb1(lastTenth)} nginx_pss_median_ratio=${(lastTenth / firstTenth).toFixed(3)} ` +
        `pods_answered=${answered} roll_s=${(rolledMs / 1000).toFixed(0)} ` +
        `errors_by_reason=${failures(load.counts)}`,
    );
  });
}

/** runRollingUpdates: 100 rolling updates with the Lua balancer, then the same with rendered endpoints. */
export async function runRollingUpdates(rolls = 100): Promise<void> {
  for (const mode of MODES) await rollingUpdates(mode, rolls);
}

/** EndpointPhases: one EndpointSlice write until the first request the new pod answers, in ms; they add up to total. */
interface EndpointPhases {
  readonly total: number;
  /** API write → the controller's watch event */
  readonly watch: number;
  /** watch event → sync start: the debounce and any rate-limit wait */
  readonly queue: number;
  /** snapshot, build, render */
  readonly sync: number;
  /**
   * sync done → tables pushed (Lua), or nginx reloaded (rendered: write, nginx -t, SIGHUP, new workers; the
   * reload's log line comes once it is confirmed, which may be after the first request: then `land` is 0)
   */
  readonly apply: number;
  /** → the first request answered by the new pod (includes the poller's 2 ms granularity) */
  readonly land: number;
}

const APPLIED = new Set(['tables pushed', 'nginx reloaded']);

/** phasesOf finds one change's log lines: the first watch event, sync and push or reload after `written`. */
function phasesOf(logs: readonly LogLine[], written: number, routed: number): EndpointPhases | undefined {
  const watch = logs.find((l) => l.msg === 'watch event' && l.kind === 'EndpointSlice' && l.time >= written);
  if (!watch) return undefined;
  // pino's time is in whole ms and the sync's length rounded: a start 1 ms before the watch line is the same sync.
  const sync = logs.find((l) => l.msg === 'sync done' && l.time - Number(l.ms) >= watch.time - 1);
  const applied = sync && logs.find((l) => APPLIED.has(l.msg) && l.time >= sync.time);
  if (!sync || !applied) return undefined;
  const syncStart = sync.time - Number(sync.ms);
  // A reload is logged once confirmed, which can be after the new workers served the first request.
  const appliedAt = Math.min(applied.time, routed);
  return {
    total: routed - written,
    watch: watch.time - written,
    queue: syncStart - watch.time,
    sync: Number(sync.ms),
    apply: appliedAt - sync.time,
    land: routed - appliedAt,
  };
}

const fmt = (n: number) => (Math.abs(n) < 10 ? n.toFixed(1) : n.toFixed(0));

/**
 * endpointToTraffic: `changes` times, a new pod starts and the slice is written to list only it;
 * then requests (a new connection every 2 ms) until one is answered by the new pod. Changes come
 * one after another, each once the previous one is served, as event-to-route's do.
 */
async function endpointToTraffic(mode: (typeof MODES)[number], changes: number): Promise<void> {
  await withApp([...mode.flags, '--log-level', 'debug'], 1, async (c, pods, live) => {
    const before = { reloads: count(c, 'nginx reloaded'), pushes: count(c, 'tables pushed') };
    const samples: EndpointPhases[] = [];
    for (let i = 0; i < changes; i++) {
      const fresh = await pods.start();
      const written = Date.now();
      const status = await c.rawPatch(SLICE_PATH, { endpoints: sliceEndpoints([[fresh, 'ready']]) });
      if (status !== 200) throw new Error(`the slice write answered ${status}`);
      await waitFor(
        'the new pod to answer',
        async () => {
          const answer = await ask(c.httpPort, false);
          return answer.ok && answer.pod === pods.nameOf(fresh);
        },
        20_000,
        2,
      );
      const routed = Date.now();
      samples.push((await waitFor('the log lines', () => phasesOf(c.logs, written, routed), 5000, 5))!);
      await pods.stop(live.shift()!);
      live.push(fresh);
    }
    const keys = ['watch', 'queue', 'sync', 'apply', 'land'] as const;
    const of = (k: keyof EndpointPhases) => samples.map((s) => s[k]);
    console.log(
      `bench endpoint-to-traffic: mode=${mode.name} changes=${changes} p50_ms=${fmt(percentile(of('total'), 50))} ` +
        `p99_ms=${fmt(percentile(of('total'), 99))} ` +
        keys.map((k) => `${k}_p50=${fmt(percentile(of(k), 50))} ${k}_p99=${fmt(percentile(of(k), 99))}`).join(' ') +
        ` reloads=${count(c, 'nginx reloaded') - before.reloads} pushes=${count(c, 'tables pushed') - before.pushes}`,
    );
  });
}

/** runEndpointToTraffic: 50 endpoint changes with the Lua balancer, then the same with rendered endpoints. */
export async function runEndpointToTraffic(changes = 50): Promise<void> {
  for (const mode of MODES) await endpointToTraffic(mode, changes);
}
