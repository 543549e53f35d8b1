/**
 * The image as a cluster runs it (`npm run test:image`, after `npm run image`): the OCI archive unpacked by umoci
 * and run by runc, a real OCI runtime, in a network namespace of its own, against the test API server.
 *  - As deploy/'s replace-ingress-nginx overlay runs it: the rendered objects applied with kubectl, the
 *    Deployment's args, env, user 101, read-only root, the /tmp emptyDir, the capability bounding set
 *    NET_BIND_SERVICE with no_new_privs and the pod's ip_unprivileged_port_start sysctl (nginx binds 80 and 443 as
 *    uid 101). It serves an Ingress and an HTTPRoute, /healthz answers 200, its webhook refuses a bad Ingress
 *    `kubectl apply`, a `kill -9` of the nginx master is followed by a new master and no zombie (tini, PID 1,
 *    reaps the orphaned workers), and SIGTERM ends it with exit 0 within terminationGracePeriodSeconds.
 *  - With ingress-nginx's Helm chart: the container args its templates write with default values, its env
 *    (LD_PRELOAD of a mimalloc the image does not have included) and its webhook certificate Secret's mount.
 *  - The SBOM beside the archive lists what the image's own files say is in it.
 * Stand-ins: in-cluster config as in a pod (KUBERNETES_SERVICE_HOST/PORT, the service account's token and CA), the
 * Service `kubernetes` being relays to the test API server (pod.ts kubernetesService); the webhook's Service is the
 * API server's serviceNetwork; the backend's Endpoints are on the host's end of the veth. Not stood in for: the
 * RuntimeDefault seccomp profile.
 * The time from `runc run` to /healthz 200, the memory at idle and SIGTERM → exit go to dist/image/figures.json,
 * each container's output to dist/image/<case>.log.
 */
import { createServer, request, type Server } from 'node:http';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { V1Deployment } from '@kubernetes/client-node';
import { execa } from 'execa';
import { parseAllDocuments, stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEPLOY_RESOURCES } from '../../src/dev/api-server/resources.js';
import { type ApiServer, startApiServer } from '../../src/dev/api-server/server.js';
import { issueCertificate } from '../../src/tls/issue.js';
import { DEPLOY, find } from '../deploy/manifests.js';
import { CHART_BINARY, chartDefaultArgs } from '../support/chart-args.js';
import { GATEWAY_RESOURCES } from '../support/gateway-kinds.js';
import { KUBECTL, kubectlFor, type Kubectl, waitFor } from '../support/kube-api.js';
import { ingress, ingressClass, serviceWithEndpoints } from '../support/manifests.js';
import {
  type ClusterService,
  type Container,
  IMAGE_ARCHIVE,
  type PodNetwork,
  podNetwork,
  kubernetesService,
  processes,
  startContainer,
  unpackImage,
  writeRuntimeSpec,
} from './pod.js';

const GROUP = 'gateway.networking.k8s.io';

/** the Service `web`: an HTTP server on this machine's end of the veth pair, answering which backend it is */
async function startWeb(host: string): Promise<{ server: Server; port: number }> {
  const server = createServer((req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ backend: 'web', host: req.headers.host, path: req.url }));
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return { server, port: (server.address() as { port: number }).port };
}

