/**
 * BackendTLSPolicy through the real nginx and the Lua router, beside an Ingress on the same nginx: a TLS backend on
 * loopback with a certificate for `backend.test` signed by a test CA. The policy's hostname is sent as SNI and
 * checked; a policy naming another hostname, or another CA, gets no answer from the backend (502); a policy whose
 * CA ConfigMap is missing is refused and its backend answered 500, never sent in the clear.
 */
import { rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BuildOptions, defaultBuildOptions } from '../../src/model/build-types.js';
import { buildModel } from '../../src/model/build.js';
import { issueCertificate } from '../../src/tls/issue.js';
import { ingress, ingressClass, serviceWithEndpoints, snapshotOf, tlsSecret } from '../support/manifests.js';
import { freePort, get } from '../support/net.js';
import { serveModel } from '../support/served-model.js';
import { luaFolder, type RunningNginx } from '../support/nginx.js';
import { CONTROLLER, gateway, gatewayClass, listener, namespace, route } from './fixtures.js';

const GROUP = 'gateway.networking.k8s.io';

let tlsBackend: HttpsServer;
/** a TLS backend that wants a client certificate its CA signed */
let mtlsBackend: HttpsServer;
let mtlsGatewayPort = 0;
let web: Server;
let dir: string;
let nginx: RunningNginx;
let port = 0;
let result: ReturnType<typeof buildModel>;

function policy(name: string, service: string, hostname: string, ca: string, extra: Record<string, unknown> = {}) {
  return {
    apiVersion: `${GROUP}/v1`,
    kind: 'BackendTLSPolicy',
    metadata: { name, namespace: 'default', generation: 2, creationTimestamp: '2026-01-01T00:00:00Z' },
    spec: {
      targetRefs: [{ group: '', kind: 'Service', name: service, ...extra }],
      validation: { caCertificateRefs: [{ group: '', kind: 'ConfigMap', name: ca }], hostname },
    },
  };
}

const configMap = (name: string, pem: string) => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace: 'default' },
  data: { 'ca.crt': pem },
});

