/**
 * The RBAC rules in deploy/ against the API calls the controller really makes. Two controllers
 * run one after the other against the test API server with the Deployment's own flags and
 * downward-API environment, through everything that calls the API: the watchers, acquiring,
 * renewing and releasing the Lease, writing and clearing the Ingress status, creating Events
 * and counting them up (also as a new leader that never saw them), and the Gateway API (its standard-channel CRDs,
 * a GatewayClass, Gateway, HTTPRoute, GRPCRoute, TLSRoute, TCPRoute, UDPRoute, ListenerSet and BackendTLSPolicy of ours, whose status
 * the leader writes). Every request is recorded
 * (the server's onRequest), mapped to API group, resource, verb, namespace and name, and then:
 * each is allowed by a rule, and each verb of each rule was used.
 */
import { gatewayApiCrds } from '../../src/dev/api-server/gateway-api.js';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1ClusterRole, V1Ingress, V1Role } from '@kubernetes/client-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseControllerFlags } from '../../src/cli/controller-flags.js';
import { findResourceByKind } from '../../src/dev/api-server/resources.js';
import { startApiServer, type ApiServer } from '../../src/dev/api-server/server.js';
import { startController } from '../../src/main.js';
import { waitFor } from '../support/cluster.js';
import { ingress, serviceWithEndpoints } from '../support/manifests.js';
import { testControllerFlags } from '../support/controller-flags.js';
import { controllerContainer, find, loadManifests } from './manifests.js';
import { allows, type Call, type Grant, toCall } from './rbac-calls.js';

const manifests = loadManifests();
const container = controllerContainer(manifests);
const clusterRole = find<V1ClusterRole>(manifests, 'ClusterRole');
const role = find<V1Role>(manifests, 'Role');
const grants: Grant[] = [
  ...(clusterRole.rules ?? []).map((rule) => ({ rule, namespace: null, from: 'ClusterRole' })),
  ...role.rules!.map((rule) => ({ rule, namespace: role.metadata!.namespace!, from: 'Role' })),
];
// The flags the Deployment runs with, except where the test must put its own ports and folders.
const OWN = /^--(http-port|https-port|healthz-port|config-dir)(=|$)/;
const deploymentFlags = (container.args ?? []).slice(1).filter((a) => !OWN.test(a));
// The downward API, as the kubelet would fill it in.
const envFor = (pod: string): NodeJS.ProcessEnv =>
  Object.fromEntries(
    (container.env ?? []).map((e) => [
      e.name,
      { 'metadata.name': pod, 'metadata.namespace': 'ingress-actors', 'spec.nodeName': 'node-a' }[
        e.valueFrom!.fieldRef!.fieldPath
      ]!,
    ]),
  );

