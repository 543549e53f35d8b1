/**
 * The Gateway API conformance harness: the test API server, the standard-channel CRDs and gateway-api's base
 * infrastructure (conformance/base/manifests.yaml, as data) applied with kubectl, its Deployments replaced by echo
 * pods on loopback addresses (127.0.0.2 …) and EndpointSlices pointing at them, the TLS Secrets the suite makes at
 * setup issued here, and the real controller with the Gateway API on and its real nginx.
 */
import { GATEWAY_API_INSTALL } from '../../src/dev/api-server/gateway-api.js';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { KubeConfig, KubernetesObjectApi, type KubernetesObject } from '@kubernetes/client-node';
import { pino } from 'pino';
import { parseAllDocuments, stringify } from 'yaml';
import { parseControllerFlags } from '../../src/cli/controller-flags.js';
import { startController, type Controller } from '../../src/main.js';
import { issueCertificate } from '../../src/tls/issue.js';
import { nginxSettled, queueIdle } from '../support/cluster.js';
import { kubectlFor, startTestApi, type Kubectl, type TestApi } from '../support/kube-api.js';
import { tlsSecret } from '../support/manifests.js';
import { freePort } from '../support/net.js';
import { testControllerFlags } from '../support/controller-flags.js';
import { startGrpcEcho } from '../support/grpc-echo.js';
import { startCorednsPod, startEchoPod, startTcpEchoPod, startUdpEchoPod, type EchoPod } from './echo.js';

/**
 * GATEWAY_POOL is --gateway-addresses: loopback addresses the echo pods do not use. USABLE_ADDRESS, its last, is
 * the one GatewayStaticAddresses requests (dynamic assignment takes the first free ones); UNUSABLE_ADDRESS is not
 * in the pool.
 */
export const GATEWAY_POOL = '127.0.0.200-127.0.0.250';
export const USABLE_ADDRESS = '127.0.0.250';
export const UNUSABLE_ADDRESS = '127.0.0.254';

/** the GatewayClass the base and the tests' manifests name through {GATEWAY_CLASS_NAME} */
export const GATEWAY_CLASS = 'ingress-actors';
export const CONTROLLER_NAME = 'ingress-actors.io/gateway-controller';
export const INFRA_NS = 'gateway-conformance-infra';
export const APP_NS = 'gateway-conformance-app-backend';
export const WEB_NS = 'gateway-conformance-web-backend';

const MANIFESTS = new URL('./manifests/', import.meta.url);
const GATEWAY_API_MIRROR = '/work/.mirror/kubernetes-sigs+gateway-api/repo';

/** Harness is the running setup every conformance test uses. */
export interface Harness {
  readonly api: TestApi;
  readonly kubectl: Kubectl;
  readonly client: KubernetesObjectApi;
  readonly controller: Controller;
  readonly httpPort: number;
  readonly httpsPort: number;
  readonly pods: readonly EchoPod[];
  /** the CA-less certificate of Secret tls-validity-checks-certificate, which HTTPS requests trust */
  readonly infraCertPem: string;
  /** a Gateway listener port → the port nginx listens on (80 → --http-port, 443 → --https-port) */
  mapPort(port: number): number;
  /** the text of a manifest of test/conformance/manifests with {GATEWAY_CLASS_NAME} filled in */
  manifest(file: string): Promise<string>;
  apply(file: string): Promise<void>;
  remove(file: string): Promise<void>;
  get(apiVersion: string, kind: string, namespace: string, name: string): Promise<KubernetesObject | null>;
  close(): Promise<void>;
}

/**
 * crdsFile is deploy/gateway-api/standard-install.yaml when vendored; before that, the standard channel's CRDs of
 * the gateway-api mirror concatenated into a temporary file (or null: no CRDs to install).
 */