beforeAll(async () => {
  const ca = await issueCertificate({ commonName: 'test CA', isCa: true });
  const otherCa = await issueCertificate({ commonName: 'other CA', isCa: true });
  const leaf = await issueCertificate({ commonName: 'backend.test', dnsNames: ['backend.test'], issuer: ca });
  // the TLS backend answers with the SNI it got
  tlsBackend = createHttpsServer({ cert: leaf.certPem, key: leaf.keyPem }, (req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ backend: 'tls', sni: (req.socket as TLSSocket).servername, path: req.url }));
  });
  await new Promise<void>((done) => tlsBackend.listen(0, '127.0.0.2', done));
  const clientCa = await issueCertificate({ commonName: 'backend client CA', isCa: true });
  const gatewayClient = await issueCertificate({ commonName: 'the gateway', issuer: clientCa });
  mtlsBackend = createHttpsServer(
    { cert: leaf.certPem, key: leaf.keyPem, ca: clientCa.certPem, requestCert: true, rejectUnauthorized: true },
    (req, res) => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ backend: 'mtls', client: (req.socket as TLSSocket).getPeerCertificate().subject?.CN }));
    },
  );
  await new Promise<void>((done) => mtlsBackend.listen(0, '127.0.0.2', done));
  mtlsGatewayPort = await freePort();
  web = createServer((_req, res) => res.end(JSON.stringify({ backend: 'web' })));
  await new Promise<void>((done) => web.listen(0, '127.0.0.2', done));
  const tlsPort = (tlsBackend.address() as AddressInfo).port;
  const mtlsPort = (mtlsBackend.address() as AddressInfo).port;
  const webPort = (web.address() as AddressInfo).port;
  const folder = await luaFolder('ia-btls-');
  dir = folder.dir;
  port = await freePort();
  const options: BuildOptions = {
    ...defaultBuildOptions,
    httpPort: port,
    httpsPort: await freePort(),
    listenAddress: '127.0.0.1',
    dynamic: folder.dynamic,
    gateway: { controllerName: CONTROLLER },
  };
  const tlsServices = ['secure', 'by-section', 'wrong-name', 'wrong-ca', 'no-ca', 'cleartext'];
  const objects = [
    ingressClass(),
    ingress('legacy', { 'ingress.test': [{ path: '/', service: 'web' }] }),
    // ingress-nginx's proxy-ssl-* on Ingresses of the same nginx, to the same TLS backend
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'backend-ca', namespace: 'default' },
      data: { 'ca.crt': Buffer.from(ca.certPem).toString('base64') },
    },
    ...[
      ['verified', 'backend.test'],
      ['misnamed', 'other.test'],
    ].map(([name, sslName]) =>
      ingress(
        name!,
        { [`${name}.ingress.test`]: [{ path: '/', service: 'secure' }] },
        {
          annotations: {
            'nginx.ingress.kubernetes.io/backend-protocol': 'HTTPS',
            'nginx.ingress.kubernetes.io/proxy-ssl-secret': 'default/backend-ca',
            'nginx.ingress.kubernetes.io/proxy-ssl-verify': 'on',
            'nginx.ingress.kubernetes.io/proxy-ssl-name': sslName!,
            'nginx.ingress.kubernetes.io/proxy-ssl-server-name': 'on',
          },
        },
      ),
    ),
    ...serviceWithEndpoints('web', [{ ip: '127.0.0.2', port: webPort }]),
    ...tlsServices.flatMap((s) => serviceWithEndpoints(s, [{ ip: '127.0.0.2', port: tlsPort }])),
    configMap('test-ca', ca.certPem),
    configMap('other-ca', otherCa.certPem),
    policy('secure', 'secure', 'backend.test', 'test-ca'),
    policy('by-section', 'by-section', 'backend.test', 'test-ca', { sectionName: 'http' }),
    // older, without sectionName: the one naming the port wins there
    {
      ...policy('whole-service', 'by-section', 'other.test', 'test-ca'),
      metadata: {
        name: 'whole-service',
        namespace: 'default',
        generation: 1,
        creationTimestamp: '2025-01-01T00:00:00Z',
      },
    },
    policy('wrong-name', 'wrong-name', 'other.test', 'test-ca'),
    // younger than `secure`, on the same Service: Conflicted, and `secure`'s hostname stays
    {
      ...policy('secure-too', 'secure', 'other.test', 'test-ca'),
      metadata: { name: 'secure-too', namespace: 'default', generation: 1, creationTimestamp: '2026-06-01T00:00:00Z' },
    },
    policy('wrong-ca', 'wrong-ca', 'backend.test', 'other-ca'),
    policy('no-ca', 'no-ca', 'backend.test', 'missing-ca'),
    ...serviceWithEndpoints('mtls', [{ ip: '127.0.0.2', port: mtlsPort }]),
    policy('mtls', 'mtls', 'backend.test', 'test-ca'),
    tlsSecret('gateway-client', gatewayClient.certPem, gatewayClient.keyPem),
    gatewayClass(),
    gateway([listener('http')]),
    // a Gateway that shows TLS backends its client certificate
    gateway([listener('http', { port: mtlsGatewayPort })], 'with-cert', 'default', {
      tls: { backend: { clientCertificateRef: { group: '', kind: 'Secret', name: 'gateway-client' } } },
    }),
    route('mtls', {
      hostnames: ['gw.test'],
      parentRefs: [{ name: 'gw' }, { name: 'with-cert' }],
      rules: [{ matches: [{ path: { type: 'Exact', value: '/mtls' } }], backendRefs: [{ name: 'mtls', port: 80 }] }],
    }),
    route('tls', {
      hostnames: ['gw.test'],
      rules: tlsServices.map((s) => ({
        matches: [{ path: { type: 'Exact', value: `/${s}` } }],
        backendRefs: [{ name: s, port: 80 }],
      })),
    }),
    namespace('default'),
  ];
  result = buildModel(snapshotOf(objects), options);
  nginx = await serveModel(dir, port, folder.control, result.model);
}, 60_000);

afterAll(async () => {
  await nginx?.stop();
  for (const s of [tlsBackend, mtlsBackend, web]) {
    s?.closeAllConnections();
    s?.close();
  }
  if (dir) await rm(dir, { recursive: true, force: true });
});

const through = (path: string, host = 'gw.test') => get({ host, path, port });

