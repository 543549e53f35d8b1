/**
 * What the Gateway API data path costs per request (issue 20): the same backend (a stock nginx answering 200 itself)
 * served through one controller-rendered nginx with the Lua balancer (a) by an Ingress, (b) by an HTTPRoute with one
 * PathPrefix rule, (c) by an HTTPRoute host whose router walks 99 rules (a regex path that matches, then headers,
 * Exact and RegularExpression, that do not) to reach the 100th, (d) by an HTTPRoute with a RequestHeaderModifier,
 * (e) by an HTTPRoute with a RequestMirror at 0 % (its server has the two `mirror` directives, the mirror
 * subrequests start and end at once). Beside it runs a second nginx with the same config whose `mirror` directives
 * are stripped, for the plain route: the cost of the idle mirror slots in a server that has them. Each case gets the
 * same fixed number of requests from autocannon per round, rounds interleaved (the order turns every round); the
 * medians of requests/s, p50 and p99 are compared with the Ingress's.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { buildModel } from '../src/model/build.js';
import { defaultBuildOptions, type BuildOptions } from '../src/model/build-types.js';
import { CONTROL_SOCKET, CONTROL_TOKEN_ENV } from '../src/nginx/control.js';
import { DynamicSplit } from '../src/sync/dynamic-split.js';
import type { Snapshot } from '../src/model/snapshot.js';
import { pushTables } from '../src/actors/nginx.js';
import { ControlChannel, newControlToken } from '../src/nginx/control.js';
import { writeConfigSet } from '../src/nginx/files.js';
import { LUA_FOLDER } from '../src/nginx/lua.js';
import { modulesPath } from '../src/nginx/modules.js';
import { nginxBinary } from '../src/nginx/binary.js';
import { loadTemplate } from '../src/render/load.js';
import { render } from '../src/render/render.js';
import { CONTROLLER, gateway, gatewayClass, listener, namespace, route } from '../test/gateway/fixtures.js';
import { ingress, ingressClass, serviceWithEndpoints, snapshotOf } from '../test/support/manifests.js';
import { freePort } from '../test/support/net.js';
import { startNginx } from '../test/support/nginx.js';
import { startStaticNginx } from './bare-nginx.js';
import { MAX_REGEX_WEIGHT_PER_HOST } from '../src/model/regex-budget.js';
import { regexWeight } from '../src/model/regex-path.js';

const AMOUNT = Number(process.env.BENCH_REQUESTS ?? 10_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 9);
const CONNECTIONS = 16;
/** The rules the walk host's router tries before the one that matches (the spec allows 16 rules per route). */
const WALKED = 99;
const RULES_PER_ROUTE = 15;

/** A case: the host it is served under, the request's path and headers. */
interface Case {
  readonly name: string;
  readonly host: string;
  readonly path: string;
  readonly headers?: Record<string, string>;
  /** served by the nginx whose mirror directives were stripped */
  readonly stripped?: boolean;
}

const CASES: readonly Case[] = [
  { name: 'ingress', host: 'ingress.bench', path: '/bench/x' },
  { name: 'plain', host: 'plain.bench', path: '/bench/x' },
  { name: 'walk100', host: 'walk.bench', path: '/bench/x', headers: { 'x-tenant': 'none', 'x-zone': 'nowhere' } },
  { name: 'header-modifier', host: 'header.bench', path: '/bench/x', headers: { 'x-remove': 'me' } },
  { name: 'mirror-idle', host: 'mirror.bench', path: '/bench/x' },
  { name: 'plain-no-mirror-directives', host: 'plain.bench', path: '/bench/x', stripped: true },
];

const to = [{ name: 'bench', port: 80 }];

/**
 * walkRoutes are the walk host's routes: WALKED rules whose path fits but headers do not, then `/`. A host's regexes
 * have a budget (MAX_REGEX_WEIGHT_PER_HOST, issue 27): the first rules have a regex path and a regex header while it
 * lasts (the costliest walk a host can have), the rest a PathPrefix path and Exact headers.
 */
