import { assign, fromPromise, setup } from 'xstate';

/** WebhookCertificateInput configures the machine; durations in milliseconds. */
export interface WebhookCertificateInput {
  /** how often the Secret and the caBundle are checked again while serving (a renewal, a re-applied configuration) */
  readonly recheckMs: number;
  /** the first retry after a failure, doubled per failure up to backoffMaxMs */
  readonly backoffBaseMs: number;
  readonly backoffMaxMs: number;
}

/**
 * CertificateServed is what `ensureCertificate` reports: the pair it now serves, without its key (events reach the
 * inspector), and what it did.
 */
export interface CertificateServed {
  /** the CA bundle, PEM: what the caBundle must be */
  readonly caPem: string;
  /** the serving certificate's end, ms since the epoch */
  readonly notAfter: number;
  readonly resourceVersion: string;
  readonly action: 'created' | 'renewed' | 'kept';
}

/** PatchCaBundleInput is what `patchCaBundle` gets: the CA bundle to trust. */
export interface PatchCaBundleInput {
  readonly caPem: string;
}

/** ReportFailureParams is what the `reportFailure` action gets: which step failed, why, and when it is retried. */
export interface ReportFailureParams {
  readonly step: 'certificate' | 'caBundle';
  readonly error: string;
  readonly retryInMs: number;
}

/** WebhookCertificateContext is the input plus what the last steps found. */
export interface WebhookCertificateContext extends WebhookCertificateInput {
  readonly failures: number;
  readonly lastError: string | null;
  /** the CA bundle served, once a certificate is; null before */
  readonly caPem: string | null;
  readonly resourceVersion: string | null;
  readonly renewals: number;
}

const describe = (error: unknown) => (error instanceof Error ? error.message : String(error));

/** backoffDelayMs is the wait after the context's failures: base doubled per failure, at most max. */
export function backoffDelayMs(
  context: Pick<WebhookCertificateContext, 'failures' | 'backoffBaseMs' | 'backoffMaxMs'>,
) {
  return Math.min(context.backoffMaxMs, context.backoffBaseMs * 2 ** Math.max(0, context.failures - 1));
}

/**
 * webhookCertificateMachine keeps the admission webhook's self-made certificate (`--validating-webhook-secret`):
 * `ensuring` reads the shared Secret and serves its pair, creating or renewing it when needed (`ensureCertificate`
 * does the I/O and hands the key to the server itself: it never travels in an event); `patching` sets the
 * ValidatingWebhookConfiguration's caBundle where it differs; `serving` waits `recheckMs` and checks both again
 * (another replica's renewal, a configuration re-applied with an empty caBundle, the renewal window). A failed step
 * is reported and retried from `ensuring` after a backoff (doubling, capped); a certificate already served keeps
 * serving meanwhile.
 *
 * Effects to provide: `ensureCertificate` (fromPromise<CertificateServed>), `patchCaBundle`
 * (fromPromise<unknown, PatchCaBundleInput>), the actions `reportFailure` and `reportServed` (logs).
 */
/** failedAt is a step's onError: count the failure, say it with the retry, and back off. */
const failedAt = (step: 'certificate' | 'caBundle') =>
  ({
    target: 'backoff',
    actions: [
      { type: 'recordFailure', params: ({ event }: { event: { error: unknown } }) => ({ error: event.error }) },
      {
        type: 'reportFailure',
        params: ({ context, event }: { context: WebhookCertificateContext; event: { error: unknown } }) => ({
          step,
          error: describe(event.error),
          retryInMs: backoffDelayMs(context),
        }),
      },
    ],
  }) as const;

export const webhookCertificateMachine = setup({
  types: {
    context: {} as WebhookCertificateContext,
    input: {} as WebhookCertificateInput,
  },
  actors: {
    ensureCertificate: fromPromise<CertificateServed>(async () => {
      throw new Error('actor "ensureCertificate" not provided');
    }),
    patchCaBundle: fromPromise<unknown, PatchCaBundleInput>(async () => {
      throw new Error('actor "patchCaBundle" not provided');
    }),
  },
  actions: {
    keepServed: assign(({ context }, params: CertificateServed) => ({
      caPem: params.caPem,
      resourceVersion: params.resourceVersion,
      renewals: context.renewals + (params.action === 'renewed' ? 1 : 0),
    })),
    recordFailure: assign(({ context }, params: { error: unknown }) => ({
      failures: context.failures + 1,
      lastError: describe(params.error),
    })),
    clearFailures: assign({ failures: 0, lastError: null }),
    reportFailure: (_, _params: ReportFailureParams) => {},
    reportServed: (_, _params: CertificateServed) => {},
  },
  delays: {
    recheck: ({ context }) => context.recheckMs,
    backoff: ({ context }) => backoffDelayMs(context),
  },
}).createMachine({
  id: 'webhookCertificate',
  context: ({ input }) => ({
    ...input,
    failures: 0,
    lastError: null,
    caPem: null,
    resourceVersion: null,
    renewals: 0,
  }),
  initial: 'ensuring',
  states: {
    ensuring: {
      invoke: {
        id: 'ensureCertificate',
        src: 'ensureCertificate',
        onDone: {
          target: 'patching',
          actions: [
            { type: 'keepServed', params: ({ event }) => event.output },
            { type: 'reportServed', params: ({ event }) => event.output },
          ],
        },
        onError: failedAt('certificate'),
      },
    },
    patching: {
      invoke: {
        id: 'patchCaBundle',
        src: 'patchCaBundle',
        input: ({ context }) => ({ caPem: context.caPem ?? '' }),
        onDone: { target: 'serving', actions: 'clearFailures' },
        onError: failedAt('caBundle'),
      },
    },
    serving: {
      after: { recheck: 'ensuring' },
    },
    backoff: {
      after: { backoff: 'ensuring' },
    },
  },
});
