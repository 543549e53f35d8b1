/**
 * GRPCRoute through the real nginx and the Lua router: gRPC echo pods (test/support/grpc-echo.ts) on 127.0.0.2-3,
 * a Gateway with an HTTPS listener (h2 by ALPN), a plaintext listener on a port of its own that serves only
 * GRPCRoutes (h2c), and the http port where an HTTPRoute and Ingress live (HTTP/1.1, so a GRPCRoute there is not
 * accepted). Calls are made with @grpc/grpc-js, as a gRPC client would.
 */
import * as grpc from '@grpc/grpc-js';
import { rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BuildOptions, defaultBuildOptions } from '../../src/model/build-types.js';
import { buildModel } from '../../src/model/build.js';
import type { Snapshot } from '../../src/model/snapshot.js';
import { issueCertificate } from '../../src/tls/issue.js';
import { callEcho, GRPC_ECHO_SERVICE, GrpcEchoClient, type GrpcEchoPod, startGrpcEcho } from '../support/grpc-echo.js';
import { ingress, ingressClass, serviceWithEndpoints, snapshotOf, tlsSecret } from '../support/manifests.js';
import { freePort, get } from '../support/net.js';
import { serveModel } from '../support/served-model.js';
import { luaFolder, type RunningNginx } from '../support/nginx.js';
import { CONTROLLER, gateway, gatewayClass, listener, namespace, route } from './fixtures.js';

const GROUP = 'gateway.networking.k8s.io';
const SVC = GRPC_ECHO_SERVICE;

/** grpcRoute is a GRPCRoute of `default` attached to Gateway `gw`. */
function grpcRoute(name: string, spec: Record<string, unknown>): Record<string, unknown> {
  return {
    apiVersion: `${GROUP}/v1`,
    kind: 'GRPCRoute',
    metadata: { name, namespace: 'default', generation: 2, creationTimestamp: '2026-01-01T00:00:00Z' },
    spec: { parentRefs: [{ name: 'gw' }], ...spec },
  };
}

const backend = (name: string) => [{ name, port: 80 }];
const method = (m: Record<string, unknown>) => ({ method: m });

const echo: Record<string, GrpcEchoPod> = {};
let web: Server;
let dir: string;
let nginx: RunningNginx;
let ca: string;
let [port, tlsPort, h2cPort] = [0, 0, 0];
let result: ReturnType<typeof buildModel>;
const clients: grpc.Client[] = [];

function objects(webPort: number): Record<string, unknown>[] {
  return [
    ingressClass(),
    ingress('legacy', { 'ingress.test': [{ path: '/', service: 'web' }] }),
    ...serviceWithEndpoints('one', [{ ip: echo.one!.ip, port: echo.one!.port }]),
    ...serviceWithEndpoints('two', [{ ip: echo.two!.ip, port: echo.two!.port }]),
    ...serviceWithEndpoints('web', [{ ip: '127.0.0.2', port: webPort }]),
    gatewayClass(),
    gateway([
      listener('http'),
      listener('https', {
        port: 443,
        protocol: 'HTTPS',
        hostname: 'grpc.test',
        tls: { certificateRefs: [{ name: 'grpc-cert' }] },
      }),
      listener('h2c', { port: h2cPort }),
    ]),
    grpcRoute('echo', {
      parentRefs: [
        { name: 'gw', sectionName: 'https' },
        { name: 'gw', sectionName: 'h2c' },
      ],
      rules: [
        { matches: [method({ service: SVC, method: 'Echo' })], backendRefs: backend('one') },
        {
          matches: [method({ service: SVC, method: 'EchoTwo' })],
          filters: [
            { type: 'RequestHeaderModifier', requestHeaderModifier: { set: [{ name: 'x-set', value: 'by-route' }] } },
            {
              type: 'ResponseHeaderModifier',
              responseHeaderModifier: { add: [{ name: 'x-answered-by', value: 'gateway' }] },
            },
          ],
          backendRefs: backend('two'),
        },
        // the same method and one header match more: it comes first
        {
          matches: [{ ...method({ service: SVC, method: 'Echo' }), headers: [{ name: 'version', value: 'two' }] }],
          backendRefs: backend('two'),
        },
      ],
    }),
    // RegularExpression on the h2c port only: after every Exact match there (`[^/]*`, not `.*`: a `.*` in each
    // part could take the `/` between them, two ways to match one path, which the linear-time subset refuses)
    grpcRoute('regex', {
      parentRefs: [{ name: 'gw', sectionName: 'h2c' }],
      rules: [
        {
          matches: [
            method({ type: 'RegularExpression', service: '[^/]*[.]Grpc[A-Z][a-z]+', method: 'Echo[A-Z][^/]*' }),
          ],
          backendRefs: backend('two'),
        },
      ],
    }),
    // an HTTPRoute for the same listener and hostname, younger: the spec accepts only one of the two kinds there
    route('site', {
      created: '2026-02-01T00:00:00Z',
      hostnames: ['grpc.test'],
      parentRefs: [{ name: 'gw', sectionName: 'https' }],
      rules: [{ backendRefs: backend('web') }],
    }),
    route('plain', { hostnames: ['plain.test'], parentRefs: [{ name: 'gw', sectionName: 'http' }] }),
    // the http port speaks HTTP/1.1 (Ingress and HTTPRoutes): no h2c there
    grpcRoute('on-http', {
      hostnames: ['grpc-plain.test'],
      parentRefs: [{ name: 'gw', sectionName: 'http' }],
      rules: [{ backendRefs: backend('one') }],
    }),
  ];
}