function walkRoutes(): Record<string, unknown>[] {
  let budget = MAX_REGEX_WEIGHT_PER_HOST;
  const rules = Array.from({ length: WALKED }, (_, i) => {
    const exact = { name: 'X-Tenant', value: `t${i}` };
    const path = `/bench/[a-z]+(/item-${i})?`;
    const zone = `z${i}-[a-z]+`;
    const weight = regexWeight(path, 'both') + regexWeight(zone, 'both');
    const regexes = weight <= budget;
    if (regexes) budget -= weight;
    const second = regexes
      ? { type: 'RegularExpression', name: 'X-Zone', value: zone }
      : { name: 'X-Zone', value: zone };
    return {
      matches: [
        {
          path: regexes ? { type: 'RegularExpression', value: path } : { type: 'PathPrefix', value: '/bench' },
          // half try the second header first, so both kinds of header match are walked
          headers: i % 2 === 0 ? [second, exact] : [exact, second],
        },
      ],
      backendRefs: to,
    };
  });
  const routes: Record<string, unknown>[] = [];
  for (let i = 0; i < rules.length; i += RULES_PER_ROUTE)
    routes.push(
      route(`walk-${routes.length}`, { hostnames: ['walk.bench'], rules: rules.slice(i, i + RULES_PER_ROUTE) }),
    );
  routes.push(route('walk-last', { hostnames: ['walk.bench'], rules: [{ backendRefs: to }] }));
  return routes;
}

function snapshot(backendPort: number): Snapshot {
  const objects = [
    ingressClass(),
    ...serviceWithEndpoints('bench', [{ ip: '127.0.0.2', port: backendPort }]),
    ingress('bench', { 'ingress.bench': [{ path: '/', service: 'bench' }] }),
    {
      kind: 'ConfigMap',
      metadata: { namespace: 'ingress', name: 'config' },
      data: { 'disable-access-log': 'true', 'worker-processes': '1' },
    },
    gatewayClass(),
    gateway([listener('http')]),
    route('plain', { hostnames: ['plain.bench'], rules: [{ backendRefs: to }] }),
    ...walkRoutes(),
    route('header', {
      hostnames: ['header.bench'],
      rules: [
        {
          filters: [
            {
              type: 'RequestHeaderModifier',
              requestHeaderModifier: {
                set: [{ name: 'X-Bench', value: 'set' }],
                add: [{ name: 'X-Added', value: 'added' }],
                remove: ['X-Remove'],
              },
            },
          ],
          backendRefs: to,
        },
      ],
    }),
    route('mirror', {
      hostnames: ['mirror.bench'],
      rules: [
        {
          filters: [{ type: 'RequestMirror', requestMirror: { backendRef: { name: 'bench', port: 80 }, percent: 0 } }],
          backendRefs: to,
        },
      ],
    }),
    namespace('default'),
  ] as Record<string, unknown>[];
  return snapshotOf(objects);
}

/** MIRROR_DIRECTIVE is one `mirror` line of a Gateway server (the internal locations may stay: nothing calls them). */
const MIRROR_DIRECTIVE = /^\s*mirror \/_ia_gateway_mirror\/\d;\n/gm;

interface Served {
  readonly port: number;
  /** its one worker process */
  readonly worker: number;
  /** mirror directives in the nginx.conf it runs */
  readonly mirrors: number;
  /** the position of the walk host's matching rule in its routes, and their count */
  readonly walk: string;
  close(): Promise<void>;
}

/** dynamicOptions are the controller's build options for Lua-routed Ingresses and Gateways on `port`, run in `dir`. */
export async function dynamicOptions(dir: string, port: number): Promise<BuildOptions> {
  const modules = await modulesPath(nginxBinary());
  return {
    ...defaultBuildOptions,
    configMap: 'ingress/config',
    httpPort: port,
    httpsPort: await freePort(),
    listenAddress: '127.0.0.1',
    dynamic: {
      modules: [join(modules, 'ndk_http_module.so'), join(modules, 'ngx_http_lua_module.so')],
      packagePath: `${LUA_FOLDER}/?.lua;;`,
      controlSocket: join(dir, CONTROL_SOCKET),
      requestMetrics: false,
    },
    gateway: { controllerName: CONTROLLER },
  };
}

