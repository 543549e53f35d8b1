/**
 * Which Secrets matter comes from the model (issue 15): through the whole controller (test API
 * server, its actors, real nginx), each kind of Secret a config reads is rotated on its own, with
 * no other change, and the new content is served: the TLS certificate of spec.tls, the htpasswd
 * of auth-secret, the client-certificate CA of auth-tls-secret, and --default-ssl-certificate's.
 * A Secret nothing names changes and no sync runs.
 */
import { createHash, X509Certificate } from 'node:crypto';
import { chmod } from 'node:fs/promises';
import { request as httpsRequest } from 'node:https';
import type { TLSSocket } from 'node:tls';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { issueCertificate, type KeyPair } from '../../src/tls/issue.js';
import { ingress, ingressClass, serviceWithEndpoints, tlsSecret } from '../support/manifests.js';
import { get, startBackend, type Backend } from '../support/net.js';
import { nginxSettled, queueIdle, startCluster, waitFor, type Cluster } from '../support/cluster.js';

const A = 'nginx.ingress.kubernetes.io/';
const sha = (password: string) => `{SHA}${createHash('sha1').update(password).digest('base64')}`;
const users = (password: string) => ({
  apiVersion: 'v1',
  kind: 'Secret',
  type: 'Opaque',
  metadata: { namespace: 'default', name: 'users' },
  data: { auth: Buffer.from(`alice:${sha(password)}\n`).toString('base64') },
});
const caSecret = (ca: KeyPair) => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { namespace: 'default', name: 'team-ca' },
  data: { 'ca.crt': Buffer.from(ca.certPem).toString('base64') },
});
const opaque = (name: string, value: string) => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { namespace: 'default', name },
  stringData: { value },
});
const site = (pair: KeyPair) => tlsSecret('site-tls', pair.certPem, pair.keyPem);
const fallback = (pair: KeyPair) => tlsSecret('default-cert', pair.certPem, pair.keyPem);

let cluster: Cluster;
let backend: Backend;
let caOne: KeyPair;
let caTwo: KeyPair;
let clientOne: KeyPair;
let clientTwo: KeyPair;

