/**
 * CustomResourceDefinitions on the test API server, with the Gateway API's standard channel
 * (deploy/gateway-api/standard-install.yaml) through the machine's kubectl and client-node:
 * the CRDs apply and are Established, the Gateway kinds are then discovered, applied, defaulted
 * from their schemas, validated (422 naming the field), printed with their printer columns,
 * patched through /status, watched by an informer, and gone (objects and discovery) once their
 * CRD is deleted.
 */
import { join } from 'node:path';
import {
  CustomObjectsApi,
  KubeConfig,
  makeInformer,
  type KubernetesListObject,
  type KubernetesObject,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { discoveryDocument } from '../../src/dev/api-server/discovery.js';
import { GATEWAY_API_INSTALL, gatewayApiCrds } from '../../src/dev/api-server/gateway-api.js';
import { startApiServer } from '../../src/dev/api-server/server.js';
import { parseManifests } from '../../src/manifests/load.js';
import { patternChecked } from '../../src/dev/api-server/schema.js';
import { PROJECT_ROOT } from '../../src/project-root.js';
import { failure, kubectlFor, startTestApi, waitFor, type Kubectl, type TestApi } from '../support/kube-api.js';

const STANDARD_INSTALL = GATEWAY_API_INSTALL;
const GROUP = 'gateway.networking.k8s.io';

let test: TestApi;
let kubectl: Kubectl;
let kc: KubeConfig;

beforeAll(async () => {
  test = await startTestApi('api-server-crd-');
  kubectl = kubectlFor(test.kubeconfig, join(test.dir, 'kube-cache'));
  kc = new KubeConfig();
  kc.loadFromString(test.api.kubeconfigText);
  await kubectl.run(['apply', '-f', STANDARD_INSTALL]);
}, 60_000);

afterAll(async () => {
  await test?.close();
});

const GATEWAYS = `apiVersion: v1
kind: Namespace
metadata: {name: gw}
---
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: ingress-actors}
spec: {controllerName: ingress-actors.io/gateway-controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: web, namespace: gw}
spec:
  gatewayClassName: ingress-actors
  listeners:
  - {name: http, port: 80, protocol: HTTP}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: hello, namespace: gw}
spec:
  parentRefs: [{name: web}]
  hostnames: [hello.example.com]
  rules:
  - backendRefs: [{name: hello, port: 80}]
`;

function route(name: string, pathType: string): string {
  return `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: ${name}, namespace: gw}
spec:
  parentRefs: [{name: web}]
  rules:
  - matches: [{path: {type: ${pathType}, value: /x}}]
    backendRefs: [{name: hello, port: 80}]
`;
}

/** Json is kubectl's -o json, read loosely: the tests look at the fields they name. */
// biome-ignore lint/suspicious/noExplicitAny: the assertions below name the fields they read
type Json = Record<string, any>;

async function getJson(args: string[]): Promise<Json> {
  return JSON.parse((await kubectl.run(['get', ...args, '-o', 'json'])).stdout) as Json;
}

describe('kubectl apply -f deploy/gateway-api/standard-install.yaml', () => {
  it('creates the CRDs Established, with their names accepted', async () => {
    const { stdout } = await kubectl.run([
      'wait',
      '--for=condition=Established',
      '--timeout=5s',
      'crd',
      `gatewayclasses.${GROUP}`,
      `gateways.${GROUP}`,
      `httproutes.${GROUP}`,
      `grpcroutes.${GROUP}`,
      `referencegrants.${GROUP}`,
    ]);
    expect(stdout.split('\n')).toHaveLength(5);
    const crd = await getJson(['crd', `gateways.${GROUP}`]);
    expect(crd.status.acceptedNames).toMatchObject({ kind: 'Gateway', plural: 'gateways', shortNames: ['gtw'] });
    expect(crd.status.conditions).toContainEqual(expect.objectContaining({ type: 'NamesAccepted', status: 'True' }));
    expect(crd.status.storedVersions).toEqual(['v1']);
    expect(crd.metadata.finalizers).toEqual(['customresourcecleanup.apiextensions.k8s.io']);
    // Applying the same file again changes nothing.
    const again = await kubectl.run(['apply', '-f', STANDARD_INSTALL]);
    expect(again.stdout).toContain(`customresourcedefinition.apiextensions.k8s.io/httproutes.${GROUP} unchanged`);
  });

  it('serves the Gateway kinds in discovery: v1 preferred, v1beta1 beside it', async () => {
    const { stdout } = await kubectl.run(['api-resources', `--api-group=${GROUP}`, '-o', 'name']);
    expect(stdout.split('\n')).toEqual(
      expect.arrayContaining([
        `gatewayclasses.${GROUP}`,
        `gateways.${GROUP}`,
        `httproutes.${GROUP}`,
        `grpcroutes.${GROUP}`,
        `referencegrants.${GROUP}`,
      ]),
    );
    const group = discoveryDocument(`/apis/${GROUP}`, '', test.api.resources) as {
      versions: { version: string }[];
      preferredVersion: { version: string };
    };
    expect(group.versions.map((v) => v.version)).toEqual(['v1', 'v1beta1']);
    expect(group.preferredVersion.version).toBe('v1');
    const v1 = discoveryDocument(`/apis/${GROUP}/v1`, '', test.api.resources) as {
      resources: { name: string; namespaced: boolean }[];
    };
    expect(v1.resources).toContainEqual(expect.objectContaining({ name: 'gatewayclasses', namespaced: false }));
    expect(v1.resources).toContainEqual(expect.objectContaining({ name: 'httproutes/status', namespaced: true }));
  });
});

describe('the Gateway kinds', () => {
  beforeAll(async () => {
    await kubectl.run(['apply', '-f', '-'], GATEWAYS);
  });

  it('fills the schema defaults the Gateway API relies on', async () => {
    const gateway = await getJson(['gateway', 'web', '-n', 'gw']);
    expect(gateway.spec.listeners[0].allowedRoutes).toEqual({ namespaces: { from: 'Same' } });
    expect(gateway.metadata.generation).toBe(1);
    const httpRoute = await getJson(['httproute', 'hello', '-n', 'gw']);
    expect(httpRoute.spec.parentRefs[0]).toEqual({ group: GROUP, kind: 'Gateway', name: 'web' });
    expect(httpRoute.spec.rules[0].matches).toEqual([{ path: { type: 'PathPrefix', value: '/' } }]);
    expect(httpRoute.spec.rules[0].backendRefs[0]).toEqual({
      group: '',
      kind: 'Service',
      name: 'hello',
      port: 80,
      weight: 1,
    });
  });

  it('prints the CRD printer columns in kubectl get tables', async () => {
    const gateways = (await kubectl.run(['get', 'gateways', '-A'])).stdout.split('\n');
    expect(gateways[0]).toMatch(/^NAMESPACE\s+NAME\s+CLASS\s+ADDRESS\s+PROGRAMMED\s+AGE$/);
    expect(gateways[1]).toMatch(/^gw\s+web\s+ingress-actors\s+Unknown\s+\d+s$/);
    const classes = (await kubectl.run(['get', 'gc'])).stdout.split('\n');
    expect(classes[0]).toMatch(/^NAME\s+CONTROLLER\s+ACCEPTED\s+AGE$/);
    expect(classes[1]).toMatch(/^ingress-actors\s+ingress-actors\.io\/gateway-controller\s+Unknown\s+\d+s$/);
    const routes = (await kubectl.run(['get', 'httproutes', '-n', 'gw'])).stdout.split('\n');
    expect(routes[1]).toMatch(/^hello\s+\["hello\.example\.com"\]\s+\d+s$/);
  });

  it('refuses an object against the schema with 422 naming the field, and prunes or refuses unknown fields', async () => {
    const badEnum = await kubectl.try(['apply', '-f', '-'], route('bad-enum', 'Regex'));
    expect(badEnum.exitCode).toBe(1);
    expect(badEnum.stderr).toContain(
      // kubectl words the 422 its own way ("The HTTPRoute … is invalid"), with the server's causes.
      'The HTTPRoute "bad-enum" is invalid: spec.rules[0].matches[0].path.type: ' +
        'Unsupported value: "Regex": supported values: "Exact", "PathPrefix", "RegularExpression"',
    );
    const badHost = await kubectl.try(
      ['apply', '-f', '-'],
      route('bad-host', 'Exact').replace('spec:\n', 'spec:\n  hostnames: [Not_A_Host]\n'),
    );
    expect(badHost.exitCode).toBe(1);
    expect(badHost.stderr).toContain(
      'spec.hostnames[0]: Invalid value: "Not_A_Host": spec.hostnames[0] in body should match',
    );
    const badPort = await kubectl.try(['apply', '-f', '-'], route('bad-port', 'Exact').replace('port: 80', 'port: 0'));
    expect(badPort.stderr).toContain(
      'spec.rules[0].backendRefs[0].port: Invalid value: 0: spec.rules[0].backendRefs[0].port in body should be ' +
        'greater than or equal to 1',
    );
    const missing = await kubectl.try(['apply', '-f', '-'], GATEWAYS.split('---\n')[2]!.split('  listeners:')[0]);
    expect(missing.stderr).toContain('The Gateway "web" is invalid: spec.listeners: Required value');
    expect(await kubectl.try(['get', 'httproute', 'bad-enum', 'bad-host', 'bad-port', '-n', 'gw'])).toMatchObject({
      exitCode: 1,
    });

    // kubectl validates strictly: an unknown field is refused; with --validate=false it is pruned.
    const unknown = route('unknown-field', 'Exact').replace('spec:\n', 'spec:\n  colour: blue\n');
    const strict = await kubectl.try(['apply', '-f', '-'], unknown);
    expect(strict.stderr).toContain('strict decoding error: unknown field "spec.colour"');
    await kubectl.run(['apply', '--validate=false', '-f', '-'], unknown);
    expect((await getJson(['httproute', 'unknown-field', '-n', 'gw'])).spec.colour).toBeUndefined();
    // A pattern outside the safe subset is skipped (the header-name pattern), one inside it runs.
    expect(patternChecked("^[A-Za-z0-9!#$%&'*+\\-.^_\\x60|~]+$")).toBe(false);
    expect(patternChecked('^(\\*\\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')).toBe(true);
  });

  it('writes status through /status only; generation counts spec changes only', async () => {
    const status = {
      status: {
        conditions: [
          {
            type: 'Accepted',
            status: 'True',
            reason: 'Accepted',
            message: 'ok',
            lastTransitionTime: '2026-01-01T00:00:00Z',
            observedGeneration: 1,
          },
        ],
      },
    };
    await kubectl.run([
      'patch',
      'gatewayclass',
      'ingress-actors',
      '--subresource=status',
      '--type=merge',
      '-p',
      JSON.stringify({ ...status, spec: { description: 'ignored' } }),
    ]);
    let gatewayClass = await getJson(['gatewayclass', 'ingress-actors']);
    expect(gatewayClass.status.conditions).toEqual(status.status.conditions);
    expect(gatewayClass.spec.description).toBeUndefined();
    expect(gatewayClass.metadata.generation).toBe(1);
    expect((await kubectl.run(['get', 'gc'])).stdout).toMatch(/ingress-actors\s+\S+\s+True\s/);

    // A write to the object itself ignores status and counts a generation when the spec changed.
    await kubectl.run([
      'patch',
      'gatewayclass',
      'ingress-actors',
      '--type=merge',
      '-p',
      JSON.stringify({ spec: { description: 'the demo class' }, status: { conditions: [] } }),
    ]);
    gatewayClass = await getJson(['gatewayclass', 'ingress-actors']);
    expect(gatewayClass.spec.description).toBe('the demo class');
    expect(gatewayClass.status.conditions).toEqual(status.status.conditions);
    expect(gatewayClass.metadata.generation).toBe(2);
    await kubectl.run(['label', 'gatewayclass', 'ingress-actors', 'tier=demo']);
    expect((await getJson(['gatewayclass', 'ingress-actors'])).metadata.generation).toBe(2);
    // Strategic merge patch is not for custom resources, as in kube-apiserver.
    const strategic = await kubectl.try(['patch', 'gc', 'ingress-actors', '--type=strategic', '-p', '{"spec":{}}']);
    expect(strategic.stderr).toContain(
      'is not supported by gateway.networking.k8s.io/v1, Kind=GatewayClass: the body of the request was in an ' +
        'unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json',
    );
  });

  it('serves every served version from one storage, and selects by label and field', async () => {
    const v1beta1 = (await kubectl.run(['get', `httproutes.v1beta1.${GROUP}`, 'hello', '-n', 'gw', '-o', 'json']))
      .stdout;
    expect(JSON.parse(v1beta1)).toMatchObject({ apiVersion: `${GROUP}/v1beta1`, metadata: { name: 'hello' } });
    await kubectl.run(
      ['apply', '-f', '-'],
      `apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: {name: from-gw, namespace: default, labels: {grant: yes-please}}
spec:
  from: [{group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: gw}]
  to: [{group: '', kind: Service}]
`,
    );
    const asV1 = await getJson([`referencegrants.v1.${GROUP}`, 'from-gw', '-n', 'default']);
    expect(asV1.apiVersion).toBe(`${GROUP}/v1`);
    const selected = await kubectl.run(['get', 'referencegrants', '-A', '-l', 'grant=yes-please', '-o', 'name']);
    expect(selected.stdout).toBe(`referencegrant.${GROUP}/from-gw`);
    const byName = await kubectl.run([
      'get',
      'httproutes',
      '-A',
      '--field-selector',
      'metadata.name=hello',
      '-o',
      'name',
    ]);
    expect(byName.stdout).toBe(`httproute.${GROUP}/hello`);
  });
});

describe('a client-node informer on httproutes', () => {
  it('sees add, update and delete, and the delete of every route when the CRD goes', async () => {
    const custom = kc.makeApiClient(CustomObjectsApi);
    const namespace = 'informed';
    await kubectl.run(['create', 'namespace', namespace]);
    const informer = makeInformer<KubernetesObject & { spec?: { hostnames?: string[] } }>(
      kc,
      `/apis/${GROUP}/v1/namespaces/${namespace}/httproutes`,
      () =>
        custom.listNamespacedCustomObject({
          group: GROUP,
          version: 'v1',
          namespace,
          plural: 'httproutes',
        }) as Promise<KubernetesListObject<KubernetesObject>>,
    );
    const seen: string[] = [];
    informer.on('add', (o) => seen.push(`add ${o.metadata?.name} ${o.spec?.hostnames}`));
    informer.on('update', (o) => seen.push(`update ${o.metadata?.name} ${o.spec?.hostnames}`));
    informer.on('delete', (o) => seen.push(`delete ${o.metadata?.name}`));
    const body = (name: string, host: string) => ({
      apiVersion: `${GROUP}/v1`,
      kind: 'HTTPRoute',
      metadata: { name, namespace },
      spec: { hostnames: [host], rules: [{ backendRefs: [{ name: 'svc', port: 80 }] }] },
    });
    await informer.start();
    try {
      await waitFor('the watch', () => test.api.openWatches() === 1);
      await custom.createNamespacedCustomObject({
        group: GROUP,
        version: 'v1',
        namespace,
        plural: 'httproutes',
        body: body('a', 'a.example.com'),
      });
      await waitFor('add', () => seen.includes('add a a.example.com'));
      await kubectl.run([
        'patch',
        'httproute',
        'a',
        '-n',
        namespace,
        '--type=merge',
        '-p',
        '{"spec":{"hostnames":["b.example.com"]}}',
      ]);
      await waitFor('update', () => seen.includes('update a b.example.com'));
      await custom.deleteNamespacedCustomObject({
        group: GROUP,
        version: 'v1',
        namespace,
        plural: 'httproutes',
        name: 'a',
      });
      await waitFor('delete', () => seen.includes('delete a'));

      await custom.createNamespacedCustomObject({
        group: GROUP,
        version: 'v1',
        namespace,
        plural: 'httproutes',
        body: body('c', 'c.example.com'),
      });
      await waitFor('add c', () => seen.includes('add c c.example.com'));
      // Deleting the CRD deletes its objects (the informer hears it) and ends its watches.
      await kubectl.run(['delete', 'crd', `httproutes.${GROUP}`]);
      await waitFor('the delete of c', () => seen.includes('delete c'));
    } finally {
      await informer.stop();
    }
    expect(seen).toEqual([
      'add a a.example.com',
      'update a b.example.com',
      'delete a',
      'add c c.example.com',
      'delete c',
    ]);
  });

  it('leaves no trace of a deleted CRD: REST paths and discovery 404, the other kinds stay', async () => {
    expect(
      await failure(
        kc
          .makeApiClient(CustomObjectsApi)
          .listClusterCustomObject({ group: GROUP, version: 'v1', plural: 'httproutes' }),
      ),
    ).toMatchObject({
      code: 404,
    });
    const { stdout } = await kubectl.run(['api-resources', `--api-group=${GROUP}`, '-o', 'name']);
    expect(stdout).not.toContain('httproutes');
    expect(stdout).toContain(`gateways.${GROUP}`);
    const missing = await kubectl.try(['get', 'httproutes', '-A']);
    expect(missing.stderr).toContain(`the server doesn't have a resource type "httproutes"`);

    await kubectl.run(['delete', '--ignore-not-found', '-f', STANDARD_INSTALL]);
    expect(discoveryDocument(`/apis/${GROUP}`, '', test.api.resources)).toBeUndefined();
    expect(discoveryDocument(`/apis/${GROUP}/v1`, '', test.api.resources)).toBeUndefined();
    const groups = await kubectl.run(['api-versions']);
    expect(groups.stdout).not.toContain(GROUP);
    for (const path of [`/apis/${GROUP}`, `/apis/${GROUP}/v1`, `/apis/${GROUP}/v1/gateways`]) {
      const raw = await kubectl.try(['get', '--raw', path]);
      expect(raw.stderr).toContain('Error from server (NotFound)');
    }
    // And it comes back when applied again, empty.
    await kubectl.run(['apply', '-f', STANDARD_INSTALL]);
    expect((await kubectl.run(['get', 'gateways,httproutes', '-A'])).stderr).toBe('No resources found');
  });
});

describe('seeding', () => {
  it('takes the vendored CRDs and examples/gateway-api/ as seeds (checked strictly), CRDs first whatever the order', async () => {
    const file = join(PROJECT_ROOT, 'examples', 'gateway-api', 'gateway.yaml');
    const examples = parseManifests(readFileSync(file, 'utf8'), file);
    const server = await startApiServer({ seed: [...examples, ...gatewayApiCrds()] });
    try {
      const kinds = (group: string, plural: string) => server.resources.find(group, 'v1', plural)!;
      const gateway = server.registry.get(kinds(GROUP, 'gateways'), 'default', 'demo');
      expect(gateway.spec).toMatchObject({
        gatewayClassName: 'ingress-actors',
        listeners: [{ name: 'http', protocol: 'HTTP', port: 80, allowedRoutes: { namespaces: { from: 'Same' } } }],
      });
      const route = server.registry.get(kinds(GROUP, 'httproutes'), 'default', 'hello');
      expect(route.spec).toMatchObject({
        hostnames: ['gateway.demo.local'],
        parentRefs: [{ name: 'demo', kind: 'Gateway' }],
      });
      expect(server.registry.get(kinds(GROUP, 'gatewayclasses'), undefined, 'ingress-actors').spec).toEqual({
        controllerName: 'ingress-actors.io/gateway-controller',
      });
    } finally {
      await server.close();
    }
  });
});
