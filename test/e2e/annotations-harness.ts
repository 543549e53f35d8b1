/**
 * The scene the annotation end-to-end tests share: manifests rendered by the real CLI
 * (`render --out`), a real nginx serving them on free loopback ports, and request helpers.
 */
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { stringify } from 'yaml';
import { afterAll, beforeAll } from 'vitest';
import { ingress, ingressClass, serviceWithEndpoints } from '../support/manifests.js';
import { freePort, get, startBackend, type Backend, type Reply, type RequestOptions } from '../support/net.js';
import { startNginx, type RunningNginx } from '../support/nginx.js';

const CLI = new URL('../../bin/ingress-actors', import.meta.url).pathname;

/** ANN prefixes an annotation key. */
export const ann = (values: Record<string, string>): Record<string, string> =>
  Object.fromEntries(Object.entries(values).map(([k, v]) => [`nginx.ingress.kubernetes.io/${k}`, v]));

/** Scene is a rendered config set served by a real nginx. */
export interface Scene {
  readonly dir: string;
  readonly httpPort: number;
  readonly httpsPort: number;
  /** what `render` printed on stderr: the problems */
  readonly problems: string;
  http(host: string, path: string, extra?: Partial<RequestOptions>): Promise<Reply>;
  https(host: string, path: string, extra?: Partial<RequestOptions>): Promise<Reply>;
  stop(): Promise<void>;
}

/** startScene renders `objects` (plus a ConfigMap ingress/config when given) and starts nginx on them. */
export async function startScene(
  objects: object[],
  options: { configMap?: Record<string, string>; flags?: string[] } = {},
): Promise<Scene> {
  const dir = await mkdtemp(join(tmpdir(), 'ia-e2e-ann-'));
  // nginx workers (nobody, under a root master) open the htpasswd files per request: let them through.
  await chmod(dir, 0o755);
  const [httpPort, httpsPort] = [await freePort(), await freePort()];
  const all = options.configMap
    ? [
        ...objects,
        {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { namespace: 'ingress', name: 'config' },
          data: options.configMap,
        },
      ]
    : objects;
  await writeFile(join(dir, 'manifests.yaml'), all.map((o) => stringify(o)).join('---\n'));
  const out = join(dir, 'conf');
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
  let nginx: RunningNginx;
  try {
    nginx = await startNginx(out, httpPort);
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
  return {
    dir: out,
    httpPort,
    httpsPort,
    problems: rendered.stderr,
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
 * backend with `configMap`, for the tests of client addresses behind a proxy. It registers the
 * file's beforeAll and afterAll, and gives the running scene.
 */
export function allowlistedScene(configMap: Record<string, string>): () => Scene {
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
      ],
      { configMap },
    );
  }, 60_000);
  afterAll(async () => {
    await scene?.stop();
    await backend?.close();
  });
  return () => scene!;
}
