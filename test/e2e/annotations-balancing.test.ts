/**
 * Balancing annotations end to end: cookie affinity (same backend across requests), canary by
 * header and cookie, canary by weight (ratio over 1,000 requests), and backend-protocol GRPC
 * (a @grpc/grpc-js client through nginx's TLS port to a gRPC server).
 */
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueCertificate } from '../../src/tls/issue.js';
import { ingress, ingressClass, serviceWithEndpoints, tlsSecret } from '../support/manifests.js';
import { startBackend, type Backend } from '../support/net.js';
import { ann, inBatches, startScene, type Scene } from './annotations-harness.js';

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

let scene: Scene;
let grpcServer: grpc.Server;
let ca: { certPem: string; keyPem: string };
const backends: Record<string, Backend> = {};

beforeAll(async () => {
  for (const name of ['one', 'two', 'three', 'stable', 'canary', 'heavy', 'light'])
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
  const grpcPort = await new Promise<number>((resolve, reject) =>
    grpcServer.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, port) =>
      error ? reject(error) : resolve(port),
    ),
  );
  ca = await issueCertificate({ commonName: 'balancing test CA', isCa: true });
  const leaf = await issueCertificate({ commonName: 'grpc.test', dnsNames: ['grpc.test'], issuer: ca });
  const port = (name: string) => backends[name]!.port;
  scene = await startScene([
    ingressClass(),
    ...serviceWithEndpoints('sticky', [{ port: port('one') }, { port: port('two') }, { port: port('three') }]),
    ...serviceWithEndpoints('stable', [{ port: port('stable') }]),
    ...serviceWithEndpoints('canary', [{ port: port('canary') }]),
    ...serviceWithEndpoints('heavy', [{ port: port('heavy') }]),
    ...serviceWithEndpoints('light', [{ port: port('light') }]),
    ...serviceWithEndpoints('grpc', [{ port: grpcPort }]),
    tlsSecret('grpc-tls', leaf.certPem, leaf.keyPem),
    ingress(
      'sticky',
      { 'sticky.test': [{ path: '/', service: 'sticky' }] },
      { annotations: ann({ affinity: 'cookie' }) },
    ),
    ingress('spread', { 'spread.test': [{ path: '/', service: 'sticky' }] }),
    ingress('stable', { 'canary.test': [{ path: '/', service: 'stable' }] }),
    ingress(
      'canary',
      { 'canary.test': [{ path: '/', service: 'canary' }] },
      {
        annotations: ann({ canary: 'true', 'canary-by-header': 'X-Canary', 'canary-by-cookie': 'use_canary' }),
      },
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
      {
        annotations: ann({ 'backend-protocol': 'GRPC' }),
        tls: [{ hosts: ['grpc.test'], secretName: 'grpc-tls' }],
      },
    ),
  ]);
}, 60_000);

afterAll(async () => {
  await scene?.stop();
  await Promise.all(Object.values(backends).map((b) => b.close()));
  grpcServer?.forceShutdown();
});

describe('balancing annotations through real nginx', () => {
  it('renders without problems', () => expect(scene.problems).toBe(''));

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
});
