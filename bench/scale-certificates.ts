/**
 * Scale with certificates: the 10,000-Ingress cluster (10 % TLS) with host certificates rendered into
 * nginx.conf as files (`--dynamic-backends=false`) against served by Lua from the tables pushed over the
 * control socket (the default). Side by side in one run, modes alternating: `nginx -t` and a real
 * master's reload (SIGHUP until confirmed) of the same model, nginx's memory, then event to route for
 * one Ingress change through the controller in its own process, split into phases by its log lines.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { connect } from 'node:tls';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildModel } from '../src/model/build.js';
import { defaultBuildOptions } from '../src/model/build-types.js';
import { CONTROL_TOKEN_ENV } from '../src/nginx/control.js';
import { DynamicSplit } from '../src/sync/dynamic-split.js';
import type { DynamicTables } from '../src/model/pushed-tables.js';
import type { Certificate } from '../src/model/nginx-model.js';
import type { LuaSettings } from '../src/model/machine-settings.js';
import { createLogger } from '../src/log.js';
import { ConfigFolder } from '../src/nginx/apply.js';
import { nginxBinary } from '../src/nginx/binary.js';
import { prepareConfigDir } from '../src/nginx/files.js';
import { ControlChannel, newControlToken } from '../src/nginx/control.js';
import { checkLua } from '../src/nginx/lua.js';
import { spawnMaster, type Master } from '../src/nginx/master.js';
import { processes, processTitle } from '../src/nginx/proc.js';
import { loadTemplate } from '../src/render/load.js';
import { render } from '../src/render/render.js';
import { issueCertificate, type KeyPair } from '../src/tls/issue.js';
import { startChildController, type LogLine } from './child-controller.js';
import { attribute, summarize, type Phases } from './event-phases.js';
import { freshTemplate, generateCluster, snapshotManifests } from './fixtures.js';
import { runLuaModuleCost } from './lua-module-cost.js';
import { groupPssBytes, mb, rssBytes } from './proc.js';
import { ingress, serviceWithEndpoints } from '../test/support/manifests.js';
import { freePort, get, startBackend, waitForPort } from '../test/support/net.js';
import { waitFor } from '../test/support/cluster.js';

type Mode = 'files' | 'lua';
const MODES: readonly Mode[] = ['files', 'lua'];
/** WORKER is a ready worker's title (worker_processes auto: one per CPU). */
const WORKER = 'nginx: worker process';

const median = (xs: readonly number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const s = (ms: number) => (ms / 1000).toFixed(2);

/** Staged is one mode's config of the cluster, in a folder of its own, and its master once started. */
interface Staged {
  readonly mode: Mode;
  readonly dir: string;
  readonly text: string;
  readonly files: readonly Certificate[];
  readonly tables: DynamicTables | null;
  readonly httpPort: number;
  readonly httpsPort: number;
  master?: Master;
}

/** stageMode builds and renders the snapshot for one mode, as the sync actor does (DynamicSplit for Lua). */
async function stageMode(mode: Mode, snapshot: ReturnType<typeof generateCluster>, root: string): Promise<Staged> {
  const dir = join(root, mode);
  const [httpPort, httpsPort] = [await freePort(), await freePort()];
  let dynamic: LuaSettings | undefined;
  if (mode === 'lua') {
    await prepareConfigDir(dir);
    const check = await checkLua(nginxBinary(), dir);
    if (!check.ok) throw new Error(`the Lua balancer cannot run here: ${check.why}`);
    dynamic = check.settings;
  }
  const built = buildModel(snapshot, { ...defaultBuildOptions, httpPort, httpsPort, ...(dynamic ? { dynamic } : {}) });
  if (built.problems.length > 0) throw new Error(`unexpected problems (${mode}): ${built.problems.length}`);
  const split = mode === 'lua' ? new DynamicSplit().split(built.model) : null;
  const model = split?.model ?? built.model;
  const text = render(model, freshTemplate(await loadTemplate()));
  return { mode, dir, text, files: model.certificates, tables: split?.tables ?? null, httpPort, httpsPort };
}

/** startMaster runs a real master on the staged config and waits until it serves (pid file written, port open). */
async function startMaster(staged: Staged, token: string): Promise<Master> {
  const conf = join(staged.dir, 'nginx.conf');
  const env: Record<string, string> = staged.mode === 'lua' ? { [CONTROL_TOKEN_ENV]: token } : {};
  const master = spawnMaster(nginxBinary(), staged.dir, conf, createLogger({ level: 'error' }), env);
  const pidFile = join(staged.dir, 'nginx.pid');
  await waitFor(
    `the ${staged.mode} master's pid file`,
    async () => (await readFile(pidFile, 'utf8').catch(() => '')).trim() === String(master.pid),
    600_000,
    100,
  );
  await waitForPort(staged.httpPort, 60_000);
  return master;
}

/** servedCommonName is the subject CN nginx presents for `host` on the HTTPS port: the check that TLS is served. */
function servedCommonName(httpsPort: number, host: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port: httpsPort, servername: host, rejectUnauthorized: false }, () => {
      const cn = socket.getPeerCertificate().subject?.CN;
      socket.end();
      resolve(String(cn));
    });
    socket.setTimeout(30_000, () => socket.destroy(new Error('TLS handshake timed out')));
    socket.once('error', reject);
  });
}

