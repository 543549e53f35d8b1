/**
 * Balancing annotations end to end, in both modes (endpoints rendered into nginx.conf, and pushed to the
 * Lua balancer by the real controller): cookie affinity (same backend across requests), canary by header
 * and cookie, canary by weight (ratio over 1,000 requests), upstream-hash-by, service-upstream,
 * ExternalName, upstream keepalive (connections counted at the backend), backend-protocol HTTPS and GRPC
 * (a @grpc/grpc-js client through nginx's TLS port to a gRPC server).
 */
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueCertificate } from '../../src/tls/issue.js';
import { ingress, ingressClass, serviceWithEndpoints, tlsSecret } from '../support/manifests.js';
import { startBackend, type Backend } from '../support/net.js';
import { ann, inBatches, SCENE_MODES, startScene, type Scene } from './annotations-harness.js';

const raw = (b: Buffer) => b;
/** A one-method gRPC service on raw bytes, so no .proto file is needed. */
const echoService = {
  say: {
    path: '/test.Echo/Say',
    requestStream: false,
    responseStream: false,
    requestSerialize: raw,
    requestDeserialize: raw,
    responseSerialize: raw,
    responseDeserialize: raw,
  },
} satisfies grpc.ServiceDefinition;
const EchoClient = grpc.makeGenericClientConstructor(echoService, 'Echo');

let grpcServer: grpc.Server;
let grpcPort: number;
let ca: { certPem: string; keyPem: string };
let leaf: { certPem: string; keyPem: string };
const backends: Record<string, Backend> = {};
const port = (name: string) => backends[name]!.port;

beforeAll(async () => {
  for (const name of ['one', 'two', 'three', 'stable', 'canary', 'heavy', 'light', 'pod', 'clusterip', 'kept'])
    backends[name] = await startBackend(name);
  grpcServer = new grpc.Server();
  grpcServer.addService(echoService, {
    say: (call: grpc.ServerUnaryCall<Buffer, Buffer>, done: grpc.sendUnaryData<Buffer>) =>
      done(
        null,
        Buffer.from(
          `grpc backend got ${call.request.toString()} for ${call.metadata.get('x-forwarded-host')[0] ?? '?'}`,
        ),
      ),
  });
  grpcPort = await new Promise<number>((resolve, reject) =>
    grpcServer.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, port) =>
      error ? reject(error) : resolve(port),
    ),
  );
  ca = await issueCertificate({ commonName: 'balancing test CA', isCa: true });
  leaf = await issueCertificate({ commonName: 'grpc.test', dnsNames: ['grpc.test'], issuer: ca });
  const backendLeaf = await issueCertificate({ commonName: 'tls-backend', dnsNames: ['tls-backend'], issuer: ca });
  backends.tls = await startBackend('tls', backendLeaf);
}, 60_000);

afterAll(async () => {
  await Promise.all(Object.values(backends).map((b) => b.close()));
  grpcServer?.forceShutdown();
});

/** A Service whose ClusterIP (loopback here) leads to the `clusterip` backend, and whose endpoint is `pod`. */
const serviceWithClusterIp = () => {
  const [service, ...slices] = serviceWithEndpoints('addressed', [{ port: port('pod') }]);
  const spec = { clusterIP: '127.0.0.1', ports: [{ name: 'http', port: port('clusterip'), targetPort: 'http' }] };
  return [{ ...service, spec }, ...slices];
};

