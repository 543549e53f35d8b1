/**
 * The WAF (issue 32), side by side in one run, the controller in its own process (default flags unless said):
 *
 * 1. nginx memory (PSS of the master and its workers) with n Ingresses, one host each, all with enable-modsecurity and
 *    enable-owasp-core-rules, against the same n without them, at BENCH_SIZES (1, 100, 1,000), in both modes: pushed
 *    (routes as data, the default: equal settings share one profile location) and rendered (`--dynamic-backends=false`:
 *    a location per path, each merging the rules parsed once at the http level). Target: ≤ 1.5× at 1,000.
 * 2. Requests/s and p99 through a location with the CRS on (blocking: the ConfigMap's `SecRuleEngine On`) against one
 *    without, on one controller, GET and a 64 KB POST (a JSON body the CRS reads whole), interleaved rounds. The
 *    backend is a stock nginx answering itself (bench/bare-nginx.ts), so the figures are the proxy's.
 *
 * 3. The floor under part 1: a bare nginx's PSS with the module, the CRS, and smaller subsets of it (bench/waf-floor.ts).
 *
 * `npm run build && node_modules/.bin/node dist/bench/run.js waf`; BENCH_SIZES, BENCH_MODES (pushed,rendered),
 * BENCH_ROUNDS and BENCH_SECONDS (5 rounds of 4 s), BENCH_MEMORY=0 skips part 1, BENCH_THROUGHPUT=0 part 2,
 * BENCH_FLOOR=0 part 3.
 */
import { loadavg } from 'node:os';
import autocannon from 'autocannon';
import { waitFor } from '../test/support/cluster.js';
import { ingress, ingressClass, serviceWithEndpoints } from '../test/support/manifests.js';
import { get } from '../test/support/net.js';
import { startChildController, type ChildController } from './child-controller.js';
import { runWafFloor } from './waf-floor.js';
import { groupPssBytes, mb } from './proc.js';
import { startStaticNginx } from './bare-nginx.js';
import { median } from './stats.js';

const SIZES = (process.env.BENCH_SIZES ?? '1,100,1000').split(',').map(Number);
const MODES = (process.env.BENCH_MODES ?? 'pushed,rendered').split(',') as ('pushed' | 'rendered')[];
const FLAGS = { pushed: [], rendered: ['--dynamic-backends=false'] } as const;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 4);
const CONNECTIONS = 16;
const WAF = { 'enable-modsecurity': 'true', 'enable-owasp-core-rules': 'true' };
const BUFFER = { 'client-body-buffer-size': '128k' };
const ann = (values: Record<string, string>) =>
  Object.fromEntries(Object.entries(values).map(([k, v]) => [`nginx.ingress.kubernetes.io/${k}`, v]));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** nginxPgid: nginx's master leads its own process group; the last one the controller started. */
const nginxPgid = (c: ChildController) => Number(c.logs.findLast((l) => l.msg === 'nginx master started')?.nginxPid);

const served = (c: ChildController, host: string) =>
  waitFor(
    `${host} served`,
    async () => (await get({ host, path: '/', port: c.httpPort }).catch(() => ({ status: 0 }))).status === 200,
    300_000,
  );

/** memory is nginx's PSS with n Ingresses, with the WAF or without, once the last host is served and settled. */
async function memory(mode: 'pushed' | 'rendered', n: number, waf: boolean, backendPort: number): Promise<number> {
  const seed = [
    ingressClass(),
    ...serviceWithEndpoints('app', [{ ip: '127.0.0.2', port: backendPort }]),
    ...Array.from({ length: n }, (_, i) =>
      ingress(
        `app-${i}`,
        { [`app-${i}.bench`]: [{ path: '/', service: 'app' }] },
        waf ? { annotations: ann(WAF) } : {},
      ),
    ),
  ];
  const c = await startChildController(seed, [...FLAGS[mode]]);
  try {
    await served(c, `app-${n - 1}.bench`);
    await sleep(3_000); // the workers' first requests and Lua's first tables settled
    return groupPssBytes(nginxPgid(c));
  } finally {
    await c.close();
  }
}

/** load runs autocannon against `host` on `port`; POST when `body` is given. */
function load(port: number, host: string, body?: string): Promise<autocannon.Result> {
  return new Promise((resolve, reject) =>
    autocannon(
      {
        url: `http://127.0.0.1:${port}/api/items?page=2`,
        headers: {
          host,
          ...(body ? { 'content-type': 'application/json' } : {}),
        },
        ...(body ? { method: 'POST' as const, body } : {}),
        connections: CONNECTIONS,
        duration: SECONDS,
      },
      (err, r) => (err ? reject(err) : resolve(r)),
    ),
  );
}

/**
 * jsonBody is about `bytes` of an ordinary JSON API body: a document with a title and a long text, as a CMS or a
 * comment API takes. (A 64 KB body of thousands of small fields costs the CRS about a second each: every rule runs
 * on every argument; BENCH_POST_FIELDS=1 sends that instead.)
 */