type Split = ReturnType<DynamicSplit['split']>;

/**
 * startDynamic writes `text` (rendered with dynamicOptions(dir, port)) to `dir`, runs nginx on it with its one worker
 * and pushes `tables` as the controller does; close stops nginx and removes `dir`.
 */
export async function startDynamic(
  dir: string,
  port: number,
  text: string,
  certificates: Split['model']['certificates'],
  tables: Split['tables'],
): Promise<{ readonly worker: number; close(): Promise<void> }> {
  await writeConfigSet(dir, text, certificates);
  const token = newControlToken();
  process.env[CONTROL_TOKEN_ENV] = token;
  const nginx = await startNginx(dir, port);
  const workers = execFileSync('pgrep', ['-P', String(nginx.process.pid)], { encoding: 'utf8' })
    .trim()
    .split('\n');
  if (workers.length !== 1) throw new Error(`expected one nginx worker, found ${workers.length}`);
  await pushTables(new ControlChannel(join(dir, CONTROL_SOCKET), token), tables, null);
  return {
    worker: Number(workers[0]),
    close: async () => {
      await nginx.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** serve renders the bench config as the controller does, runs nginx on it and pushes the tables. */
async function serve(backendPort: number, stripMirrors: boolean): Promise<Served> {
  const dir = await mkdtemp(join(tmpdir(), `ia-bench-gw-${stripMirrors ? 'nomirror' : 'rendered'}-`));
  const port = await freePort();
  const options = await dynamicOptions(dir, port);
  const result = buildModel(snapshot(backendPort), options);
  const refused = result.problems.filter((p) => p.kind === 'HTTPRoute' || p.kind === 'Ingress' || p.kind === 'Gateway');
  if (refused.length > 0) throw new Error(`bench objects refused: ${JSON.stringify(refused)}`);
  const { model, tables } = new DynamicSplit().split(result.model);
  const rendered = render(model, await loadTemplate());
  const text = stripMirrors ? rendered.replace(MIRROR_DIRECTIVE, '') : rendered;
  const nginx = await startDynamic(dir, port, text, model.certificates, tables);
  const walk = tables.routes.servers.find((s) => s.key === `${port}/walk.bench`);
  const last = walk?.routes.findIndex((r) => r.route.startsWith('default/walk-last')) ?? -1;
  return {
    port,
    worker: nginx.worker,
    mirrors: text.match(MIRROR_DIRECTIVE)?.length ?? 0,
    walk: `${last + 1} of ${walk?.routes.length ?? 0}`,
    close: nginx.close,
  };
}

interface Figures {
  readonly rps: number;
  readonly p50: number;
  readonly p99: number;
  /** the nginx worker's CPU time per request, µs (/proc/PID/schedstat: on-CPU ns, whatever else runs) */
  readonly cpu: number;
  readonly failed: number;
}

/** cpuNs is a process's time on a CPU so far, in ns (the first field of /proc/PID/schedstat). */
export const cpuNs = (pid: number) => Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]);

/**
 * load sends AMOUNT requests for a case through nginx on `port`: requests/s until the last answer, and latency
 * percentiles from each answer's time as autocannon measures it (its own histogram keeps whole milliseconds, too
 * coarse for answers under one).
 */
async function load(served: Served, c: Case): Promise<Figures> {
  const { port, worker } = served;
  const times: number[] = [];
  const cpuBefore = cpuNs(worker);
  const started = performance.now();
  let ended = started;
  const r = await new Promise<autocannon.Result>((resolve, reject) => {
    const run = autocannon(
      {
        url: `http://127.0.0.1:${port}${c.path}`,
        headers: { host: c.host, ...c.headers },
        connections: CONNECTIONS,
        amount: AMOUNT,
        sampleInt: 100,
      },
      (err, result) => (err ? reject(err) : resolve(result)),
    );
    run.on('response', (_client: unknown, _status: number, _bytes: number, ms: number) => {
      times.push(ms);
      ended = performance.now();
    });
  });
  // the wall time until the last answer (autocannon reports on its next sample tick)
  const seconds = (ended - started) / 1000;
  const cpu = (cpuNs(worker) - cpuBefore) / 1000 / r.requests.total;
  times.sort((a, b) => a - b);
  const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))] ?? Number.NaN;
  return { rps: r.requests.total / seconds, p50: at(0.5), p99: at(0.99), cpu, failed: r.errors + r.non2xx };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** runGatewayRouting prints each case's requests/s, p50 and p99 (medians of the rounds) and its ratios to the Ingress. */
