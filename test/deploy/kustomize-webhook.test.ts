/**
 * The replace-ingress-nginx overlay's webhook, end to end, with the certificate the controller makes itself: its
 * rendered objects applied to the test API server as they are (the ValidatingWebhookConfiguration with no caBundle,
 * calling the Service), the controller process (the real CLI) started with the rendered Deployment's args and no
 * certificate file at all; it creates the Secret, patches the caBundle, and `kubectl apply` of Ingresses meets its
 * webhook. The cluster network is stood in for by the API server's ServiceNetwork: the Service's address is the
 * webhook's loopback port, and the certificate is verified for ingress-actors-admission.ingress-actors.svc as
 * kube-apiserver does. The ports, kubeconfig and folders are the test's own.
 * The CLI runs from dist/ (`npm run build` first, as `npm test` does).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1Deployment, V1Secret, V1ValidatingWebhookConfiguration } from '@kubernetes/client-node';
import { execa } from 'execa';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { DEPLOY_RESOURCES } from '../../src/dev/api-server/resources.js';
import { type ApiServer, startApiServer } from '../../src/dev/api-server/server.js';
import { waitFor } from '../support/cluster.js';
import { KUBECTL, kubectlFor } from '../support/kube-api.js';
import { freePort } from '../support/net.js';
import { controllerContainer, DEPLOY, find, flagValue } from './manifests.js';
import { execFileSync } from 'node:child_process';
import { parseAllDocuments } from 'yaml';

const CLI = new URL('../../bin/ingress-actors', import.meta.url).pathname;
const OVERLAY = join(DEPLOY, 'kustomize/overlays/replace-ingress-nginx');

let api: ApiServer;
let dir: string;
/** where the webhook's Service is reached: the controller's webhook port, once the test knows it */
let servicePort: number | undefined;

