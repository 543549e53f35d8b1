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
import { createWebhookServer, type Judge, type KeySource, type ReviewJudge } from './webhook.js';
import { judgeWorkerFile, WARM_EVERY_MS, WorkerJudge } from './worker-judge.js';

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
 * webhookJudge is the judge of the controller's webhook: a WorkerJudge over the cache's snapshot, off the event loop.
 * Running from src/ with no `npm run build` (some tests) there is no compiled worker: then the judge runs on the event
 * loop, its memo warmed every few seconds, with a warning.
 */
export function webhookJudge(context: WebhookContext): { judge: ReviewJudge | Judge; stop(): Promise<void> } {
  const { cache, options, log } = context;
  const file = judgeWorkerFile();
  if (file) {
    const worker = new WorkerJudge(file, () => cache.snapshot(), options, log);
    return { judge: worker, stop: () => worker.close() };
  }
  log.warn("the admission judge's worker is not built (npm run build): reviews are judged on the event loop");
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
    stop: async () => clearInterval(warm),
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
  const warmed = webhookJudge(context);
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
    await warmed.stop();
    throw error;
  }
  return {
    server,
    close: async () => {
      await closeServer(server);
      await warmed.stop();
    },
  };
}
