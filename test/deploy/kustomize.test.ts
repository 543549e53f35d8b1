/**
 * deploy/kustomize/: the real `kubectl kustomize` renders the base and both overlays; every object
 * validates against the Kubernetes schemas (cert-manager's kinds, which kubernetes-models lacks, by
 * hand); the rendered Deployment's flags parse and agree with the overlay's IngressClass, the
 * webhook's Service, port, Secret and ValidatingWebhookConfiguration; and `kubectl apply` of the
 * replace overlay's output against the test API server creates every object.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import type {
  V1ClusterRole,
  V1Deployment,
  V1Role,
  V1IngressClass,
  V1NetworkPolicy,
  V1Service,
  V1ValidatingWebhookConfiguration,
} from '@kubernetes/client-node';
import * as admissionregistration from 'kubernetes-models/admissionregistration.k8s.io/v1';
import * as apps from 'kubernetes-models/apps/v1';
import * as networking from 'kubernetes-models/networking.k8s.io/v1';
import * as policy from 'kubernetes-models/policy/v1';
import * as rbac from 'kubernetes-models/rbac.authorization.k8s.io/v1';
import * as core from 'kubernetes-models/v1';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { DEPLOY_RESOURCES } from '../../src/dev/api-server/resources.js';
import { parseControllerFlags } from '../../src/cli/controller-flags.js';
import { KUBECTL, kubectlFor, startTestApi, type TestApi } from '../support/kube-api.js';
import { controllerContainer, DEPLOY, find, loadManifests, type Manifest } from './manifests.js';
import { unknownFields } from './strict-fields.js';

const KUSTOMIZE = join(DEPLOY, 'kustomize');

/** render runs the real `kubectl kustomize` on a folder of deploy/kustomize/ (or any folder, absolute). */
function render(folder: string): { yaml: string; objects: Manifest[] } {
  const yaml = execFileSync(KUBECTL, ['kustomize', resolve(KUSTOMIZE, folder)], {
    encoding: 'utf8',
    timeout: 20_000,
  });
  const objects = parseAllDocuments(yaml).map((doc) => ({ file: folder, ...(doc.toJS() as object) }) as Manifest);
  return { yaml, objects };
}

/**
 * certManagerOverlay writes, in a temporary folder, the overlay docs/operations.md describes for cert-manager: the
 * replace overlay with the cert-manager component in place of webhook-self-signed (kustomize takes only relative
 * paths to other folders).
 */
function certManagerOverlay(): string {
  const folder = mkdtempSync(join(tmpdir(), 'ia-kustomize-cm-'));
  const up = relative(folder, KUSTOMIZE);
  writeFileSync(
    join(folder, 'kustomization.yaml'),
    [
      'apiVersion: kustomize.config.k8s.io/v1beta1',
      'kind: Kustomization',
      'resources:',
      `  - ${up}/base`,
      'components:',
      `  - ${up}/components/webhook`,
      `  - ${up}/components/cert-manager`,
    ].join('\n'),
  );
  return folder;
}

const MODELS: Record<string, Record<string, unknown>> = {
  v1: core,
  'admissionregistration.k8s.io/v1': admissionregistration,
  'apps/v1': apps,
  'networking.k8s.io/v1': networking,
  'policy/v1': policy,
  'rbac.authorization.k8s.io/v1': rbac,
};
const strip = ({ file: _file, ...object }: Manifest) => object;

/** certManagerProblems checks the shape of cert-manager's Issuer and Certificate by hand (its CRD's required fields). */
function certManagerProblems(m: Manifest): string[] {
  const problems: string[] = [];
  const spec = m.spec as Record<string, unknown> | undefined;
  const allowed = (keys: string[]) => {
    for (const k of Object.keys(m))
      if (!['file', 'apiVersion', 'kind', 'metadata', 'spec'].includes(k)) problems.push(k);
    for (const k of Object.keys(spec ?? {})) if (!keys.includes(k)) problems.push(`spec.${k}`);
  };
  if (!m.metadata.namespace) problems.push('metadata.namespace');
  if (m.kind === 'Issuer') {
    allowed(['selfSigned', 'ca', 'acme', 'vault', 'venafi']);
    if (Object.keys(spec ?? {}).length !== 1) problems.push('spec: exactly one issuer type');
  } else if (m.kind === 'Certificate') {
    allowed(['secretName', 'duration', 'renewBefore', 'dnsNames', 'issuerRef', 'commonName', 'isCA', 'subject']);
    if (typeof spec?.secretName !== 'string') problems.push('spec.secretName');
    const ref = spec?.issuerRef as { name?: unknown; kind?: unknown } | undefined;
    if (typeof ref?.name !== 'string') problems.push('spec.issuerRef.name');
    for (const d of ['duration', 'renewBefore'])
      if (spec?.[d] !== undefined && !/^(\d+h)?(\d+m)?(\d+s)?$/.test(String(spec[d]))) problems.push(`spec.${d}`);
    if (!Array.isArray(spec?.dnsNames) || spec.dnsNames.length === 0) problems.push('spec.dnsNames');
  } else problems.push(`unknown kind ${m.kind}`);
  return problems;
}

