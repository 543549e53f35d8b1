/**
 * ListenerSets through the real controller, the test API server and one real nginx that also serves Ingresses: a
 * Gateway admits the ListenerSets of namespaces labelled `gateway-access: yes`; team-a's set adds an HTTP listener
 * with a long hostname (nginx's server_names hash must be sized for it) and an HTTPS listener whose certificate is
 * its own namespace's Secret; team-b's set (not admitted) and a listener of team-a's that takes the Gateway's own
 * hostname are not served. Routes reach the set's listeners through a ListenerSet parentRef, the Ingress keeps its
 * host on the same ports, and the status is written (the sets' conditions, the Gateway's attachedListenerSets).
 */
import type { CustomObjectsApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueCertificate } from '../../src/tls/issue.js';
import { startCluster, waitFor, type Cluster } from '../support/cluster.js';
import { type Cond, GROUP, installGatewayApi, statusOf } from '../support/gateway-cluster.js';
import { ingress, ingressClass, serviceWithEndpoints, tlsSecret } from '../support/manifests.js';
import { get, startBackend, type Backend } from '../support/net.js';

/** 65 characters: more than the server_names hash's default 64-byte bucket holds (nginx -t refuses it) */
const LONG_HOST = `${'a'.repeat(40)}.team-a.listener-set.test`;

let cluster: Cluster;
let custom: CustomObjectsApi;
let teamCertPem: string;
const backends: Backend[] = [];

const shown = (conditions: Cond[] | undefined) =>
  Object.fromEntries((conditions ?? []).map((c) => [c.type, `${c.status}/${c.reason}`]));

const listenerSet = (name: string, namespace: string, listeners: object[]) => ({
  apiVersion: `${GROUP}/v1`,
  kind: 'ListenerSet',
  metadata: { name, namespace },
  spec: { parentRef: { name: 'shared', namespace: 'infra' }, listeners },
});
const httpRoute = (name: string, namespace: string, parentRef: object, service: string) => ({
  apiVersion: `${GROUP}/v1`,
  kind: 'HTTPRoute',
  metadata: { name, namespace },
  spec: { parentRefs: [parentRef], rules: [{ backendRefs: [{ name: service, port: 80 }] }] },
});

beforeAll(async () => {
  const [plain, team, gw] = await Promise.all([startBackend('ingress'), startBackend('team-a'), startBackend('gw')]);
  backends.push(plain, team, gw);
  const teamCert = await issueCertificate({ commonName: 'team-a', dnsNames: ['secure.team-a.test'] });
  teamCertPem = teamCert.certPem;
  cluster = await startCluster(
    [
      ingressClass(),
      ...serviceWithEndpoints('plain', [{ port: plain.port }]),
      ingress('web', { 'web.test': [{ path: '/', service: 'plain', port: 80 }] }),
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'infra' } },
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'team-a', labels: { 'gateway-access': 'yes' } } },
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'team-b' } },
      ...serviceWithEndpoints('gw', [{ port: gw.port }], 'infra'),
      ...serviceWithEndpoints('team', [{ port: team.port }], 'team-a'),
      ...serviceWithEndpoints('team', [{ port: team.port }], 'team-b'),
      tlsSecret('team-cert', teamCert.certPem, teamCert.keyPem, 'team-a'),
    ],
    [],
    process.env.TEST_LOG ?? 'silent',
    { unservedRecheckMs: 200 },
  );
  custom = await installGatewayApi(cluster, ['ListenerSet', 'Gateway', 'HTTPRoute']);
  await cluster.apply({
    apiVersion: `${GROUP}/v1`,
    kind: 'Gateway',
    metadata: { name: 'shared', namespace: 'infra' },
    spec: {
      gatewayClassName: 'ingress-actors',
      allowedListeners: { namespaces: { from: 'Selector', selector: { matchLabels: { 'gateway-access': 'yes' } } } },
      listeners: [{ name: 'http', port: 80, protocol: 'HTTP', hostname: 'gw.test' }],
    },
  });
  const same = { namespaces: { from: 'Same' } };
  await cluster.apply(
    listenerSet('team-a', 'team-a', [
      { name: 'long', port: 80, protocol: 'HTTP', hostname: LONG_HOST, allowedRoutes: same },
      { name: 'taken', port: 80, protocol: 'HTTP', hostname: 'gw.test', allowedRoutes: same },
      {
        name: 'secure',
        port: 443,
        protocol: 'HTTPS',
        hostname: 'secure.team-a.test',
        tls: { certificateRefs: [{ name: 'team-cert' }] },
        allowedRoutes: same,
      },
    ]),
  );
  await cluster.apply(
    listenerSet('team-b', 'team-b', [
      { name: 'http', port: 80, protocol: 'HTTP', hostname: 'team-b.test', allowedRoutes: same },
    ]),
  );
  const toSet = (name: string, namespace: string) => ({ group: GROUP, kind: 'ListenerSet', name, namespace });
  await cluster.apply(httpRoute('team', 'team-a', toSet('team-a', 'team-a'), 'team'));
  await cluster.apply(httpRoute('team', 'team-b', toSet('team-b', 'team-b'), 'team'));
  await cluster.apply(httpRoute('gw', 'infra', { name: 'shared' }, 'gw'));
  // every route applied above served (the Gateway's own one last), before the tests read what answers where
  for (const [host, backend] of [
    [LONG_HOST, 'team-a'],
    ['gw.test', 'gw'],
    ['web.test', 'ingress'],
  ] as const)
    await waitFor(
      `${host} served`,
      async () => (await get({ host, path: '/', port: cluster.httpPort })).backend === backend,
      30_000,
    );
}, 90_000);