async function crdsFile(dir: string): Promise<string | null> {
  if (process.env.GATEWAY_API_CRDS) return process.env.GATEWAY_API_CRDS;
  if (existsSync(GATEWAY_API_INSTALL)) return GATEWAY_API_INSTALL;
  if (!existsSync(GATEWAY_API_MIRROR)) return null;
  const tag = JSON.parse(await readFile(new URL('./inventory.json', import.meta.url), 'utf8')).tag as string;
  const git = (...args: string[]) =>
    execFileSync('git', ['-C', GATEWAY_API_MIRROR, ...args], { encoding: 'utf8', maxBuffer: 1 << 27 });
  const files = git('ls-tree', '--name-only', tag, 'config/crd/standard/')
    .split('\n')
    .filter((f) => f.endsWith('.yaml') && !f.includes('_vap_'));
  const file = join(dir, 'standard-install.yaml');
  await writeFile(file, files.map((f) => git('show', `${tag}:${f}`)).join('\n---\n'));
  return file;
}

/** fill puts our GatewayClass and controller name where gateway-api's manifests have their placeholders. */
const fill = (text: string) =>
  text.replaceAll('{GATEWAY_CLASS_NAME}', GATEWAY_CLASS).replaceAll('{GATEWAY_CONTROLLER_NAME}', CONTROLLER_NAME);

/**
 * overlayAddresses does what conformance/utils/kubernetes/apply.go's prepareGateway does with a Gateway's
 * `spec.addresses`: entries PLACEHOLDER_UNUSABLE_ADDRS and PLACEHOLDER_USABLE_ADDRS become the suite's unusable and
 * usable addresses (UnusableNetworkAddresses, UsableNetworkAddresses), after the `test/fake-invalid-type` entries.
 */
export function overlayAddresses(text: string): string {
  if (!text.includes('PLACEHOLDER_')) return text;
  return parseAllDocuments(text)
    .filter((d) => d.toJSON() !== null)
    .map((d) => {
      const o = d.toJSON() as { kind?: string; spec?: { addresses?: { type?: string; value?: string }[] } } | null;
      const addresses = o?.spec?.addresses;
      if (o?.kind !== 'Gateway' || !addresses) return stringify(o);
      const has = (v: string) => addresses.some((a) => a.value === v);
      o.spec!.addresses = [
        ...addresses.filter((a) => a.type === 'test/fake-invalid-type'),
        ...(has('PLACEHOLDER_UNUSABLE_ADDRS') ? [{ type: 'IPAddress', value: UNUSABLE_ADDRESS }] : []),
        ...(has('PLACEHOLDER_USABLE_ADDRS') ? [{ type: 'IPAddress', value: USABLE_ADDRESS }] : []),
      ];
      return stringify(o);
    })
    .join('---\n');
}

/** syncGeneration is the controller's last sync's generation (its sync queue's). */
const syncGeneration = (c: Controller): number =>
  (c.root.system.get('syncQueue')?.getSnapshot().context as { generation?: number } | undefined)?.generation ?? 0;

/**
 * removalServed waits until nginx serves what a test's removal left (a sync after `before`, none queued, nginx settled
 * twice in a row): otherwise the next test's first consistent answers may come from this one's routes, and its
 * traffic then meet the reload that takes them away (GRPCRouteWeight after GRPCRouteNamedRule on one Gateway: its
 * socket closed, ECONNREFUSED). A removal no build reads makes no sync: after a second it waits for settling alone.
 */
