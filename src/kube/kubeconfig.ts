import { existsSync } from 'node:fs';
import { delimiter } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { UsageError } from '../usage-error.js';
import type { Logger } from '../log.js';
import { KubeconfigError } from './kubeconfig-error.js';

// its own module, so the CLI names it without loading the Kubernetes client
export { KubeconfigError } from './kubeconfig-error.js';

/** loadFile loads one kubeconfig file; a missing file stays a system error (`path: no such file`), bad YAML names it. */
function loadFile(kc: KubeConfig, path: string): void {
  try {
    kc.loadFromFile(path);
  } catch (error) {
    if (typeof (error as { code?: unknown }).code === 'string') throw error;
    const why = ((error as Error).message ?? String(error)).split('\n')[0];
    throw new KubeconfigError(`${path} is not a kubeconfig: ${why}`);
  }
}

/** KubeconfigSource says where the controller's API server credentials came from, for the start's log line. */
export type KubeconfigSource =
  | { readonly from: 'flag'; readonly path: string }
  | { readonly from: 'KUBECONFIG'; readonly paths: readonly string[] }
  | { readonly from: 'in-cluster' };

/**
 * loadKubeConfig finds the API server as kubectl does, then as ingress-nginx does in a pod: `--kubeconfig`, else the
 * files `KUBECONFIG` lists (separated by ':'; missing ones skipped, and for each cluster, user and context name, and
 * the current context, the first file that sets it wins, as kubectl merges them), else the service account of the
 * pod it runs in. Neither a file nor a pod is a UsageError saying what to give.
 */
export function loadKubeConfig(
  flag: string | null,
  env: NodeJS.ProcessEnv = process.env,
): { kc: KubeConfig; source: KubeconfigSource } {
  const kc = new KubeConfig();
  if (flag) {
    loadFile(kc, flag);
    return { kc, source: { from: 'flag', path: flag } };
  }
  const listed = (env.KUBECONFIG ?? '').split(delimiter).filter((path) => path !== '');
  if (listed.length > 0) {
    const paths = listed.filter((path) => existsSync(path));
    if (paths.length === 0)
      throw new UsageError(
        `KUBECONFIG names no file that exists (${listed.join(delimiter)}): give --kubeconfig, or fix or unset KUBECONFIG`,
      );
    mergeFirstWins(kc, paths);
    return { kc, source: { from: 'KUBECONFIG', paths } };
  }
  if (!env.KUBERNETES_SERVICE_HOST)
    throw new UsageError(
      'no API server to watch: give --kubeconfig or set KUBECONFIG, or run in a pod (KUBERNETES_SERVICE_HOST is unset)',
    );
  kc.loadFromCluster();
  return { kc, source: { from: 'in-cluster' } };
}

/** mergeFirstWins loads several kubeconfig files into `kc`: for each name, and the current context, the first wins. */
function mergeFirstWins(kc: KubeConfig, paths: readonly string[]): void {
  const files = paths.map((path) => {
    const one = new KubeConfig();
    loadFile(one, path);
    return one;
  });
  const firstByName = <T extends { readonly name: string }>(lists: readonly (readonly T[])[]): T[] => {
    const byName = new Map<string, T>();
    for (const list of lists) for (const item of list) if (!byName.has(item.name)) byName.set(item.name, item);
    return [...byName.values()];
  };
  kc.loadFromOptions({
    clusters: firstByName(files.map((f) => f.clusters)),
    users: firstByName(files.map((f) => f.users)),
    contexts: firstByName(files.map((f) => f.contexts)),
    currentContext: files.map((f) => f.currentContext).find((name) => !!name) ?? '',
  });
}

/** kubeConfigFromEnv loads the API server's kubeconfig (flag, KUBECONFIG, in-cluster) and says which it used. */
export function kubeConfigFromEnv(flag: string | null, log: Logger, env: NodeJS.ProcessEnv): KubeConfig {
  const { kc, source } = loadKubeConfig(flag, env);
  const server = kc.getCurrentCluster()?.server ?? '';
  if (source.from === 'KUBECONFIG') log.info({ kubeconfig: source.paths, server }, 'API server from KUBECONFIG');
  else log.info({ kubeconfig: source.from === 'flag' ? source.path : 'in-cluster', server }, 'API server');
  return kc;
}
