/**
 * startWebhook runs the admission webhook beside the controller: bound at start (a port in use is a
 * ListenError naming `--validating-webhook`), judging against the ClusterCache's snapshot.
 */
import type { Server } from 'node:https';
import type { WebhookFlags } from '../config.js';
import type { ClusterCache } from '../kube/cache.js';
import type { Logger } from '../log.js';
import { AdmissionJudge, type JudgeOptions } from '../model/admission.js';
import type { Snapshot } from '../model/snapshot.js';
import type { ReviewObservation } from './admission-metrics.js';
import { listenOn } from './listen.js';
import { createWebhookServer } from './webhook.js';

/** WARM_EVERY_MS: how often the judge's memo catches up with the cache while no review comes. */
const WARM_EVERY_MS = 5_000;

/** RunningWebhook is a listening webhook; close stops it and its warming. */
export interface RunningWebhook {
  readonly server: Server;
  close(): Promise<void>;
}

/**
 * startWebhook listens on the flags' address. The judge's memo is brought up to the cache's
 * snapshot every few seconds while it changes, so a review after a sync costs one candidate,
 * not the whole build (1.5 s at 10,000 Ingresses).
 */
export async function startWebhook(
  flags: WebhookFlags,
  context: {
    readonly cache: ClusterCache;
    readonly options: JudgeOptions;
    readonly log: Logger;
    /** told of each judged review (/metrics) */
    readonly observe?: (review: ReviewObservation) => void;
  },
): Promise<RunningWebhook> {
  const { cache, options, log } = context;
  const judge = new AdmissionJudge();
  let warmed: Snapshot['ingresses'] | null = null;
  const server = createWebhookServer({
    certFile: flags.certFile,
    keyFile: flags.keyFile,
    log,
    judge: (operation, ingress) => judge.judge(cache.snapshot(), options, operation, ingress),
    ...(context.observe ? { observe: context.observe } : {}),
  });
  await listenOn(server, {
    port: flags.port,
    ...(flags.host === undefined ? {} : { host: flags.host }),
    flag: '--validating-webhook',
  });
  log.info({ host: flags.host ?? 'all addresses', port: flags.port }, 'admission webhook listening');
  const warm = setInterval(() => {
    const snapshot = cache.snapshot();
    if (snapshot.ingresses === warmed || snapshot.ingresses.length === 0) return;
    judge.warm(snapshot, options);
    warmed = snapshot.ingresses;
  }, WARM_EVERY_MS);
  warm.unref();
  return {
    server,
    close: () =>
      new Promise<void>((resolve) => {
        clearInterval(warm);
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