afterAll(async () => {
  await cluster?.close();
  for (const b of backends) await b.close();
});

describe('ListenerSets beside Ingresses on one nginx', () => {
  it("serves an admitted set's listeners through its routes, the Ingress and the Gateway's own host beside them", async () => {
    const at = (host: string) => get({ host, path: '/x', port: cluster.httpPort });
    expect((await at(LONG_HOST)).backend).toBe('team-a');
    expect((await at('web.test')).backend).toBe('ingress');
    // the set's listener with the Gateway's hostname lost it: the Gateway's route answers there
    expect((await at('gw.test')).backend).toBe('gw');
  });

  it("serves an HTTPS listener of the set with its own namespace's certificate", async () => {
    const reply = await get({
      host: 'secure.team-a.test',
      path: '/',
      port: cluster.httpsPort,
      https: true,
      ca: teamCertPem,
    });
    expect(reply.backend).toBe('team-a');
    expect(reply.peerCertificate?.subject?.CN).toBe('team-a');
  });

  it('serves nothing of a set the Gateway does not admit', async () => {
    const reply = await get({ host: 'team-b.test', path: '/', port: cluster.httpPort });
    expect(reply.backend).not.toBe('team-a');
    expect(reply.status).toBe(404);
  });

  it("writes the sets' status, their routes' and the Gateway's attachedListenerSets", async () => {
    await waitFor(
      'the status written',
      async () => (await statusOf(custom, 'gateways', 'shared', 'infra'))?.attachedListenerSets === 1,
      15_000,
    );
    const a = await statusOf(custom, 'listenersets', 'team-a', 'team-a');
    expect(shown(a?.conditions)).toMatchObject({
      Accepted: 'True/ListenersNotValid',
      Programmed: 'True/Programmed',
    });
    const listeners = Object.fromEntries((a?.listeners ?? []).map((l) => [l.name, l]));
    expect(shown(listeners.long?.conditions)).toMatchObject({
      Accepted: 'True/Accepted',
      Programmed: 'True/Programmed',
    });
    expect(listeners.long?.attachedRoutes).toBe(1);
    expect(shown(listeners.taken?.conditions)).toMatchObject({
      Accepted: 'False/HostnameConflict',
      Conflicted: 'True/HostnameConflict',
      Programmed: 'False/HostnameConflict',
    });
    const b = await statusOf(custom, 'listenersets', 'team-b', 'team-b');
    expect(shown(b?.conditions)).toEqual({ Accepted: 'False/NotAllowed', Programmed: 'False/NotAllowed' });
    const route = await statusOf(custom, 'httproutes', 'team', 'team-a');
    expect(route?.parents?.map((p) => [p.parentRef.kind, shown(p.conditions).Accepted])).toEqual([
      ['ListenerSet', 'True/Accepted'],
    ]);
    const gateway = await statusOf(custom, 'gateways', 'shared', 'infra');
    // the Gateway's status lists its own listener only
    expect(gateway?.listeners?.map((l) => l.name)).toEqual(['http']);
  });
});