const snapshot = (list: Record<string, unknown>[]): Snapshot => snapshotOf([...list, namespace('default')]);

beforeAll(async () => {
  echo.one = await startGrpcEcho('127.0.0.2', { namespace: 'default', service_name: 'one', pod: 'one-pod' });
  echo.two = await startGrpcEcho('127.0.0.3', { namespace: 'default', service_name: 'two', pod: 'two-pod' });
  web = createServer((_req, res) => res.end('web'));
  await new Promise<void>((done) => web.listen(0, '127.0.0.2', done));
  const folder = await luaFolder('ia-grpc-');
  dir = folder.dir;
  [port, tlsPort, h2cPort] = [await freePort(), await freePort(), await freePort()];
  const options: BuildOptions = {
    ...defaultBuildOptions,
    httpPort: port,
    httpsPort: tlsPort,
    listenAddress: '127.0.0.1',
    dynamic: folder.dynamic,
    gateway: { controllerName: CONTROLLER },
  };
  const cert = await issueCertificate({ commonName: 'grpc.test', dnsNames: ['grpc.test'] });
  ca = cert.certPem;
  const list = [...objects((web.address() as AddressInfo).port), tlsSecret('grpc-cert', cert.certPem, cert.keyPem)];
  result = buildModel(snapshot(list), options);
  nginx = await serveModel(dir, port, folder.control, result.model);
}, 60_000);