/** get asks `ip`:`port` for `path` with Host `host`; resolves to the status and body, or null when refused. */
function get(ip: string, port: number, host: string, path = '/'): Promise<{ status: number; body: string } | null> {
  return new Promise((resolve) => {
    const req = request({ host: ip, port, path, headers: { host }, timeout: 2_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', () => resolve(null));
    req.on('timeout', () => req.destroy());
    req.end();
  });
}
const servedBy = async (ip: string, host: string): Promise<string | undefined> => {
  const answer = await get(ip, 80, host);
  if (answer?.status !== 200) return undefined;
  return (JSON.parse(answer.body) as { backend?: string }).backend;
};

const ROUTED = [
  {
    apiVersion: `${GROUP}/v1`,
    kind: 'GatewayClass',
    metadata: { name: 'ingress-actors' },
    spec: { controllerName: 'ingress-actors.io/gateway-controller' },
  },
  {
    apiVersion: `${GROUP}/v1`,
    kind: 'Gateway',
    metadata: { name: 'web', namespace: 'default' },
    spec: { gatewayClassName: 'ingress-actors', listeners: [{ name: 'http', port: 80, protocol: 'HTTP' }] },
  },
  {
    apiVersion: `${GROUP}/v1`,
    kind: 'HTTPRoute',
    metadata: { name: 'hello', namespace: 'default' },
    spec: {
      parentRefs: [{ name: 'web' }],
      hostnames: ['hello.example.com'],
      rules: [{ backendRefs: [{ name: 'web', port: 80 }] }],
    },
  },
];

/** badIngress has an annotation value the controller refuses, for the webhook to deny */
const badIngress = (namespace: string) =>
  stringify(
    ingress(
      'slow',
      { 'slow.example.com': [{ path: '/', service: 'web' }] },
      { namespace, annotations: { 'nginx.ingress.kubernetes.io/proxy-read-timeout': '30 seconds' } },
    ),
  );

interface Figures {
  startToHealthzMs: number;
  idle: { processes: number; byProcess: string[]; rssMiB: number; pssMiB: number };
  sigtermToExitMs?: number;
}
const figures: Record<string, Figures> = {};

/** pssKiB sums Pss from smaps_rollup (shared pages counted once across the processes) */
async function pssKiB(pids: readonly number[]): Promise<number> {
  let sum = 0;
  for (const pid of pids) {
    const rollup = await readFile(`/proc/${pid}/smaps_rollup`, 'utf8').catch(() => '');
    sum += Number(rollup.match(/^Pss:\s+(\d+) kB/m)?.[1] ?? 0);
  }
  return sum;
}

/**
 * exercise runs what both cases share once the container is up: /healthz, the Ingress and the HTTPRoute served,
 * the bad Ingress refused by the webhook, nginx's master killed and replaced with no zombie left, the figures,
 * and SIGTERM → exit 0 within the grace period.
 */
async function exercise(
  container: Container,
  started: number,
  net: PodNetwork,
  kubectl: Kubectl,
  ingressHost: string,
  namespace: string,
  graceSeconds: number,
  figuresKey: string,
): Promise<void> {
  try {
    await waitFor(
      '/healthz 200',
      async () => container.exited() || (await get(net.podIp, 10254, 'healthz', '/healthz'))?.status === 200,
      60_000,
    );
    if (container.exited()) throw new Error('the container ended before /healthz answered 200');
    const startToHealthzMs = Date.now() - started;
    await waitFor('the Ingress served', async () => (await servedBy(net.podIp, ingressHost)) === 'web', 30_000);
    await waitFor(
      'the HTTPRoute served',
      async () => (await servedBy(net.podIp, 'hello.example.com')) === 'web',
      30_000,
    );

    // PID 1 is tini; everything runs as uid 101, nginx included.
    const before = await processes(await container.pids());
    expect(before.find((p) => p.ppid === 0 || !before.some((q) => q.pid === p.ppid))?.title).toMatch(
      /^\/usr\/bin\/tini -- node \/app\/dist\/src\/cli\/main\.js /,
    );
    expect(new Set(before.map((p) => p.uid))).toEqual(new Set([101]));
    const master = before.find((p) => p.title.startsWith('nginx: master process'));
    expect(master).toBeDefined();
    const workers = before.filter((p) => p.ppid === master!.pid).map((p) => p.pid);
    expect(workers.length).toBeGreaterThan(0);
    const idle = {
      processes: before.length,
      byProcess: before.map(
        (p) => `${p.title.split(' ').slice(0, 3).join(' ')}: ${Math.round(p.rssKiB / 1024)} MiB RSS`,
      ),
      rssMiB: Math.round(before.reduce((sum, p) => sum + p.rssKiB, 0) / 102.4) / 10,
      pssMiB: Math.round((await pssKiB(before.map((p) => p.pid))) / 102.4) / 10,
    };
    figures[figuresKey] = { startToHealthzMs, idle };

    // The root filesystem is read-only; /tmp (the emptyDir, or the image's /tmp) is where it writes.
    const touch = await execa('runc', ['exec', '--user', '101:101', container.id, 'touch', '/app/written'], {
      reject: false,
    });
    expect(touch.exitCode === 0 ? 'written' : touch.stderr).toMatch(/Read-only file system|Permission denied/);

    const refused = await kubectl.try(['apply', '-f', '-'], badIngress(namespace));
    expect(refused.exitCode).not.toBe(0);
    expect(refused.stderr).toContain(
      'admission webhook "validate.nginx.ingress.kubernetes.io" denied the request: ' +
        `${namespace}/slow: metadata.annotations.nginx.ingress.kubernetes.io/proxy-read-timeout: `,
    );

    // kill -9 of nginx's master: its workers are orphans of PID 1; the controller starts nginx again.
    process.kill(master!.pid, 'SIGKILL');
    await waitFor(
      'a new nginx master',
      async () =>
        (await processes(await container.pids())).some(
          (p) => p.title.startsWith('nginx: master process') && p.pid !== master!.pid,
        ),
      30_000,
    );
    await waitFor('the Ingress served again', async () => (await servedBy(net.podIp, ingressHost)) === 'web', 30_000);
    await waitFor(
      'the old workers gone, no zombie left',
      async () => {
        const now = await processes(await container.pids());
        return now.every((p) => p.state !== 'Z' && !workers.includes(p.pid) && p.pid !== master!.pid);
      },
      30_000,
    );
  } catch (error) {
    await container.remove();
    console.error(`the container's output, last lines:\n${String((await container.run).all).slice(-6000)}`);
    throw error;
  }

  const stopping = Date.now();
  await container.signal('TERM');
  const exited = await Promise.race([
    container.run,
    new Promise<null>((resolve) => setTimeout(() => resolve(null), graceSeconds * 1000)),
  ]);
  if (exited === null) {
    await container.remove();
    throw new Error(`still running ${graceSeconds} s (terminationGracePeriodSeconds) after SIGTERM`);
  }
  const figure = figures[figuresKey];
  if (figure) figure.sigtermToExitMs = Date.now() - stopping;
  await execa('runc', ['delete', '--force', container.id], { reject: false });
  // The container's whole output beside the figures, for whoever reads a run.
  await writeFile(join(dirname(IMAGE_ARCHIVE), `${figuresKey}.log`), String(exited.all));
  if (exited.exitCode !== 0) console.error(String(exited.all).slice(-4000));
  expect(exited.exitCode).toBe(0);
}

const subnet = 100 + (process.pid % 100);
let net: PodNetwork;
let web: { server: Server; port: number };
let dir: string;

beforeAll(async () => {
  if (process.getuid?.() !== 0) throw new Error('run as root: runc, ip netns');
  if (!existsSync(IMAGE_ARCHIVE)) throw new Error(`${IMAGE_ARCHIVE} missing: npm run image`);
  dir = await mkdtemp(join(tmpdir(), 'ia-image-'));
  net = podNetwork(`ia-image-${process.pid}`, subnet);
  web = await startWeb(net.hostIp);
});
afterAll(async () => {
  await new Promise((resolve) => web?.server.close(resolve));
  net?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
  await writeFile(join(dirname(IMAGE_ARCHIVE), 'figures.json'), `${JSON.stringify(figures, null, 2)}\n`).catch(
    () => undefined,
  );
  if (Object.keys(figures).length > 0) console.log(JSON.stringify(figures, null, 2));
});

describe('the SBOM next to the image', () => {
  it('lists every Debian package dpkg installed and every npm package in /app/node_modules, with their versions', async () => {
    const sbom = JSON.parse(await readFile(IMAGE_ARCHIVE.replace(/\.oci\.tar$/, '.spdx.json'), 'utf8')) as {
      spdxVersion: string;
      packages: { SPDXID: string; name: string; versionInfo: string; externalRefs?: { referenceLocator: string }[] }[];
      relationships: { spdxElementId: string; relatedSpdxElement: string }[];
    };
    expect(sbom.spdxVersion).toBe('SPDX-2.3');
    const ids = new Set(sbom.packages.map((p) => p.SPDXID));
    expect(ids.size).toBe(sbom.packages.length);
    for (const id of ids) expect(id).toMatch(/^SPDXRef-[A-Za-z0-9.-]+$/);
    for (const r of sbom.relationships)
      expect([r.spdxElementId, r.relatedSpdxElement].filter((id) => id !== 'SPDXRef-DOCUMENT' && !ids.has(id))).toEqual(
        [],
      );
    const purls = new Set(sbom.packages.flatMap((p) => (p.externalRefs ?? []).map((r) => r.referenceLocator)));

    // What is in the image, read from its own files.
    const rootfs = join((await unpackImage(join(dir, 'sbom'))).dir, 'rootfs');
    const installed = (await readFile(join(rootfs, 'var/lib/dpkg/status'), 'utf8'))
      .split(/\n\n+/)
      .filter((p) => /^Status: install ok installed$/m.test(p))
      .map((p) => ({ name: p.match(/^Package: (.+)$/m)![1]!, version: p.match(/^Version: (.+)$/m)![1]! }));
    expect(installed.map((p) => p.name)).toEqual(
      expect.arrayContaining(['nginx', 'libnginx-mod-http-lua', 'lua-cjson', 'tini', 'ca-certificates']),
    );
    const debPurls = [...purls].filter((p) => p.startsWith('pkg:deb/'));
    expect(debPurls.length).toBe(installed.length);
    const unlisted = installed.filter(
      ({ name, version }) =>
        !debPurls.some((p) =>
          p.startsWith(`pkg:deb/debian/${encodeURIComponent(name)}@${encodeURIComponent(version)}?`),
        ),
    );
    expect(unlisted).toEqual([]);
    const lock = JSON.parse(await readFile(join(rootfs, 'app/node_modules/.package-lock.json'), 'utf8')) as {
      packages: Record<string, { version: string }>;
    };
    const npm = Object.entries(lock.packages).map(([path, { version }]) => {
      const name = path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length);
      return `pkg:npm/${name.replace(/^@/, '%40')}@${version}`;
    });
    expect(npm).toContain('pkg:npm/xstate@5.33.3');
    expect(npm.filter((purl) => !purls.has(purl))).toEqual([]);
    expect([...purls].filter((p) => p.startsWith('pkg:npm/')).length).toBe(npm.length);
  });
});

describe('the image under runc', () => {
  let api: ApiServer | undefined;
  let service: ClusterService | undefined;
  afterAll(async () => {
    await service?.close();
    await api?.close();
  });

  it("as deploy/'s replace-ingress-nginx overlay runs it", async () => {
    const overlay = join(DEPLOY, 'kustomize/overlays/replace-ingress-nginx');
    const yaml = (await execa(KUBECTL, ['kustomize', overlay], { timeout: 20_000 })).stdout;
    const objects = parseAllDocuments(yaml).map((d) => d.toJS() as { kind: string; metadata: { name: string } });
    const deployment = find<V1Deployment>(objects as never, 'Deployment');
    const namespace = deployment.metadata!.namespace!;
    const podSpec = deployment.spec!.template.spec!;
    const container = podSpec.containers.find((c) => c.name === 'controller')!;
    // The webhook's Service reaches the pod's webhook port, as the cluster network would.
    const webhookPort = Number(container.args!.find((a) => a.startsWith('--validating-webhook='))!.split(':')[1]);
    api = await startApiServer({
      extraKinds: [...DEPLOY_RESOURCES, ...GATEWAY_RESOURCES],
      serviceNetwork: ({ namespace: ns, name, port }) =>
        ns === namespace && name === 'ingress-actors-admission' && port === 443
          ? { host: net.podIp, port: webhookPort }
          : undefined,
    });
    const work = join(dir, 'deployment');
    service = await kubernetesService(net, api, namespace, work);
    await api.writeKubeconfig(join(work, 'admin-kubeconfig'));
    const kubectl = kubectlFor(join(work, 'admin-kubeconfig'), join(work, 'cache'));
    await writeFile(join(work, 'overlay.yaml'), yaml);
    // What the cluster holds already, then the overlay (its webhook, failurePolicy Fail, would refuse an Ingress
    // while no controller answers).
    const seed = [
      ...serviceWithEndpoints('web', [{ ip: net.hostIp, port: web.port }]),
      ingress('shop', { 'shop.example.com': [{ path: '/', service: 'web' }] }),
      ...ROUTED,
    ];
    await kubectl.run(['apply', '-f', '-'], seed.map((o) => stringify(o)).join('---\n'));
    await kubectl.run(['apply', '-f', join(work, 'overlay.yaml')]);

    const bundle = await unpackImage(work);
    const spec = writeRuntimeSpec(bundle, podSpec, container, {
      name: 'ingress-actors-6c9f7d8b5-q4x2n',
      namespace,
      nodeName: 'node-a',
      network: net,
      env: service.env,
      files: service.files,
    });
    expect(spec.root.readonly).toBe(true);
    expect(spec.process.user.uid).toBe(101);
    expect(spec.mounts.find((m) => m.destination === '/tmp')?.type).toBe('tmpfs');

    const started = Date.now();
    const running = startContainer(bundle, `ia-image-${process.pid}-deployment`);
    await exercise(
      running,
      started,
      net,
      kubectl,
      'shop.example.com',
      'default',
      podSpec.terminationGracePeriodSeconds ?? 30,
      'deployment',
    );
  }, 240_000);
});

describe("the image under runc with ingress-nginx's Helm chart arguments", () => {
  let api: ApiServer | undefined;
  let service: ClusterService | undefined;
  afterAll(async () => {
    await service?.close();
    await api?.close();
  });

  it('as the chart runs its controller container', async () => {
    const namespace = 'ingress-nginx';
    const certificates = '/usr/local/certificates';
    // templates/controller-deployment.yaml and _params.tpl with default values (v4.15); controller.metrics.enabled.
    const container = {
      name: 'controller',
      args: [CHART_BINARY, ...chartDefaultArgs(8443, certificates), '--enable-metrics=true'],
      env: [
        { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
        { name: 'POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
        { name: 'LD_PRELOAD', value: '/usr/local/lib/libmimalloc.so' },
      ],
      securityContext: {
        runAsNonRoot: true,
        runAsUser: 101,
        runAsGroup: 82,
        allowPrivilegeEscalation: false,
        seccompProfile: { type: 'RuntimeDefault' },
        capabilities: { drop: ['ALL'], add: ['NET_BIND_SERVICE'] },
        readOnlyRootFilesystem: false,
      },
    };
    // The pod: the chart's terminationGracePeriodSeconds, and (controller.sysctls) the unprivileged port floor that
    // lets uid 101 bind 80 under no_new_privs.
    const podSpec = {
      containers: [container],
      terminationGracePeriodSeconds: 300,
      securityContext: { sysctls: [{ name: 'net.ipv4.ip_unprivileged_port_start', value: '0' }] },
    };
    const pair = await issueCertificate({
      commonName: 'ingress-nginx-controller-admission',
      dnsNames: [`ingress-nginx-controller-admission.${namespace}.svc`],
    });
    api = await startApiServer({
      extraKinds: [...DEPLOY_RESOURCES, ...GATEWAY_RESOURCES],
      serviceNetwork: ({ namespace: ns, name, port }) =>
        ns === namespace && name === 'ingress-nginx-controller-admission' && port === 443
          ? { host: net.podIp, port: 8443 }
          : undefined,
    });
    const work = join(dir, 'chart');
    service = await kubernetesService(net, api, namespace, work);
    await execa('mkdir', ['-p', join(work, 'certificates')]);
    await api.writeKubeconfig(join(work, 'admin-kubeconfig'));
    await writeFile(join(work, 'certificates', 'cert'), pair.certPem);
    // the Secret volume's mode in the chart is the default 0644, readable by uid 101
    await writeFile(join(work, 'certificates', 'key'), pair.keyPem, { mode: 0o644 });
    const kubectl = kubectlFor(join(work, 'admin-kubeconfig'), join(work, 'cache'));
    const seed = [
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } },
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { namespace, name: 'ingress-nginx-controller' },
        data: { 'allow-snippet-annotations': 'false' },
      },
      ingressClass(),
      ...serviceWithEndpoints('web', [{ ip: net.hostIp, port: web.port }]),
      ingress('chart', { 'chart.example.com': [{ path: '/', service: 'web' }] }),
      ...ROUTED,
      // templates/admission-webhooks/validating-webhook.yaml, the caBundle as its patch job sets it; last, as it
      // refuses Ingresses while no controller answers
      {
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'ValidatingWebhookConfiguration',
        metadata: { name: 'ingress-nginx-admission' },
        webhooks: [
          {
            name: 'validate.nginx.ingress.kubernetes.io',
            matchPolicy: 'Equivalent',
            rules: [
              {
                apiGroups: ['networking.k8s.io'],
                apiVersions: ['v1'],
                operations: ['CREATE', 'UPDATE'],
                resources: ['ingresses'],
              },
            ],
            failurePolicy: 'Fail',
            sideEffects: 'None',
            admissionReviewVersions: ['v1'],
            clientConfig: {
              service: {
                namespace,
                name: 'ingress-nginx-controller-admission',
                path: '/networking/v1/ingresses',
                port: 443,
              },
              caBundle: Buffer.from(pair.certPem).toString('base64'),
            },
          },
        ],
      },
    ];
    await kubectl.run(['apply', '-f', '-'], seed.map((o) => stringify(o)).join('---\n'));

    const bundle = await unpackImage(work);
    writeRuntimeSpec(bundle, podSpec as never, container as never, {
      name: 'ingress-nginx-controller-7b9c5f6d4-m2k8p',
      namespace,
      nodeName: 'node-a',
      network: net,
      env: service.env,
      files: { ...service.files, [certificates]: join(work, 'certificates') },
    });
    const started = Date.now();
    const running = startContainer(bundle, `ia-image-${process.pid}-chart`);
    await exercise(running, started, net, kubectl, 'chart.example.com', 'default', 300, 'chart');
  }, 240_000);
});
