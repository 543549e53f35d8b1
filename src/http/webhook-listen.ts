/**
 * startWebhook runs the admission webhook beside the controller: bound at start (a port in use is a
 * ListenError naming `--validating-webhook`), judging against the ClusterCache's snapshot. With
 * `--validating-webhook-secret` it is src/http/webhook-self-signed.ts that starts it, once it has a certificate.
 */
import type { Server } from 'node:https';
import type { WebhookFlags } from '../config.js';
import type { ClusterCache } from '../kube/cache.js';
import type { Logger } from '../log.js';
import { AdmissionJudge, type JudgeOptions } from '../model/admission.js';
import type { Snapshot } from '../model/snapshot.js';
import type { ReviewObservation } from './admission-metrics.js';
import { listenOn } from './listen.js';
import { createWebhookServer, type Judge, type KeySource } from './webhook.js';

/** WARM_EVERY_MS: how often the judge's memo catches up with the cache while no review comes. */
const WARM_EVERY_MS = 5_000;

/** RunningWebhook is a listening webhook; close stops it and its warming. */
export interface RunningWebhook {
  /** the HTTPS server; null while a self-made certificate is still awaited (nothing listens yet) */
  readonly server: Server | null;
  close(): Promise<void>;
}

/** WebhookContext is what the webhook judges against, and where it logs. */
export interface WebhookContext {
  readonly cache: ClusterCache;
  readonly options: JudgeOptions;
  readonly log: Logger;
  /** told of each judged review (/metrics) */
  readonly observe?: (review: ReviewObservation) => void;
}

/**
 * warmJudge is the judge over the cache's snapshot, its memo brought up to the cache every few seconds while it
 * changes, so a review after a sync costs one candidate, not the whole build (1.5 s at 10,000 Ingresses).
 */
export function warmJudge(context: WebhookContext): { judge: Judge; stop(): void } {
  const { cache, options } = context;
  const judge = new AdmissionJudge();
  let warmed: Snapshot['ingresses'] | null = null;
  const warm = setInterval(() => {
    const snapshot = cache.snapshot();
    if (snapshot.ingresses === warmed || snapshot.ingresses.length === 0) return;
    judge.warm(snapshot, options);
    warmed = snapshot.ingresses;
  }, WARM_EVERY_MS);
  warm.unref();
  return {
    judge: (operation, ingress) => judge.judge(cache.snapshot(), options, operation, ingress),
    stop: () => clearInterval(warm),
  };
}

/** listenWebhook binds a webhook server on the flags' address, naming `--validating-webhook` when it cannot. */
export async function listenWebhook(server: Server, flags: WebhookFlags, log: Logger): Promise<void> {
  await listenOn(server, {
    port: flags.port,
    ...(flags.host === undefined ? {} : { host: flags.host }),
    flag: '--validating-webhook',
  });
  log.info({ host: flags.host ?? 'all addresses', port: flags.port }, 'admission webhook listening');
}

/** closeServer stops listening and ends the open connections. */
export function closeServer(server: Server): Promise<void> {
  return new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

/** startWebhook listens on the flags' address with the certificate files (or `keys`), judging against the cache. */
export async function startWebhook(
  flags: WebhookFlags,
  context: WebhookContext,
  keys?: KeySource,
): Promise<RunningWebhook> {
  const warmed = warmJudge(context);
  const server = createWebhookServer({
    ...(flags.certFile === undefined ? {} : { certFile: flags.certFile }),
    ...(flags.keyFile === undefined ? {} : { keyFile: flags.keyFile }),
    ...(keys ? { keys } : {}),
    log: context.log,
    judge: warmed.judge,
    ...(context.observe ? { observe: context.observe } : {}),
  });
  try {
    await listenWebhook(server, flags, context.log);
  } catch (error) {
    warmed.stop();
    throw error;
  }
  return {
    server,
    close: async () => {
      warmed.stop();
      await closeServer(server);
    },
  };
}
