/**
 * The scene the annotation end-to-end tests share, in either of the two ways backends reach nginx:
 * `rendered`, manifests rendered by the real CLI (`render --out`, endpoints in nginx.conf) and a plain
 * nginx serving them; `lua`, the real controller (default flags: the Lua balancer, endpoints and
 * certificates pushed over its control socket) against the test API server. Both on free loopback
 * ports, with the same request helpers.
 */
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { stringify } from 'yaml';
import { afterAll, beforeAll } from 'vitest';
import { formatProblem } from '../../src/model/problems.js';
import type { Problem } from '../../src/model/nginx-model.js';
import { nginxSettled, startCluster, waitFor, type Cluster } from '../support/cluster.js';
import { ingress, ingressClass, serviceWithEndpoints } from '../support/manifests.js';
import { freePort, get, startBackend, type Backend, type Reply, type RequestOptions } from '../support/net.js';
import { startNginx, type RunningNginx } from '../support/nginx.js';

const CLI = new URL('../../bin/ingress-actors', import.meta.url).pathname;

/** ANN prefixes an annotation key. */
export const ann = (values: Record<string, string>): Record<string, string> =>
  Object.fromEntries(Object.entries(values).map(([k, v]) => [`nginx.ingress.kubernetes.io/${k}`, v]));

/** SceneMode is how backends reach nginx: rendered into nginx.conf, or pushed to the Lua balancer by the controller. */
export type SceneMode = 'rendered' | 'lua';

/** SCENE_MODES are both, for `describe.each`. */
export const SCENE_MODES: readonly SceneMode[] = ['rendered', 'lua'];

/** Scene is a config set served by a real nginx. */
export interface Scene {
  readonly mode: SceneMode;
  /** the folder nginx.conf is in */
  readonly dir: string;
  readonly httpPort: number;
  readonly httpsPort: number;
  /** the problems, one a line: what `render` printed on stderr, or the controller's after its first sync */
  readonly problems: string;
  /** the controller and its API server, in `lua` mode (a test changes objects through it) */
  readonly cluster: Cluster | null;
  http(host: string, path: string, extra?: Partial<RequestOptions>): Promise<Reply>;
  https(host: string, path: string, extra?: Partial<RequestOptions>): Promise<Reply>;
  stop(): Promise<void>;
}

/** SceneOptions are a ConfigMap ingress/config, extra flags (for `render` or the controller), and the mode. */
export interface SceneOptions {
  readonly configMap?: Record<string, string>;
  readonly flags?: string[];
  /** `rendered` unless given */
  readonly mode?: SceneMode;
  /** `lua` mode: the controller's log records go here (parsed JSON) */
  readonly logLines?: Record<string, unknown>[];
}

/** startScene serves `objects` (plus a ConfigMap ingress/config when given) with nginx, in `options.mode`. */
export async function startScene(objects: object[], options: SceneOptions = {}): Promise<Scene> {
  return options.mode === 'lua' ? startControllerScene(objects, options) : startRenderedScene(objects, options);
}

const withConfigMap = (objects: object[], data: Record<string, string> | undefined): object[] =>
  data
    ? [...objects, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { namespace: 'ingress', name: 'config' }, data }]
    : objects;

/**
 * startControllerScene runs the controller with the Lua balancer on `objects`, and gives the scene once its first
 * sync is served: nginx settled on it (tables pushed) and the problems of that sync known.
 */
async function startControllerScene(objects: object[], options: SceneOptions): Promise<Scene> {
  const flags = [...(options.configMap ? ['--configmap', 'ingress/config'] : []), ...(options.flags ?? [])];
  const cluster = await startCluster(
    withConfigMap(objects, options.configMap),
    flags,
    undefined,
    options.logLines ? { logLines: options.logLines } : {},
  );
  try {
    // nginx workers (nobody, under a root master) open the htpasswd files per request: let them pass through the
    // scratch folder (0711: no listing) to the config folder, whose own layout the controller sets.
    await chmod(cluster.dir, 0o711);
    const served = () =>
      nginxSettled(cluster.actor('nginx'))
        ? (cluster.actor('status')?.context.problems as readonly Problem[] | null | undefined)
        : null;
    const problems = (await waitFor('the first sync served', served, 30_000)) ?? [];
    // the controller falls back to rendered endpoints without the Lua module: this scene would test nothing new
    const conf = await readFile(join(cluster.config.configDir, 'nginx.conf'), 'utf8');
    if (!conf.includes('balancer_by_lua_block')) throw new Error('lua mode: nginx.conf does not use the Lua balancer');
    const httpPort = cluster.httpPort;
    const httpsPort = cluster.httpsPort;
    return {
      mode: 'lua',
      dir: cluster.config.configDir,
      httpPort,
      httpsPort,
      problems: problems.map(formatProblem).join('\n'),
      cluster,
      http: (host, path, extra = {}) => get({ host, path, port: httpPort, ...extra }),
      https: (host, path, extra = {}) => get({ host, path, port: httpsPort, https: true, ...extra }),
      stop: () => cluster.close(),
    };
  } catch (error) {
    await cluster.close();
    throw error;
  }
}

