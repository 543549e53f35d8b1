/**
 * The Gateway API through the real test API server and the real controller: without the CRDs the controller
 * starts, serves its Ingresses, and the Gateway API watchers show `unserved`; once the standard-channel CRDs are
 * applied (kubectl) the watchers list, and GatewayClass, Gateway and HTTPRoute get the status buildGatewayRoutes
 * works out, with lastTransitionTime, observedGeneration and addresses, written only when it differs, keeping other
 * controllers' route entries and dropping ours from a route that no longer names our Gateway; a GRPCRoute gets its
 * parents[] too.
 */
import { GATEWAY_API_INSTALL } from '../../src/dev/api-server/gateway-api.js';
import { join } from 'node:path';
import { CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GATEWAY_KINDS } from '../../src/kube/kinds.js';
import { startCluster, waitFor, type Cluster } from '../support/cluster.js';
import { kubectlFor } from '../support/kube-api.js';
import { ingress, ingressClass, serviceWithEndpoints } from '../support/manifests.js';
import { get, startBackend, type Backend } from '../support/net.js';

const GROUP = 'gateway.networking.k8s.io';
const OURS = 'ingress-actors.io/gateway-controller';

let cluster: Cluster;
let backend: Backend;
let custom: CustomObjectsApi;
/** the status writes the API server received: `PUT <path>` */
const writes: string[] = [];

type Obj = {
  metadata: { generation?: number; resourceVersion?: string };
  status?: {
    conditions?: Cond[];
    addresses?: { type: string; value: string }[];
    listeners?: { name: string; attachedRoutes: number; conditions: Cond[] }[];
    parents?: { controllerName: string; parentRef: { name: string }; conditions: Cond[] }[];
  };
};
type Cond = { type: string; status: string; reason: string; observedGeneration: number; lastTransitionTime: string };

const read = async (plural: string, name: string, namespace?: string): Promise<Obj> =>
  (namespace
    ? await custom.getNamespacedCustomObject({ group: GROUP, version: 'v1', namespace, plural, name })
    : await custom.getClusterCustomObject({ group: GROUP, version: 'v1', plural, name })) as Obj;
const condition = (conditions: Cond[] | undefined, type: string) => conditions?.find((c) => c.type === type);

const gatewayClass = {
  apiVersion: `${GROUP}/v1`,
  kind: 'GatewayClass',
  metadata: { name: 'ingress-actors' },
  spec: { controllerName: OURS },
};
const gateway = {
  apiVersion: `${GROUP}/v1`,
  kind: 'Gateway',
  metadata: { name: 'web', namespace: 'default' },
  spec: { gatewayClassName: 'ingress-actors', listeners: [{ name: 'http', port: 80, protocol: 'HTTP' }] },
};
const route = (parents: string[]) => ({
  apiVersion: `${GROUP}/v1`,
  kind: 'HTTPRoute',
  metadata: { name: 'hello', namespace: 'default' },
  spec: {
    parentRefs: parents.map((name) => ({ name })),
    hostnames: ['hello.example.com'],
    rules: [{ backendRefs: [{ name: 'web', port: 80 }] }],
  },
});

beforeAll(async () => {
  backend = await startBackend('ingress');
  cluster = await startCluster(
    [
      ingressClass(),
      ...serviceWithEndpoints('web', [{ port: backend.port }]),
      ingress('shop', { 'shop.example.com': [{ path: '/', service: 'web' }] }),
    ],
    ['--publish-status-address', '203.0.113.10,lb.example.com'],
    process.env.TEST_LOG ?? 'silent',
    {
      unservedRecheckMs: 200,
      onRequest: ({ method, url, status }) => {
        if (method === 'PUT' && url.includes(`/apis/${GROUP}/`) && url.split('?')[0]!.endsWith('/status'))
          writes.push(`${status} ${url.split('?')[0]}`);
      },
    },
  );
  const kc = new KubeConfig();
  kc.loadFromString(cluster.api.kubeconfigText);
  custom = kc.makeApiClient(CustomObjectsApi);
}, 30_000);

afterAll(async () => {
  await cluster?.close();
  await backend?.close();
});