const OVERLAYS = {
  'replace-ingress-nginx': { class: 'nginx', controller: 'k8s.io/ingress-nginx' },
  'beside-ingress-nginx': { class: 'ingress-actors', controller: 'k8s.io/ingress-actors' },
} as const;

describe('deploy/kustomize/base', () => {
  it('is deploy/kubernetes/: the same objects kubectl apply -f reads from the plain folder', () => {
    const plain = loadManifests().map(strip);
    expect(render('base').objects.map(strip)).toEqual(expect.arrayContaining(plain));
    expect(render('base').objects).toHaveLength(plain.length);
  });
});

describe.each(Object.entries(OVERLAYS))('deploy/kustomize/overlays/%s', (overlay, expected) => {
  const { objects } = render(join('overlays', overlay));
  const container = controllerContainer(objects);
  const args = container.args ?? [];
  const parsed = parseControllerFlags(args.slice(1));
  if (!('config' in parsed)) throw new Error('help');
  const { config, ignored } = parsed;

  it('renders the base, the webhook and the RBAC for its self-made certificate', () => {
    expect(objects.map((m) => `${m.kind}/${m.metadata.name}`).sort()).toEqual(
      [
        ...loadManifests()
          .filter((m) => m.kind !== 'IngressClass')
          .map((m) => `${m.kind}/${m.metadata.name}`),
        `IngressClass/${expected.class}`,
        'Service/ingress-actors-admission',
        'ValidatingWebhookConfiguration/ingress-actors-admission',
        'NetworkPolicy/ingress-actors',
        'Role/ingress-actors-webhook',
        'RoleBinding/ingress-actors-webhook',
        'ClusterRole/ingress-actors-webhook',
        'ClusterRoleBinding/ingress-actors-webhook',
      ].sort(),
    );
  });

  it('every object validates against its schema, with no unknown field', () => {
    for (const m of objects) {
      if (m.apiVersion === 'cert-manager.io/v1') {
        expect(certManagerProblems(m), `${m.kind}/${m.metadata.name}`).toEqual([]);
        continue;
      }
      const Model = MODELS[m.apiVersion]?.[m.kind] as (new (data: object) => { validate(): void }) | undefined;
      expect(Model, `${m.apiVersion} ${m.kind}`).toBeDefined();
      expect(() => new Model!(strip(m)).validate(), `${m.kind}/${m.metadata.name}`).not.toThrow();
      expect(unknownFields(strip(m))).toEqual([]);
    }
  });

  it('the flags parse and serve the overlay’s IngressClass', () => {
    expect(ignored).toEqual([]);
    const ingressClass = find<V1IngressClass>(objects, 'IngressClass');
    expect(ingressClass.metadata?.name).toBe(expected.class);
    expect(ingressClass.spec?.controller).toBe(expected.controller);
    expect(config.build.ingressClass).toBe(expected.class);
    expect(config.build.controllerClass).toBe(expected.controller);
    // Left as the user had it: kubectl apply never sets or removes it.
    expect(ingressClass.metadata?.annotations).toBeUndefined();
  });

  it('the webhook: flags, port, Service, Secret, RBAC and ValidatingWebhookConfiguration agree', () => {
    const webhook = config.webhook;
    if (!webhook?.selfSigned) throw new Error('no --validating-webhook with --validating-webhook-secret');
    expect(webhook.host).toBeUndefined();
    expect(webhook.certFile).toBeUndefined();
    const port = container.ports?.find((p) => p.name === 'webhook');
    expect(port?.containerPort).toBe(webhook.port);
    expect(container.volumeMounts?.find((v) => v.name === 'webhook-cert')).toBeUndefined();
    const service = find<V1Service>(objects, 'Service', 'ingress-actors-admission');
    const vwc = find<V1ValidatingWebhookConfiguration>(objects, 'ValidatingWebhookConfiguration');
    expect(webhook.selfSigned).toEqual({
      secret: { namespace: 'ingress-actors', name: 'ingress-actors-admission' },
      service: { namespace: service.metadata!.namespace, name: service.metadata!.name },
      configuration: vwc.metadata!.name,
    });
    expect(vwc.webhooks![0]!.clientConfig.service).toMatchObject(webhook.selfSigned.service);
    // The RBAC names the same Secret and configuration.
    const role = find<V1Role>(objects, 'Role', 'ingress-actors-webhook');
    expect(role.metadata!.namespace).toBe(webhook.selfSigned.secret.namespace);
    expect(role.rules).toEqual([
      { apiGroups: [''], resources: ['secrets'], verbs: ['create'] },
      {
        apiGroups: [''],
        resources: ['secrets'],
        resourceNames: [webhook.selfSigned.secret.name],
        verbs: ['get', 'update'],
      },
    ]);
    expect(find<V1ClusterRole>(objects, 'ClusterRole', 'ingress-actors-webhook').rules).toEqual([
      {
        apiGroups: ['admissionregistration.k8s.io'],
        resources: ['validatingwebhookconfigurations'],
        resourceNames: [vwc.metadata!.name],
        verbs: ['get', 'patch'],
      },
    ]);
  });

  it('the webhook’s Service, port and ValidatingWebhookConfiguration', () => {
    const webhook = config.webhook!;
    const service = find<V1Service>(objects, 'Service', 'ingress-actors-admission');
    expect(service.spec?.ports).toEqual([{ name: 'https-webhook', port: 443, targetPort: 'webhook', protocol: 'TCP' }]);
    const podLabels = find<V1Deployment>(objects, 'Deployment').spec!.template.metadata!.labels!;
    for (const [k, v] of Object.entries(service.spec!.selector!)) expect(podLabels[k]).toBe(v);

    const vwc = find<V1ValidatingWebhookConfiguration>(objects, 'ValidatingWebhookConfiguration');
    expect(vwc.webhooks).toHaveLength(1);
    const hook = vwc.webhooks![0]!;
    expect(hook.clientConfig.service).toEqual({
      name: service.metadata!.name,
      namespace: service.metadata!.namespace,
      port: 443,
      path: '/networking/v1/ingresses',
    });
    expect(hook.rules).toEqual([
      {
        apiGroups: ['networking.k8s.io'],
        apiVersions: ['v1'],
        operations: ['CREATE', 'UPDATE'],
        resources: ['ingresses'],
      },
    ]);
    expect(hook).toMatchObject({
      failurePolicy: 'Fail',
      sideEffects: 'None',
      admissionReviewVersions: ['v1'],
      timeoutSeconds: 10,
      namespaceSelector: {},
      objectSelector: {},
    });

    expect(container.ports?.find((p) => p.name === 'webhook')?.containerPort).toBe(webhook.port);
  });

  it('the NetworkPolicy selects the controller pods and admits the traffic, metrics and webhook ports', () => {
    const policyObject = find<V1NetworkPolicy>(objects, 'NetworkPolicy');
    const podLabels = find<V1Deployment>(objects, 'Deployment').spec!.template.metadata!.labels!;
    const selector = Object.entries(policyObject.spec?.podSelector?.matchLabels ?? {});
    expect(selector.length).toBeGreaterThan(0);
    for (const [k, v] of selector) expect(podLabels[k]).toBe(v);
    expect(policyObject.spec?.policyTypes).toEqual(['Ingress']);
    const allowed = policyObject.spec!.ingress!.flatMap((rule) => (rule.ports ?? []).map((p) => p.port));
    expect(allowed.sort()).toEqual(
      [config.build.httpPort, config.build.httpsPort, config.healthzPort, config.webhook!.port].sort(),
    );
  });
});

