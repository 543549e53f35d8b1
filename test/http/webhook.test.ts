/**
 * The admission webhook over real HTTPS on loopback: node's https client posts AdmissionReviews
 * (and things that are not) and reads the answers; the certificate is rotated on disk under it.
 */
import { X509Certificate } from 'node:crypto';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWebhookServer, MAX_BODY_BYTES, WEBHOOK_PATH } from '../../src/http/webhook.js';
import { createLogger } from '../../src/log.js';
import { AdmissionJudge } from '../../src/model/admission.js';
import { defaultBuildOptions } from '../../src/model/build-types.js';
import type { Ingress, Snapshot } from '../../src/model/snapshot.js';
import { issueCertificate, type KeyPair } from '../../src/tls/issue.js';
import { ingress, ingressClass, serviceWithEndpoints } from '../support/manifests.js';

const first = {
  ...ingress('first', { 'a.example.com': [{ path: '/', service: 'app' }] }),
  metadata: { name: 'first', namespace: 'default', creationTimestamp: '2024-01-01T00:00:00Z' },
};
const [service, slice] = serviceWithEndpoints('app', [{ port: 8081 }]);
const snapshot = {
  ingresses: [first],
  ingressClasses: [ingressClass()],
  services: [service],
  endpointSlices: [slice],
  secrets: [],
  configMaps: [],
} as unknown as Snapshot;

let dir: string;
let port: number;
let certificate: KeyPair;
let server: ReturnType<typeof createWebhookServer>;

async function writePair(pair: KeyPair) {
  await writeFile(join(dir, 'tls.crt'), pair.certPem);
  await writeFile(join(dir, 'tls.key'), pair.keyPem, { mode: 0o600 });
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'webhook-test-'));
  certificate = await issueCertificate({ commonName: 'webhook', ipAddresses: ['127.0.0.1'] });
  await writePair(certificate);
  const judge = new AdmissionJudge();
  server = createWebhookServer({
    certFile: join(dir, 'tls.crt'),
    keyFile: join(dir, 'tls.key'),
    log: createLogger({ level: 'silent' }),
    judge: (operation, candidate) => judge.judge(snapshot, { build: defaultBuildOptions }, operation, candidate),
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  await rm(dir, { recursive: true, force: true });
});

interface Answer {
  status: number;
  body: string;
  json: () => {
    response: { uid: string; allowed: boolean; status?: { code: number; message: string }; warnings?: string[] };
  };
  peer: X509Certificate | null;
}

function post(
  body: string | Buffer,
  options: { method?: string; path?: string; type?: string; ca?: string } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path: options.path ?? WEBHOOK_PATH,
        method: options.method ?? 'POST',
        ca: options.ca ?? certificate.certPem,
        agent: false,
        headers: { 'content-type': options.type ?? 'application/json' },
      },
      (res) => {
        const raw = res.socket as unknown as { getPeerX509Certificate?: () => X509Certificate | undefined };
        const peer = raw.getPeerX509Certificate?.() ?? null;
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({ status: res.statusCode!, body: text, json: () => JSON.parse(text), peer });
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

function review(candidate: Ingress | null, extra: Record<string, unknown> = {}, operation = 'CREATE') {
  return JSON.stringify({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: 'f0b7d8a2-1111-4a4a-9c9c-0123456789ab',
      kind: { group: 'networking.k8s.io', version: 'v1', kind: 'Ingress' },
      resource: { group: 'networking.k8s.io', version: 'v1', resource: 'ingresses' },
      namespace: 'default',
      name: candidate?.metadata?.name ?? 'x',
      operation,
      object: candidate,
      ...extra,
    },
  });
}