describe('Gateway API, wired to the API server', () => {
  it('without the CRDs: serves Ingresses, healthy, and the Gateway API watchers show unserved', async () => {
    await waitFor(
      'the Ingress served',
      async () => (await get({ host: 'shop.example.com', path: '/', port: cluster.httpPort })).backend === 'ingress',
      15_000,
    );
    expect(cluster.actor('watcher.Namespace')?.value).toEqual({ running: 'watching' });
    for (const kind of GATEWAY_KINDS.filter((k) => k !== 'Namespace')) {
      // Unserved since the first list; listed again every 200 ms here, so now and then caught `listing`.
      expect(cluster.actor(`watcher.${kind}`)?.context.unservedSince, kind).toEqual(expect.any(Number));
      await waitFor(`${kind} unserved`, () => cluster.actor(`watcher.${kind}`)?.value === 'unserved', 5_000, 5);
    }
    // Healthy once nginx confirmed the config (new workers may serve it a moment before): the unserved kinds hold
    // nothing back.
    await waitFor(
      'healthy',
      async () => (await get({ host: 'localhost', path: '/healthz', port: cluster.healthzPort })).status === 200,
      10_000,
    );
  });

  it('once the CRDs are applied, the watchers list; the leader writes the status buildGatewayRoutes gives', async () => {
    const kubectl = kubectlFor(join(cluster.dir, 'kubeconfig'), join(cluster.dir, 'kube-cache'));
    await kubectl.run(['apply', '-f', GATEWAY_API_INSTALL]);
    for (const kind of GATEWAY_KINDS)
      await waitFor(
        `${kind} watched`,
        () => JSON.stringify(cluster.actor(`watcher.${kind}`)?.value) === '{"running":"watching"}',
        10_000,
      );
    await cluster.apply(gatewayClass);
    await cluster.apply(gateway);
    await cluster.apply(route(['web']));

    const classAccepted = async () =>
      condition((await read('gatewayclasses', 'ingress-actors')).status?.conditions, 'Accepted');
    await waitFor('the GatewayClass status', async () => (await classAccepted())?.status === 'True', 10_000);
    const cls = await read('gatewayclasses', 'ingress-actors');
    expect(condition(cls.status?.conditions, 'Accepted')).toMatchObject({
      reason: 'Accepted',
      observedGeneration: cls.metadata.generation,
      lastTransitionTime: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/),
    });

    await waitFor(
      'the Gateway status',
      async () =>
        condition((await read('gateways', 'web', 'default')).status?.conditions, 'Programmed')?.status === 'True',
      10_000,
    );
    const gw = await read('gateways', 'web', 'default');
    // The addresses Ingress status gets (--publish-status-address), each with its type.
    expect(gw.status?.addresses).toEqual([
      { type: 'IPAddress', value: '203.0.113.10' },
      { type: 'Hostname', value: 'lb.example.com' },
    ]);
    expect(condition(gw.status?.conditions, 'Accepted')).toMatchObject({
      status: 'True',
      observedGeneration: gw.metadata.generation,
    });
    await waitFor(
      'the listener counts the route',
      async () => (await read('gateways', 'web', 'default')).status?.listeners?.[0]?.attachedRoutes === 1,
      10_000,
    );

    await waitFor(
      'the HTTPRoute status',
      async () => (await read('httproutes', 'hello', 'default')).status?.parents?.length === 1,
      10_000,
    );
    const hello = await read('httproutes', 'hello', 'default');
    expect(hello.status?.parents?.[0]).toMatchObject({ controllerName: OURS, parentRef: { name: 'web' } });
    expect(condition(hello.status?.parents?.[0]?.conditions, 'Accepted')).toMatchObject({
      status: 'True',
      observedGeneration: hello.metadata.generation,
    });
    expect(condition(hello.status?.parents?.[0]?.conditions, 'ResolvedRefs')?.status).toBe('True');
    expect(writes.every((w) => w.startsWith('200 '))).toBe(true);
  });

  it('writes only what differs: another sync leaves the status (and its lastTransitionTime) alone', async () => {
    const before = await read('gateways', 'web', 'default');
    const count = writes.length;
    const publishes = () => Number(cluster.actor('status')?.context.gatewayPublishes);
    const completed = () => Number(cluster.actor('syncQueue')?.context.syncsCompleted);
    const [publishedBefore, syncedBefore] = [publishes(), completed()];
    await cluster.apply(ingress('other', { 'other.example.com': [{ path: '/', service: 'web' }] }));
    await waitFor(
      'a sync, and a publish of its status',
      () => completed() > syncedBefore && publishes() > publishedBefore,
      10_000,
    );
    await waitFor(
      'the status actor idle',
      () => JSON.stringify(cluster.actor('status')?.value).includes('"gateway":"idle"'),
      10_000,
    );
    expect(writes.slice(count)).toEqual([]);
    const after = await read('gateways', 'web', 'default');
    expect(after.metadata.resourceVersion).toBe(before.metadata.resourceVersion);
  });

  it("keeps another controller's parents[] entry, and drops ours once the route no longer names our Gateway", async () => {
    // Another controller's Gateway, and its own entry in the route's status.
    const current = await read('httproutes', 'hello', 'default');
    const theirs = {
      parentRef: { group: GROUP, kind: 'Gateway', namespace: 'default', name: 'elsewhere' },
      controllerName: 'example.com/other-controller',
      conditions: [
        {
          type: 'Accepted',
          status: 'True',
          reason: 'Accepted',
          message: 'theirs',
          observedGeneration: current.metadata.generation,
          lastTransitionTime: '2020-01-01T00:00:00Z',
        },
      ],
    };
    await cluster.apply(route(['web', 'elsewhere']));
    await waitFor(
      'our status for the new generation',
      async () => {
        const r = await read('httproutes', 'hello', 'default');
        return condition(r.status?.parents?.[0]?.conditions, 'Accepted')?.observedGeneration === r.metadata.generation;
      },
      10_000,
    );
    const mine = await read('httproutes', 'hello', 'default');
    await custom.replaceNamespacedCustomObjectStatus({
      group: GROUP,
      version: 'v1',
      plural: 'httproutes',
      namespace: 'default',
      name: 'hello',
      body: { ...mine, status: { parents: [theirs, ...(mine.status?.parents ?? [])] } },
    });
    await cluster.apply(route(['elsewhere']));
    await waitFor(
      'ours dropped',
      async () =>
        ((await read('httproutes', 'hello', 'default')).status?.parents ?? []).every((p) => p.controllerName !== OURS),
      10_000,
    );
    expect((await read('httproutes', 'hello', 'default')).status?.parents).toEqual([theirs]);
  });

  it('a refused route value: Accepted=False/UnsupportedValue on the route, and a problem logged and shown', async () => {
    const bad = {
      ...route(['web']),
      metadata: { name: 'bad', namespace: 'default' },
      spec: {
        parentRefs: [{ name: 'web' }],
        rules: [
          {
            matches: [{ path: { type: 'Exact', value: '/a' } }],
            filters: [
              { type: 'URLRewrite', urlRewrite: { path: { type: 'ReplacePrefixMatch', replacePrefixMatch: '/b' } } },
            ],
            backendRefs: [{ name: 'web', port: 80 }],
          },
        ],
      },
    };
    await cluster.apply(bad);
    await waitFor(
      'the route refused',
      async () =>
        condition((await read('httproutes', 'bad', 'default')).status?.parents?.[0]?.conditions, 'Accepted')?.reason ===
        'UnsupportedValue',
      10_000,
    );
    const problems = () =>
      (cluster.actor('status')?.context.problems ?? []) as { kind: string; namespace?: string; name: string }[];
    await waitFor(
      'the problem shown',
      () => problems().some((p) => p.kind === 'HTTPRoute' && p.name === 'bad'),
      10_000,
    );
  });

  it('a GRPCRoute gets its parents[] status: on port 80, where Ingress speaks HTTP/1.1, not accepted (no h2c there)', async () => {
    await cluster.apply({
      apiVersion: `${GROUP}/v1`,
      kind: 'GRPCRoute',
      metadata: { name: 'rpc', namespace: 'default' },
      spec: {
        parentRefs: [{ name: 'web' }],
        hostnames: ['rpc.example.com'],
        rules: [
          { matches: [{ method: { service: 'pkg.Echo', method: 'Say' } }], backendRefs: [{ name: 'web', port: 80 }] },
        ],
      },
    });
    await waitFor(
      'the GRPCRoute status',
      async () => (await read('grpcroutes', 'rpc', 'default')).status?.parents?.length === 1,
      10_000,
    );
    const rpc = await read('grpcroutes', 'rpc', 'default');
    expect(rpc.status?.parents?.[0]).toMatchObject({ controllerName: OURS, parentRef: { name: 'web' } });
    expect(condition(rpc.status?.parents?.[0]?.conditions, 'Accepted')).toMatchObject({
      status: 'False',
      reason: 'NotAllowedByListeners',
      observedGeneration: rpc.metadata.generation,
    });
    expect(condition(rpc.status?.parents?.[0]?.conditions, 'ResolvedRefs')?.status).toBe('True');
  });
});
