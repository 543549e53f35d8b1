/**
 * Frontend client-certificate validation (a Gateway's `spec.tls.frontend`) through the real nginx, beside an Ingress
 * on the same https port: a request to the Gateway's host needs a client certificate the ConfigMap's CA signed
 * (AllowValidOnly: nginx answers 400 without one), a port whose validation is AllowInsecureFallback lets every client
 * in, the Ingress host asks nothing, and a Gateway whose CA does not resolve has its HTTPS listener not served.
 */
import { rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { request } from 'node:https';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BuildOptions, defaultBuildOptions } from '../../src/model/build-types.js';
import { buildModel } from '../../src/model/build.js';
import { issueCertificate, type KeyPair } from '../../src/tls/issue.js';
import { ingress, ingressClass, serviceWithEndpoints, snapshotOf, tlsSecret } from '../support/manifests.js';
import { freePort } from '../support/net.js';
import { serveModel } from '../support/served-model.js';
import { luaFolder, type RunningNginx } from '../support/nginx.js';
import { CONTROLLER, gateway, gatewayClass, listener, namespace, route } from './fixtures.js';

let web: Server;
let dir: string;
let nginx: RunningNginx;
let [httpsPort, fallbackPort] = [0, 0];
let result: ReturnType<typeof buildModel>;
let serverCa: string;
let client: KeyPair;
let stranger: KeyPair;

const caConfigMap = (name: string, pem: string) => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace: 'default' },
  data: { 'ca.crt': pem },
});

beforeAll(async () => {
  const clientCa = await issueCertificate({ commonName: 'client CA', isCa: true });
  const otherCa = await issueCertificate({ commonName: 'other client CA', isCa: true });
  client = await issueCertificate({ commonName: 'client', issuer: clientCa });
  stranger = await issueCertificate({ commonName: 'stranger', issuer: otherCa });
  const site = await issueCertificate({
    commonName: 'site',
    dnsNames: ['secure.test', 'fallback.test', 'ingress.test'],
  });
  serverCa = site.certPem;
  web = createServer((_req, res) => res.end('web'));
  await new Promise<void>((done) => web.listen(0, '127.0.0.2', done));
  const folder = await luaFolder('ia-client-cert-');
  dir = folder.dir;
  [httpsPort, fallbackPort] = [await freePort(), await freePort()];
  const options: BuildOptions = {
    ...defaultBuildOptions,
    httpPort: await freePort(),
    httpsPort,
    listenAddress: '127.0.0.1',
    dynamic: folder.dynamic,
    gateway: { controllerName: CONTROLLER },
  };
  const https = (name: string, port: number, hostname: string) =>
    listener(name, { port, protocol: 'HTTPS', hostname, tls: { certificateRefs: [{ name: 'site' }] } });
  const objects = [
    ingressClass(),
    ingress(
      'legacy',
      { 'ingress.test': [{ path: '/', service: 'web' }] },
      { tls: [{ hosts: ['ingress.test'], secretName: 'site' }] },
    ),
    ...serviceWithEndpoints('web', [{ ip: '127.0.0.2', port: (web.address() as AddressInfo).port }]),
    tlsSecret('site', site.certPem, site.keyPem),
    caConfigMap('client-ca', clientCa.certPem),
    gatewayClass(),
    gateway([https('secure', 443, 'secure.test'), https('fallback', fallbackPort, 'fallback.test')], 'gw', 'default', {
      tls: {
        frontend: {
          default: { validation: { caCertificateRefs: [{ group: '', kind: 'ConfigMap', name: 'client-ca' }] } },
          perPort: [
            {
              port: fallbackPort,
              tls: {
                validation: {
                  mode: 'AllowInsecureFallback',
                  caCertificateRefs: [{ group: '', kind: 'ConfigMap', name: 'client-ca' }],
                },
              },
            },
          ],
        },
      },
    }),
    gateway([https('broken', 443, 'broken.test'), listener('plain')], 'broken', 'default', {
      tls: {
        frontend: { default: { validation: { caCertificateRefs: [{ group: '', kind: 'ConfigMap', name: 'gone' }] } } },
      },
    }),
    route('site', { hostnames: ['secure.test', 'fallback.test'] }),
    route('broken', { hostnames: ['broken.test'], parentRefs: [{ name: 'broken' }] }),
    namespace('default'),
  ];
  result = buildModel(snapshotOf(objects), options);
  nginx = await serveModel(dir, options.httpPort, folder.control, result.model);
}, 60_000);

afterAll(async () => {
  await nginx?.stop();
  web?.closeAllConnections();
  web?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** status sends GET / over HTTPS with SNI and Host `host`, with the client certificate `cert` when given. */
function status(port: number, host: string, cert?: KeyPair): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path: '/',
        servername: host,
        headers: { host },
        ca: serverCa,
        agent: false,
        ...(cert ? { cert: cert.certPem, key: cert.keyPem } : {}),
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

describe('frontend client-certificate validation through nginx', () => {
  it('serves a client whose certificate the CA signed, and refuses one without or with another CA’s (400)', async () => {
    expect(await status(httpsPort, 'secure.test', client)).toBe(200);
    expect(await status(httpsPort, 'secure.test')).toBe(400);
    expect(await status(httpsPort, 'secure.test', stranger)).toBe(400);
  });

  it('lets every client in on a port whose validation is AllowInsecureFallback, and says so on the Gateway', async () => {
    expect(await status(fallbackPort, 'fallback.test', client)).toBe(200);
    expect(await status(fallbackPort, 'fallback.test', stranger)).toBe(200);
    expect(await status(fallbackPort, 'fallback.test')).toBe(200);
    const gw = result.gateway?.status.gateways.find((g) => g.name === 'gw');
    expect(gw?.conditions.find((c) => c.type === 'InsecureFrontendValidationMode')).toMatchObject({
      status: 'True',
      reason: 'ConfigurationChanged',
    });
  });

  it('leaves the Ingress host on the same port without a client certificate check', async () => {
    expect(await status(httpsPort, 'ingress.test')).toBe(200);
  });

  it('does not serve an HTTPS listener whose CA does not resolve; the Gateway’s HTTP listener stays', async () => {
    const broken = result.gateway?.status.gateways.find((g) => g.name === 'broken');
    const conditions = (name: string) =>
      broken?.listeners.find((l) => l.name === name)?.conditions.map((c) => `${c.type}=${c.status}/${c.reason}`);
    expect(conditions('broken')).toEqual(
      expect.arrayContaining([
        'Accepted=False/NoValidCACertificate',
        'ResolvedRefs=False/InvalidCACertificateRef',
        'Programmed=False/Invalid',
      ]),
    );
    expect(conditions('plain')).toEqual(
      expect.arrayContaining(['Accepted=True/Accepted', 'Programmed=True/Programmed']),
    );
    // no HTTPS server for broken.test (its route is served over HTTP only)
    const servers = result.model.gateway?.servers.filter((s) => s.host === 'broken.test') ?? [];
    expect(servers.map((s) => s.ssl)).toEqual([false]);
  });
});