/** tls makes a GET over HTTPS with `servername`: the status and the served certificate's fingerprint. */
function tls(servername: string, identity?: KeyPair): Promise<{ status: number; fingerprint: string }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      {
        host: '127.0.0.1',
        port: cluster.httpsPort,
        path: '/',
        servername,
        headers: { host: servername },
        rejectUnauthorized: false,
        agent: false,
        ...(identity ? { cert: identity.certPem, key: identity.keyPem } : {}),
      },
      (res) => {
        const fingerprint = (res.socket as TLSSocket).getPeerCertificate().fingerprint256;
        res.resume().on('end', () => resolve({ status: res.statusCode ?? 0, fingerprint }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

const fingerprintOf = (pair: KeyPair) => new X509Certificate(pair.certPem).fingerprint256;
const syncs = () => cluster.actor('syncQueue')!.context.syncsStarted as number;
const settled = () => waitFor('the sync queue idle', () => queueIdle(cluster.actor('syncQueue')?.value), 10_000);

beforeAll(async () => {
  [caOne, caTwo] = [
    await issueCertificate({ commonName: 'CA one', isCa: true }),
    await issueCertificate({ commonName: 'CA two', isCa: true }),
  ];
  [clientOne, clientTwo] = [
    await issueCertificate({ commonName: 'alice', issuer: caOne }),
    await issueCertificate({ commonName: 'bob', issuer: caTwo }),
  ];
  backend = await startBackend('app');
  cluster = await startCluster(
    [
      ingressClass(),
      ...serviceWithEndpoints('app', [{ port: backend.port }]),
      site(await issueCertificate({ commonName: 'tls.test', dnsNames: ['tls.test'] })),
      fallback(await issueCertificate({ commonName: 'fallback one' })),
      users('first'),
      caSecret(caOne),
      opaque('nobody-names-me', 'one'),
      ingress(
        'tls',
        { 'tls.test': [{ path: '/', service: 'app' }] },
        { tls: [{ hosts: ['tls.test'], secretName: 'site-tls' }] },
      ),
      ingress(
        'auth',
        { 'auth.test': [{ path: '/', service: 'app' }] },
        { annotations: { [`${A}auth-type`]: 'basic', [`${A}auth-secret`]: 'users' } },
      ),
      ingress(
        'mtls',
        { 'mtls.test': [{ path: '/', service: 'app' }] },
        { annotations: { [`${A}auth-tls-secret`]: 'default/team-ca' } },
      ),
    ],
    ['--default-ssl-certificate', 'default/default-cert'],
  );
  // As root, nginx's workers read the htpasswd files as nobody: they must pass through the test's 0700 folder.
  await chmod(cluster.dir, 0o711);
  await waitFor('the first sync', () => (cluster.actor('nginx')?.context.reloadsOk as number) >= 1, 15_000);
  await waitFor('mtls.test served', async () => (await tls('mtls.test', clientOne)).status === 200, 10_000);
  // Until the first reload is confirmed, a boot-config worker may still take a connection.
  await waitFor('nginx settled', () => nginxSettled(cluster.actor('nginx')), 10_000);
}, 60_000);

afterAll(async () => {
  await cluster?.close();
  await backend?.close();
});

it('issue 15: a spec.tls certificate rotated alone is served', async () => {
  const next = await issueCertificate({ commonName: 'tls.test', dnsNames: ['tls.test'] });
  expect((await tls('tls.test')).fingerprint).not.toBe(fingerprintOf(next));
  await cluster.apply(site(next));
  await waitFor(
    'the new certificate served',
    async () => (await tls('tls.test')).fingerprint === fingerprintOf(next),
    5_000,
  );
});

it(
  'issue 15: an auth-secret htpasswd rotated alone is served: ' + 'the new password is accepted, the old one refused',
  async () => {
    const basic = (password: string) =>
      get({
        host: 'auth.test',
        path: '/',
        port: cluster.httpPort,
        headers: { authorization: `Basic ${Buffer.from(`alice:${password}`).toString('base64')}` },
      });
    expect((await basic('first')).status).toBe(200);
    await cluster.apply(users('second'));
    await waitFor('the new password accepted', async () => (await basic('second')).status === 200, 5_000);
    expect((await basic('first')).status).toBe(401);
  },
);

it(
  'issue 15: an auth-tls-secret CA rotated alone is served: a client of the new CA gets through, one of the old ' +
    'does not',
  async () => {
    expect((await tls('mtls.test', clientTwo)).status).toBe(400);
    await cluster.apply(caSecret(caTwo));
    // The old code's watcher knew only spec.tls and auth-secret: this change waited for an unrelated one.
    await waitFor(
      'a client of the new CA accepted',
      async () => (await tls('mtls.test', clientTwo)).status === 200,
      5_000,
    );
    // A new worker answered; old ones may still take a connection until the reload is confirmed.
    await waitFor('nginx to be done reloading', () => nginxSettled(cluster.actor('nginx')));
    expect((await tls('mtls.test', clientOne)).status).toBe(400);
  },
);

it('issue 15: the --default-ssl-certificate rotated alone is served', async () => {
  const next = await issueCertificate({ commonName: 'fallback two' });
  await cluster.apply(fallback(next));
  // A host without TLS of its own answers HTTPS with the default certificate.
  await waitFor(
    'the new default certificate served',
    async () => (await tls('auth.test')).fingerprint === fingerprintOf(next),
    5_000,
  );
});

it('issue 15: a Secret no one names changes, and no sync runs', async () => {
  await settled();
  const before = syncs();
  await cluster.apply(opaque('nobody-names-me', 'two'));
  await cluster.apply(opaque('nobody-either', 'new'));
  // Longer than a lone change takes to sync (it syncs at once when the queue is quiet).
  await new Promise((r) => setTimeout(r, 1_500));
  expect(syncs()).toBe(before);
  // The watcher is alive and heard them: a named Secret's change right after does sync.
  await cluster.apply(users('third'));
  await waitFor('a sync for the named Secret', () => syncs() > before, 5_000);
});