/** quit stops a master gracefully, killing its group if it lingers. */
async function quit(master: Master): Promise<void> {
  master.quit();
  const timer = setTimeout(() => master.kill(), 30_000);
  await master.exited;
  clearTimeout(timer);
}

/** configFigures: `nginx -t` and reload of each mode's config, alternating modes, and nginx's PSS. */
async function configFigures(wildcard: KeyPair, n: number, runs: number): Promise<void> {
  const snapshot = generateCluster(n, wildcard);
  const root = await mkdtemp(join(tmpdir(), 'ia-scale-certs-'));
  const staged: Staged[] = [];
  try {
    for (const mode of MODES) staged.push(await stageMode(mode, snapshot, root));
    const tests = new Map<Mode, number[]>(MODES.map((m) => [m, []]));
    const writes = new Map<Mode, number[]>(MODES.map((m) => [m, []]));
    for (let r = 0; r < runs; r++)
      for (const st of staged) {
        // A new folder writer each run: every file written again, as at a controller's start.
        const result = await new ConfigFolder(nginxBinary(), st.dir).stage({ config: st.text, files: st.files });
        if (!result.ok) throw new Error(`nginx -t refused the ${st.mode} config: ${result.error}`);
        tests.get(st.mode)!.push(result.timings.testMs);
        writes.get(st.mode)!.push(result.timings.writeMs);
      }
    const reloads = new Map<Mode, number[]>(MODES.map((m) => [m, []]));
    const pss = new Map<Mode, number>();
    const masterRss = new Map<Mode, number>();
    const push = new Map<Mode, number>();
    const starts = new Map<Mode, number>();
    for (const st of staged) {
      const token = newControlToken();
      const t = performance.now();
      st.master = await startMaster(st, token);
      starts.set(st.mode, performance.now() - t);
      if (st.tables) {
        const channel = new ControlChannel(join(st.dir, 'control.sock'), token, 120_000);
        const p = performance.now();
        await channel.pushBackends(st.tables.backends);
        await channel.pushCertificates(st.tables.certificates);
        push.set(st.mode, performance.now() - p);
      }
      // Both modes must serve app-0's certificate, not the fallback, or the comparison means nothing.
      const cn = await servedCommonName(st.httpsPort, 'app-0.bench.local');
      if (cn !== '*.bench.local') throw new Error(`the ${st.mode} master serves ${cn} for app-0.bench.local`);
      // nginx binds and writes its pid before it forks the workers: count them all, or shared pages go uncounted.
      const master = st.master.pid;
      await waitFor(
        `the ${st.mode} master's workers`,
        () => processes().filter((p) => p.ppid === master && processTitle(p.pid) === WORKER).length >= cpus().length,
        120_000,
        100,
      );
      pss.set(st.mode, groupPssBytes(master));
      masterRss.set(st.mode, rssBytes(master));
    }
    for (let r = 0; r < runs; r++)
      for (const st of staged) {
        const t = performance.now();
        await st.master!.reload(600_000);
        reloads.get(st.mode)!.push(performance.now() - t);
      }
    for (const st of staged) {
      const cn = await servedCommonName(st.httpsPort, 'app-0.bench.local');
      if (cn !== '*.bench.local') throw new Error(`after reloads the ${st.mode} master serves ${cn}`);
    }
    const [files, lua] = [staged[0]!, staged[1]!];
    const ratio = (of: Map<Mode, number[]>) => (median(of.get('files')!) / median(of.get('lua')!)).toFixed(2);
    for (const st of staged)
      console.log(
        `bench scale-certificates config: mode=${st.mode} n=${n}` +
          ` conf_kb=${(Buffer.byteLength(st.text) / 1024).toFixed(0)}` +
          ` files=${st.files.length} write_ms=${median(writes.get(st.mode)!).toFixed(0)}` +
          ` nginx_t_s=${s(median(tests.get(st.mode)!))} (${tests.get(st.mode)!.map(s).join('/')})` +
          ` start_s=${s(starts.get(st.mode)!)} push_ms=${push.has(st.mode) ? push.get(st.mode)!.toFixed(0) : '-'}` +
          ` reload_s=${s(median(reloads.get(st.mode)!))} (${reloads.get(st.mode)!.map(s).join('/')})` +
          ` nginx_pss_mb=${mb(pss.get(st.mode)!)} master_rss_mb=${mb(masterRss.get(st.mode)!)}`,
      );
    console.log(
      `bench scale-certificates config: n=${n} runs=${runs} files/lua` +
        ` nginx_t=${ratio(tests)} reload=${ratio(reloads)}` +
        ` pss=${(pss.get('files')! / pss.get('lua')!).toFixed(2)} (medians; ${files.files.length} vs` +
        ` ${lua.files.length} files named in nginx.conf)`,
    );
  } finally {
    await Promise.all(staged.map((st) => (st.master ? quit(st.master) : undefined)));
    await rm(root, { recursive: true, force: true });
  }
}