describe('the cert-manager component in place of webhook-self-signed', () => {
  const folder = certManagerOverlay();
  const { objects } = render(folder);
  rmSync(folder, { recursive: true, force: true });
  const container = controllerContainer(objects);
  const parsed = parseControllerFlags((container.args ?? []).slice(1));
  if (!('config' in parsed)) throw new Error('help');
  const webhook = parsed.config.webhook;

  it('renders the Issuer and Certificate, and no RBAC for a self-made certificate', () => {
    const names = objects.map((m) => `${m.kind}/${m.metadata.name}`);
    expect(names).toEqual(
      expect.arrayContaining(['Issuer/ingress-actors-self-signed', 'Certificate/ingress-actors-admission']),
    );
    expect(names.filter((n) => n.endsWith('/ingress-actors-webhook'))).toEqual([]);
    for (const m of objects.filter((o) => o.apiVersion === 'cert-manager.io/v1'))
      expect(certManagerProblems(m), `${m.kind}/${m.metadata.name}`).toEqual([]);
  });

  it('the Certificate fills the mounted Secret, names the Service, and its CA is injected', () => {
    expect(webhook?.selfSigned).toBeUndefined();
    const mount = container.volumeMounts?.find((v) => v.name === 'webhook-cert');
    expect(mount?.readOnly).toBe(true);
    expect(webhook?.certFile).toBe(`${mount!.mountPath}/tls.crt`);
    expect(webhook?.keyFile).toBe(`${mount!.mountPath}/tls.key`);
    const pod = find<V1Deployment>(objects, 'Deployment').spec!.template.spec!;
    const secretName = pod.volumes?.find((v) => v.name === 'webhook-cert')?.secret?.secretName;
    const service = find<V1Service>(objects, 'Service', 'ingress-actors-admission');
    const vwc = find<V1ValidatingWebhookConfiguration>(objects, 'ValidatingWebhookConfiguration');
    const certificate = find(objects, 'Certificate');
    const spec = certificate.spec as { secretName: string; dnsNames: string[]; issuerRef: { name: string } };
    expect(spec.secretName).toBe(secretName);
    expect(spec.dnsNames).toContain(`${service.metadata!.name}.${service.metadata!.namespace}.svc`);
    expect(spec.issuerRef.name).toBe(find(objects, 'Issuer').metadata.name);
    expect(vwc.metadata?.annotations?.['cert-manager.io/inject-ca-from']).toBe(
      `${certificate.metadata.namespace}/${certificate.metadata.name}`,
    );
  });
});