afterAll(async () => {
  for (const c of clients) c.close();
  await nginx?.stop();
  await Promise.all(Object.values(echo).map((p) => p.close()));
  web?.closeAllConnections();
  web?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

function tlsClient(): grpc.Client {
  const client = new GrpcEchoClient(`127.0.0.1:${tlsPort}`, grpc.credentials.createSsl(Buffer.from(ca)), {
    'grpc.ssl_target_name_override': 'grpc.test',
    'grpc.default_authority': 'grpc.test',
  });
  clients.push(client);
  return client;
}

function h2cClient(): grpc.Client {
  const client = new GrpcEchoClient(`127.0.0.1:${h2cPort}`, grpc.credentials.createInsecure(), {
    'grpc.default_authority': 'anything.test',
  });
  clients.push(client);
  return client;
}

/** answer names who answered a call: the pod, the backend's UNIMPLEMENTED, or nginx's 404 (no route). */
async function answer(client: grpc.Client, path: string, md: Record<string, string> = {}): Promise<string> {
  const got = await callEcho(client, path, md);
  if (got.ok) return got.response.assertions.context.pod;
  if (got.details.includes('404')) return 'no route (404)';
  return `${grpc.status[got.code]}: ${got.details}`;
}

const call = (m: string) => `/${SVC}/${m}`;

describe('GRPCRoute through nginx', () => {
  it('serves gRPC over HTTPS (h2 by ALPN): Exact method matches, more header matches first', async () => {
    const client = tlsClient();
    expect(await answer(client, call('Echo'))).toBe('one-pod');
    expect(await answer(client, call('EchoTwo'))).toBe('two-pod');
    expect(await answer(client, call('Echo'), { version: 'two' })).toBe('two-pod');
    expect(await answer(client, call('Echo'), { version: 'three' })).toBe('one-pod');
    expect(await answer(client, call('EchoThree'))).toBe('no route (404)');
    expect(await answer(client, '/other.Service/Echo')).toBe('no route (404)');
  });

  it('sends the call with the gRPC headers, the route request headers and the :authority', async () => {
    const got = await callEcho(tlsClient(), call('EchoTwo'), { 'x-set': 'by-client' });
    expect(got.ok).toBe(true);
    if (!got.ok) return;
    const headers = Object.fromEntries(got.response.assertions.headers.map((h) => [h.key, h.value]));
    expect(got.response.assertions.fully_qualified_method).toBe(call('EchoTwo'));
    expect(headers['x-set']).toBe('by-route');
    expect(headers['x-forwarded-proto']).toBe('https');
    expect(got.response.assertions.authority).toBe('grpc.test');
    // ResponseHeaderModifier: on the answer's headers
    expect(got.metadata['x-answered-by']).toBe('gateway');
  });

  it('takes one of HTTPRoute and GRPCRoute for a listener and hostname: the older; requests not gRPC are not routed', async () => {
    const site = result.gateway?.status.httpRoutes.find((r) => r.name === 'site');
    expect(site?.parents[0]?.conditions[0]).toMatchObject({ status: 'False', reason: 'NotAllowedByListeners' });
    expect(site?.parents[0]?.conditions[0]?.message).toMatch(/GRPCRoute default\/echo is older/);
    const reply = await get({ host: 'grpc.test', path: '/', port: tlsPort, https: true, ca });
    expect(reply.status).toBe(404);
  });

  it('serves gRPC over h2c on a plaintext port that only GRPCRoutes use; RegularExpression after Exact', async () => {
    const client = h2cClient();
    expect(await answer(client, call('Echo'))).toBe('one-pod');
    expect(await answer(client, call('EchoTwo'))).toBe('two-pod');
    // the regex route: its backend has no EchoThree, so the backend's own answer proves the route matched
    expect(await answer(client, call('EchoThree'))).toMatch(/^UNIMPLEMENTED: .*does not implement/);
    expect(await answer(client, '/other.Service/EchoThree')).toBe('no route (404)');
    const servers = result.model.gateway?.servers ?? [];
    expect(servers.filter((s) => s.h2c).map((s) => s.listen)).toEqual([`127.0.0.1:${h2cPort}`]);
  });

  it('does not serve a GRPCRoute on the http port (HTTP/1.1 for Ingress and HTTPRoute): Accepted=False', async () => {
    expect((await get({ host: 'plain.test', path: '/', port })).body).toBe('web');
    expect((await get({ host: 'ingress.test', path: '/', port })).body).toBe('web');
    const status = result.gateway?.status.grpcRoutes?.find((r) => r.name === 'on-http');
    const accepted = status?.parents[0]?.conditions.find((c) => c.type === 'Accepted');
    expect(accepted).toMatchObject({ status: 'False', reason: 'NotAllowedByListeners' });
    expect(accepted?.message).toMatch(/h2c/);
    expect(result.problems.filter((p) => p.kind === 'GRPCRoute').map((p) => `${p.name} ${p.field}`)).toEqual([
      'on-http spec.parentRefs',
    ]);
    const echoStatus = result.gateway?.status.grpcRoutes?.find((r) => r.name === 'echo');
    expect(echoStatus?.parents.map((p) => p.conditions.map((c) => `${c.type}=${c.status}`))).toEqual([
      ['Accepted=True', 'ResolvedRefs=True'],
      ['Accepted=True', 'ResolvedRefs=True'],
    ]);
  });
});
