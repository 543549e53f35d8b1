/**
 * Routes as data (issue 29), side by side in one run: two controllers, each in its own process with its own test API
 * server and nginx, on the same cluster (bench/fixtures.ts generateCluster: 10 % TLS and the annotated mix), one with
 * `--routes-as-data=true` (pushed) and one with `--routes-as-data=false` (rendered, today's default); both with the
 * Lua balancer and default flags otherwise. The modes alternate change by change.
 *
 * 1. Apply → served for each change kind (CHANGES), written through the API as kubectl would, one at a time: p50/p99,
 *    reloads (`nginx reloaded` lines) and pushes (`tables pushed`), and where the time went (the controller's
 *    `sync done` phases, the push's ms or the reload's `nginx -t` and confirm). "Served" is the first request through
 *    nginx, polled every POLL_MS, that gets the new answer (the backends say who they are).
 * 2. nginx.conf size, `nginx -t` time (quiet, on the controller's own nginx.conf), reload time (the controller's log),
 *    nginx memory (PSS of all its processes), controller start → first config served.
 * 3. Requests/s through a pushed route and a rendered location, 16 keep-alive connections, interleaved rounds, and
 * 4. the same through a stock nginx with a minimal keep-alive proxy config: the data plane's floor. The backend is a
 *    stock nginx answering itself (bench/bare-nginx.ts), so the figure is the proxy's, not a Node backend's.
 * 5. BENCH_STREAMS (20) streaming responses and as many WebSockets held open through every change (in the rendered
 *    mode only up to 1,000 Ingresses: there each change leaves a worker generation holding them): how many were cut,
 *    and after how many changes that are pushed (all but the new profile's) nginx's live workers were others.
 *
 * `npm run build && node_modules/.bin/node --expose-gc dist/bench/run.js routes-as-data`; BENCH_SIZES (100,1000,10000)
 * picks the cluster sizes, BENCH_REPS the repetitions per change kind (8 up to 1,000 Ingresses, 3 above: the rendered
 * mode takes tens of seconds per change there), BENCH_ROUNDS and BENCH_SECONDS the throughput rounds (5 of 4 s),
 * BENCH_MODES=pushed one mode alone (at 10,000 the rendered mode's reloads, alternating, load the machine under the
 * pushed changes too), BENCH_ONE_HOST=0 skips the one-host throughput, BENCH_KINDS a comma list of change kinds alone.
 */
import { loadavg } from 'node:os';
import { stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { nginxBinary, testConfig } from '../src/nginx/binary.js';
import { issueCertificate, type KeyPair } from '../src/tls/issue.js';
import { waitFor } from '../test/support/cluster.js';
import { ingress, ingressClass, serviceWithEndpoints, tlsSecret } from '../test/support/manifests.js';
import { get, startBackend, type Backend } from '../test/support/net.js';
import { startStreamer } from '../test/support/streams.js';
import { startBareNginx, startStaticNginx } from './bare-nginx.js';
import { startChildController, type ChildController, type LogLine } from './child-controller.js';
import { ANNOTATION_MIX, generateCluster, snapshotManifests } from './fixtures.js';
import { heldReport, type Held, liveWorkers, openLongLived } from './long-lived.js';
import { groupPssBytes, mb } from './proc.js';
import { median, percentile } from './stats.js';

const MODES = ['pushed', 'rendered'] as const;
type Mode = (typeof MODES)[number];
/** BENCH_MODES=pushed measures one mode alone (no other controller's reloads on the machine meanwhile) */
const ACTIVE = (process.env.BENCH_MODES ?? MODES.join(',')).split(',') as Mode[];

/**
 * The modes' flags. The pushed one logs at debug, where `tables pushed` is; the rendered one at info: at debug it
 * would also diff every nginx.conf (`nginx.conf changed`), megabytes at 10,000 Ingresses, which today's users at the
 * default level do not pay.
 */
const FLAGS: Record<Mode, string[]> = {
  pushed: ['--routes-as-data=true', '--log-level', 'debug'],
  rendered: ['--routes-as-data=false'],
};

const SIZES = (process.env.BENCH_SIZES ?? '100,1000,10000').split(',').map(Number);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 4);
const CONNECTIONS = 16;
const POLL_MS = 5;
const RPS_HOST = 'rps.bench';
const STREAM_HOST = 'stream.bench';
const STREAMS = Number(process.env.BENCH_STREAMS ?? 20);
const NAMESPACES = 50; // generateCluster's team-0 … team-49

