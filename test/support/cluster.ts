/**
 * A controller under test: the test API server (real HTTPS, real list/watch), client-node as the
 * only way in, the controller's actor system in this process, and a real nginx it runs.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { Writable } from 'node:stream';
import { Agent, request as httpsRequest } from 'node:https';
import { join } from 'node:path';
import { KubeConfig, KubernetesObjectApi, PatchStrategy, type KubernetesObject } from '@kubernetes/client-node';
import { pino } from 'pino';
import type { AnyActorRef } from 'xstate';
import { parseControllerFlags } from '../../src/cli/controller-flags.js';
import type { ControllerConfig } from '../../src/config.js';
import { startApiServer, type ApiServer } from '../../src/dev/api-server/server.js';
import type { ResourceDef } from '../../src/dev/api-server/resources.js';
import type { WebhookCertTimings } from '../../src/http/webhook-self-signed.js';
import { startController, type Controller } from '../../src/main.js';
import { testControllerFlags } from './controller-flags.js';

/** Cluster is a running API server and controller, with helpers to change and observe them. */
export interface Cluster {
  readonly api: ApiServer;
  readonly client: KubernetesObjectApi;
  readonly controller: Controller;
  readonly config: ControllerConfig;
  readonly httpPort: number;
  readonly httpsPort: number;
  /** the --healthz-port: /healthz and /metrics */
  readonly healthzPort: number;
  readonly dir: string;
  apply(obj: object): Promise<KubernetesObject>;
  patch(obj: object): Promise<KubernetesObject>;
  /** rawPatch sends one JSON merge patch over a keep-alive HTTPS connection: fast enough for bursts */
  rawPatch(path: string, body: object): Promise<number>;
  remove(obj: object): Promise<void>;
  /** every state value a child actor passed through, microsteps included (from the inspector) */
  readonly visited: (id: string) => string[];
  /** the snapshot of a child actor by its systemId (`nginx`, `syncQueue`, `template`, …) */
  actor(id: string): { value: unknown; context: Record<string, unknown>; status: string } | undefined;
  close(): Promise<void>;
}

export { waitFor } from './wait.js';

/**
 * nginxSettled says whether the nginx actor is running with nothing queued: new workers serve before their
 * reload is confirmed and counted, so reload counts are read from a settled nginx.
 */
export const nginxSettled = (nginx: { value: unknown; context: Record<string, unknown> } | undefined): boolean =>
  JSON.stringify(nginx?.value) === '{"alive":"running"}' && nginx?.context.pending === null;

/** queueIdle says whether a sync queue state value is `idle` (settling or quiet after a sync). */
export const queueIdle = (value: unknown): boolean => typeof value === 'object' && value !== null && 'idle' in value;

/**
 * ClusterOptions are the extras a test may need: the controller's environment (POD_NAME, …), and a log of every API
 * request.
 */
export interface ClusterOptions {
  readonly env?: NodeJS.ProcessEnv;
  readonly onRequest?: (line: { method: string; url: string; status: number }) => void;
  /** the controller's log lines go here (parsed JSON), not to stderr */
  readonly logLines?: Record<string, unknown>[];
  /** passed on to startController: the self-made webhook certificate's rechecks and retries */
  readonly webhookCertTimings?: Partial<WebhookCertTimings>;
  /** passed on to startController: how often a watcher lists an unserved kind again */
  readonly unservedRecheckMs?: number;
  /** passed on to startApiServer: kinds served beside its own (the Gateway API's, say) */
  readonly extraKinds?: readonly ResourceDef[];
}