const INGRESSES = findResourceByKind('networking.k8s.io/v1', 'Ingress')!;
const SERVICES = findResourceByKind('v1', 'Service')!;
const EVENTS = findResourceByKind('v1', 'Event')!;
const LB_IP = '192.0.2.44';
const GATEWAY_API = 'gateway.networking.k8s.io';
/** The Gateway API objects of ours, whose status the leader writes; with the CRDs that serve them. */
async function gatewayObjects(): Promise<object[]> {
  const crds = gatewayApiCrds().filter((o) => o.kind === 'CustomResourceDefinition');
  return [
    ...crds,
    {
      apiVersion: `${GATEWAY_API}/v1`,
      kind: 'GatewayClass',
      metadata: { name: 'ingress-actors' },
      spec: { controllerName: 'ingress-actors.io/gateway-controller' },
    },
    {
      apiVersion: `${GATEWAY_API}/v1`,
      kind: 'Gateway',
      metadata: { name: 'web', namespace: 'default' },
      spec: { gatewayClassName: 'ingress-actors', listeners: [{ name: 'http', port: 80, protocol: 'HTTP' }] },
    },
    {
      apiVersion: `${GATEWAY_API}/v1`,
      kind: 'HTTPRoute',
      metadata: { name: 'web', namespace: 'default' },
      spec: { parentRefs: [{ name: 'web' }], rules: [{ backendRefs: [{ name: 'web', port: 80 }] }] },
    },
    {
      // on the Ingress port it is not served (no h2c there), and its status says so
      apiVersion: `${GATEWAY_API}/v1`,
      kind: 'GRPCRoute',
      metadata: { name: 'echo', namespace: 'default' },
      spec: {
        parentRefs: [{ name: 'web' }],
        hostnames: ['grpc.example.com'],
        rules: [{ backendRefs: [{ name: 'web', port: 80 }] }],
      },
    },
    // stream routes on the HTTP listener: not allowed there, and their status says so
    ...(['TLSRoute', 'TCPRoute', 'UDPRoute'] as const).map((kind) => ({
      apiVersion: `${GATEWAY_API}/v1`,
      kind,
      metadata: { name: kind.toLowerCase(), namespace: 'default' },
      spec: {
        parentRefs: [{ name: 'web' }],
        ...(kind === 'TLSRoute' ? { hostnames: ['tls.example.com'] } : {}),
        rules: [{ backendRefs: [{ name: 'web', port: 80 }] }],
      },
    })),
    {
      // more listeners for Gateway web, which does not admit them: the leader writes that they are not allowed
      apiVersion: `${GATEWAY_API}/v1`,
      kind: 'ListenerSet',
      metadata: { name: 'extra', namespace: 'default' },
      spec: { parentRef: { name: 'web' }, listeners: [{ name: 'extra', port: 80, protocol: 'HTTP' }] },
    },
    {
      // TLS to the route's Service: the leader writes the policy's ancestors
      apiVersion: `${GATEWAY_API}/v1`,
      kind: 'BackendTLSPolicy',
      metadata: { name: 'web', namespace: 'default' },
      spec: {
        targetRefs: [{ group: '', kind: 'Service', name: 'web' }],
        validation: { wellKnownCACertificates: 'System', hostname: 'web.example.com' },
      },
    },
  ];
}
/** statusWritten: the leader wrote the status of the Gateway API object of this plural (through its /status). */
const statusWritten = (plural: string) =>
  calls.some((c) => c.group === GATEWAY_API && c.resource === `${plural}/status` && c.verb === 'update');
const calls: Call[] = [];
let api: ApiServer;
let dir: string;

async function runController(pod: string, body: () => Promise<void>): Promise<void> {
  const parsed = parseControllerFlags([
    ...deploymentFlags,
    ...(await testControllerFlags(join(dir, 'kubeconfig'), join(dir, pod))).flags,
    '--sync-rate-limit',
    '10',
  ]);
  if (!('config' in parsed)) throw new Error('help');
  const controller = await startController(parsed.config, pino({ level: process.env.TEST_LOG ?? 'silent' }), {
    env: envFor(pod),
  });
  try {
    await body();
  } finally {
    controller.stop();
    expect(await controller.exitCode).toBe(0);
  }
}

const addresses = (name: string) =>
  ((api.registry.get(INGRESSES, 'default', name) as V1Ingress).status?.loadBalancer?.ingress ?? []).map((a) => a.ip);
const eventCount = () =>
  (api.registry.list(EVENTS, { namespace: 'default' }).items as { count?: number }[]).reduce(
    (n, e) => n + (e.count ?? 0),
    0,
  );
const backendOf = (service: string) => ({
  spec: {
    rules: [
      {
        host: 'broken.example.com',
        http: {
          paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: service, port: { number: 80 } } } }],
        },
      },
    ],
  },
});