/** reps is how many times each change kind is applied per mode at `n` Ingresses. */
const reps = (n: number) => Number(process.env.BENCH_REPS ?? (n > 1000 ? 3 : 8));

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Scene is one controller under test, with the indexes of the generated Ingresses its changes may take. */
interface Scene {
  readonly mode: Mode;
  readonly c: ChildController;
  readonly startMs: number;
}

/** Change is one change kind: `apply` writes it through the API, `served` says whether nginx answers the new way. */
interface Change {
  apply(): Promise<void>;
  served(): Promise<boolean>;
}

/** Plan gives each kind's r-th change for one cluster; both modes get the same changes on their own API servers. */
type Plan = Record<string, (c: ChildController, r: number) => Change>;

const KINDS = [
  'new-host',
  'new-path',
  'backend',
  'delete',
  'tls-host',
  'annotation-same-profile',
  'annotation-new-profile',
] as const;
/** BENCH_KINDS: a comma list of KINDS to run alone (a profile of pushed changes without the new profile's reloads) */
const RUN_KINDS = process.env.BENCH_KINDS
  ? KINDS.filter((k) => process.env.BENCH_KINDS!.split(',').includes(k))
  : KINDS;

/**
 * plan makes the changes on a cluster of n generated Ingresses. The Ingresses changed are plain ones (no annotation,
 * no TLS: answered by backend `a` on http) or, for the annotation changes, the mix's `enable-cors: "true"` ones (CORS
 * headers show on every answer); each change takes an Ingress no change took before, but the same-profile one toggles
 * one Ingress's enable-cors (both values other Ingresses have: the plain and the CORS profile) and the new-profile one
 * gives another an allowed origin nobody has. (proxy-body-size would be the obvious pick, but with routes as data every
 * body over the http level's 1m is refused before the router runs: see the report of issue 29's bench.)
 */
