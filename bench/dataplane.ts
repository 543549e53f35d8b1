/**
 * The data plane against its floor (issue 29): requests/s through the controller's nginx at default flags (routes as
 * data, the Lua balancer, access log and request metrics on) ÷ a stock nginx with a minimal keep-alive proxy config
 * (bench/bare-nginx.ts), same backend (a stock nginx answering itself, bench/bare-nginx.ts), same load (16
 * keep-alive connections, bench/routes-as-data.ts's autocannon), rounds alternating, the order rotating every round.
 *
 * With BENCH_VARIANTS, the same rounds also run ablations: each variant is an edit of the controller's own nginx.conf
 * (VARIANTS below), applied to its nginx by SIGHUP just before the variant's round (the pushed tables live in shared
 * memory, which a reload keeps; the controller's own nginx.conf is put back after the run), so each is compared with
 * the default config and the stock nginx in the same rounds. This is where the per-request cost is read from.
 *
 * `npm run build && node_modules/.bin/node dist/bench/run.js dataplane`; BENCH_HOSTS (1,1000) the numbers of
 * Ingress hosts (each its own Ingress, all but one never asked), BENCH_ROUNDS (5) and BENCH_SECONDS (4) the rounds,
 * BENCH_VARIANTS a comma list of VARIANTS' names, BENCH_LUA_FLOOR=1 a third nginx in the rounds: the stock one with
 * Debian's Lua module and the three Lua phases a request of the controller's passes, each empty (what entering them
 * costs, whatever they do), BENCH_FLAGS extra controller flags, BENCH_BASELINE another checkout
 * (built: e.g. `git worktree add` or `git archive` of the commit before, `npm run build` there) whose controller runs in
 * the same rounds (`baseline`), BENCH_LUA_ALT a folder of Lua modules for the `lua-alt` variant, BENCH_DUMP a path prefix to write the controller's nginx.conf to.
 */
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { waitFor } from '../test/support/cluster.js';
import { ingress, ingressClass, serviceWithEndpoints } from '../test/support/manifests.js';
import { get } from '../test/support/net.js';
import { startBareNginx, startStaticNginx } from './bare-nginx.js';
import { startChildController, type ChildController } from './child-controller.js';
import { median } from './stats.js';

const HOSTS = (process.env.BENCH_HOSTS ?? '1,1000').split(',').map(Number);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 4);
const WARM_SECONDS = 1;
const CONNECTIONS = 16;
const RPS_HOST = 'rps.bench';
const FLAGS = (process.env.BENCH_FLAGS ?? '').split(' ').filter(Boolean);
/** BENCH_BASELINE: another checkout, built, whose controller runs beside this one's (before and after a change) */
const BASELINE = process.env.BENCH_BASELINE;
/** BENCH_LUA_FLOOR: the stock nginx with empty Lua phases in the rounds too ('bare+lua') */
const LUA_FLOOR = process.env.BENCH_LUA_FLOOR === '1';

/** Edit is one ablation: nginx.conf in, nginx.conf out; it throws when the text it edits is not there. */
type Edit = (conf: string, backendPort: number) => string;

/** replace is `conf` with `from` replaced by `to` everywhere; `from` must be there. */
function replace(conf: string, from: string | RegExp, to: string): string {
  const out = conf.replace(typeof from === 'string' ? new RegExp(escapeRegex(from), 'g') : from, to);
  if (out === conf) throw new Error(`the variant's edit found nothing to change: ${from}`);
  return out;
}

const escapeRegex = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** the shared server's `location /`, whole */
const ROUTER_LOCATION = /\n {8}location \/ \{\n[\s\S]*?\n {8}\}/;

/**
 * VARIANTS: what each ablation takes away from the default config. They change behaviour (that is the point): they
 * say what each part costs, not what could be shipped.
 */