export async function runGatewayRouting(): Promise<void> {
  const loadBefore = loadavg();
  const backend = await startStaticNginx();
  const rendered = await serve(backend.port, false);
  const stripped = await serve(backend.port, true);
  try {
    const nginxOf = (c: Case) => (c.stripped ? stripped : rendered);
    for (const c of CASES) {
      const warm = await load(nginxOf(c), c); // JIT, connections, the regex cache
      // a case that does not reach the backend measures nothing
      if (warm.failed > AMOUNT / 100) throw new Error(`bench case ${c.name}: ${warm.failed} requests failed`);
    }
    const runs = new Map<string, Figures[]>(CASES.map((c) => [c.name, []]));
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? CASES : [...CASES].reverse();
      for (const c of order) runs.get(c.name)!.push(await load(nginxOf(c), c));
    }
    // each round's figures against the same round's reference: the machine's load moves both alike
    const ratios = (name: string, ref: string, key: keyof Omit<Figures, 'failed'>) =>
      runs.get(name)!.map((f, i) => f[key] / runs.get(ref)![i]![key]);
    const line = (name: string, ref: string) => {
      const fs = runs.get(name)!;
      const rps = ratios(name, ref, 'rps');
      return (
        `  ${name}: ${median(fs.map((f) => f.rps)).toFixed(0)} req/s (x${median(rps).toFixed(3)}; per round ` +
        `${rps.map((r) => r.toFixed(2)).join(' ')}), p50 ${median(fs.map((f) => f.p50)).toFixed(3)} ms ` +
        `(x${median(ratios(name, ref, 'p50')).toFixed(2)}), p99 ${median(fs.map((f) => f.p99)).toFixed(3)} ms ` +
        `(x${median(ratios(name, ref, 'p99')).toFixed(2)}), worker CPU ${median(fs.map((f) => f.cpu)).toFixed(1)} us ` +
        `per request (x${median(ratios(name, ref, 'cpu')).toFixed(3)}); failed ${fs.reduce((a, f) => a + f.failed, 0)}`
      );
    };
    console.log(
      `bench gateway-routing: ${ROUNDS} rounds of ${AMOUNT} requests per case, ${CONNECTIONS} connections, ` +
        `interleaved; one nginx worker; load average before ${loadBefore.map((l) => l.toFixed(2)).join(' ')}, ` +
        `after ${loadavg()
          .map((l) => l.toFixed(2))
          .join(' ')}; mirror directives in the rendered nginx.conf: ${rendered.mirrors}; walk host's matching ` +
        `rule: ${rendered.walk}; medians of the rounds, ratios (x) the median of each round's case / Ingress\n` +
        `${CASES.filter((c) => !c.stripped)
          .map((c) => line(c.name, 'ingress'))
          .join(
            '\n',
          )}\n  plain, rendered / mirror directives stripped:\n${line('plain', 'plain-no-mirror-directives')}`,
    );
  } finally {
    await rendered.close();
    await stripped.close();
    await backend.close();
  }
}