function plan(n: number, wildcard: KeyPair): Plan {
  const mixOf = (i: number) => ANNOTATION_MIX[i % ANNOTATION_MIX.length]!;
  const pick = (want: (i: number) => boolean) =>
    Array.from({ length: n - 1 }, (_, i) => i).filter((i) => i % 10 !== 0 && want(i));
  const plain = pick((i) => Object.keys(mixOf(i)).length === 0);
  const cors = pick((i) => mixOf(i)['enable-cors'] === 'true');
  if (plain.length < 3 * reps(n) || cors.length < 2) throw new Error(`too few Ingresses at n=${n} for the changes`);
  const ns = (i: number) => `team-${i % NAMESPACES}`;
  const ingressPath = (namespace: string, name = '') =>
    `/apis/networking.k8s.io/v1/namespaces/${namespace}/ingresses${name ? `/${name}` : ''}`;
  const host = (i: number) => `app-${i}.bench.local`;
  const rule = (h: string, paths: { path: string; service: string }[]) => ({
    host: h,
    http: {
      paths: paths.map((p) => ({
        path: p.path,
        pathType: 'Prefix',
        backend: { service: { name: p.service, port: { number: 80 } } },
      })),
    },
  });
  const answeredBy = async (h: string, path: string, port: number, backend: string) =>
    (await get({ host: h, path, port }).catch(() => ({ backend: undefined }))).backend === backend;
  const annotate = (c: ChildController, i: number, values: Record<string, string>): Promise<void> =>
    c
      .rawPatch(ingressPath(ns(i), `app-${i}`), {
        metadata: {
          annotations: Object.fromEntries(
            Object.entries(values).map(([k, v]) => [`nginx.ingress.kubernetes.io/${k}`, v]),
          ),
        },
      })
      .then(expectOk);
  return {
    'new-host': (c, r) => {
      const h = `new-${r}.bench.local`;
      return {
        apply: () =>
          c
            .send(
              'POST',
              ingressPath('team-0'),
              ingress(
                `new-${r}`,
                { [h]: [{ path: '/', service: 'bench-b' }] },
                {
                  namespace: 'team-0',
                },
              ),
            )
            .then(expectOk),
        served: () => answeredBy(h, '/', c.httpPort, 'b'),
      };
    },
    'new-path': (c, r) => {
      const i = plain[3 * r]!;
      return {
        apply: () =>
          c
            .rawPatch(ingressPath(ns(i), `app-${i}`), {
              spec: {
                rules: [
                  rule(host(i), [
                    { path: '/', service: `app-${i}` },
                    { path: '/api', service: `app-${i}` },
                    { path: `/new-${r}`, service: 'bench-b' },
                  ]),
                ],
              },
            })
            .then(expectOk),
        served: () => answeredBy(host(i), `/new-${r}`, c.httpPort, 'b'),
      };
    },
    backend: (c, r) => {
      const i = plain[3 * r + 1]!;
      return {
        apply: () =>
          c
            .rawPatch(ingressPath(ns(i), `app-${i}`), {
              spec: {
                rules: [
                  rule(host(i), [
                    { path: '/', service: 'bench-b' },
                    { path: '/api', service: `app-${i}` },
                  ]),
                ],
              },
            })
            .then(expectOk),
        served: () => answeredBy(host(i), '/', c.httpPort, 'b'),
      };
    },
    delete: (c, r) => {
      const i = plain[3 * r + 2]!;
      return {
        apply: () => c.send('DELETE', ingressPath(ns(i), `app-${i}`)).then(expectOk),
        served: async () =>
          (await get({ host: host(i), path: '/', port: c.httpPort }).catch(() => null))?.status === 404,
      };
    },
    'tls-host': (c, r) => {
      const h = `tls-new-${r}.bench.local`;
      return {
        apply: async () => {
          await c
            .send(
              'POST',
              '/api/v1/namespaces/team-0/secrets',
              tlsSecret(`tls-new-${r}`, wildcard.certPem, wildcard.keyPem, 'team-0'),
            )
            .then(expectOk);
          await c
            .send(
              'POST',
              ingressPath('team-0'),
              ingress(
                `tls-new-${r}`,
                { [h]: [{ path: '/', service: 'bench-b' }] },
                {
                  namespace: 'team-0',
                  tls: [{ hosts: [h], secretName: `tls-new-${r}` }],
                },
              ),
            )
            .then(expectOk);
        },
        served: async () => {
          const reply = await get({ host: h, path: '/', port: c.httpsPort, https: true }).catch(() => null);
          return reply?.backend === 'b' && reply.peerCertificate?.subject?.CN === '*.bench.local';
        },
      };
    },
    // enable-cors false on even repetitions (the plain profile), true again on odd ones (the mix's CORS profile)
    'annotation-same-profile': (c, r) => {
      const i = cors[0]!;
      return {
        apply: () => annotate(c, i, { 'enable-cors': r % 2 === 0 ? 'false' : 'true' }),
        served: async () => {
          const reply = await get({ host: host(i), path: '/', port: c.httpPort }).catch(() => null);
          return reply?.backend === 'a' && (reply.headers['access-control-allow-origin'] === '*') === (r % 2 === 1);
        },
      };
    },
    // an allowed origin no Ingress has: a location profile nginx.conf does not hold yet
    'annotation-new-profile': (c, r) => {
      const i = cors[1]!;
      const origin = `https://new-${r}.example.com`;
      return {
        apply: () => annotate(c, i, { 'cors-allow-origin': origin }),
        served: async () => {
          const reply = await get({ host: host(i), path: '/', port: c.httpPort, headers: { origin } }).catch(
            () => null,
          );
          return reply?.backend === 'a' && reply.headers['access-control-allow-origin'] === origin;
        },
      };
    },
  };
}

function expectOk(status: number): void {
  if (status < 200 || status >= 300) throw new Error(`the API server answered ${status}`);
}

/** Sample is one change through one controller: its times (epoch ms) and what its log lines say of it. */
interface Sample {
  readonly written: number;
  readonly servedAt: number;
}

/** Phases is where one change's time went, from the controller's log lines; null fields when the line is not there. */
interface Phases {
  /** write → its sync's start: the watch event's trip, the debounce and any rate-limit wait */
  debounce: number | null;
  /** the sync itself (snapshot, build, render) */
  sync: number | null;
  /** `tables pushed` ms: the control requests */
  push: number | null;
  /** the reload's `nginx -t` */
  nginxT: number | null;
  /** the whole reload: staging, `nginx -t`, signal, until new workers answer */
  reload: number | null;
  /** `sync done` → the push's start: the end of the sync, the queue's hand-off, what runs before the push actor */
  handoff: number | null;
  /** the push's end → served: nginx's workers taking the tables, the poll */
  tail: number | null;
}

