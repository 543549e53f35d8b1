/**
 * The test API server driven by the machine's real kubectl: create, apply, get, get -w, delete,
 * the protobuf bodies of kubectl's typed clients, server-side field validation, auth; and seeding.
 * Each case asserts on what kubectl prints and on the server's state.
 */
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { CoreV1Api, KubeConfig, KubernetesObjectApi, type V1Ingress } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RESOURCES } from '../../src/dev/api-server/resources.js';
import { startApiServer, type ApiServer } from '../../src/dev/api-server/server.js';
import { parseManifests } from '../../src/manifests/load.js';
import { failure, kubectlFor, waitFor, type Kubectl } from '../support/kube-api.js';

const INGRESSES = RESOURCES.find((r) => r.kind === 'Ingress')!;
const SERVICES = RESOURCES.find((r) => r.kind === 'Service')!;

let server: ApiServer;
let dir: string;
let kubectl: Kubectl;

beforeAll(async () => {
  server = await startApiServer({ port: 0 });
  dir = await mkdtemp(join(tmpdir(), 'api-server-kubectl-'));
  const kubeconfig = join(dir, 'kubeconfig');
  await server.writeKubeconfig(kubeconfig);
  kubectl = kubectlFor(kubeconfig, join(dir, 'kube-cache'));
});