describe('BackendTLSPolicy through nginx', () => {
  it('proxies over TLS, verifying the certificate with the CA and sending the hostname as SNI', async () => {
    const reply = await through('/secure');
    expect(reply.status).toBe(200);
    expect(JSON.parse(reply.body)).toMatchObject({ backend: 'tls', sni: 'backend.test', path: '/secure' });
  });

  it('takes the policy naming the Service port over an older one naming the whole Service', async () => {
    const reply = await through('/by-section');
    expect(reply.status).toBe(200);
    expect(JSON.parse(reply.body)).toMatchObject({ sni: 'backend.test' });
    const status = result.gateway?.status.backendTLSPolicies ?? [];
    const whole = status.find((p) => p.name === 'whole-service');
    // not a conflict: a policy for the whole Service and one for its port are both accepted
    expect(whole?.ancestors[0]?.conditions[0]).toMatchObject({ status: 'True', reason: 'Accepted' });
  });

  it('accepts the oldest of two policies on one Service port; the other is Conflicted', () => {
    const status = result.gateway?.status.backendTLSPolicies ?? [];
    const younger = status.find((p) => p.name === 'secure-too');
    expect(younger?.ancestors[0]?.conditions[0]).toMatchObject({ status: 'False', reason: 'Conflicted' });
  });

  it('refuses a certificate that does not name the hostname, or that another CA signed (502)', async () => {
    expect((await through('/wrong-name')).status).toBe(502);
    expect((await through('/wrong-ca')).status).toBe(502);
  });

  it('answers 500 for a policy without a valid CA, rather than sending in the clear', async () => {
    expect((await through('/no-ca')).status).toBe(500);
    const status = result.gateway?.status.backendTLSPolicies ?? [];
    const noCa = status.find((p) => p.name === 'no-ca');
    expect(noCa?.ancestors).toEqual([
      {
        ancestorRef: { namespace: 'default', name: 'gw' },
        conditions: [
          expect.objectContaining({ type: 'Accepted', status: 'False', reason: 'NoValidCACertificate' }),
          expect.objectContaining({ type: 'ResolvedRefs', status: 'False', reason: 'InvalidCACertificateRef' }),
        ],
      },
    ]);
  });

  it('reports the accepted policies per ancestor Gateway', () => {
    const secure = (result.gateway?.status.backendTLSPolicies ?? []).find((p) => p.name === 'secure');
    expect(secure?.ancestors[0]?.conditions.map((c) => `${c.type}=${c.status}/${c.reason}`)).toEqual([
      'Accepted=True/Accepted',
      'ResolvedRefs=True/ResolvedRefs',
    ]);
  });

  it('leaves a Service without policy in the clear, and the Ingress beside it untouched', async () => {
    // nginx speaks plain HTTP to the TLS backend, which hangs up (with TLS it would be the 200 above)
    expect((await through('/cleartext')).status).toBe(502);
    const legacy = await through('/', 'ingress.test');
    expect(legacy.status).toBe(200);
    expect(legacy.backend).toBe('web');
  });

  it('shows a TLS backend the Gateway’s client certificate (spec.tls.backend); without one the backend refuses', async () => {
    const reply = await get({ host: 'gw.test', path: '/mtls', port: mtlsGatewayPort });
    expect(reply.status).toBe(200);
    expect(JSON.parse(reply.body)).toMatchObject({ backend: 'mtls', client: 'the gateway' });
    expect((await through('/mtls')).status).toBe(502);
    const gw = result.gateway?.status.gateways.find((g) => g.name === 'with-cert');
    expect(gw?.conditions.find((c) => c.type === 'ResolvedRefs')).toMatchObject({ status: 'True' });
  });

  it('serves proxy-ssl-* on an Ingress beside them: the CA and name checked, the name sent as SNI', async () => {
    const reply = await through('/', 'verified.ingress.test');
    expect(reply.status).toBe(200);
    expect(JSON.parse(reply.body)).toMatchObject({ backend: 'tls', sni: 'backend.test' });
    expect((await through('/', 'misnamed.ingress.test')).status).toBe(502);
    expect(result.problems.filter((p) => p.kind === 'Ingress')).toEqual([]);
  });

  it('writes the CA 0600 under a name of its digest, named in the profile location', () => {
    const file = result.model.certificates.find((c) => c.file.startsWith('certificates/btls_'));
    expect(file?.pem).toContain('BEGIN CERTIFICATE');
    const server = result.model.gateway?.servers.find((s) => s.host === 'gw.test');
    expect(server?.backendTls?.map((b) => b.caFile)).toContain(file?.file);
  });
});