/** phasesOf reads one change's lines: its sync is the first to start after the write, its push and reload the first after that sync, before `until` (the next change of the controller). */
function phasesOf(logs: readonly LogLine[], s: Sample, until: number): Phases {
  const sync = logs.find((l) => l.msg === 'sync done' && l.time - (l.ms as number) >= s.written - 1 && l.time < until);
  const after = (msg: string) => (sync ? logs.find((l) => l.msg === msg && l.time >= sync.time - 1) : undefined);
  const pushed = after('tables pushed');
  const reloaded = after('nginx reloaded');
  const inTime = (l: LogLine | undefined) => (l && l.time < until ? l : undefined);
  return {
    debounce: sync ? sync.time - (sync.ms as number) - s.written : null,
    sync: sync ? (sync.ms as number) : null,
    push: inTime(pushed) ? (pushed!.ms as number) : null,
    nginxT: inTime(reloaded) ? (reloaded!.test_ms as number) : null,
    reload: inTime(reloaded) ? (reloaded!.ms as number) : null,
    handoff: sync && inTime(pushed) ? pushed!.time - (pushed!.ms as number) - sync.time : null,
    tail: inTime(pushed) ? s.servedAt - pushed!.time : null,
  };
}

const count = (logs: readonly LogLine[], msg: string, from: number, to: number) =>
  logs.filter((l) => l.msg === msg && l.time >= from && l.time < to).length;

const fmt = (x: number) => (Math.abs(x) < 10 ? x.toFixed(1) : x.toFixed(0));
const p50 = (xs: readonly (number | null)[]) => {
  const known = xs.filter((x): x is number => x !== null);
  return known.length ? fmt(median(known)) : '-';
};

/**
 * printSizeRatios prints the pushed p50 at the largest size ÷ the one at the smallest (issue 29's target: within 1.5×),
 * per kind and over every pushed change pooled (the kinds that reloaded at either size, a new profile, left out).
 */
function printSizeRatios(bySize: ReadonlyMap<number, Record<Mode, Result>>): void {
  const [lo, hi] = [Math.min(...SIZES), Math.max(...SIZES)];
  const [small, large] = [bySize.get(lo)?.pushed, bySize.get(hi)?.pushed];
  if (!ACTIVE.includes('pushed') || lo === hi || !small || !large) return;
  const pooled: { small: number[]; large: number[] } = { small: [], large: [] };
  for (const kind of RUN_KINDS) {
    const [l, m] = [large.kinds.get(kind), small.kinds.get(kind)];
    if (!l || !m) continue;
    console.log(`bench routes-as-data: ${kind}: pushed p50 at n=${hi} ÷ at n=${lo} = ${ratio(l.p50, m.p50)}`);
    if (l.reloads > 0 || m.reloads > 0) continue;
    pooled.large.push(...l.totals);
    pooled.small.push(...m.totals);
  }
  if (pooled.small.length > 0 && pooled.large.length > 0) {
    const [pl, ps] = [median(pooled.large), median(pooled.small)];
    console.log(
      `bench routes-as-data: pushed changes pooled (${pooled.small.length} and ${pooled.large.length}): p50 ` +
        `${fmt(ps)} ms at n=${lo}, ${fmt(pl)} ms at n=${hi}: ÷ = ${ratio(pl, ps)} (target ≤ 1.5)`,
    );
  }
}

/** KindResult is one change kind's figures: apply → served of each change (`totals`, ms), their p50 and p99. */
interface KindResult {
  readonly p50: number;
  readonly p99: number;
  readonly reloads: number;
  readonly pushes: number;
  readonly n: number;
  readonly totals: readonly number[];
}

/** Result is one mode's figures at one size, for the ratio table. */
interface Result {
  readonly kinds: Map<string, KindResult>;
  readonly startMs: number;
  readonly confBytes: number;
  readonly nginxTMs: number;
  readonly reloadMs: number | null;
  readonly pssBytes: number;
  readonly pssEndBytes: number;
  readonly rps: number | null;
  /** the stock nginx's requests/s in the same rounds */
  readonly bareRps: number | null;
}