function jsonBody(bytes: number): string {
  if (process.env.BENCH_POST_FIELDS === '1') {
    const items: object[] = [];
    for (let i = 0; JSON.stringify({ items }).length < bytes; i++)
      items.push({ id: i, name: `widget ${i}`, colour: ['blue', 'green', 'red'][i % 3], price: 9.99 + i });
    return JSON.stringify({ items });
  }
  const words = ['lorem', 'ipsum', 'dolor', 'sit', 'amet', 'consectetur', 'adipiscing', 'elit', 'sed', 'do', 'eiusmod'];
  let text = '';
  for (let i = 0; text.length < bytes - 100; i++) text += `${words[i % words.length]}${i % 17 === 16 ? '. ' : ' '}`;
  return JSON.stringify({ title: 'Release notes', tags: ['news', 'product'], body: text });
}

async function throughput(backendPort: number): Promise<void> {
  const seed = [
    ingressClass(),
    ...serviceWithEndpoints('app', [{ ip: '127.0.0.2', port: backendPort }]),
    // a 64 KB body in memory: run as root, the controller's nginx workers cannot write its temp files (a 500)
    ingress('waf', { 'waf.bench': [{ path: '/', service: 'app' }] }, { annotations: ann({ ...WAF, ...BUFFER }) }),
    ingress('plain', { 'plain.bench': [{ path: '/', service: 'app' }] }, { annotations: ann(BUFFER) }),
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { namespace: 'ingress', name: 'config' },
      // blocking, as a WAF in production
      data: { 'modsecurity-snippet': 'SecRuleEngine On' },
    },
  ];
  const c = await startChildController(seed, ['--configmap', 'ingress/config']);
  const body = jsonBody(64 * 1024);
  try {
    await served(c, 'waf.bench');
    await served(c, 'plain.bench');
    const probe = await get({ host: 'waf.bench', path: '/?id=1%27%20OR%20%271%27%3D%271%27%20--', port: c.httpPort });
    if (probe.status !== 403)
      throw new Error(`the WAF does not block (${probe.status}): the bench would measure nothing`);
    const kinds = { get: undefined, post: body } as const;
    const rows: Record<string, { rps: number[]; p99: number[]; failed: number; codes: Record<string, number> }> = {};
    for (const host of ['waf.bench', 'plain.bench'])
      for (const kind of Object.keys(kinds)) await load(c.httpPort, host, kinds[kind as keyof typeof kinds]); // warm
    for (let round = 0; round < ROUNDS; round++) {
      const hosts = round % 2 === 0 ? ['waf.bench', 'plain.bench'] : ['plain.bench', 'waf.bench'];
      for (const kind of Object.keys(kinds) as (keyof typeof kinds)[])
        for (const host of hosts) {
          const r = await load(c.httpPort, host, kinds[kind]);
          const row = (rows[`${host} ${kind}`] ??= { rps: [], p99: [], failed: 0, codes: {} });
          row.rps.push(r.requests.average);
          row.p99.push(r.latency.p99);
          row.failed += r.errors + r.non2xx;
          for (const [code, { count = 0 }] of Object.entries(r.statusCodeStats ?? {}))
            if (code !== '200') row.codes[code] = (row.codes[code] ?? 0) + count;
        }
    }
    for (const kind of Object.keys(kinds)) {
      const on = rows[`waf.bench ${kind}`]!;
      const off = rows[`plain.bench ${kind}`]!;
      console.log(
        `bench waf: ${kind === 'get' ? 'GET' : `POST ${(body.length / 1024).toFixed(0)} KB JSON`}, ${ROUNDS} rounds of ` +
          `${SECONDS} s, ${CONNECTIONS} connections: requests/s CRS on ${median(on.rps).toFixed(0)} ` +
          `[${on.rps.map((r) => r.toFixed(0)).join(' ')}], off ${median(off.rps).toFixed(0)} ` +
          `[${off.rps.map((r) => r.toFixed(0)).join(' ')}], on/off ×${(median(on.rps) / median(off.rps)).toFixed(2)}; ` +
          `p99 ${median(on.p99)} vs ${median(off.p99)} ms (×${(median(on.p99) / Math.max(1, median(off.p99))).toFixed(2)}); ` +
          `failed ${on.failed} ${JSON.stringify(on.codes)} / ${off.failed} ${JSON.stringify(off.codes)}`,
      );
    }
  } finally {
    await c.close();
  }
}

/** runWaf prints nginx's memory with the WAF on vs off, and the CRS's cost per request. */
export async function runWaf(): Promise<void> {
  const backend = await startStaticNginx();
  try {
    for (const mode of process.env.BENCH_MEMORY === '0' ? [] : MODES)
      for (const n of SIZES) {
        const off = await memory(mode, n, false, backend.port);
        const on = await memory(mode, n, true, backend.port);
        console.log(
          `bench waf: ${mode}, ${n} Ingresses: nginx PSS with the WAF and CRS ${mb(on)} MB, without ${mb(off)} MB, ` +
            `×${(on / off).toFixed(2)} (load average ${loadavg()[0]!.toFixed(1)})`,
        );
      }
    if (process.env.BENCH_THROUGHPUT !== '0') await throughput(backend.port);
    if (process.env.BENCH_FLOOR !== '0') await runWafFloor();
  } finally {
    await backend.close();
  }
}
