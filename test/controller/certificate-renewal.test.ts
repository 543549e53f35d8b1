/**
 * Issue 16's acceptance for certificates: a TLS Secret renewed 10 times under HTTPS load, through the
 * real controller at default flags: nginx never reloads, each new certificate is served within 1 s of
 * the write, and no request fails (every request is a new TLS handshake).
 */
import { X509Certificate } from 'node:crypto';
import { request, type Agent } from 'node:https';
import type { TLSSocket } from 'node:tls';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { issueCertificate } from '../../src/tls/issue.js';
import { ingress, ingressClass, serviceWithEndpoints, tlsSecret } from '../support/manifests.js';
import { startBackend, type Backend } from '../support/net.js';
import { nginxSettled, startCluster, waitFor, type Cluster } from '../support/cluster.js';

const HOST = 'renew.example.com';
let cluster: Cluster;
let backend: Backend;

const issue = () => issueCertificate({ commonName: HOST, dnsNames: [HOST] });

/** handshake makes one HTTPS request on a new connection: the certificate's fingerprint, or null when it failed. */
function handshake(): Promise<{ fingerprint: string; status: number } | null> {
  return new Promise((resolve) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: cluster.httpsPort,
        servername: HOST,
        headers: { host: HOST },
        path: '/',
        rejectUnauthorized: false,
        agent: false as unknown as Agent,
      },
      (res) => {
        const fingerprint = (res.socket as TLSSocket).getPeerCertificate().fingerprint256;
        res.resume();
        res.on('end', () => resolve({ fingerprint, status: res.statusCode ?? 0 }));
      },
    );
    req.on('error', () => resolve(null));
    req.end();
  });
}

beforeAll(async () => {
  backend = await startBackend('app');
  const first = await issue();
  // At the controller's default --sync-rate-limit (0.3), not startCluster's 10: a Secret only spec.tls reads is
  // pushed at once, without waiting for the reload rate token (which would take up to 3.3 s).
  cluster = await startCluster(
    [
      ingressClass(),
      ...serviceWithEndpoints('app', [{ port: backend.port }]),
      tlsSecret('renew-tls', first.certPem, first.keyPem),
      ingress(
        'renew',
        { [HOST]: [{ path: '/', service: 'app' }] },
        { tls: [{ hosts: [HOST], secretName: 'renew-tls' }] },
      ),
    ],
    ['--sync-rate-limit', '0.3'],
  );
  const fingerprint = new X509Certificate(first.certPem).fingerprint256;
  await waitFor(
    'the first certificate served',
    async () => {
      const reply = await handshake();
      return reply?.fingerprint === fingerprint && reply.status === 200;
    },
    15_000,
  );
}, 30_000);

afterAll(async () => {
  await cluster?.close();
  await backend?.close();
});

it('renews a certificate 10 times under HTTPS load: 0 reloads, served within 1 s, 0 failed requests', async () => {
  await waitFor('nginx to be done reloading', () => nginxSettled(cluster.actor('nginx')));
  const before = Number(cluster.actor('nginx')?.context.reloadsOk);
  const counts = { ok: 0, failed: 0 };
  let done = false;
  const load = Promise.all(
    Array.from({ length: 3 }, async () => {
      while (!done) {
        const reply = await handshake();
        if (reply?.status === 200) counts.ok++;
        else counts.failed++;
      }
    }),
  );
  const delays: number[] = [];
  for (let i = 0; i < 10; i++) {
    const next = await issue();
    const fingerprint = new X509Certificate(next.certPem).fingerprint256;
    const written = Date.now();
    await cluster.apply(tlsSecret('renew-tls', next.certPem, next.keyPem));
    await waitFor(
      'the renewed certificate served',
      async () => (await handshake())?.fingerprint === fingerprint,
      5_000,
      20,
    );
    delays.push(Date.now() - written);
  }
  done = true;
  await load;
  expect(counts.failed).toBe(0);
  expect(counts.ok).toBeGreaterThan(30);
  expect(Number(cluster.actor('nginx')?.context.reloadsOk) - before).toBe(0);
  expect(Math.max(...delays)).toBeLessThan(1000);
}, 90_000);