/** seed is the generated cluster of n Ingresses on backend a, with a Service bench-b (backend b) per namespace. */
function seed(n: number, wildcard: KeyPair, a: Backend, b: Backend, staticPort: number, streamPort: number): object[] {
  const snapshot = generateCluster(n, wildcard, { annotated: true, endpoint: { ip: '127.0.0.1', port: a.port } });
  return [
    ...snapshotManifests(snapshot),
    ...serviceWithEndpoints('bench-stream', [{ port: streamPort }], 'team-0'),
    ingress('bench-stream', { [STREAM_HOST]: [{ path: '/', service: 'bench-stream' }] }, { namespace: 'team-0' }),
    ...Array.from({ length: NAMESPACES }, (_, k) =>
      serviceWithEndpoints('bench-b', [{ port: b.port }], `team-${k}`),
    ).flat(),
    ...rpsScene(staticPort).slice(1),
  ];
}

/** rpsScene is the throughput Ingress: one host, one path, a stock nginx on 127.0.0.2 as its one endpoint. */
const rpsScene = (staticPort: number) => [
  ingressClass(),
  ...serviceWithEndpoints('rps', [{ ip: '127.0.0.2', port: staticPort }]),
  ingress('rps', { [RPS_HOST]: [{ path: '/', service: 'rps' }] }),
];

/** startScene starts one mode's controller and times it until `probeHost` is served. */
async function startScene(
  mode: Mode,
  objects: object[],
  probe: (c: ChildController) => Promise<boolean>,
): Promise<Scene> {
  const c = await startChildController(objects, FLAGS[mode]);
  const started = performance.now();
  await waitFor(`${mode}: the first config served`, () => probe(c), 1_800_000, POLL_MS);
  return { mode, c, startMs: performance.now() - started };
}

/** nginxPgid: nginx's master leads its own process group; the last one the controller started. */
const nginxPgid = (c: ChildController) => Number(c.logs.findLast((l) => l.msg === 'nginx master started')?.nginxPid);

/** quietNginxT runs `nginx -t` on the controller's nginx.conf `times` times, nothing else asked of nginx: the median ms. */
async function quietNginxT(c: ChildController, times: number): Promise<number> {
  const runs: number[] = [];
  for (let i = 0; i < times; i++) {
    const t = performance.now();
    const verdict = await testConfig(nginxBinary(), c.configDir, join(c.configDir, 'nginx.conf'));
    if (!verdict.ok) throw new Error(`nginx -t refused the controller's own nginx.conf: ${verdict.output}`);
    runs.push(performance.now() - t);
  }
  return median(runs);
}

/** load runs autocannon through nginx on `port` for SECONDS to RPS_HOST: requests/s, and the failures. */
async function load(port: number): Promise<{ rps: number; failed: number }> {
  const result = await new Promise<autocannon.Result>((resolve, reject) =>
    autocannon(
      {
        url: `http://127.0.0.1:${port}/bench`,
        headers: { host: RPS_HOST },
        connections: CONNECTIONS,
        duration: SECONDS,
      },
      (err, r) => (err ? reject(err) : resolve(r)),
    ),
  );
  return { rps: result.requests.average, failed: result.errors + result.non2xx };
}

/**
 * throughput loads each target (name → port) ROUNDS times, the order rotating every round: mean requests/s per target.
 */
async function throughput(label: string, targets: Record<string, number>): Promise<Record<string, number>> {
  const names = Object.keys(targets);
  for (const name of names) await load(targets[name]!); // warm: JIT, connections, the router's caches
  const rates: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
  const failed: Record<string, number> = Object.fromEntries(names.map((n) => [n, 0]));
  for (let round = 0; round < ROUNDS; round++)
    for (let k = 0; k < names.length; k++) {
      const name = names[(round + k) % names.length]!;
      const r = await load(targets[name]!);
      rates[name]!.push(r.rps);
      failed[name]! += r.failed;
    }
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const means = Object.fromEntries(names.map((n) => [n, mean(rates[n]!)]));
  console.log(
    `bench routes-as-data: rps ${label}: ${ROUNDS} rounds of ${SECONDS} s, ${CONNECTIONS} connections, rotating; ` +
      names.map((n) => `${n}=${means[n]!.toFixed(0)} [${rates[n]!.map((r) => r.toFixed(0)).join(' ')}]`).join(' ') +
      ` failed: ${names.map((n) => `${n}=${failed[n]}`).join(' ')} load=${loadavg()[0]!.toFixed(2)}`,
  );
  return means;
}

