/**
 * deploy/: every manifest validates against the Kubernetes schemas (kubernetes-models) and has
 * no field its type lacks; the pieces agree with each other and with the controller's flags
 * (ports, names, the shutdown arithmetic, the security context); the Dockerfile builds the
 * image they assume; and `kubectl apply -f deploy/kubernetes/` against the test API server
 * creates every object.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type {
  V1ClusterRole,
  V1ConfigMap,
  V1Deployment,
  V1IngressClass,
  V1PodDisruptionBudget,
  V1Role,
  V1Service,
} from '@kubernetes/client-node';
import * as apps from 'kubernetes-models/apps/v1';
import * as networking from 'kubernetes-models/networking.k8s.io/v1';
import * as policy from 'kubernetes-models/policy/v1';
import * as rbac from 'kubernetes-models/rbac.authorization.k8s.io/v1';
import * as core from 'kubernetes-models/v1';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseControllerFlags } from '../../src/cli/controller-flags.js';
import { DEPLOY_RESOURCES } from '../../src/dev/api-server/resources.js';
import type { ApiServer } from '../../src/dev/api-server/server.js';
import { buildModel } from '../../src/model/build.js';
import { emptySnapshot } from '../../src/model/snapshot.js';
import { kubectlFor, startTestApi, type TestApi } from '../support/kube-api.js';
import { controllerContainer, DEPLOY, find, flagValue, loadManifests, MANIFESTS, type Manifest } from './manifests.js';
import { unknownFields } from './strict-fields.js';

const manifests = loadManifests();
const container = controllerContainer(manifests);
const args = container.args ?? [];
const deployment = find<V1Deployment>(manifests, 'Deployment');
const pod = deployment.spec!.template.spec!;
const MODELS: Record<string, Record<string, unknown>> = {
  v1: core,
  'apps/v1': apps,
  'networking.k8s.io/v1': networking,
  'policy/v1': policy,
  'rbac.authorization.k8s.io/v1': rbac,
};
const strip = ({ file: _file, ...object }: Manifest) => object;

describe('deploy/kubernetes', () => {
  it('holds the objects the issue lists', () => {
    expect(manifests.map((m) => `${m.kind}/${m.metadata.name}`)).toEqual([
      'Namespace/ingress-actors',
      'ServiceAccount/ingress-actors',
      'ClusterRole/ingress-actors',
      'ClusterRoleBinding/ingress-actors',
      'Role/ingress-actors',
      'RoleBinding/ingress-actors',
      'IngressClass/nginx',
      'ConfigMap/ingress-actors',
      'Deployment/ingress-actors',
      'Service/ingress-actors',
      'Service/ingress-actors-metrics',
      'PodDisruptionBudget/ingress-actors',
    ]);
  });

  it.each(manifests.map((m) => [`${m.file} ${m.kind}/${m.metadata.name}`, m] as const))(
    '%s validates against its schema, with no unknown field',
    (_, manifest) => {
      const Model = MODELS[manifest.apiVersion]?.[manifest.kind] as
        | (new (
            data: object,
          ) => { validate(): void })
        | undefined;
      expect(Model, `${manifest.apiVersion} ${manifest.kind}`).toBeDefined();
      expect(() => new Model!(strip(manifest)).validate()).not.toThrow();
      expect(unknownFields(strip(manifest))).toEqual([]);
    },
  );

  it('the validators do catch mistakes', () => {
    const broken = { ...strip(find(manifests, 'Deployment')), spec: { ...deployment.spec, replicas: 'two' } };
    expect(() => new apps.Deployment(broken as never).validate()).toThrow(/replicas must be integer/);
    const misspelt = {
      ...strip(find(manifests, 'Deployment')),
      spec: {
        ...deployment.spec,
        template: { ...deployment.spec!.template, spec: { ...pod, containers: [{ ...container, readinesProbe: {} }] } },
      },
    };
    expect(unknownFields(misspelt as never)).toEqual(['Deployment.spec.template.spec.containers[0].readinesProbe']);
  });

  it('the Deployment’s flags parse, and name the objects beside it', () => {
    expect(args[0]).toBe('controller');
    const parsed = parseControllerFlags(args.slice(1));
    if (!('config' in parsed)) throw new Error('help');
    const { config, ignored } = parsed;
    expect(ignored).toEqual([]);
    const ingressClass = find<V1IngressClass>(manifests, 'IngressClass');
    expect(config.build.ingressClass).toBe(ingressClass.metadata!.name);
    expect(config.build.controllerClass).toBe(ingressClass.spec!.controller);
    const configMap = find<V1ConfigMap>(manifests, 'ConfigMap');
    expect(config.build.configMap).toBe(`${configMap.metadata!.namespace}/${configMap.metadata!.name}`);
    const service = find<V1Service>(manifests, 'Service', 'ingress-actors');
    expect(config.status.publishService).toBe(`${service.metadata!.namespace}/${service.metadata!.name}`);
    const role = find<V1Role>(manifests, 'Role');
    expect(role.rules!.flatMap((r) => (r.resources?.includes('leases') ? (r.resourceNames ?? []) : []))).toEqual([
      config.status.electionId,
    ]);
    // The Role is in the ConfigMap's namespace (the Lease); ConfigMaps are watched in every namespace with the
    // Gateway API on (a BackendTLSPolicy's CA ConfigMaps), which the ClusterRole grants.
    expect(role.metadata!.namespace).toBe(configMap.metadata!.namespace);
    expect(config.build.gateway).toBeDefined();
    const cluster = find<V1ClusterRole>(manifests, 'ClusterRole');
    expect(cluster.rules!.some((r) => r.resources?.includes('configmaps') && r.verbs.includes('watch'))).toBe(true);
    // The ConfigMap's keys are all known and valid.
    const { problems } = buildModel({ ...emptySnapshot, configMaps: [configMap] }, config.build);
    expect(problems).toEqual([]);
  });

  it('probes /healthz on the --healthz-port, and the ports match the flags', () => {
    const parsed = parseControllerFlags(args.slice(1));
    if (!('config' in parsed)) throw new Error('help');
    const ports = Object.fromEntries((container.ports ?? []).map((p) => [p.name, p.containerPort]));
    expect(ports).toEqual({
      http: parsed.config.build.httpPort,
      https: parsed.config.build.httpsPort,
      metrics: parsed.config.healthzPort,
    });
    for (const probe of [container.readinessProbe, container.livenessProbe, container.startupProbe]) {
      expect(probe?.httpGet).toEqual({ path: '/healthz', port: 'metrics' });
    }
    const service = find<V1Service>(manifests, 'Service', 'ingress-actors');
    expect(service.spec?.type).toBe('LoadBalancer');
    expect(service.spec?.ports?.map((p) => p.targetPort)).toEqual(['http', 'https']);
  });

  it('terminationGracePeriodSeconds covers preStop plus the whole shutdown', () => {
    const parsed = parseControllerFlags(args.slice(1));
    if (!('config' in parsed)) throw new Error('help');
    const preStop = container.lifecycle?.preStop?.exec?.command ?? [];
    expect(preStop[0]).toBe('sleep');
    const preStopS = Number(preStop[1]);
    // The root supervisor gives up shutdownTimeout + 5 s after SIGTERM (src/main.ts).
    const shutdownS = parsed.config.shutdownTimeoutMs / 1000 + 5;
    const grace = pod.terminationGracePeriodSeconds!;
    expect(grace).toBeGreaterThan(preStopS + shutdownS);
    expect(grace).toBeLessThanOrEqual(preStopS + shutdownS + 10);
  });

  it(
    'runs 2 replicas as non-root with NET_BIND_SERVICE only, a ' + 'read-only root and /tmp as the one writable place',
    () => {
      expect(deployment.spec?.replicas).toBe(2);
      expect(deployment.spec?.strategy?.rollingUpdate).toEqual({ maxSurge: 1, maxUnavailable: 0 });
      expect(container.securityContext).toEqual({
        allowPrivilegeEscalation: false,
        readOnlyRootFilesystem: true,
        runAsNonRoot: true,
        runAsUser: 101,
        capabilities: { drop: ['ALL'], add: ['NET_BIND_SERVICE'] },
      });
      expect(pod.securityContext?.sysctls).toEqual([{ name: 'net.ipv4.ip_unprivileged_port_start', value: '0' }]);
      expect(container.volumeMounts).toEqual([{ name: 'tmp', mountPath: '/tmp' }]);
      expect(pod.volumes?.[0]?.emptyDir).toBeDefined();
      expect(flagValue(args, 'config-dir')).toMatch(/^\/tmp\//);
      const env = Object.fromEntries((container.env ?? []).map((e) => [e.name, e.valueFrom?.fieldRef?.fieldPath]));
      expect(env).toEqual({
        POD_NAME: 'metadata.name',
        POD_NAMESPACE: 'metadata.namespace',
        NODE_NAME: 'spec.nodeName',
      });
      expect(pod.serviceAccountName).toBe('ingress-actors');
    },
  );

  it('the Services and the PodDisruptionBudget select the Deployment’s pods', () => {
    const labels = deployment.spec!.template.metadata!.labels!;
    const selects = (selector: Record<string, string> | undefined) =>
      Object.entries(selector ?? {}).every(([k, v]) => labels[k] === v) && Object.keys(selector ?? {}).length > 0;
    expect(selects(deployment.spec!.selector.matchLabels)).toBe(true);
    for (const s of manifests.filter((m) => m.kind === 'Service') as unknown as V1Service[])
      expect(selects(s.spec?.selector)).toBe(true);
    const pdb = find<V1PodDisruptionBudget>(manifests, 'PodDisruptionBudget');
    expect(selects(pdb.spec?.selector?.matchLabels)).toBe(true);
    expect(pdb.spec?.minAvailable).toBe(1);
  });

  it('binds the roles to the ServiceAccount, least privilege: no wildcard, no write beyond what the code does', () => {
    const cluster = find<V1ClusterRole>(manifests, 'ClusterRole');
    const role = find<V1Role>(manifests, 'Role');
    for (const rule of [...cluster.rules!, ...role.rules!]) {
      expect(rule.verbs).not.toContain('*');
      expect(rule.resources).not.toContain('*');
      expect(rule.apiGroups).not.toContain('*');
    }
    const writes = [...cluster.rules!, ...role.rules!].flatMap((r) =>
      r.verbs
        .filter((v) => !['get', 'list', 'watch'].includes(v))
        .flatMap((v) => (r.resources ?? []).map((res) => `${v} ${res}`)),
    );
    expect(writes.sort()).toEqual([
      'create events',
      'create leases',
      'patch events',
      'update backendtlspolicies/status',
      'update gatewayclasses/status',
      'update gateways/status',
      'update grpcroutes/status',
      'update httproutes/status',
      'update ingresses/status',
      'update leases',
      'update listenersets/status',
      'update tcproutes/status',
      'update tlsroutes/status',
      'update udproutes/status',
    ]);
  });
});

describe('deploy/Dockerfile', () => {
  it(
    'builds on Debian bookworm slim with deploy/image/install.sh, tini as PID ' +
      '1, a non-root user, and the files the Deployment assumes',
    async () => {
      const dockerfile = await readFile(join(DEPLOY, 'Dockerfile'), 'utf8');
      const from = [...dockerfile.matchAll(/^FROM (\S+)/gm)].map((m) => m[1]);
      expect(from).toEqual(['node:24-bookworm-slim', 'debian:bookworm-slim']);
      // The packages, setcap and the user come from the script `npm run image` runs too, not from lines of its own.
      expect(dockerfile).toMatch(/^COPY deploy\/image\/packages\.txt deploy\/image\/install\.sh \/tmp\/image\/$/m);
      expect(dockerfile).toMatch(/^RUN sh \/tmp\/image\/install\.sh/m);
      expect(dockerfile).not.toMatch(/apt-get/);
      const install = await readFile(join(DEPLOY, 'image/install.sh'), 'utf8');
      expect(install).toMatch(/setcap cap_net_bind_service=\+ep \/usr\/sbin\/nginx/);
      expect(install).toMatch(/useradd --system --uid 101 --gid 101/);
      const packages = (await readFile(join(DEPLOY, 'image/packages.txt'), 'utf8'))
        .split('\n')
        .filter((line) => line && !line.startsWith('#'));
      expect(packages).toEqual(expect.arrayContaining(['nginx-light', 'libnginx-mod-http-lua', 'lua-cjson', 'tini']));
      // the WAF: the module the template loads while a location has it on, and the rule set it includes
      expect(packages).toEqual(expect.arrayContaining(['libnginx-mod-http-modsecurity', 'modsecurity-crs']));
      expect(install).toMatch(/ngx_http_modsecurity_module/);
      expect(install).toMatch(/\/etc\/modsecurity\/crs\/crs-setup\.conf/);
      expect(dockerfile).toMatch(/^RUN npx tsc -p deploy\/image\/tsconfig\.json/m);
      expect(dockerfile).toMatch(
        /^ENTRYPOINT \["\/usr\/bin\/tini", "--", "node", "\/app\/dist\/src\/cli\/main\.js"\]$/m,
      );
      expect(dockerfile).toMatch(/^USER 101:101$/m);
      // The repository's files in /app are deploy/image/files.txt's, the list scripts/image/build.sh copies.
      const files = (await readFile(join(DEPLOY, 'image/files.txt'), 'utf8'))
        .split('\n')
        .filter((line) => line && !line.startsWith('#'));
      const finalStage = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
      const copied = [...finalStage.matchAll(/^COPY (?!--from)(\S+) \.\/(\S*)$/gm)].map((m) => m[1]);
      expect(copied).toEqual(files);
      expect(files).toContain('web'); // the status page's files, read at run time
      expect(files).toContain('templates');
      expect(dockerfile).toMatch(/NGINX_BINARY=\/usr\/sbin\/nginx/);
      expect(container.securityContext?.runAsUser).toBe(101);
      const ignore = await readFile(join(DEPLOY, 'Dockerfile.dockerignore'), 'utf8');
      for (const path of [
        'package.json',
        'package-lock.json',
        'tsconfig.json',
        'machines/',
        'src/',
        'deploy/image/',
        ...files.filter((f) => f !== 'package.json').map((f) => `${f}/`),
      ])
        expect(ignore).toContain(`!${path}`);
    },
  );
});

describe('kubectl apply -f deploy/kubernetes/', () => {
  let testApi: TestApi;
  let api: ApiServer;
  let dir: string;
  beforeAll(async () => {
    testApi = await startTestApi('ia-deploy-', { extraKinds: DEPLOY_RESOURCES });
    ({ api, dir } = testApi);
  });
  afterAll(() => testApi?.close());

  it('serves every kind deploy/ holds: DEPLOY_RESOURCES are in discovery', async () => {
    const kubectl = kubectlFor(join(dir, 'kubeconfig'), join(dir, 'cache'));
    const listed = (await kubectl.run(['api-resources', '-o', 'name'])).stdout.trim().split('\n');
    for (const m of manifests) {
      const group = m.apiVersion.includes('/') ? m.apiVersion.split('/')[0] : '';
      const resource = api.resources.findByKind(m.apiVersion, m.kind);
      expect(resource, `${m.apiVersion} ${m.kind}`).toBeDefined();
      expect(listed).toContain(group ? `${resource!.plural}.${group}` : resource!.plural);
    }
  });

  it('creates every object, and a second apply changes nothing (but the PDB’s selector)', async () => {
    const kubectl = kubectlFor(join(dir, 'kubeconfig'), join(dir, 'cache'));
    // No --validate=false: the server's OpenAPI lists the deploy kinds, so kubectl validates through it
    // (fieldValidation=Strict).
    const first = await kubectl.run(['apply', '-f', MANIFESTS]);
    const created = first.stdout.trim().split('\n');
    expect(created).toHaveLength(manifests.length);
    expect(created.every((line) => line.endsWith(' created'))).toBe(true);
    const second = await kubectl.run(['apply', '-f', MANIFESTS]);
    // kubectl always re-sends a PDB's selector (its patch strategy is `replace`): `configured`, as on a real cluster.
    expect(
      second.stdout
        .trim()
        .split('\n')
        .filter((line) => !line.endsWith(' unchanged')),
    ).toEqual(['poddisruptionbudget.policy/ingress-actors configured']);
    const stored = JSON.parse(
      (await kubectl.run(['get', 'deployment', 'ingress-actors', '-n', 'ingress-actors', '-o', 'json'])).stdout,
    ) as V1Deployment;
    expect(stored.spec?.template.spec?.containers[0]?.args).toEqual(args);
    const roles = JSON.parse(
      (await kubectl.run(['get', 'role', 'ingress-actors', '-n', 'ingress-actors', '-o', 'json'])).stdout,
    ) as V1Role;
    expect(roles.rules).toEqual(find<V1Role>(manifests, 'Role').rules);
  });
});