async function startRenderedScene(objects: object[], options: SceneOptions): Promise<Scene> {
  const dir = await mkdtemp(join(tmpdir(), 'ia-e2e-ann-'));
  // nginx workers (nobody, under a root master) open the htpasswd files per request: let them through.
  await chmod(dir, 0o755);
  const all = withConfigMap(objects, options.configMap);
  await writeFile(join(dir, 'manifests.yaml'), all.map((o) => stringify(o)).join('---\n'));
  const out = join(dir, 'conf');
  // Free ports are picked, then released: another test worker may take one before nginx binds it. That race is the
  // test machine's, not the controller's, so the scene starts again on other ports (and only for that reason).
  for (let attempt = 1; ; attempt++) {
    const [httpPort, httpsPort] = [await freePort(), await freePort()];
    const args = [
      'render',
      '--manifests',
      join(dir, 'manifests.yaml'),
      '--out',
      out,
      '--http-port',
      String(httpPort),
      '--https-port',
      String(httpsPort),
    ];
    if (options.configMap) args.push('--configmap', 'ingress/config');
    const rendered = await execa(CLI, [...args, ...(options.flags ?? [])], { reject: false });
    if (rendered.exitCode !== 0) throw new Error(`render failed: ${rendered.stderr}`);
    try {
      const nginx = await startNginx(out, httpPort);
      return renderedScene(dir, out, httpPort, httpsPort, rendered.stderr, nginx);
    } catch (error) {
      if (attempt < 3 && /Address already in use/.test(String(error))) {
        await rm(out, { recursive: true, force: true });
        continue;
      }
      await rm(dir, { recursive: true, force: true });
      throw error;
    }
  }
}

function renderedScene(
  dir: string,
  out: string,
  httpPort: number,
  httpsPort: number,
  problems: string,
  nginx: RunningNginx,
): Scene {
  return {
    mode: 'rendered',
    dir: out,
    httpPort,
    httpsPort,
    problems,
    cluster: null,
    http: (host, path, extra = {}) => get({ host, path, port: httpPort, ...extra }),
    https: (host, path, extra = {}) => get({ host, path, port: httpsPort, https: true, ...extra }),
    async stop() {
      await nginx.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** inBatches runs `count` calls of `fn`, `width` at a time, and returns their results in order. */
export async function inBatches<T>(count: number, width: number, fn: (i: number) => Promise<T>): Promise<T[]> {
  const results: T[] = [];
  for (let start = 0; start < count; start += width) {
    const batch = Array.from({ length: Math.min(width, count - start) }, (_, k) => fn(start + k));
    results.push(...(await Promise.all(batch)));
  }
  return results;
}

/** ALLOWED_CLIENT is the one client address the allowlisted scene lets in. */
export const ALLOWED_CLIENT = '10.9.8.7';

/**
 * allowlistedScene serves `allow.test/` (allowlist-source-range ALLOWED_CLIENT) from one echoing
 * backend with `configMap` (and `extra` objects, made once the file's earlier beforeAll ran, and render `flags`),
 * for the tests of client addresses behind a proxy. It registers the
 * file's beforeAll and afterAll, and gives the running scene.
 */
export function allowlistedScene(
  configMap: Record<string, string>,
  extra: () => object[] = () => [],
  flags: string[] = [],
): () => Scene {
  let backend: Backend | undefined;
  let scene: Scene | undefined;
  beforeAll(async () => {
    backend = await startBackend('app');
    scene = await startScene(
      [
        ingressClass(),
        ...serviceWithEndpoints('app', [{ port: backend.port }]),
        ingress(
          'allow',
          { 'allow.test': [{ path: '/', service: 'app' }] },
          { annotations: ann({ 'allowlist-source-range': `${ALLOWED_CLIENT}/32` }) },
        ),
        ...extra(),
      ],
      { configMap, flags },
    );
  }, 60_000);
  afterAll(async () => {
    await scene?.stop();
    await backend?.close();
  });
  return () => scene!;
}