async function removalServed(c: Controller, before: number): Promise<void> {
  const settled = () =>
    queueIdle(c.root.system.get('syncQueue')?.getSnapshot().value) &&
    nginxSettled(c.root.system.get('nginx')?.getSnapshot() as Parameters<typeof nginxSettled>[0]);
  const started = Date.now();
  let inARow = 0;
  while (Date.now() - started < 15_000) {
    const synced = syncGeneration(c) > before || Date.now() - started > 1_000;
    inARow = synced && settled() ? inARow + 1 : 0;
    if (inARow >= 2) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error('the controller did not settle within 15 s after a test removed its manifests');
}

/**
 * withoutDeployments leaves a test manifest's Deployments out: the test API server has no apps/v1. A test's TLS, TCP
 * and UDP Deployments become echo pods (below).
 */
export function withoutDeployments(text: string): string {
  if (!/^kind: Deployment$/m.test(text)) return text;
  return parseAllDocuments(text)
    .map((d) => d.toJSON() as { kind?: string } | null)
    .filter((o) => o !== null && o.kind !== 'Deployment')
    .map((o) => stringify(o))
    .join('---\n');
}

/** KIND_KEPT are the base's kinds applied as written; Deployments become echo pods, the rest (coredns) is left out. */
const KIND_KEPT = new Set(['Namespace', 'Gateway', 'Service', 'ReferenceGrant']);

interface Deployment {
  metadata: { name: string; namespace: string };
  spec: {
    replicas?: number;
    template: {
      metadata: { labels: Record<string, string> };
      spec: {
        containers: { image?: string; env?: { name: string; value?: string }[] }[];
        volumes?: { secret?: { secretName?: string } }[];
      };
    };
  };
}
/** ServiceObject is the part of a Service the endpoint slices are made from. */
export interface ServiceObject {
  metadata: { name: string; namespace: string };
  spec: {
    selector?: Record<string, string>;
    ports?: { name?: string; port: number; targetPort?: number | string; protocol?: string }[];
  };
}

/**
 * an echo-basic pod answers plain HTTP on its targetPort 3000, or gRPC (h2c) there with GRPC_ECHO_SERVER
 * (test/support/grpc-echo.ts); its TCP and UDP servers, and coredns, are stream pods (streamPodKind); h2c HTTP ports
 * are not emulated
 */
const HTTP_TARGET_PORT = 3000;
const isHttpEcho = (d: Deployment) =>
  d.spec.template.spec.containers.every((c) =>
    (c.env ?? []).every(
      (e) => !['GRPC_ECHO_SERVER', 'TCP_ECHO_SERVER', 'UDP_ECHO_SERVER', 'TLS_SERVER_CERT'].includes(e.name),
    ),
  ) && !d.metadata.name.startsWith('coredns');

/** a TLS_SERVER_CERT pod answers HTTPS on its targetPort 8443 with its Secret's certificate (echo-basic's https) */
const tlsSecretOf = (d: Deployment): string | undefined =>
  d.spec.template.spec.containers.every((c) => (c.env ?? []).every((e) => e.name !== 'TCP_ECHO_SERVER')) &&
  d.spec.template.spec.containers.some((c) => (c.env ?? []).some((e) => e.name === 'TLS_SERVER_CERT'))
    ? d.spec.template.spec.volumes?.find((v) => v.secret?.secretName)?.secret?.secretName
    : undefined;

const isGrpcEcho = (d: Deployment) =>
  d.spec.template.spec.containers.some((c) => (c.env ?? []).some((e) => e.name === 'GRPC_ECHO_SERVER'));

/** envOf is the value a Deployment's containers give an environment variable (SERVICE_NAME …), if any */
const envOf = (d: Deployment, name: string): string | undefined =>
  d.spec.template.spec.containers.flatMap((c) => c.env ?? []).find((e) => e.name === name)?.value;
const hasEnv = (d: Deployment, name: string) =>
  d.spec.template.spec.containers.some((c) => (c.env ?? []).some((e) => e.name === name));
/** the TCP, UDP and DNS pods: echo-basic's tcpserver and udpechoserver, and the base's coredns */
const streamPodKind = (d: Deployment): 'tcp' | 'udp' | 'dns' | null =>
  hasEnv(d, 'TCP_ECHO_SERVER')
    ? 'tcp'
    : hasEnv(d, 'UDP_ECHO_SERVER')
      ? 'udp'
      : d.spec.template.spec.containers.some((c) => c.image?.includes('/coredns/coredns:'))
        ? 'dns'
        : null;

/** baseObjects reads the base as data: what is applied, and the echo pods (one per replica) with their slices. */
async function baseObjects(): Promise<{ objects: object[]; deployments: Deployment[]; services: ServiceObject[] }> {
  const docs = parseAllDocuments(fill(await readFile(new URL('base.yaml', MANIFESTS), 'utf8')))
    .map((d) => d.toJSON() as { kind?: string } | null)
    .filter((d): d is { kind: string } => d !== null && typeof d.kind === 'string');
  return {
    objects: docs.filter((d) => KIND_KEPT.has(d.kind)),
    deployments: (docs.filter((d) => d.kind === 'Deployment') as unknown as Deployment[]).filter(
      (d) => isHttpEcho(d) || isGrpcEcho(d) || tlsSecretOf(d) !== undefined || streamPodKind(d) !== null,
    ),
    services: docs.filter((d) => d.kind === 'Service') as unknown as ServiceObject[],
  };
}

/** selects says whether Service `s` selects a pod of `namespace` with `labels`. */
const selects = (s: ServiceObject, namespace: string, labels: Readonly<Record<string, string>>) =>
  s.metadata.namespace === namespace &&
  s.spec.selector !== undefined &&
  Object.keys(s.spec.selector).length > 0 &&
  Object.entries(s.spec.selector).every(([k, v]) => labels[k] === v);

/**
 * endpointSlicesFor does the EndpointSlice controller's work for `services`: one IPv4 slice per Service with a
 * selector, holding the echo pods it selects, with the Service's ports whose targetPort is the echo's HTTP port, or
 * for a TCP, UDP or DNS pod each of its container ports (targetPort and protocol) the Service names.
 */
export function endpointSlicesFor(services: readonly ServiceObject[], pods: readonly EchoPod[]): object[] {
  const slices: object[] = [];
  for (const s of services) {
    const selected = pods.filter((p) => selects(s, p.namespace, p.labels));
    if (selected.length === 0) continue;
    const targets = selected[0]!.targets;
    const targetPort = selected[0]!.targetPort ?? HTTP_TARGET_PORT;
    const ports = targets
      ? (s.spec.ports ?? []).flatMap((p) => {
          const protocol = p.protocol ?? 'TCP';
          const target = targets.find((t) => t.targetPort === (p.targetPort ?? p.port) && t.protocol === protocol);
          return target ? [{ name: p.name ?? '', port: target.port, protocol }] : [];
        })
      : (s.spec.ports ?? [])
          .filter((p) => (p.targetPort ?? p.port) === targetPort)
          .map((p) => ({ name: p.name ?? '', port: selected[0]!.port, protocol: 'TCP' }));
    slices.push({
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: {
        name: `${s.metadata.name}-echo`,
        namespace: s.metadata.namespace,
        labels: { 'kubernetes.io/service-name': s.metadata.name },
      },
      addressType: 'IPv4',
      ports,
      endpoints: selected.map((pod) => ({
        addresses: [pod.ip],
        conditions: { ready: true, serving: true, terminating: false },
        targetRef: { kind: 'Pod', name: pod.pod, namespace: pod.namespace },
      })),
    });
  }
  return slices;
}

/** deploymentsIn lists the Deployments of a manifest's text. */
const deploymentsIn = (text: string) =>
  parseAllDocuments(text)
    .map((d) => d.toJSON() as { kind?: string } | null)
    .filter((d) => d?.kind === 'Deployment') as unknown as Deployment[];

/** caConfigMap is kubernetes.MustCreateCACertConfigMap's ConfigMap: the CA's PEM under `ca.crt`. */
const caConfigMap = (name: string, pem: string, namespace: string) => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace },
  data: { 'ca.crt': pem },
});