describe('kubectl apply of the replace-ingress-nginx overlay', () => {
  let testApi: TestApi;
  let dir: string;
  beforeAll(async () => {
    testApi = await startTestApi('ia-kustomize-', { extraKinds: DEPLOY_RESOURCES });
    dir = testApi.dir;
  });
  afterAll(() => testApi?.close());

  it('creates every object, and a second apply changes nothing (but the PDB’s selector)', async () => {
    const kubectl = kubectlFor(join(dir, 'kubeconfig'), join(dir, 'cache'));
    const { yaml, objects } = render('overlays/replace-ingress-nginx');
    const file = join(dir, 'rendered.yaml');
    await writeFile(file, yaml);
    // The real thing: `kubectl apply -k` renders with the same kustomize, then applies (validated through OpenAPI).
    const first = await kubectl.run(['apply', '-k', join(KUSTOMIZE, 'overlays/replace-ingress-nginx')]);
    const created = first.stdout.trim().split('\n');
    expect(created).toHaveLength(objects.length);
    expect(created.every((line) => line.endsWith(' created'))).toBe(true);
    const second = await kubectl.run(['apply', '-f', file]);
    expect(
      second.stdout
        .trim()
        .split('\n')
        .filter((line) => !line.endsWith(' unchanged')),
    ).toEqual(['poddisruptionbudget.policy/ingress-actors configured']);
    const vwc = parse(
      (await kubectl.run(['get', 'validatingwebhookconfiguration', 'ingress-actors-admission', '-o', 'yaml'])).stdout,
    ) as V1ValidatingWebhookConfiguration;
    expect(vwc.webhooks?.[0]?.clientConfig.service?.name).toBe('ingress-actors-admission');
    const role = JSON.parse(
      (await kubectl.run(['get', 'role', 'ingress-actors-webhook', '-n', 'ingress-actors', '-o', 'json'])).stdout,
    ) as V1Role;
    expect(role.rules?.[1]?.resourceNames).toEqual(['ingress-actors-admission']);
  });

  it('the ValidatingWebhookConfiguration matches an Ingress write, and failurePolicy Fail refuses it while the webhook cannot be called', async () => {
    const kubectl = kubectlFor(join(dir, 'kubeconfig'), join(dir, 'cache'));
    // Idempotent (the test above may or may not have run first).
    await kubectl.run(['apply', '-k', join(KUSTOMIZE, 'overlays/replace-ingress-nginx')]);
    // The test API server has no cluster network to reach the Service: the call fails, as with no replica running.
    const ingressYaml = [
      'apiVersion: networking.k8s.io/v1',
      'kind: Ingress',
      'metadata: {name: web, namespace: default}',
      'spec:',
      '  ingressClassName: nginx',
      '  defaultBackend: {service: {name: web, port: {number: 80}}}',
    ].join('\n');
    const refused = await kubectl.try(['apply', '-f', '-'], ingressYaml);
    expect(refused.exitCode).not.toBe(0);
    expect(refused.stderr).toContain('failed calling webhook "validate.nginx.ingress.kubernetes.io"');
    // Other kinds are not matched by its rules.
    const configMap = await kubectl.try(['create', 'configmap', 'x', '-n', 'default']);
    expect(configMap.exitCode).toBe(0);
  });
});
