/**
 * The whole controller with `--validating-webhook-secret` while its certificate cannot be had: the Secret's namespace
 * does not exist, so creating it fails. The controller warns naming the Secret and what failed, retries with backoff,
 * does not listen on the webhook port, and serves as usual (/healthz 200, nginx routing its Ingress). Once the
 * namespace exists the Secret is made and the webhook listens; the configuration, missing too, is warned about until
 * it is applied, and then gets the caBundle.
 */
import { X509Certificate } from 'node:crypto';
import { connect as tcpConnect } from 'node:net';
import { connect } from 'node:tls';
import type { V1Secret, V1ValidatingWebhookConfiguration } from '@kubernetes/client-node';
import { expect, it } from 'vitest';
import { RESOURCES } from '../../src/dev/api-server/resources.js';
import { startCluster, waitFor } from '../support/cluster.js';
import { ingress, ingressClass } from '../support/manifests.js';
import { freePort, get } from '../support/net.js';

const SECRETS = RESOURCES.find((r) => r.kind === 'Secret')!;
const CONFIGS = RESOURCES.find((r) => r.kind === 'ValidatingWebhookConfiguration')!;

/** refused says whether nothing listens on the port (a TCP connect is refused). */
const refused = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = tcpConnect({ host: '127.0.0.1', port });
    socket.on('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.on('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'ECONNREFUSED'));
  });

/** served is the certificate the webhook serves, verified with `ca` for the Service's name. */
const served = (port: number, ca: string) =>
  new Promise<string>((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, ca, servername: 'admission.hooks.svc' }, () => {
      resolve(socket.getPeerX509Certificate()!.toString());
      socket.end();
    });
    socket.on('error', reject);
  });

it('without a certificate: a warning and retries, no webhook listener, the rest serves; then it listens and sets the caBundle', async () => {
  const webhookPort = await freePort();
  const lines: Record<string, unknown>[] = [];
  const warned = (text: string) => lines.some((l) => l.level === 40 && String(l.msg).includes(text));
  const cluster = await startCluster(
    [ingressClass(), ingress('web', { 'web.example.com': [{ path: '/', service: 'web' }] })],
    [
      `--validating-webhook=127.0.0.1:${webhookPort}`,
      '--validating-webhook-secret=hooks/admission',
      '--validating-webhook-service=hooks/admission',
      '--validating-webhook-configuration=admission',
    ],
    'info',
    { logLines: lines, webhookCertTimings: { recheckMs: 300, backoffBaseMs: 100, backoffMaxMs: 400 } },
  );
  try {
    await waitFor('the warning', () => warned('creating Secret hooks/admission: 404 NotFound'), 15_000);
    await waitFor(
      '/healthz 200',
      async () => (await fetch(`http://127.0.0.1:${cluster.healthzPort}/healthz`)).status === 200,
      20_000,
    );
    // nginx serves the Ingress (its Service has no endpoints: 503, not the unknown host's 404).
    await waitFor(
      'the Ingress routed',
      async () => (await get({ host: 'web.example.com', path: '/', port: cluster.httpPort })).status === 503,
      10_000,
    );
    expect(await refused(webhookPort)).toBe(true);
    // Retried, not given up: more than one warning by now.
    await waitFor(
      'a retry',
      () => lines.filter((l) => String(l.msg).includes('creating Secret hooks/admission')).length >= 2,
      5_000,
    );
    expect(JSON.stringify(lines)).not.toContain('PRIVATE KEY');

    cluster.api.registry.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'hooks' } } as never);
    await waitFor(
      'the Secret',
      () => cluster.api.registry.store.get(SECRETS, 'hooks', 'admission') !== undefined,
      10_000,
    );
    const secret = cluster.api.registry.get(SECRETS, 'hooks', 'admission') as V1Secret;
    const ca = Buffer.from(secret.data!['ca.crt']!, 'base64').toString('utf8');
    await waitFor('the webhook listening', async () => !(await refused(webhookPort)), 10_000);
    expect(await served(webhookPort, ca)).toBe(
      new X509Certificate(Buffer.from(secret.data!['tls.crt']!, 'base64')).toString(),
    );
    await waitFor(
      'the missing configuration warned about',
      () => warned('ValidatingWebhookConfiguration admission does not exist'),
      10_000,
    );

    cluster.api.registry.apply({
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingWebhookConfiguration',
      metadata: { name: 'admission' },
      webhooks: [
        {
          name: 'validate.nginx.ingress.kubernetes.io',
          admissionReviewVersions: ['v1'],
          sideEffects: 'None',
          clientConfig: { service: { namespace: 'hooks', name: 'admission', path: '/networking/v1/ingresses' } },
          rules: [
            { apiGroups: ['networking.k8s.io'], apiVersions: ['v1'], operations: ['CREATE'], resources: ['ingresses'] },
          ],
        },
      ],
    } as never);
    await waitFor(
      'the caBundle',
      () =>
        (cluster.api.registry.get(CONFIGS, undefined, 'admission') as V1ValidatingWebhookConfiguration).webhooks![0]!
          .clientConfig.caBundle === secret.data!['ca.crt'],
      10_000,
    );
  } finally {
    await cluster.close();
  }
}, 60_000);