/** startCluster starts the API server seeded with `seed`, then the controller with `flags`. */
export async function startCluster(
  seed: object[],
  flags: string[] = [],
  logLevel = process.env.TEST_LOG ?? 'silent',
  options: ClusterOptions = {},
): Promise<Cluster> {
  const api = await startApiServer({
    seed: seed as never,
    ...(options.onRequest ? { onRequest: options.onRequest } : {}),
    ...(options.extraKinds ? { extraKinds: options.extraKinds } : {}),
  });
  const dir = await mkdtemp(join(tmpdir(), 'ia-cluster-'));
  const kubeconfig = join(dir, 'kubeconfig');
  await api.writeKubeconfig(kubeconfig);
  const { flags: first, httpPort, httpsPort, healthzPort } = await testControllerFlags(kubeconfig, join(dir, 'nginx'));
  const parsed = parseControllerFlags([
    ...first,
    '--sync-rate-limit',
    '10',
    '--drain-timeout',
    '1',
    '--shutdown-timeout',
    '5',
    ...flags,
  ]);
  if (!('config' in parsed)) throw new Error('unexpected --help');
  const config = parsed.config;
  const lines = options.logLines;
  const log = lines
    ? pino(
        { level: logLevel === 'silent' ? 'info' : logLevel },
        new Writable({
          write(chunk: Buffer, _encoding, done) {
            lines.push(JSON.parse(chunk.toString('utf8')));
            done();
          },
        }),
      )
    : pino({ level: logLevel }, pino.destination(2));
  const visits = new Map<string, string[]>();
  const controller = await startController(config, log, {
    ...(options.env ? { env: options.env } : {}),
    ...(options.webhookCertTimings ? { webhookCertTimings: options.webhookCertTimings } : {}),
    ...(options.unservedRecheckMs === undefined ? {} : { unservedRecheckMs: options.unservedRecheckMs }),
    inspect: (event) => {
      if (event.type !== '@xstate.microstep' && event.type !== '@xstate.snapshot') return;
      const value = (event.snapshot as { value?: unknown }).value;
      if (value === undefined) return;
      const id = (event.actorRef as AnyActorRef).id;
      const list = visits.get(id) ?? [];
      const name = JSON.stringify(value);
      if (list.at(-1) !== name) list.push(name);
      visits.set(id, list);
    },
  });
  const kc = new KubeConfig();
  kc.loadFromString(api.kubeconfigText);
  const client = kc.makeApiClient(KubernetesObjectApi);
  const patcher = mergePatcher(api);
  const withNamespace = (obj: object) => {
    const o = obj as KubernetesObject;
    return o.kind === 'IngressClass' || o.metadata?.namespace
      ? o
      : { ...o, metadata: { ...o.metadata, namespace: 'default' } };
  };
  return {
    api,
    client,
    controller,
    config,
    httpPort,
    httpsPort,
    healthzPort,
    dir,
    apply: async (obj) => {
      const o = withNamespace(obj);
      try {
        const current = await client.read(o as never);
        return await client.replace({
          ...o,
          metadata: { ...o.metadata, resourceVersion: current.metadata?.resourceVersion },
        } as KubernetesObject);
      } catch (error) {
        if ((error as { code?: number }).code !== 404) throw error;
        return client.create(o);
      }
    },
    patch: (obj) =>
      client.patch(withNamespace(obj), undefined, undefined, undefined, undefined, PatchStrategy.MergePatch),
    rawPatch: patcher.patch,
    remove: async (obj) => void (await client.delete(withNamespace(obj))),
    visited: (id) => visits.get(id) ?? [],
    actor: (id) => controller.root.system.get(id)?.getSnapshot() as ReturnType<Cluster['actor']>,
    close: async () => {
      if (controller.root.getSnapshot().status === 'active') controller.stop();
      await controller.exitCode;
      patcher.close();
      await api.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/**
 * mergePatcher sends JSON merge patches to the API server over one keep-alive agent, without a
 * client library in between: `patch` resolves to the status code (benchmarks time it).
 */
export function mergePatcher(api: Pick<ApiServer, 'port' | 'caPem' | 'token'>): {
  patch: (path: string, body: object) => Promise<number>;
  close: () => void;
} {
  const agent = new Agent({ keepAlive: true, maxSockets: 16 });
  const headers = { authorization: `Bearer ${api.token}`, 'content-type': 'application/merge-patch+json' };
  return {
    patch: (path, body) =>
      new Promise((resolve, reject) => {
        const req = httpsRequest(
          { host: '127.0.0.1', port: api.port, path, method: 'PATCH', agent, ca: api.caPem, headers },
          (res) => res.resume().on('end', () => resolve(res.statusCode ?? 0)),
        );
        req.on('error', reject);
        req.end(JSON.stringify(body));
      }),
    close: () => agent.destroy(),
  };
}