/** runSize measures one cluster size in both modes, changes alternating between them. */
async function runSize(
  n: number,
  wildcard: KeyPair,
  a: Backend,
  b: Backend,
  staticPort: number,
  bare: number,
  streamPort: number,
): Promise<Record<Mode, Result>> {
  const objects = seed(n, wildcard, a, b, staticPort, streamPort);
  const last = `app-${n - 1}.bench.local`; // the last Ingress generated: plain http on backend a
  const order: Mode[] = (SIZES.indexOf(n) % 2 === 1 ? (['rendered', 'pushed'] as const) : MODES).filter((m) =>
    ACTIVE.includes(m),
  );
  const scenes = {} as Record<Mode, Scene>;
  try {
    // One start at a time: each controller's start alone on the machine.
    for (const mode of order)
      scenes[mode] = await startScene(
        mode,
        objects,
        async (c) =>
          (await get({ host: last, path: '/', port: c.httpPort }).catch(() => ({ backend: undefined }))).backend ===
          'a',
      );
    await sleep(3000);
    const quiet = {} as Record<Mode, { conf: number; nginxT: number; pss: number }>;
    for (const mode of order) {
      const { c } = scenes[mode];
      quiet[mode] = {
        conf: (await stat(join(c.configDir, 'nginx.conf'))).size,
        nginxT: await quietNginxT(c, n > 1000 ? 1 : 3),
        pss: groupPssBytes(nginxPgid(c)),
      };
      console.log(
        `bench routes-as-data: n=${n} mode=${mode} start_to_served_ms=${fmt(scenes[mode].startMs)} ` +
          `nginx_conf_bytes=${quiet[mode].conf} nginx_t_quiet_ms=${fmt(quiet[mode].nginxT)} ` +
          `nginx_pss_mb=${mb(quiet[mode].pss)} load=${loadavg()[0]!.toFixed(2)}`,
      );
    }
    const held = new Map<Mode, Held>();
    for (const mode of order)
      if (STREAMS > 0 && (mode === 'pushed' || n <= 1000))
        held.set(mode, await openLongLived(scenes[mode].c.httpPort, STREAM_HOST, STREAMS));
    // pushed changes after which nginx's live workers were others (a new worker generation)
    const generations: Record<Mode, number> = { pushed: 0, rendered: 0 };
    const changes = plan(n, wildcard);
    const samples: Record<Mode, Map<string, Sample[]>> = { pushed: new Map(), rendered: new Map() };
    const writes: Record<Mode, number[]> = { pushed: [], rendered: [] };
    const total = reps(n);
    for (let r = 0; r < total; r++)
      for (const kind of RUN_KINDS)
        for (const mode of r % 2 === 0 ? order : [...order].reverse()) {
          const { c } = scenes[mode];
          const change = changes[kind]!(c, r);
          if (await change.served()) throw new Error(`${mode} ${kind} #${r}: served the new way before the change`);
          const workersBefore = liveWorkers(nginxPgid(c));
          const written = Date.now();
          writes[mode].push(written);
          await change.apply();
          await waitFor(`${mode} ${kind} #${r} served`, () => change.served(), 180_000, POLL_MS).catch((error) => {
            // what the controller did meanwhile: the reason is in there
            const lines = c.logs.filter((l) => l.time >= written && l.msg !== 'tables pushed').slice(-20);
            console.error(lines.map((l) => JSON.stringify(l).slice(0, 1500)).join('\n'));
            throw error;
          });
          const sample = { written, servedAt: Date.now() };
          // each change as it comes: a run cut short still says something
          console.log(
            `bench routes-as-data: n=${n} mode=${mode} change=${kind} #${r} served_ms=${sample.servedAt - written}`,
          );
          (samples[mode].get(kind) ?? samples[mode].set(kind, []).get(kind)!).push(sample);
          // its sync's line in, so that the next change's is its own
          await waitFor(
            'the sync done line',
            async () => c.logs.some((l) => l.msg === 'sync done' && l.time - (l.ms as number) >= written - 1),
            30_000,
            10,
          ).catch(() => undefined);
          await sleep(300);
          if (kind !== 'annotation-new-profile' && liveWorkers(nginxPgid(c)) !== workersBefore) generations[mode]++;
        }
    for (const [mode, connections] of held) {
      const r = await heldReport(connections);
      console.log(
        `bench routes-as-data: n=${n} mode=${mode} long_lived=${r.total} (${STREAMS} streams, ${STREAMS} websockets) ` +
          `cut=${r.cut} flowing=${r.flowing} new_worker_generations_after_pushable_changes=${generations[mode]}`,
      );
    }
    await sleep(5000);
    // BENCH_LOG_DUMP=<prefix>: each mode's controller log lines and the changes' times, for a closer look
    if (process.env.BENCH_LOG_DUMP)
      for (const mode of order)
        await writeFile(
          `${process.env.BENCH_LOG_DUMP}-${n}-${mode}.json`,
          JSON.stringify({ samples: Object.fromEntries(samples[mode]), logs: scenes[mode].c.logs }),
        );
    const results = {} as Record<Mode, Result>;
    for (const mode of order) {
      const { c, startMs } = scenes[mode];
      const end = Date.now();
      const nextWrite = (t: number) => writes[mode].find((w) => w > t) ?? end;
      const kinds = new Map<string, KindResult>();
      const reloadMs: number[] = [];
      for (const kind of RUN_KINDS) {
        const list = samples[mode].get(kind) ?? [];
        // BENCH_REPS=0: no change measured, the sizes, memory and throughput only
        if (list.length === 0) continue;
        const totals = list.map((s) => s.servedAt - s.written);
        const phases = list.map((s) => phasesOf(c.logs, s, nextWrite(s.written)));
        // what the lines do not cover: the wait for the reload rate limit (--sync-rate-limit), the poll's granularity
        const other = list.map((s, k) => {
          const p = phases[k]!;
          if (p.debounce === null || p.sync === null) return null;
          return s.servedAt - s.written - p.debounce - p.sync - (p.reload ?? p.push ?? 0);
        });
        const reloads = list.reduce(
          (sum, s) => sum + count(c.logs, 'nginx reloaded', s.written, nextWrite(s.written)),
          0,
        );
        const pushes = list.reduce(
          (sum, s) => sum + count(c.logs, 'tables pushed', s.written, nextWrite(s.written)),
          0,
        );
        for (const p of phases) if (p.reload !== null) reloadMs.push(p.reload);
        kinds.set(kind, { p50: median(totals), p99: percentile(totals, 99), reloads, pushes, n: list.length, totals });
        console.log(
          `bench routes-as-data: n=${n} mode=${mode} change=${kind} changes=${list.length} ` +
            `p50_ms=${fmt(median(totals))} p99_ms=${fmt(percentile(totals, 99))} reloads=${reloads} ` +
            `pushes=${mode === 'pushed' ? pushes : 'n/a(info)'} debounce_p50=${p50(phases.map((p) => p.debounce))} ` +
            `sync_p50=${p50(phases.map((p) => p.sync))} push_p50=${p50(phases.map((p) => p.push))} ` +
            `nginx_t_p50=${p50(phases.map((p) => p.nginxT))} reload_p50=${p50(phases.map((p) => p.reload))} ` +
            `other_p50=${p50(other)} handoff_p50=${p50(phases.map((p) => p.handoff))} ` +
            `tail_p50=${p50(phases.map((p) => p.tail))} ` +
            `all_ms=[${totals.map(fmt).join(' ')}]`,
        );
      }
      results[mode] = {
        kinds,
        startMs,
        confBytes: quiet[mode].conf,
        nginxTMs: quiet[mode].nginxT,
        reloadMs: reloadMs.length ? median(reloadMs) : null,
        pssBytes: quiet[mode].pss,
        pssEndBytes: groupPssBytes(nginxPgid(c)),
        rps: null,
        bareRps: null,
      };
      console.log(
        `bench routes-as-data: n=${n} mode=${mode} start_to_served_ms=${fmt(startMs)} nginx_conf_bytes=${quiet[mode].conf} ` +
          `nginx_t_quiet_ms=${fmt(quiet[mode].nginxT)} reload_p50_ms=${reloadMs.length ? fmt(median(reloadMs)) : '-'} ` +
          `nginx_pss_mb=${mb(quiet[mode].pss)} nginx_pss_after_changes_mb=${mb(results[mode].pssEndBytes)} ` +
          `load=${loadavg()[0]!.toFixed(2)}`,
      );
    }
    const rates = await throughput(`n=${n}`, {
      ...Object.fromEntries(order.map((mode) => [mode, scenes[mode].c.httpPort])),
      bare,
    });
    for (const mode of order) results[mode] = { ...results[mode], rps: rates[mode]!, bareRps: rates.bare! };
    return results;
  } finally {
    for (const mode of order) await scenes[mode]?.c.close();
  }
}