const VARIANTS: Record<string, Edit> = {
  // the access log off
  'no-access-log': (c) => replace(c, /access_log (?!off)[^;]*;/, 'access_log off;'),
  // the access log written in 4 KB blocks (at most a second late) instead of a write per request
  'log-buffer': (c) => replace(c, /(access_log (?!off)[^;]*upstreaminfo);/, '$1 buffer=4k flush=1s;'),
  // no $request_id made per request (its RAND_bytes and getpid): X-Request-ID passed on from the client only
  'no-request-id': (c) => replace(c, '"" $request_id;', '"" "-";'),
  // the Lua modules of another folder (BENCH_LUA_ALT, holding ingress_actors/): a change to the Lua measured beside
  // the checkout's in the same rounds, without a second controller
  'lua-alt': (c) => replace(c, /lua_package_path "[^"]*";/, `lua_package_path "${luaAlt()}/?.lua;;";`),
  // the request metrics' log phase off (the balancer's log phase stays)
  'no-metrics': (c) => replace(c, ' require("ingress_actors.monitor").log()', ''),
  // no log_by_lua at all (the balancer's EWMA feed neither)
  'no-log-lua': (c) => replace(c, /\n\s*log_by_lua_block \{[^\n]*\}/, ''),
  // both logs off: the "0.76 with the log and metrics off"
  'no-logs': (c) => VARIANTS['no-metrics']!(VARIANTS['no-access-log']!(c, 0), 0),
  // no router: the shared server's `location /` is a rendered location of the loaded route (the http level's balancer
  // rewrite, the route's variables set as a rendered location sets them), so router and ngx.exec are what is left out
  'no-router': (c) =>
    replace(
      c,
      ROUTER_LOCATION,
      '\n        location / { set $ia_host "rps.bench"; set $ia_route "r"; set $proxy_upstream_name "default_rps_80"; ' +
        'proxy_pass http://upstream_balancer; }',
    ),
  // the router always jumps to the profile's named location (as before it served the plain profile in `location /`)
  'no-inline': (c) => replace(c, /(\.route\((?:true|false)), "[^"]*"\)/, '$1)'),
  // the proxy headers the http level sets (X-Request-ID and the X-Forwarded ones, through their maps) down to the
  // stock nginx's one: what ingress-nginx's headers cost
  'min-headers': (c) => replace(c, /(\n\s*proxy_set_header [^\n]*;)+/, '\n    proxy_set_header Connection "";'),
  // no Lua in the request at all: no router (as no-router), a plain upstream (as plain-upstream), no http-level
  // rewrite_by_lua nor log_by_lua (so no request metrics): the controller's config without its Lua
  'no-lua': (c, port) =>
    replace(
      replace(
        VARIANTS['plain-upstream']!(
          VARIANTS['no-router']!(c, port).replace('http://upstream_balancer;', 'http://ia_plain;'),
          port,
        ),
        /\n\s*rewrite_by_lua_block \{ require\("ingress_actors\.balancer"\)\.rewrite\(\) \}/,
        '',
      ),
      /\n\s*log_by_lua_block \{[^\n]*\}/,
      '',
    ),
  // no-lua, min-headers and no access log: what is left is the rest of the controller's config (maps, sets, headers-more)
  'stock-like': (c, port) =>
    VARIANTS['min-headers']!(VARIANTS['no-access-log']!(VARIANTS['no-lua']!(c, port), port), port),
  // the Lua balancer replaced by a plain upstream with keepalive (router, exec and logs as by default)
  'plain-upstream': (c, port) =>
    replace(
      replace(c, 'proxy_pass "http://upstream_balancer";', 'proxy_pass http://ia_plain;'),
      /upstream upstream_balancer \{/,
      `upstream ia_plain { server 127.0.0.2:${port}; keepalive 320; }\n    upstream upstream_balancer {`,
    ),
};

function luaAlt(): string {
  const dir = process.env.BENCH_LUA_ALT;
  if (!dir) throw new Error('the lua-alt variant needs BENCH_LUA_ALT, a folder holding ingress_actors/');
  return dir;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Load is one round's requests/s, its failures, and the CPU nginx's workers spent per request (µs). */
interface Load {
  readonly rps: number;
  readonly failed: number;
  readonly cpuUs: number;
}

/** cpuNs is the CPU time (ns, /proc's schedstat) the workers of nginx's master `master` have used so far. */
async function cpuNs(master: number): Promise<number> {
  let ns = 0;
  for (const pid of await workers(master)) {
    const stat = await readFile(`/proc/${pid}/schedstat`, 'utf8').catch(() => '0');
    ns += Number(stat.split(' ')[0]);
  }
  return ns;
}

/**
 * load runs autocannon through nginx on `port` for `seconds`: requests/s, failures, and the CPU the workers of nginx's
 * master `master` spent per request. The CPU figure does not depend on what else the machine runs as requests/s does
 * (2 shared cores): it is the steadier of the two for comparing configs.
 */
async function load(port: number, seconds: number, master: number): Promise<Load> {
  const before = await cpuNs(master);
  const result = await new Promise<autocannon.Result>((resolve, reject) =>
    autocannon(
      {
        url: `http://127.0.0.1:${port}/bench`,
        headers: { host: RPS_HOST },
        connections: CONNECTIONS,
        duration: seconds,
      },
      (err, r) => (err ? reject(err) : resolve(r)),
    ),
  );
  const ns = (await cpuNs(master)) - before;
  return {
    rps: result.requests.average,
    failed: result.errors + result.non2xx,
    cpuUs: result.requests.total > 0 ? ns / 1000 / result.requests.total : 0,
  };
}

/** workers are the pids of the children of nginx's master (Linux: /proc's children list of each of its threads). */
async function workers(master: number): Promise<Set<number>> {
  const pids = new Set<number>();
  for (const task of await readdir(`/proc/${master}/task`)) {
    const text = await readFile(`/proc/${master}/task/${task}/children`, 'utf8').catch(() => '');
    for (const p of text.split(' ').filter(Boolean)) pids.add(Number(p));
  }
  return pids;
}

/**
 * Nginx is the controller's nginx, switchable between its own config and a variant: `use` writes the config and
 * reloads when it differs from the one loaded, and returns once the old workers are gone.
 */
class Nginx {
  private loaded: string;
  constructor(
    private readonly c: ChildController,
    private readonly master: number,
    private readonly original: string,
  ) {
    this.loaded = original;
  }
  async use(conf: string): Promise<void> {
    if (conf === this.loaded) return;
    const before = await workers(this.master);
    await writeFile(join(this.c.configDir, 'nginx.conf'), conf);
    process.kill(this.master, 'SIGHUP');
    await waitFor(
      'the reload',
      async () => {
        const now = await workers(this.master);
        return now.size > 0 && [...now].every((p) => !before.has(p));
      },
      10_000,
      20,
    );
    this.loaded = conf;
  }
  restore = () => this.use(this.original);
}

/** seed is `hosts` Ingress hosts on one Service, the stock nginx on 127.0.0.2; RPS_HOST is the one loaded. */
function seed(hosts: number, backendPort: number): object[] {
  return [
    ingressClass(),
    ...serviceWithEndpoints('rps', [{ ip: '127.0.0.2', port: backendPort }]),
    ingress('rps', { [RPS_HOST]: [{ path: '/', service: 'rps' }] }),
    ...Array.from({ length: hosts - 1 }, (_, i) =>
      ingress(`h-${i}`, { [`h-${i}.bench.local`]: [{ path: '/', service: 'rps' }] }),
    ),
  ];
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

/** runHosts measures one number of hosts: the default config, each variant and the stock nginx, rotating. */
async function runHosts(
  hosts: number,
  backendPort: number,
  bare: { httpPort: number; pid: number },
  variants: string[],
  bareLua: { httpPort: number; pid: number } | null,
): Promise<void> {
  const started: ChildController[] = [];
  try {
    // the baseline first, each start alone on the machine
    const baseline = BASELINE ? await startServed(hosts, backendPort, BASELINE, started) : null;
    const c = await startServed(hosts, backendPort, undefined, started);
    const master = nginxMaster(c);
    const original = await readFile(join(c.configDir, 'nginx.conf'), 'utf8');
    if (process.env.BENCH_DUMP) await writeFile(`${process.env.BENCH_DUMP}-${hosts}.conf`, original);
    const nginx = new Nginx(c, master, original);
    const targets: { name: string; run: () => Promise<Load> }[] = [
      { name: 'bare', run: () => load(bare.httpPort, SECONDS, bare.pid) },
      ...(bareLua ? [{ name: 'bare+lua', run: () => load(bareLua.httpPort, SECONDS, bareLua.pid) }] : []),
      ...(baseline ? [{ name: 'baseline', run: () => load(baseline.httpPort, SECONDS, nginxMaster(baseline)) }] : []),
      ...['default', ...variants].map((name) => {
        const conf = name === 'default' ? original : VARIANTS[name]!(original, backendPort);
        return {
          name,
          run: async () => {
            await nginx.use(conf);
            await load(c.httpPort, WARM_SECONDS, master); // the new workers' JIT and connections
            return load(c.httpPort, SECONDS, master);
          },
        };
      }),
    ];
    await load(bare.httpPort, WARM_SECONDS, bare.pid);
    if (bareLua) await load(bareLua.httpPort, WARM_SECONDS, bareLua.pid);
    if (baseline) await load(baseline.httpPort, WARM_SECONDS, nginxMaster(baseline));
    const rates = new Map<string, number[]>(targets.map((t) => [t.name, []]));
    const cpu = new Map<string, number[]>(targets.map((t) => [t.name, []]));
    const failed = new Map<string, number>(targets.map((t) => [t.name, 0]));
    const logLines = c.logs.length;
    try {
      for (let round = 0; round < ROUNDS; round++)
        for (let k = 0; k < targets.length; k++) {
          const t = targets[(round + k) % targets.length]!;
          const r = await t.run();
          rates.get(t.name)!.push(r.rps);
          cpu.get(t.name)!.push(r.cpuUs);
          failed.set(t.name, failed.get(t.name)! + r.failed);
        }
    } finally {
      await nginx.restore();
    }
    // each round's ratio to the stock nginx of the same round (the machine's noise is shared within a round), and each
    // round's CPU per request to the default config's of the same round: their medians are the steadier figures
    const bareRates = rates.get('bare')!;
    const defaultCpu = cpu.get('default')!;
    for (const t of targets) {
      const rs = rates.get(t.name)!;
      const cs = cpu.get(t.name)!;
      const perRound = rs.map((r, i) => r / bareRates[i]!);
      const cpuVsDefault = cs.map((x, i) => x / defaultCpu[i]!);
      console.log(
        `bench dataplane: hosts=${hosts} ${t.name.padEnd(15)} rps=${mean(rs).toFixed(0).padStart(6)} ` +
          `÷bare: mean=${(mean(rs) / mean(bareRates)).toFixed(3)} median=${median(perRound).toFixed(3)} ` +
          `cpu_us/req: median=${median(cs).toFixed(1)} ÷default median=${median(cpuVsDefault).toFixed(3)} ` +
          `per-round ÷bare=[${perRound.map((x) => x.toFixed(2)).join(' ')}] cpu=[${cs.map((x) => x.toFixed(1)).join(' ')}] ` +
          `failed=${failed.get(t.name)}`,
      );
    }
    console.log(
      `bench dataplane: hosts=${hosts} controller log lines during the rounds: ${c.logs.length - logLines} ` +
        `load=${loadavg()[0]!.toFixed(2)}`,
    );
  } finally {
    for (const c of started) await c.close();
  }
}

/** nginxMaster is the pid of the last nginx master the controller started. */
const nginxMaster = (c: ChildController) => Number(c.logs.findLast((l) => l.msg === 'nginx master started')?.nginxPid);

/** startServed starts a controller (of checkout `root`) on `hosts` hosts and waits until RPS_HOST is served. */
async function startServed(
  hosts: number,
  backendPort: number,
  root: string | undefined,
  started: ChildController[],
): Promise<ChildController> {
  const c = await startChildController(seed(hosts, backendPort), FLAGS, root);
  started.push(c);
  await waitFor(
    'the rps host served',
    async () =>
      (await get({ host: RPS_HOST, path: '/', port: c.httpPort }).catch(() => ({ status: 0 }))).status === 200,
    600_000,
    20,
  );
  return c;
}

/** runDataplane measures every number of hosts in BENCH_HOSTS. */
export async function runDataplane(): Promise<void> {
  const variants = (process.env.BENCH_VARIANTS ?? '').split(',').filter(Boolean);
  for (const v of variants) if (!VARIANTS[v]) throw new Error(`unknown variant ${v}; known: ${Object.keys(VARIANTS)}`);
  console.log(
    `bench dataplane: hosts=${HOSTS.join(',')} rounds=${ROUNDS}x${SECONDS}s connections=${CONNECTIONS} ` +
      `variants=${variants.join(',') || '-'} load_at_start=${loadavg()[0]!.toFixed(2)}`,
  );
  const backend = await startStaticNginx();
  const bare = await startBareNginx(backend.port, '127.0.0.2');
  const bareLua = LUA_FLOOR ? await startBareNginx(backend.port, '127.0.0.2', { lua: true }) : null;
  try {
    for (const hosts of HOSTS) await runHosts(hosts, backend.port, bare, variants, bareLua);
  } finally {
    await bareLua?.close();
    await bare.close();
    await backend.close();
  }
  await sleep(0);
}