/** The scene's objects: one Ingress (or two, for a canary) per behaviour, each on a host of its own. */
const sceneObjects = () => [
  ingressClass(),
  ...serviceWithEndpoints('sticky', [{ port: port('one') }, { port: port('two') }, { port: port('three') }]),
  ...serviceWithEndpoints('stable', [{ port: port('stable') }]),
  ...serviceWithEndpoints('canary', [{ port: port('canary') }]),
  ...serviceWithEndpoints('heavy', [{ port: port('heavy') }]),
  ...serviceWithEndpoints('light', [{ port: port('light') }]),
  ...serviceWithEndpoints('grpc', [{ port: grpcPort }]),
  ...serviceWithEndpoints('tls', [{ port: port('tls') }]),
  ...serviceWithEndpoints('kept', [{ port: port('kept') }]),
  ...serviceWithClusterIp(),
  {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'elsewhere', namespace: 'default' },
    spec: { type: 'ExternalName', externalName: 'example.com', ports: [{ name: 'http', port: 80 }] },
  },
  tlsSecret('grpc-tls', leaf.certPem, leaf.keyPem),
  ingress(
    'sticky',
    { 'sticky.test': [{ path: '/', service: 'sticky' }] },
    { annotations: ann({ affinity: 'cookie' }) },
  ),
  ingress(
    'sticky-dash',
    { 'sticky-dash.test': [{ path: '/', service: 'sticky' }] },
    { annotations: ann({ affinity: 'cookie', 'session-cookie-name': 'hello-cookie' }) },
  ),
  ingress('spread', { 'spread.test': [{ path: '/', service: 'sticky' }] }),
  ingress(
    'hashed',
    { 'hash.test': [{ path: '/', service: 'sticky' }] },
    { annotations: ann({ 'upstream-hash-by': '$arg_user' }) },
  ),
  ingress('stable', { 'canary.test': [{ path: '/', service: 'stable' }] }),
  ingress(
    'canary',
    { 'canary.test': [{ path: '/', service: 'canary' }] },
    { annotations: ann({ canary: 'true', 'canary-by-header': 'X-Canary', 'canary-by-cookie': 'use_canary' }) },
  ),
  ingress('heavy', { 'weight.test': [{ path: '/', service: 'heavy' }] }),
  ingress(
    'light',
    { 'weight.test': [{ path: '/', service: 'light' }] },
    { annotations: ann({ canary: 'true', 'canary-weight': '30' }) },
  ),
  ingress(
    'grpc',
    { 'grpc.test': [{ path: '/', service: 'grpc' }] },
    { annotations: ann({ 'backend-protocol': 'GRPC' }), tls: [{ hosts: ['grpc.test'], secretName: 'grpc-tls' }] },
  ),
  ingress(
    'tls',
    { 'tls.test': [{ path: '/', service: 'tls' }] },
    { annotations: ann({ 'backend-protocol': 'HTTPS' }) },
  ),
  ingress('kept', { 'kept.test': [{ path: '/', service: 'kept' }] }),
  ingress(
    'cluster-ip',
    { 'cluster-ip.test': [{ path: '/', service: 'addressed', port: port('clusterip') }] },
    { annotations: ann({ 'service-upstream': 'true' }) },
  ),
  ingress('pods', { 'pods.test': [{ path: '/', service: 'addressed', port: port('clusterip') }] }),
  ingress('external', { 'external.test': [{ path: '/', service: 'elsewhere' }] }),
];

/** The one problem the scene has on purpose: the ExternalName Service. */
const EXTERNAL_NAME_PROBLEM =
  'default/external: spec.rules[0].http.paths[0].backend.service.name: Service default/elsewhere is of type ' +
  'ExternalName, which is not supported; answering 503';