afterAll(async () => {
  await server?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

function manifests(host: string, targetPort: number): string {
  return `apiVersion: v1
kind: Namespace
metadata:
  name: kubectl-test
---
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata:
  name: kubectl-class
  annotations:
    ingressclass.kubernetes.io/is-default-class: "true"
spec:
  controller: k8s.io/ingress-nginx
---
apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: kubectl-test
spec:
  selector: { app: web }
  ports:
  - { name: http, port: 80, targetPort: ${targetPort} }
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: web
  namespace: kubectl-test
spec:
  rules:
  - host: ${host}
    http:
      paths:
      - { path: /, pathType: Prefix, backend: { service: { name: web, port: { number: 80 } } } }
`;
}

describe('kubectl against the API server', () => {
  it('creates, applies twice, gets as JSON and deletes', async () => {
    const file = join(dir, 'app.yaml');
    await writeFile(file, manifests('one.example.com', 8080));
    const created = await kubectl.run(['create', '-f', file]);
    expect(created.stdout).toContain('ingress.networking.k8s.io/web created');
    expect(created.stdout).toContain('service/web created');
    const stored = server.registry.get(INGRESSES, 'kubectl-test', 'web');
    // DefaultIngressClass admission filled in the class the manifest left out.
    expect((stored.spec as { ingressClassName?: string }).ingressClassName).toBe('kubectl-class');
    expect(stored.metadata.uid).toMatch(/^[0-9a-f-]{36}$/);
    expect(stored.metadata.generation).toBe(1);

    const first = await kubectl.run(['apply', '-f', file]);
    expect(first.stdout).toContain('ingress.networking.k8s.io/web configured');
    await writeFile(file, manifests('two.example.com', 9090));
    const second = await kubectl.run(['apply', '-f', file]);
    expect(second.stdout).toContain('ingress.networking.k8s.io/web configured');
    expect(second.stdout).toContain('ingressclass.networking.k8s.io/kubectl-class unchanged');
    const updated = server.registry.get(INGRESSES, 'kubectl-test', 'web');
    expect((updated.spec as { rules: { host: string }[] }).rules[0]!.host).toBe('two.example.com');
    expect(updated.metadata.generation).toBe(2);
    // The strategic merge patch's directives are applied, not stored.
    const service = server.registry.get(SERVICES, 'kubectl-test', 'web');
    expect(JSON.stringify(service)).not.toContain('$setElementOrder');
    expect((service.spec as { ports: unknown[] }).ports).toEqual([
      { name: 'http', port: 80, protocol: 'TCP', targetPort: 9090 },
    ]);

    const got = JSON.parse((await kubectl.run(['get', 'ingresses', '-n', 'kubectl-test', '-o', 'json'])).stdout) as {
      items: V1Ingress[];
    };
    expect(got.items.map((i) => i.spec?.rules?.[0]?.host)).toEqual(['two.example.com']);
    expect(got.items[0]!.metadata?.resourceVersion).toBe(updated.metadata.resourceVersion);
    const table = (await kubectl.run(['get', 'ingress', 'web', '-n', 'kubectl-test'])).stdout;
    expect(table).toMatch(
      /^NAME\s+CLASS\s+HOSTS\s+ADDRESS\s+PORTS\s+AGE\nweb\s+kubectl-class\s+two\.example\.com\s+80\s+\d+s$/,
    );

    const deleted = await kubectl.run(['delete', '-f', file]);
    expect(deleted.stdout).toContain('namespace "kubectl-test" deleted');
    expect(deleted.stdout).toContain('ingress.networking.k8s.io "web" deleted');
    expect(() => server.registry.get(INGRESSES, 'kubectl-test', 'web')).toThrow(/not found/);
    // kubectl delete waited for the namespace to finish Terminating; kubectl get then names it.
    const missing = await kubectl.try(['get', 'ingress', 'web', '-n', 'kubectl-test']);
    expect(missing.exitCode).toBe(1);
    expect(missing.stderr).toContain('Error from server (NotFound): namespaces "kubectl-test" not found');
    const gone = await kubectl.try(['get', 'ingress', 'web', '-n', 'default']);
    expect(gone.stderr).toContain('Error from server (NotFound): ingresses.networking.k8s.io "web" not found');
  });

  it('creates from flags, whose bodies kubectl sends as protobuf', async () => {
    const ns = 'protobuf-test';
    await kubectl.run(['create', 'namespace', ns]);
    await kubectl.run(['create', 'configmap', 'conf', '-n', ns, '--from-literal=a=b', '--from-literal=empty=']);
    await kubectl.run(['create', 'secret', 'generic', 'creds', '-n', ns, '--from-literal=password=hunter2']);
    await kubectl.run(['create', 'service', 'nodeport', 'web', '-n', ns, '--tcp=80:http']);
    await kubectl.run([
      'create',
      'ingress',
      'web',
      '-n',
      ns,
      '--class=nginx',
      '--rule=foo.example.com/=web:80',
      '--rule=bar.example.com/api*=web:http,tls=cert',
    ]);
    const get = (kind: string, name: string) =>
      server.registry.get(RESOURCES.find((r) => r.kind === kind)!, ns, name) as Record<string, unknown>;
    expect(server.registry.get(RESOURCES.find((r) => r.kind === 'Namespace')!, undefined, ns).metadata.labels).toEqual({
      'kubernetes.io/metadata.name': ns,
    });
    expect(get('ConfigMap', 'conf').data).toEqual({ a: 'b', empty: '' });
    expect(get('Secret', 'creds')).toMatchObject({
      type: 'Opaque',
      data: { password: Buffer.from('hunter2').toString('base64') },
    });
    const spec = get('Service', 'web').spec as {
      type: string;
      selector: unknown;
      ports: { name: string; port: number; targetPort: unknown; nodePort: number }[];
    };
    expect(spec).toMatchObject({
      type: 'NodePort',
      selector: { app: 'web' },
      ports: [{ name: '80-http', port: 80, protocol: 'TCP', targetPort: 'http' }],
    });
    expect(spec.ports[0]!.nodePort).toBeGreaterThanOrEqual(30000);
    expect(get('Ingress', 'web').spec).toEqual({
      ingressClassName: 'nginx',
      rules: [
        {
          host: 'foo.example.com',
          http: {
            paths: [{ path: '/', pathType: 'Exact', backend: { service: { name: 'web', port: { number: 80 } } } }],
          },
        },
        {
          host: 'bar.example.com',
          http: {
            paths: [
              { path: '/api', pathType: 'Prefix', backend: { service: { name: 'web', port: { name: 'http' } } } },
            ],
          },
        },
      ],
      tls: [{ hosts: ['bar.example.com'], secretName: 'cert' }],
    });
  });

  it('validates fields on the server when kubectl asks for strict validation', async () => {
    const bad = `apiVersion: v1\nkind: ConfigMap\nmetadata: { name: typo, namespace: default }\ndatta: { a: b }\n`;
    const strict = await kubectl.try(['create', '-f', '-'], bad);
    expect(strict.exitCode).toBe(1);
    expect(strict.stderr).toContain('strict decoding error: unknown field "datta"');
    const lax = await kubectl.run(['create', '-f', '-', '--validate=warn'], bad);
    expect(lax.stderr).toContain('Warning: unknown field "datta"');
  });

  it('streams changes to kubectl get -w', async () => {
    await kubectl.run(['create', 'configmap', 'watched', '-n', 'default', '--from-literal=k=v1']);
    const watch = kubectl.spawn([
      'get',
      'configmaps',
      '-n',
      'default',
      '-w',
      '--output-watch-events',
      '--field-selector',
      'metadata.name=watched',
    ]);
    const lines: string[] = [];
    createInterface({ input: watch.stdout! }).on('line', (line) => lines.push(line));
    try {
      await waitFor('the initial ADDED line', () => lines.some((l) => /^ADDED\s+watched\s+1\s/.test(l)), 10_000);
      await kubectl.run(['label', 'configmap', 'watched', '-n', 'default', 'seen=yes']);
      await waitFor('the MODIFIED line', () => lines.some((l) => /^MODIFIED\s+watched\s/.test(l)), 10_000);
      await kubectl.run(['delete', 'configmap', 'watched', '-n', 'default']);
      await waitFor('the DELETED line', () => lines.some((l) => /^DELETED\s+watched\s/.test(l)), 10_000);
    } finally {
      watch.kill();
      await watch;
    }
    expect(lines[0]).toMatch(/^EVENT\s+NAME\s+DATA\s+AGE$/);
  });

  it('refuses a client without the token', async () => {
    const other = new KubeConfig();
    other.loadFromString(server.kubeconfigText.replace(server.token, 'wrong-token'));
    expect(await failure(other.makeApiClient(CoreV1Api).listNamespace())).toMatchObject({ code: 401 });
    const file = join(dir, 'wrong-kubeconfig');
    await writeFile(file, server.kubeconfigText.replace(server.token, 'wrong-token'));
    const refused = await kubectlFor(file, join(dir, 'wrong-cache')).try(['get', 'namespaces']);
    expect(refused.exitCode).toBe(1);
    expect(refused.stderr).toContain('error: You must be logged in to the server');
  });
});

describe('seeding', () => {
  it('starts with the examples/ manifests in place, checked strictly', async () => {
    const examples = new URL('../../examples/', import.meta.url).pathname;
    const manifests = (
      await Promise.all(
        (
          await readdir(examples)
        )
          .filter((f) => /\.ya?ml$/.test(f))
          .sort()
          .map(async (f) => parseManifests(await readFile(join(examples, f), 'utf8'), f)),
      )
    ).flat();
    expect(manifests.length).toBeGreaterThan(0);
    const seeded = await startApiServer({ seed: manifests });
    try {
      const kc2 = new KubeConfig();
      kc2.loadFromString(seeded.kubeconfigText);
      const objects = kc2.makeApiClient(KubernetesObjectApi);
      for (const manifest of manifests) {
        const namespaced =
          manifest.kind !== 'IngressClass' && manifest.kind !== 'Namespace' && manifest.kind !== 'Node';
        const found = await objects.read({
          apiVersion: manifest.apiVersion!,
          kind: manifest.kind!,
          metadata: {
            name: manifest.metadata!.name!,
            ...(namespaced ? { namespace: manifest.metadata?.namespace ?? 'default' } : {}),
          },
        });
        expect(found.metadata?.uid).toBeTruthy();
      }
    } finally {
      await seeded.close();
    }
  });
});
