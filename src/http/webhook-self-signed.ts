/**
 * The admission webhook with a certificate the controller makes itself (`--validating-webhook-secret`): the
 * webhookCertificate machine keeps the shared Secret and the caBundle (src/kube/webhook-cert.ts does the calls),
 * and the webhook listens only once it has a certificate; a renewed one is swapped in before the next handshake.
 * The key stays in memory: no file, no log line, no event.
 */
import { AdmissionregistrationV1Api, CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { createActor, fromPromise, type InspectionEvent } from 'xstate';
import {
  type CertificateServed,
  webhookCertificateMachine,
  type WebhookCertificateInput,
} from '../../machines/webhookCertificate.machine.js';
import type { WebhookFlags } from '../config.js';
import { ensureWebhookSecret, patchCaBundle, type WebhookCertOptions } from '../kube/webhook-cert.js';
import { RENEW_BEFORE_MS, serviceDnsNames } from '../tls/webhook-pair.js';
import { MemoryKeys } from './webhook.js';
import { type RunningWebhook, startWebhook, type WebhookContext } from './webhook-listen.js';

/** WebhookCertTimings tune the keeper: rechecks and retries (the machine's input) and the renewal window. */
export interface WebhookCertTimings extends WebhookCertificateInput {
  readonly renewBeforeMs: number;
  /** a new serving certificate's lifetime in days (365) */
  readonly leafDays?: number;
}

/** DEFAULT_TIMINGS: check every minute; retry from 1 s doubling to 1 min; renew 30 days before the end. */
export const DEFAULT_TIMINGS: WebhookCertTimings = {
  recheckMs: 60_000,
  backoffBaseMs: 1_000,
  backoffMaxMs: 60_000,
  renewBeforeMs: RENEW_BEFORE_MS,
};

/** SelfSignedWebhook is the keeper and, once it has a certificate, the listening webhook. */
export interface SelfSignedWebhook extends RunningWebhook {
  /** resolves when the webhook first listens (never, while no certificate can be had) */
  readonly listening: Promise<void>;
}

/**
 * startSelfSignedWebhook starts the certificate keeper; the webhook listens once the first pair is served. A port it
 * then cannot bind is a failed step, retried with the others, and the rest of the controller serves meanwhile.
 */
export function startSelfSignedWebhook(
  flags: WebhookFlags,
  context: WebhookContext & {
    readonly kubeConfig: KubeConfig;
    readonly timings?: Partial<WebhookCertTimings>;
    readonly inspect?: (event: InspectionEvent) => void;
  },
): SelfSignedWebhook {
  const selfSigned = flags.selfSigned;
  if (!selfSigned) throw new Error('startSelfSignedWebhook needs --validating-webhook-secret');
  const timings = { ...DEFAULT_TIMINGS, ...context.timings };
  const { log } = context;
  const certOptions: WebhookCertOptions = {
    core: context.kubeConfig.makeApiClient(CoreV1Api),
    admission: context.kubeConfig.makeApiClient(AdmissionregistrationV1Api),
    secret: selfSigned.secret,
    service: selfSigned.service,
    configuration: selfSigned.configuration,
    dnsNames: serviceDnsNames(selfSigned.service.namespace, selfSigned.service.name),
    renewBeforeMs: timings.renewBeforeMs,
    ...(timings.leafDays === undefined ? {} : { leafDays: timings.leafDays }),
  };
  const secretRef = `${selfSigned.secret.namespace}/${selfSigned.secret.name}`;
  const keys = new MemoryKeys(`Secret ${secretRef}`);
  let running: RunningWebhook | null = null;
  let servedCert: string | null = null;
  let closed = false;
  let markListening: () => void = () => {};
  const listening = new Promise<void>((resolve) => {
    markListening = resolve;
  });

  const ensureCertificate = fromPromise<CertificateServed>(async () => {
    const ensured = await ensureWebhookSecret(certOptions);
    if (closed) throw new Error('the webhook is closing');
    const { pair } = ensured;
    if (!running) {
      // The first pair (or again after a port that could not be bound): a new server takes it at once.
      keys.set({ cert: pair.certPem, key: pair.keyPem });
      servedCert = pair.certPem;
      running = await startWebhook(flags, context, keys);
      if (closed) await running.close();
      markListening();
    } else if (pair.certPem !== servedCert) {
      // Renewed (here or by another replica): taken before the next connection's handshake.
      keys.set({ cert: pair.certPem, key: pair.keyPem });
      servedCert = pair.certPem;
    }
    return {
      caPem: pair.caPem,
      notAfter: pair.notAfter,
      resourceVersion: ensured.resourceVersion,
      action: ensured.action,
    };
  });
  const patch = fromPromise<unknown, { caPem: string }>(async ({ input }) => {
    const result = await patchCaBundle(certOptions, input.caPem);
    if (result.patched > 0)
      log.info(
        { configuration: selfSigned.configuration, webhooks: result.patched },
        'caBundle of the ValidatingWebhookConfiguration set to the webhook’s CA',
      );
    return result;
  });

  const actor = createActor(
    webhookCertificateMachine.provide({
      actors: { ensureCertificate, patchCaBundle: patch },
      actions: {
        reportFailure: (_, { step, error, retryInMs }) =>
          log.warn(
            { step, retryInMs, secret: secretRef, configuration: selfSigned.configuration },
            `webhook ${step === 'certificate' ? 'certificate' : 'caBundle'} not ready: ${error}; ` +
              `retrying in ${Math.round(retryInMs / 100) / 10} s`,
          ),
        reportServed: (_, served) => {
          if (served.action !== 'kept')
            log.info(
              { secret: secretRef, resourceVersion: served.resourceVersion, notAfter: new Date(served.notAfter) },
              `webhook certificate ${served.action}`,
            );
        },
      },
    }),
    { input: timings, ...(context.inspect ? { inspect: context.inspect } : {}) },
  );
  actor.start();
  return {
    get server() {
      return running?.server ?? null;
    },
    listening,
    close: async () => {
      closed = true;
      actor.stop();
      await running?.close();
    },
  };
}