describe.each(SCENE_MODES)('balancing annotations through real nginx (%s)', (mode) => {
  let scene: Scene;
  beforeAll(async () => {
    scene = await startScene(sceneObjects(), { mode });
  }, 60_000);
  afterAll(async () => {
    await scene?.stop();
  });

  it('has only the ExternalName problem', () =>
    expect(scene.problems.split('\n').filter((line) => line !== '')).toEqual([EXTERNAL_NAME_PROBLEM]));

  it('without affinity, requests spread over the endpoints', async () => {
    const seen = await inBatches(30, 10, () => scene.http('spread.test', '/').then((r) => r.backend));
    expect(new Set(seen).size).toBeGreaterThanOrEqual(2);
  });

  it('cookie affinity: a new client gets a cookie, and with it reaches the same backend every time', async () => {
    const first = await scene.http('sticky.test', '/');
    const setCookie = first.headers['set-cookie']?.[0] ?? '';
    expect(setCookie).toMatch(/^INGRESSCOOKIE=[0-9a-f]{32}; Path=\/; HttpOnly$/);
    const cookie = setCookie.split(';')[0]!;
    const later = await inBatches(20, 5, () => scene.http('sticky.test', '/', { headers: { cookie } }));
    expect(new Set(later.map((r) => r.backend))).toEqual(new Set([first.backend]));
    expect(later.every((r) => r.headers['set-cookie'] === undefined)).toBe(true);
  });

  it("cookie affinity with a '-' in the cookie's name (hello-cookie), sent among other cookies", async () => {
    const first = await scene.http('sticky-dash.test', '/');
    const setCookie = first.headers['set-cookie']?.[0] ?? '';
    expect(setCookie).toMatch(/^hello-cookie=[0-9a-f]{32}; Path=\/; HttpOnly$/);
    const cookie = `hello=1; ${setCookie.split(';')[0]!}; cookie=2`;
    const later = await inBatches(20, 5, () => scene.http('sticky-dash.test', '/', { headers: { cookie } }));
    expect(new Set(later.map((r) => r.backend))).toEqual(new Set([first.backend]));
    expect(later.every((r) => r.headers['set-cookie'] === undefined)).toBe(true);
    // the other clients, each with a cookie of its own, still spread over the endpoints
    const seen = await inBatches(30, 10, () => scene.http('sticky-dash.test', '/').then((r) => r.backend));
    expect(new Set(seen).size).toBeGreaterThanOrEqual(2);
  });

  it('cookie affinity still spreads new clients over the endpoints', async () => {
    const seen = await inBatches(30, 10, () => scene.http('sticky.test', '/').then((r) => r.backend));
    expect(new Set(seen).size).toBeGreaterThanOrEqual(2);
  });

  it('canary by header: always goes to the canary, never and no header to the main', async () => {
    expect((await scene.http('canary.test', '/', { headers: { 'x-canary': 'always' } })).backend).toBe('canary');
    expect((await scene.http('canary.test', '/', { headers: { 'x-canary': 'never' } })).backend).toBe('stable');
    expect((await scene.http('canary.test', '/')).backend).toBe('stable');
  });

  it('canary by cookie, with the header first in precedence', async () => {
    expect((await scene.http('canary.test', '/', { headers: { cookie: 'use_canary=always' } })).backend).toBe('canary');
    expect(
      (await scene.http('canary.test', '/', { headers: { cookie: 'use_canary=always', 'x-canary': 'never' } })).backend,
    ).toBe('stable');
    expect(
      (await scene.http('canary.test', '/', { headers: { cookie: 'use_canary=other', 'x-canary': 'other' } })).backend,
    ).toBe('stable');
  });

  it('canary by weight: about 30% of 1,000 requests reach the canary', async () => {
    const seen = await inBatches(1000, 50, () => scene.http('weight.test', '/').then((r) => r.backend));
    const share = seen.filter((b) => b === 'light').length / seen.length;
    expect(seen.every((b) => b === 'light' || b === 'heavy')).toBe(true);
    expect(share).toBeGreaterThan(0.25);
    expect(share).toBeLessThan(0.35);
  }, 60_000);

  it('backend-protocol GRPC: a gRPC call goes through nginx (TLS, HTTP/2) to a gRPC server', async () => {
    const client = new EchoClient(`127.0.0.1:${scene.httpsPort}`, grpc.credentials.createSsl(Buffer.from(ca.certPem)), {
      'grpc.ssl_target_name_override': 'grpc.test',
      'grpc.default_authority': 'grpc.test',
    });
    try {
      const answer = await new Promise<Buffer>((resolve, reject) =>
        client.makeUnaryRequest('/test.Echo/Say', raw, raw, Buffer.from('hello'), (error, value) =>
          error ? reject(error) : resolve(value!),
        ),
      );
      expect(answer.toString()).toBe('grpc backend got hello for grpc.test');
    } finally {
      client.close();
    }
  });

  it('upstream-hash-by: each key reaches one endpoint every time, and the keys spread over the endpoints', async () => {
    const users = Array.from({ length: 20 }, (_, i) => `u${i}`);
    const owners = await inBatches(users.length, 5, async (i) => {
      const answers = await inBatches(3, 3, () => scene.http('hash.test', `/?user=${users[i]}`));
      expect(new Set(answers.map((a) => a.backend)).size, `user ${users[i]}`).toBe(1);
      return answers[0]!.backend;
    });
    expect(new Set(owners).size).toBeGreaterThanOrEqual(2);
  });

  it("service-upstream: requests go to the Service's ClusterIP and port, not to its endpoints", async () => {
    expect((await scene.http('cluster-ip.test', '/')).backend).toBe('clusterip');
    expect((await scene.http('pods.test', '/')).backend).toBe('pod');
  });

  it('an ExternalName Service answers 503 and reaches nothing', async () => {
    expect((await scene.http('external.test', '/')).status).toBe(503);
  });

  it('backend-protocol HTTPS: nginx speaks TLS to the backend', async () => {
    const reply = await scene.http('tls.test', '/over-tls');
    expect(reply.status).toBe(200);
    expect(reply.backend).toBe('tls');
  });

  it('upstream keepalive: 40 requests in a row reuse a few connections to the backend', async () => {
    const before = backends.kept!.connections;
    for (let i = 0; i < 40; i++) expect((await scene.http('kept.test', '/')).backend).toBe('kept');
    // each worker keeps its idle connection for the next request: without keepalive this would be 40
    expect(backends.kept!.connections - before).toBeLessThanOrEqual(8);
  });
});