/** runOneHost: requests/s with one host in the cluster, both modes and the bare nginx floor. */
async function runOneHost(staticPort: number, bare: number): Promise<Record<string, number>> {
  const scenes: Scene[] = [];
  try {
    for (const mode of MODES)
      scenes.push(
        await startScene(
          mode,
          rpsScene(staticPort),
          async (c) =>
            (await get({ host: RPS_HOST, path: '/', port: c.httpPort }).catch(() => ({ status: 0 }))).status === 200,
        ),
      );
    return await throughput('hosts=1', { pushed: scenes[0]!.c.httpPort, rendered: scenes[1]!.c.httpPort, bare });
  } finally {
    for (const s of scenes) await s.c.close();
  }
}

const ratio = (x: number, y: number) => (y > 0 ? (x / y).toFixed(2) : '-');

/** runRoutesAsData runs every size, then prints the ratios. */
export async function runRoutesAsData(): Promise<void> {
  console.log(
    `bench routes-as-data: sizes=${SIZES.join(',')} load_at_start=${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  const wildcard = await issueCertificate({ commonName: '*.bench.local', dnsNames: ['*.bench.local'] });
  const [a, b] = [await startBackend('a'), await startBackend('b')];
  const streamer = await startStreamer();
  const backend = await startStaticNginx();
  const bareNginx = await startBareNginx(backend.port, '127.0.0.2');
  try {
    const one =
      process.env.BENCH_ONE_HOST === '0'
        ? { pushed: 0, rendered: 0, bare: 0 }
        : await runOneHost(backend.port, bareNginx.httpPort);
    const bySize = new Map<number, Record<Mode, Result>>();
    for (const n of SIZES)
      bySize.set(n, await runSize(n, wildcard, a, b, backend.port, bareNginx.httpPort, streamer.port));
    printSizeRatios(bySize);
    if (ACTIVE.length < 2) return;
    console.log('bench routes-as-data: ratios (pushed ÷ rendered unless said)');
    for (const [n, r] of bySize) {
      for (const kind of RUN_KINDS) {
        const [p, s] = [r.pushed.kinds.get(kind), r.rendered.kinds.get(kind)];
        if (!p || !s) continue;
        console.log(
          `  n=${n} ${kind}: p50 ${fmt(p.p50)}/${fmt(s.p50)} ms = ${ratio(p.p50, s.p50)}; p99 ${fmt(p.p99)}/${fmt(s.p99)} ms; ` +
            `reloads ${p.reloads}/${s.reloads} over ${p.n}/${s.n} changes`,
        );
      }
      console.log(
        `  n=${n} nginx.conf ${r.pushed.confBytes}/${r.rendered.confBytes} B = ${ratio(r.pushed.confBytes, r.rendered.confBytes)}; ` +
          `nginx -t ${fmt(r.pushed.nginxTMs)}/${fmt(r.rendered.nginxTMs)} ms; reload ${r.pushed.reloadMs === null ? '-' : fmt(r.pushed.reloadMs)}/` +
          `${r.rendered.reloadMs === null ? '-' : fmt(r.rendered.reloadMs)} ms; nginx PSS ${mb(r.pushed.pssBytes)}/${mb(r.rendered.pssBytes)} MB = ` +
          `${ratio(r.pushed.pssBytes, r.rendered.pssBytes)}; start → served ${fmt(r.pushed.startMs)}/${fmt(r.rendered.startMs)} ms; ` +
          `rps ${fmt(r.pushed.rps!)}/${fmt(r.rendered.rps!)} = ${ratio(r.pushed.rps!, r.rendered.rps!)}, ÷ bare nginx ` +
          `${ratio(r.pushed.rps!, r.pushed.bareRps!)} / ${ratio(r.rendered.rps!, r.rendered.bareRps!)}`,
      );
    }
    console.log(
      `  hosts=1 rps pushed/rendered = ${ratio(one.pushed!, one.rendered!)}; ÷ bare nginx: pushed ${ratio(one.pushed!, one.bare!)}, ` +
        `rendered ${ratio(one.rendered!, one.bare!)}`,
    );
    console.log(
      `bench routes-as-data: load_at_end=${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
    );
  } finally {
    await bareNginx.close();
    await backend.close();
    await a.close();
    await b.close();
    await streamer.close();
  }
}