/** servicesIn lists the Services of a manifest's text. */
const servicesIn = (text: string) =>
  parseAllDocuments(text)
    .map((d) => d.toJSON() as { kind?: string } | null)
    .filter((d) => d?.kind === 'Service') as unknown as ServiceObject[];

/** podSuffix is a Deployment pod's suffix, as the ReplicaSet and the pod would add. */
const podSuffix = (i: number) => `7f9c${i}-x${i}q2z`;

/** startHarness sets everything up; the Gateways of the base are not waited for here (see basesProgrammed). */
export async function startHarness(): Promise<Harness> {
  const api = await startTestApi('ia-conformance-');
  const kubectl = kubectlFor(api.kubeconfig, join(api.dir, 'cache'));
  const pods: EchoPod[] = [];
  let controller: Controller | undefined;
  try {
    const crds = await crdsFile(api.dir);
    if (crds === null) throw new Error('no Gateway API CRDs: deploy/gateway-api/standard-install.yaml is missing');
    await kubectl.run(['apply', '-f', crds]);

    const base = await baseObjects();
    // every pod listens on one port, each on its own address, as pods do on their targetPort
    const echoPort = await freePort();
    const grpcPort = await freePort();
    const tlsPort = await freePort();
    // suite.go's CA and the certificates it signs for the TLS backends (BackendTLSPolicy checks them)
    const checksCa = await issueCertificate({ commonName: 'gateway-api conformance CA', isCa: true });
    const mismatchCa = await issueCertificate({ commonName: 'mismatch CA', isCa: true });
    const checksClient = await issueCertificate({ commonName: 'gateway-api conformance client', issuer: checksCa });
    const tlsCerts: Record<string, { certPem: string; keyPem: string }> = {
      'tls-checks-certificate': await issueCertificate({
        commonName: 'abc.example.com',
        dnsNames: ['abc.example.com', 'other.example.com'],
        issuer: checksCa,
      }),
      'tls-passthrough-checks-certificate': await issueCertificate({
        commonName: 'abc.example.com',
        dnsNames: ['abc.example.com'],
        issuer: checksCa,
      }),
    };
    let ip = 2;
    // the TCP, UDP and DNS pods' ports, shared as the HTTP pods' are (a slice's port is every endpoint's)
    const streamPorts = { tcp: await freePort(), tls: await freePort(), udp: await freePort(), dns: await freePort() };
    /** startStreamPod starts replica `i` of a TCP, UDP or DNS Deployment on the next address; null for another kind */
    const startStreamPod = async (d: Deployment, i: number): Promise<EchoPod | null> => {
      const kind = streamPodKind(d);
      if (kind === null) return null;
      if (ip >= 200) throw new Error('too many echo pods for 127.0.0.2-127.0.0.199');
      const address = `127.0.0.${ip++}`;
      const pod = `${d.metadata.name}-${podSuffix(i)}`;
      const { namespace } = d.metadata;
      const labels = d.spec.template.metadata.labels;
      const service = envOf(d, 'SERVICE_NAME') ?? '';
      if (kind === 'udp') return startUdpEchoPod(address, streamPorts.udp, pod, namespace, service, labels);
      if (kind === 'dns') return startCorednsPod(address, streamPorts.dns, pod, namespace, labels);
      // TLS_SERVER_CERT names the certificate of the Secret the pod mounts
      const secret = hasEnv(d, 'TLS_SERVER_CERT')
        ? d.spec.template.spec.volumes?.find((v) => v.secret?.secretName)?.secret?.secretName
        : undefined;
      const cert = secret === undefined ? undefined : tlsCerts[secret];
      if (secret !== undefined && cert === undefined) throw new Error(`${pod}: no certificate for Secret ${secret}`);
      const tls = cert ? { cert: cert.certPem, key: cert.keyPem } : undefined;
      const ports = { tcp: streamPorts.tcp, tls: streamPorts.tls };
      return startTcpEchoPod(address, ports, pod, namespace, service, labels, tls);
    };
    for (const d of base.deployments) {
      // the pods' addresses stay below the Gateways' pool (127.0.0.200 …)
      if (ip >= 200) throw new Error('too many echo pods for 127.0.0.2-127.0.0.199');
      const labels = d.spec.template.metadata.labels;
      const service = base.services.find((s) => selects(s, d.metadata.namespace, labels));
      for (let i = 0; i < (d.spec.replicas ?? 1); i++) {
        const streamPod = await startStreamPod(d, i);
        if (streamPod) {
          pods.push(streamPod);
          continue;
        }
        const pod = `${d.metadata.name}-${podSuffix(i)}`;
        const secret = tlsSecretOf(d);
        const tls = secret === undefined ? undefined : tlsCerts[secret];
        if (secret !== undefined && tls === undefined) continue;
        if (tls) {
          const address = `127.0.0.${ip++}`;
          const service = base.services.find((s) => selects(s, d.metadata.namespace, labels));
          const name = service?.metadata.name ?? '';
          const cert = { cert: tls.certPem, key: tls.keyPem };
          pods.push(await startEchoPod(address, tlsPort, pod, d.metadata.namespace, name, labels, cert));
          continue;
        }
        if (isGrpcEcho(d)) {
          const address = `127.0.0.${ip++}`;
          const context = { namespace: d.metadata.namespace, service_name: service?.metadata.name ?? '', pod };
          const grpcPod = await startGrpcEcho(address, context, grpcPort);
          pods.push({ ...grpcPod, pod, namespace: d.metadata.namespace, labels, echoed: [] });
          continue;
        }
        pods.push(
          await startEchoPod(
            `127.0.0.${ip++}`,
            echoPort,
            pod,
            d.metadata.namespace,
            service?.metadata.name ?? '',
            labels,
          ),
        );
      }
    }
    const slices = endpointSlicesFor(base.services, pods);
    const testPods = new Map<string, EchoPod[]>();

    // the Secrets conformance/utils/suite/suite.go makes at setup, issued here rather than copied
    const infraCert = await issueCertificate({ commonName: '*', dnsNames: ['*', '*.org', '*.wildcard.org'] });
    const webCert = await issueCertificate({ commonName: '*', dnsNames: ['*'] });
    // the TLSRoute Terminate tests' listener certificate
    const terminateCert = await issueCertificate({
      commonName: 'tls.example.com',
      dnsNames: ['tls.example.com'],
      issuer: checksCa,
    });
    const gatewayClass = {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'GatewayClass',
      metadata: { name: GATEWAY_CLASS },
      spec: { controllerName: CONTROLLER_NAME },
    };
    const namespaces = base.objects.filter((o) => (o as { kind: string }).kind === 'Namespace');
    const rest = base.objects.filter((o) => (o as { kind: string }).kind !== 'Namespace');
    const stream = (objects: object[]) => objects.map((o) => stringify(o)).join('---\n');
    await kubectl.run(['apply', '-f', '-'], stream(namespaces));
    // a CRD is served once it is Established; until then kubectl does not know the kind
    await kubectl.run(['wait', '--for=condition=Established', '--timeout=20s', 'crd', '--all']);
    await kubectl.run(
      ['apply', '-f', '-'],
      stream([
        gatewayClass,
        tlsSecret('tls-validity-checks-certificate', infraCert.certPem, infraCert.keyPem, INFRA_NS),
        tlsSecret('certificate', webCert.certPem, webCert.keyPem, WEB_NS),
        caConfigMap('tls-checks-ca-certificate', checksCa.certPem, INFRA_NS),
        caConfigMap('mismatch-ca-certificate', mismatchCa.certPem, INFRA_NS),
        tlsSecret('tls-checks-client-certificate', checksClient.certPem, checksClient.keyPem, INFRA_NS),
        // the TLS pods' certificates, which the TLSRoute tests read (GetTLSSecret) to trust a passed-through backend
        ...(['tls-checks-certificate', 'tls-passthrough-checks-certificate'] as const).map((name) =>
          tlsSecret(name, tlsCerts[name]!.certPem, tlsCerts[name]!.keyPem, INFRA_NS),
        ),
        tlsSecret(
          'tls-passthrough-checks-certificate',
          tlsCerts['tls-passthrough-checks-certificate']!.certPem,
          tlsCerts['tls-passthrough-checks-certificate']!.keyPem,
          APP_NS,
        ),
        tlsSecret('tls-terminate-checks-certificate', terminateCert.certPem, terminateCert.keyPem, INFRA_NS),
        ...rest,
        ...slices,
      ]),
    );

    const { flags, httpPort, httpsPort } = await testControllerFlags(api.kubeconfig, join(api.dir, 'nginx'));
    // nginx's workers (nobody, as root) connect to TLS Terminate's internal sockets in the config folder: the test's
    // temporary parent folder is 0700 (see test/controller/stream.test.ts)
    await chmod(api.dir, 0o711);
    const parsed = parseControllerFlags([
      ...flags,
      '--publish-status-address',
      '127.0.0.1',
      // each Gateway on its own loopback address (the echo pods have 127.0.0.2 …), as the suite expects
      '--gateway-addresses',
      GATEWAY_POOL,
      '--sync-rate-limit',
      '10',
      '--shutdown-timeout',
      '5',
    ]);
    if (!('config' in parsed)) throw new Error('unexpected --help');
    // nginx's own servers on 127.0.0.1 (as the demo's): a Gateway's own address is then free on the https port for a
    // TLS listener's stream server (a wildcard http listen would take the port on every address)
    const config = { ...parsed.config, build: { ...parsed.config.build, listenAddress: '127.0.0.1' } };
    const started = await startController(config, pino({ level: process.env.TEST_LOG ?? 'silent' }));
    controller = started;

    const kc = new KubeConfig();
    kc.loadFromString(api.api.kubeconfigText);
    const client = kc.makeApiClient(KubernetesObjectApi);
    const manifest = async (file: string) => fill(await readFile(new URL(file, MANIFESTS), 'utf8'));
    return {
      api,
      kubectl,
      client,
      controller: started,
      httpPort,
      httpsPort,
      pods,
      infraCertPem: infraCert.certPem,
      mapPort: (port) => (port === 80 ? httpPort : port === 443 ? httpsPort : port),
      manifest,
      // a test's Services with a selector get their slices as the EndpointSlice controller would make them
      apply: async (file) => {
        const text = overlayAddresses(await manifest(file));
        await kubectl.run(['apply', '-f', '-'], withoutDeployments(text));
        // a test's own TLS, TCP and UDP Deployments (gateway-tls-backend-client-certificate.yaml, tcproute-*.yaml,
        // udproute-*.yaml) become pods as the base's do
        for (const d of deploymentsIn(text)) {
          if (streamPodKind(d) !== null) {
            for (let i = 0; i < (d.spec.replicas ?? 1); i++) {
              const pod = (await startStreamPod(d, i))!;
              pods.push(pod);
              (testPods.get(file) ?? testPods.set(file, []).get(file)!).push(pod);
            }
            continue;
          }
          const secret = tlsSecretOf(d);
          const tls = secret === undefined ? undefined : tlsCerts[secret];
          if (tls === undefined || ip >= 200) continue;
          const labels = d.spec.template.metadata.labels;
          const clientCa = d.spec.template.spec.containers.some((c) =>
            (c.env ?? []).some((e) => e.name === 'TLS_CLIENT_CACERTS'),
          )
            ? checksCa.certPem
            : undefined;
          const cert = { cert: tls.certPem, key: tls.keyPem, ...(clientCa ? { clientCa } : {}) };
          const pod = await startEchoPod(
            `127.0.0.${ip++}`,
            tlsPort,
            `${d.metadata.name}-${podSuffix(0)}`,
            d.metadata.namespace,
            '',
            labels,
            cert,
          );
          pods.push(pod);
          (testPods.get(file) ?? testPods.set(file, []).get(file)!).push(pod);
        }
        const slices = endpointSlicesFor(servicesIn(text), pods);
        if (slices.length > 0) await kubectl.run(['apply', '-f', '-'], slices.map((o) => stringify(o)).join('---\n'));
      },
      remove: async (file) => {
        const text = withoutDeployments(await manifest(file));
        const slices = endpointSlicesFor(servicesIn(text), pods);
        const all = slices.length > 0 ? `${text}\n---\n${slices.map((o) => stringify(o)).join('---\n')}` : text;
        const before = syncGeneration(started);
        await kubectl.run(['delete', '--ignore-not-found', '--wait=false', '-f', '-'], all);
        for (const pod of testPods.get(file) ?? []) {
          pods.splice(pods.indexOf(pod), 1);
          await pod.close();
        }
        testPods.delete(file);
        await removalServed(started, before);
      },
      get: async (apiVersion, kind, namespace, name) => {
        try {
          return await client.read({ apiVersion, kind, metadata: { name, ...(namespace ? { namespace } : {}) } });
        } catch (error) {
          if ((error as { code?: number }).code === 404) return null;
          throw error;
        }
      },
      close: async () => {
        if (started.root.getSnapshot().status === 'active') started.stop();
        await started.exitCode;
        await Promise.all(pods.map((p) => p.close()));
        await api.close();
      },
    };
  } catch (error) {
    if (controller) {
      controller.stop();
      await controller.exitCode;
    }
    await Promise.all(pods.map((p) => p.close()));
    await api.close();
    throw error;
  }
}