/** clusterSeed is the generated cluster as API objects, plus Ingress `web` (bench.local → a) on real backends. */
function clusterSeed(wildcard: KeyPair, n: number, ports: readonly [number, number]): object[] {
  const snapshot = generateCluster(n, wildcard);
  return [
    ...snapshotManifests(snapshot),
    ...serviceWithEndpoints('a', [{ port: ports[0] }]),
    ...serviceWithEndpoints('b', [{ port: ports[1] }]),
    ingress('web', { 'bench.local': [{ path: '/', service: 'a' }] }),
  ];
}

/** eventToRoute: `changes` Ingress changes through a child controller in one mode, each until first served. */
async function eventToRoute(
  seed: object[],
  mode: Mode,
  changes: number,
): Promise<{ samples: Phases[]; confirms: number[]; firstRouteMs: number; reloads: number; syncs: number }> {
  const started = performance.now();
  const flags = ['--sync-rate-limit', '100', `--dynamic-backends=${mode === 'lua'}`];
  const c = await startChildController(seed, flags);
  try {
    const routed = (path: string, backend: string) => async () =>
      (await get({ host: 'bench.local', path, port: c.httpPort })).backend === backend;
    await waitFor(`the first route (${mode})`, routed('/', 'a'), 900_000, 500);
    const firstRouteMs = performance.now() - started;
    const firstRouted = Date.now();
    const reloaded = () => c.logs.filter((l) => l.msg === 'nginx reloaded');
    const syncs = () => c.logs.filter((l) => l.msg === 'sync done').length;
    // New workers serve before the reload is confirmed and logged: count from the line of the reload that routed.
    await waitFor(
      'the first reload logged',
      () => reloaded().some((l) => l.time - Number(l.confirm_ms) <= firstRouted),
      600_000,
      20,
    );
    const [before, syncsBefore] = [reloaded().length, syncs()];
    const samples: Phases[] = [];
    for (let i = 1; i <= changes; i++) {
      const [path, backend] = [`/r${i}`, i % 2 ? 'b' : 'a'];
      const written = Date.now();
      const status = await c.rawPatch('/apis/networking.k8s.io/v1/namespaces/default/ingresses/web', {
        spec: {
          rules: [
            {
              host: 'bench.local',
              http: {
                paths: [{ path, pathType: 'Prefix', backend: { service: { name: backend, port: { number: 80 } } } }],
              },
            },
          ],
        },
      });
      if (status !== 200) throw new Error(`patch answered ${status}`);
      // Polled every 20 ms: fine against reloads of seconds, and it leaves the CPU to nginx.
      await waitFor(`route ${path} (${mode})`, routed(path, backend), 600_000, 20);
      const at = Date.now();
      samples.push(
        (await waitFor('the sync and reload log lines', () => attribute(c.logs, written, at), 600_000, 20))!,
      );
    }
    const confirms = reloaded()
      .slice(before)
      .map((l: LogLine) => Number(l.confirm_ms));
    return { samples, confirms, firstRouteMs, reloads: reloaded().length - before, syncs: syncs() - syncsBefore };
  } finally {
    await c.close();
  }
}

/**
 * runScaleCertificates: the config figures (`runs` of each), then event to route (`changes` in each
 * mode; none: skipped). Counts are small because one `nginx -t` of this config takes seconds.
 */
export async function runScaleCertificates(n = 10_000, runs = 3, changes = 3): Promise<void> {
  const wildcard = await issueCertificate({ commonName: '*.bench.local', dnsNames: ['*.bench.local'] });
  // Why the Lua mode's config costs more per block than its lines suggest: first, on a plain config.
  await runLuaModuleCost();
  await configFigures(wildcard, n, runs);
  if (changes === 0) return;
  const backends = [await startBackend('a'), await startBackend('b')];
  try {
    const seed = clusterSeed(wildcard, n, [backends[0]!.port, backends[1]!.port]);
    for (const mode of MODES) {
      const { samples, confirms, firstRouteMs, reloads, syncs } = await eventToRoute(seed, mode, changes);
      console.log(
        `bench scale-certificates event-to-route: mode=${mode} n=${n} changes=${changes} ${summarize(samples)}` +
          ` confirm_ms=${confirms.map((ms) => ms.toFixed(0)).join('/')} syncs=${syncs} reloads=${reloads}` +
          ` first_route_s=${s(firstRouteMs)}`,
      );
    }
  } finally {
    await Promise.all(backends.map((b) => b.close()));
  }
}
