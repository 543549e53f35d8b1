/**
 * The replace-ingress-nginx overlay's webhook, end to end: its rendered objects applied to the test
 * API server, the controller process (the real CLI) started with the rendered Deployment's args, and
 * `kubectl apply` of Ingresses meeting the overlay's ValidatingWebhookConfiguration. Two things a
 * cluster provides are stood in for: the Service routing (the webhook's clientConfig becomes a
 * loopback url with the same path) and cert-manager (a certificate issued here, its CA put in
 * caBundle as the CA injector would); the ports, kubeconfig and folders are the test's own.
 * The CLI runs from dist/ (`npm run build` first, as `npm test` does).
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1Deployment, V1ValidatingWebhookConfiguration } from '@kubernetes/client-node';
import { execa } from 'execa';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { DEPLOY_RESOURCES } from '../../src/api-server/resources.js';
import { type ApiServer, startApiServer } from '../../src/api-server/server.js';
import { issueCertificate } from '../../src/tls/issue.js';
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

beforeAll(async () => {
  api = await startApiServer({ extraKinds: DEPLOY_RESOURCES });
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

it('the overlay’s webhook refuses a bad Ingress of class nginx and admits a good one and one of another class', async () => {
  const yaml = execFileSync(KUBECTL, ['kustomize', OVERLAY], { encoding: 'utf8', timeout: 20_000 });
  const objects = parseAllDocuments(yaml).map((d) => d.toJS() as { kind: string; metadata: { name: string } });
  const [httpPort, httpsPort, healthzPort, webhookPort] = [
    await freePort(),
    await freePort(),
    await freePort(),
    await freePort(),
  ];

  // cert-manager's part: a serving certificate in the mounted folder, its CA in caBundle.
  const container = controllerContainer(objects as never);
  const args = container.args ?? [];
  const mountPath = container.volumeMounts!.find((v) => v.name === 'webhook-cert')!.mountPath;
  const certDir = join(dir, 'webhook');
  await mkdir(certDir, { mode: 0o700 });
  const pair = await issueCertificate({ commonName: 'ingress-actors-admission', ipAddresses: ['127.0.0.1'] });
  await writeFile(join(certDir, 'tls.crt'), pair.certPem);
  await writeFile(join(certDir, 'tls.key'), pair.keyPem, { mode: 0o600 });

  // The Service's part: the API server calls the webhook's path on loopback.
  const applied = objects.map((o) => {
    if (o.kind !== 'ValidatingWebhookConfiguration') return o;
    const vwc = o as V1ValidatingWebhookConfiguration;
    return {
      ...vwc,
      webhooks: vwc.webhooks!.map((w) => ({
        ...w,
        clientConfig: {
          url: `https://127.0.0.1:${webhookPort}${w.clientConfig.service!.path}`,
          caBundle: Buffer.from(pair.certPem).toString('base64'),
        },
      })),
    };
  });
  await writeFile(join(dir, 'applied.yaml'), applied.map((o) => stringify(o)).join('---\n'));
  const kubectl = kubectlFor(join(dir, 'kubeconfig'), join(dir, 'cache'));
  await kubectl.run(['apply', '-f', join(dir, 'applied.yaml')]);

  let run = withFlag(args.slice(1), 'http-port', String(httpPort));
  run = withFlag(run, 'https-port', String(httpsPort));
  run = withFlag(run, 'healthz-port', String(healthzPort));
  run = withFlag(run, 'config-dir', join(dir, 'nginx'));
  run = withFlag(run, 'validating-webhook', `127.0.0.1:${webhookPort}`);
  for (const flag of ['validating-webhook-certificate', 'validating-webhook-key'])
    run = withFlag(run, flag, flagValue(run, flag)!.replace(mountPath, certDir));
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