beforeAll(async () => {
  api = await startApiServer({
    extraKinds: DEPLOY_RESOURCES,
    serviceNetwork: ({ namespace, name, port }) =>
      namespace === 'ingress-actors' && name === 'ingress-actors-admission' && port === 443 && servicePort
        ? { host: '127.0.0.1', port: servicePort }
        : undefined,
  });
  dir = await mkdtemp(join(tmpdir(), 'ia-kustomize-webhook-'));
  await api.writeKubeconfig(join(dir, 'kubeconfig'));
});
afterAll(async () => {
  await api?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** withFlag replaces the value of `--name=…` in args (it must be there). */
function withFlag(args: readonly string[], name: string, value: string): string[] {
  const at = args.findIndex((a) => a.startsWith(`--${name}=`));
  if (at < 0) throw new Error(`no --${name}`);
  return args.map((a, i) => (i === at ? `--${name}=${value}` : a));
}

it('the overlay’s webhook, with the certificate the controller made, refuses a bad Ingress of class nginx and admits a good one and one of another class', async () => {
  const yaml = execFileSync(KUBECTL, ['kustomize', OVERLAY], { encoding: 'utf8', timeout: 20_000 });
  const objects = parseAllDocuments(yaml).map((d) => d.toJS() as { kind: string; metadata: { name: string } });
  const [httpPort, httpsPort, healthzPort, webhookPort] = [
    await freePort(),
    await freePort(),
    await freePort(),
    await freePort(),
  ];

  const container = controllerContainer(objects as never);
  const args = container.args ?? [];
  servicePort = webhookPort;
  // As rendered: no caBundle, the webhook called through its Service.
  const rendered = find<V1ValidatingWebhookConfiguration>(objects as never, 'ValidatingWebhookConfiguration');
  expect(rendered.webhooks!.every((w) => w.clientConfig.caBundle === undefined && w.clientConfig.service)).toBe(true);
  await writeFile(join(dir, 'applied.yaml'), yaml);
  const kubectl = kubectlFor(join(dir, 'kubeconfig'), join(dir, 'cache'));
  await kubectl.run(['apply', '-f', join(dir, 'applied.yaml')]);

  let run = withFlag(args.slice(1), 'http-port', String(httpPort));
  run = withFlag(run, 'https-port', String(httpsPort));
  run = withFlag(run, 'healthz-port', String(healthzPort));
  run = withFlag(run, 'config-dir', join(dir, 'nginx'));
  run = withFlag(run, 'validating-webhook', `127.0.0.1:${webhookPort}`);
  expect(flagValue(run, 'validating-webhook-certificate')).toBeUndefined();
  expect(flagValue(run, 'validating-webhook-secret')).toBe('ingress-actors/ingress-actors-admission');
  expect(flagValue(run, 'ingress-class')).toBe('nginx');
  const namespace = find<V1Deployment>(objects as never, 'Deployment').metadata!.namespace!;
  const child = execa(CLI, [args[0]!, ...run, `--kubeconfig=${join(dir, 'kubeconfig')}`, '--healthz-host=127.0.0.1'], {
    reject: false,
    env: { POD_NAMESPACE: namespace, POD_NAME: 'ingress-actors-0', NODE_NAME: 'node-a' },
  });
  try {
    await waitFor(
      '/healthz 200',
      async () => (await fetch(`http://127.0.0.1:${healthzPort}/healthz`).catch(() => null))?.status === 200,
      30_000,
      100,
    );
    // The controller made the Secret and set the caBundle to its CA.
    const secret = async () =>
      JSON.parse(
        (await kubectl.run(['get', 'secret', '-n', 'ingress-actors', 'ingress-actors-admission', '-o', 'json'])).stdout,
      ) as V1Secret;
    const caBundle = async () =>
      (
        JSON.parse(
          (await kubectl.run(['get', 'validatingwebhookconfiguration', 'ingress-actors-admission', '-o', 'json']))
            .stdout,
        ) as V1ValidatingWebhookConfiguration
      ).webhooks![0]!.clientConfig.caBundle;
    await waitFor('the caBundle set', async () => (await caBundle()) !== undefined, 20_000, 100);
    const made = await secret();
    expect(await caBundle()).toBe(made.data!['ca.crt']);
    expect(made.type).toBe('kubernetes.io/tls');
    const ingressYaml = (name: string, className: string, annotations: Record<string, string> = {}) =>
      stringify({
        apiVersion: 'networking.k8s.io/v1',
        kind: 'Ingress',
        metadata: { name, namespace: 'default', annotations },
        spec: {
          ingressClassName: className,
          rules: [
            {
              host: `${name}.example.com`,
              http: {
                paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: 'web', port: { number: 80 } } } }],
              },
            },
          ],
        },
      });
    const bad = await kubectl.try(
      ['apply', '-f', '-'],
      ingressYaml('slow', 'nginx', { 'nginx.ingress.kubernetes.io/proxy-read-timeout': '30 seconds' }),
    );
    expect(bad.exitCode).not.toBe(0);
    expect(bad.stderr).toContain(
      'admission webhook "validate.nginx.ingress.kubernetes.io" denied the request: default/slow: ' +
        'metadata.annotations.nginx.ingress.kubernetes.io/proxy-read-timeout: ',
    );
    const good = await kubectl.run(['apply', '-f', '-'], ingressYaml('fast', 'nginx'));
    expect(good.stdout).toBe('ingress.networking.k8s.io/fast created');
    // Another class's Ingress is not judged: allowed even with the same bad value.
    const other = await kubectl.run(
      ['apply', '-f', '-'],
      ingressYaml('theirs', 'other', { 'nginx.ingress.kubernetes.io/proxy-read-timeout': '30 seconds' }),
    );
    expect(other.stdout).toBe('ingress.networking.k8s.io/theirs created');
  } finally {
    child.kill('SIGTERM');
  }
  const result = await child;
  expect(result.exitCode).toBe(0);
}, 60_000);