describe('the admission webhook over HTTPS', () => {
  it('admits a good Ingress, answering with the request uid', async () => {
    const answer = await post(review(ingress('second', { 'b.example.com': [{ path: '/', service: 'app' }] })));
    expect(answer.status).toBe(200);
    expect(answer.json().response).toEqual({ uid: 'f0b7d8a2-1111-4a4a-9c9c-0123456789ab', allowed: true });
  });

  it('denies a host and path another Ingress serves, with ingress-nginx words and a 400 status', async () => {
    const answer = await post(review(ingress('second', { 'a.example.com': [{ path: '/', service: 'app' }] })));
    expect(answer.json().response).toEqual({
      uid: 'f0b7d8a2-1111-4a4a-9c9c-0123456789ab',
      allowed: false,
      status: {
        status: 'Failure',
        code: 400,
        reason: 'BadRequest',
        message:
          'default/second: spec.rules[0].http.paths[0].path: host "a.example.com" and path "/" is already defined ' +
          'in ingress default/first',
      },
    });
  });

  it('denies an invalid annotation value, naming the annotation', async () => {
    const bad = ingress(
      'second',
      { 'b.example.com': [{ path: '/', service: 'app' }] },
      { annotations: { 'nginx.ingress.kubernetes.io/proxy-body-size': '1m;\nload_module x' } },
    );
    const { response } = (await post(review(bad))).json();
    expect(response.allowed).toBe(false);
    expect(response.status?.message).toMatch(
      /^default\/second: metadata\.annotations\.nginx\.ingress\.kubernetes\.io\/proxy-body-size: /,
    );
  });

  it('admits with warnings (a Service not there yet)', async () => {
    const { response } = (
      await post(review(ingress('second', { 'b.example.com': [{ path: '/', service: 'later' }] })))
    ).json();
    expect(response.allowed).toBe(true);
    expect(response.warnings?.[0]).toContain('Service default/later not found');
  });

  it('admits a DELETE without an object', async () => {
    const { response } = (await post(review(null, { oldObject: first }, 'DELETE'))).json();
    expect(response.allowed).toBe(true);
  });

  it.each([
    ['not JSON', '{"apiVersion":', {}, 400, 'the body is not JSON'],
    ['text/plain', review(first), { type: 'text/plain' }, 400, 'content-type must be application/json'],
    ['a GET', '', { method: 'GET' }, 405, 'an AdmissionReview is POSTed'],
    ['another path', review(first), { path: '/validate' }, 404, 'not found'],
    [
      'v1beta1',
      review(first).replace('admission.k8s.io/v1', 'admission.k8s.io/v1beta1'),
      {},
      400,
      'expected an admission.k8s.io/v1 AdmissionReview',
    ],
    [
      'a Service',
      review(first, { kind: { group: '', version: 'v1', kind: 'Service' } }),
      {},
      400,
      'request.kind must be networking.k8s.io/v1 Ingress',
    ],
    ['no uid', review(first, { uid: undefined }), {}, 400, 'request.uid is missing'],
    ['no object on CREATE', review(null), {}, 400, 'request.object is missing on CREATE'],
    ['an array', '[]', {}, 400, 'the body is not a JSON object'],
  ] as const)('refuses %s', async (_name, body, options, status, message) => {
    const answer = await post(body, options);
    expect(answer.status).toBe(status);
    expect(answer.body).toContain(message);
  });

  it('refuses a body over the limit with 413, without reading it all', async () => {
    const answer = await post(Buffer.alloc(MAX_BODY_BYTES + 1024, 0x20));
    expect(answer.status).toBe(413);
  });

  it('serves a rotated certificate on the next connection, and writes nothing', async () => {
    const before = await post(review(first));
    expect(before.peer?.fingerprint256).toBe(new X509Certificate(certificate.certPem).fingerprint256);
    const rotated = await issueCertificate({ commonName: 'webhook-2', ipAddresses: ['127.0.0.1'] });
    await writePair(rotated);
    const after = await post(review(first), { ca: rotated.certPem });
    expect(after.status).toBe(200);
    expect(after.peer?.fingerprint256).toBe(new X509Certificate(rotated.certPem).fingerprint256);
    certificate = rotated;
    expect((await readdir(dir)).sort()).toEqual(['tls.crt', 'tls.key']);
  });

  it('keeps the last good pair when the new files do not load', async () => {
    await writeFile(join(dir, 'tls.crt'), 'not a certificate');
    const answer = await post(review(first));
    expect(answer.status).toBe(200);
    expect(answer.peer?.fingerprint256).toBe(new X509Certificate(certificate.certPem).fingerprint256);
    await writePair(certificate);
  });
});
