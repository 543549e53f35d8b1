/**
 * The migration most users try first: ingress-nginx's Helm release with only the image swapped. The controller
 * process (the built CLI) gets the container args that the chart's templates/_params.tpl writes with its default
 * values.yaml (v4.15: `/nginx-ingress-controller` first, `$(POD_NAMESPACE)` left for the kubelet, the admission
 * webhook on), plus common values (metrics, klog verbosity) and, as `controller.extraArgs` would add them, what a
 * test needs: a kubeconfig for the test API server, free ports and a config folder. It comes up, serves the Ingress of
 * class `nginx` and answers AdmissionReviews on ingress-nginx's path; SIGTERM ends it with exit 0.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startApiServer, type ApiServer } from '../../src/dev/api-server/server.js';
import { issueCertificate, type KeyPair } from '../../src/tls/issue.js';
import { postReview } from '../support/admission-review.js';
import { waitFor } from '../support/cluster.js';
import { ingress, ingressClass, serviceWithEndpoints } from '../support/manifests.js';
import { freePort, get, startBackend, type Backend } from '../support/net.js';
import { CHART_BINARY, chartDefaultArgs } from '../support/chart-args.js';

const CLI = new URL('../../bin/ingress-actors', import.meta.url).pathname;
const NAMESPACE = 'ingress-nginx';

/** CHART_ARGS are the container args of ingress-nginx's chart with default values, the webhook's port aside. */
const chartArgs = (webhookPort: number, certDir: string) => [
  CHART_BINARY,
  ...chartDefaultArgs(webhookPort, certDir),
  // common values: controller.metrics.enabled, and extraArgs {v: 2}
  '--enable-metrics=true',
  '--v=2',
];

let api: ApiServer;
let backend: Backend;
let dir: string;
let pair: KeyPair;

beforeAll(async () => {
  backend = await startBackend('app');
  api = await startApiServer({
    seed: [
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACE } },
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { namespace: NAMESPACE, name: 'ingress-nginx-controller' },
        data: { 'allow-snippet-annotations': 'false' },
      },
      ingressClass(),
      ...serviceWithEndpoints('app', [{ port: backend.port }]),
      ingress('app', { 'chart.example.com': [{ path: '/', service: 'app' }] }),
    ] as never,
  });
  dir = await mkdtemp(join(tmpdir(), 'ia-chart-'));
  await api.writeKubeconfig(join(dir, 'kubeconfig'));
  pair = await issueCertificate({ commonName: 'ingress-nginx-controller-admission', ipAddresses: ['127.0.0.1'] });
  await writeFile(join(dir, 'cert'), pair.certPem);
  await writeFile(join(dir, 'key'), pair.keyPem, { mode: 0o600 });
});

afterAll(async () => {
  await api?.close();
  await backend?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const review = (port: number, object: object) => postReview(port, pair.certPem, object, 'chart-1');

it("starts with the chart's default arguments, serves, answers admission reviews, and stops with exit 0", async () => {
  const [httpPort, httpsPort, healthzPort, webhookPort] = [
    await freePort(),
    await freePort(),
    await freePort(),
    await freePort(),
  ];
  const child = execa(
    CLI,
    [
      ...chartArgs(webhookPort, dir),
      `--kubeconfig=${join(dir, 'kubeconfig')}`,
      `--http-port=${httpPort}`,
      `--https-port=${httpsPort}`,
      `--healthz-port=${healthzPort}`,
      '--healthz-host=127.0.0.1',
      `--config-dir=${join(dir, 'nginx')}`,
    ],
    { reject: false, env: { POD_NAMESPACE: NAMESPACE, POD_NAME: 'ingress-nginx-controller-0' } },
  );
  try {
    await waitFor(
      'the Ingress of class nginx served',
      async () =>
        (await get({ host: 'chart.example.com', path: '/', port: httpPort }).catch(() => null))?.backend === 'app',
      30_000,
      100,
    );
    const allowed = await review(webhookPort, {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'Ingress',
      metadata: { namespace: 'default', name: 'other' },
      spec: { ingressClassName: 'nginx', rules: [{ host: 'other.example.com', http: { paths: [] } }] },
    });
    expect(allowed).toMatchObject({ uid: 'chart-1', allowed: true });
    const denied = await review(webhookPort, {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'Ingress',
      metadata: { namespace: 'default', name: 'thief' },
      spec: {
        ingressClassName: 'nginx',
        rules: [
          {
            host: 'chart.example.com',
            http: {
              paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: 'app', port: { number: 80 } } } }],
            },
          },
        ],
      },
    });
    expect(denied.allowed).toBe(false);
    expect(denied.status?.message).toContain('host "chart.example.com" and path "/" is already defined in ingress');
  } finally {
    child.kill('SIGTERM');
  }
  const result = await child;
  expect(result.exitCode).toBe(0);
  // --enable-metrics is read (request metrics), not ignored with a warning; --v=2 turned debug on
  expect(result.stderr).not.toContain('"flag":"--enable-metrics"');
  expect(result.stderr).not.toContain('ingress-nginx flag ignored');
  expect(result.stderr).toContain('"level":20');
}, 60_000);