beforeAll(async () => {
  const served = manifests.filter((m) => findResourceByKind(m.apiVersion, m.kind)).map(({ file: _f, ...m }) => m);
  // Ingresses of the manifests' IngressClass (`nginx`): the controller serves them.
  const cls = { spec: { ingressClassName: find(manifests, 'IngressClass').metadata.name } };
  const app = (name: string, service: string) => {
    const i = ingress(name, { [`${name}.example.com`]: [{ path: '/', service }] });
    return { ...i, spec: { ...i.spec, ...cls.spec } };
  };
  api = await startApiServer({
    seed: [
      ...served,
      ...serviceWithEndpoints('web', [{ port: 9 }]),
      app('web', 'web'),
      app('broken', 'missing'),
      ...(await gatewayObjects()),
    ] as never,
    onRequest: ({ method, url }) => {
      // The server's own table: the Gateway API's kinds come from its CRDs.
      const call = toCall(method, url, api?.resources);
      if (call) calls.push(call);
    },
  });
  // The cloud's load balancer gave the controller Service an address.
  const svc = api.registry.get(SERVICES, 'ingress-actors', 'ingress-actors');
  api.registry.update(
    SERVICES,
    'ingress-actors',
    'ingress-actors',
    { ...svc, status: { loadBalancer: { ingress: [{ ip: LB_IP }] } } },
    { subresource: 'status' },
  );
  dir = await mkdtemp(join(tmpdir(), 'ia-rbac-'));
  await api.writeKubeconfig(join(dir, 'kubeconfig'));

  // The first replica: leads, publishes, reports, sees the problem go and come back, stops last (clears, releases).
  await runController('ingress-actors-6b7c9-a', async () => {
    await waitFor(
      'the status written',
      () => addresses('web').join() === LB_IP && addresses('broken').join() === LB_IP,
      15_000,
    );
    await waitFor('an Event', () => eventCount() === 1, 10_000);
    await waitFor(
      'the Gateway API status written',
      () =>
        [
          'gatewayclasses',
          'gateways',
          'httproutes',
          'grpcroutes',
          'tlsroutes',
          'tcproutes',
          'udproutes',
          'listenersets',
          'backendtlspolicies',
        ].every(statusWritten),
      15_000,
    );
    const patch = (service: string) =>
      api.registry.patch(INGRESSES, 'default', 'broken', 'application/merge-patch+json', backendOf(service));
    patch('web');
    await new Promise((r) => setTimeout(r, 500));
    patch('missing');
    await waitFor('the Event counted up', () => eventCount() === 2, 10_000);
  });
  expect(addresses('web')).toEqual([]); // no other replica: cleared
  // The second: a new leader that never saw the Event.
  await runController('ingress-actors-6b7c9-b', async () => {
    await waitFor('the status written again', () => addresses('web').join() === LB_IP, 15_000);
    await waitFor('the Event counted up by the new leader', () => eventCount() === 3, 10_000);
  });
}, 90_000);

afterAll(async () => {
  await api?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('deploy/kubernetes RBAC', () => {
  it('allows every API call the controller made', () => {
    expect(calls.length).toBeGreaterThan(20);
    const denied = calls.filter((call) => !grants.some((g) => allows(g, call))).map((c) => c.line);
    expect([...new Set(denied)]).toEqual([]);
  });

  it('grants nothing the controller did not use: every verb of every rule, on every resource and name', () => {
    const unused: string[] = [];
    for (const grant of grants) {
      for (const resource of grant.rule.resources ?? []) {
        for (const verb of grant.rule.verbs) {
          const used = calls.some(
            (c) => c.resource === resource && c.verb === verb && allows(grant, c, verb, resource),
          );
          if (!used) unused.push(`${grant.from}: ${verb} ${resource}`);
          for (const name of grant.rule.resourceNames ?? []) {
            if (!calls.some((c) => c.resource === resource && c.verb === verb && c.name === name && allows(grant, c)))
              unused.push(`${grant.from}: ${verb} ${resource} ${name}`);
          }
        }
      }
    }
    expect(unused).toEqual([]);
  });

  it('saw what it should have: the list/watch of every watched kind, the Lease cycle, status and Event writes', () => {
    const seen = new Set(calls.map((c) => `${c.verb} ${c.resource}`));
    for (const expected of [
      'list ingresses',
      'watch ingresses',
      'watch endpointslices',
      'list configmaps',
      'watch nodes',
      'create leases',
      'get leases',
      'update leases',
      'update ingresses/status',
      'list httproutes',
      'watch referencegrants',
      'watch namespaces',
      'update gateways/status',
      'create events',
      'get events',
      'patch events',
    ]) {
      expect(seen, expected).toContain(expected);
    }
    // ConfigMaps are listed in every namespace with the Gateway API on (a BackendTLSPolicy's CA ConfigMaps), which
    // the ClusterRole grants; with it off only the controller's namespace (a Role there would do).
    expect(calls.some((c) => c.resource === 'configmaps' && c.namespace === null)).toBe(true);
    // No GET of Ingresses: a 409 is retried from the watch, not with a read.
    expect(seen).not.toContain('get ingresses');
  });
});
