/**
 * A pushed table entry nginx refuses costs its tenant only (issue 27). The controller and nginx check entries against
 * one schema, and the model refuses the keys nginx's OpenSSL cannot serve, so a refusal by nginx needs the two sides
 * to differ: here nginx's side is stricter, as during a rollout where nginx's Lua is a version apart from the
 * controller (a copied template puts a schema.lua with a certificate bound of 8 KiB before the project's Lua). Three
 * tenants serve HTTPS with certificates pushed to the Lua balancer; tenant 2's Secret gets a certificate chain longer
 * than that. nginx refuses that one certificate entry and applies the rest: the other tenants' certificate renewals
 * are still served, /healthz stays 200, tenant 2's Ingress gets a Warning Event naming nginx's refusal and its host
 * the default certificate, until the Secret changes.
 */
import { X509Certificate } from 'node:crypto';
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LUA_FOLDER } from '../../src/nginx/lua.js';
import { issueCertificate } from '../../src/tls/issue.js';
import { startCluster, waitFor, type Cluster } from '../support/cluster.js';
import { ingress, ingressClass, serviceWithEndpoints, tlsSecret } from '../support/manifests.js';
import { get, startBackend, type Backend } from '../support/net.js';

/** STRICTER_PEM is nginx's side's bound on a certificate chain here; the controller's is 1 MiB. */
const STRICTER_PEM = 8192;

/** stricterNginx writes a template whose nginx finds a schema.lua with STRICTER_PEM before the project's Lua. */
async function stricterNginx(dir: string): Promise<string> {
  const templates = join(dir, 'templates');
  await cp(new URL('../../templates/', import.meta.url).pathname, templates, { recursive: true });
  const lua = join(dir, 'lua', 'ingress_actors');
  await mkdir(lua, { recursive: true });
  const schema = await readFile(join(LUA_FOLDER, 'ingress_actors', 'schema.lua'), 'utf8');
  const stricter = schema.replace(/^(\s*pem = )\d+,$/m, `$1${STRICTER_PEM},`);
  if (stricter === schema) throw new Error('schema.lua has no pem bound to make stricter');
  await writeFile(join(lua, 'schema.lua'), stricter);
  const file = join(templates, 'nginx.conf.hbs');
  const text = await readFile(file, 'utf8');
  const hooked = text.replace(
    'lua_package_path {{q packagePath}};',
    `lua_package_path "${dir}/lua/?.lua;{{packagePath}}";`,
  );
  if (hooked === text) throw new Error('the template has no lua_package_path to hook');
  await writeFile(file, hooked);
  return file;
}

/** longChain is a valid certificate for `host` whose chain is longer than STRICTER_PEM (a CA repeated after it). */
async function longChain(host: string): Promise<{ certPem: string; keyPem: string }> {
  const ca = await issueCertificate({ commonName: 'padding CA', isCa: true });
  const leaf = await issueCertificate({ commonName: host, dnsNames: [host] });
  return {
    certPem: leaf.certPem + ca.certPem.repeat(Math.ceil(STRICTER_PEM / ca.certPem.length) + 1),
    keyPem: leaf.keyPem,
  };
}

const TENANTS = 3;
const BAD = 2;
const ns = (i: number) => `tenant-${i}`;
const host = (i: number) => `t${i}.example`;

let cluster: Cluster;
let scratch: string;
const backends: Backend[] = [];

const tenantIngress = (i: number) =>
  ingress(
    'site',
    { [host(i)]: [{ path: '/', service: 'web' }] },
    { namespace: ns(i), tls: [{ hosts: [host(i)], secretName: 'site-tls' }] },
  );

async function secretFor(i: number): Promise<{ object: object; fingerprint: string }> {
  const pair = await issueCertificate({ commonName: host(i), dnsNames: [host(i)] });
  return {
    object: tlsSecret('site-tls', pair.certPem, pair.keyPem, ns(i)),
    fingerprint: new X509Certificate(pair.certPem).fingerprint256,
  };
}

/** servedCertificate is the fingerprint nginx serves for tenant i's host over HTTPS, and whether its backend answered. */
async function servedCertificate(i: number): Promise<{ fingerprint: string | undefined; ours: boolean }> {
  const reply = await get({ host: host(i), path: '/', port: cluster.httpsPort, https: true });
  return { fingerprint: reply.peerCertificate?.fingerprint256, ours: reply.backend === ns(i) };
}

async function healthz(): Promise<number> {
  return (await fetch(`http://127.0.0.1:${cluster.healthzPort}/healthz`)).status;
}

async function eventsOf(i: number): Promise<string[]> {
  const list = (await cluster.client.list('v1', 'Event', ns(i))) as {
    items: { message?: string; involvedObject?: { name?: string } }[];
  };
  return list.items.filter((e) => e.involvedObject?.name === 'site').map((e) => e.message ?? '');
}

describe('a certificate nginx refuses (its side stricter than the controller)', () => {
  const fingerprints: string[] = [];

  beforeAll(async () => {
    const seed: object[] = [ingressClass()];
    for (let i = 0; i < TENANTS; i++) {
      const backend = await startBackend(ns(i));
      backends.push(backend);
      const secret = await secretFor(i);
      fingerprints.push(secret.fingerprint);
      seed.push(
        { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns(i) } },
        ...serviceWithEndpoints('web', [{ port: backend.port }], ns(i)),
        secret.object,
        tenantIngress(i),
      );
    }
    scratch = await mkdtemp(join(tmpdir(), 'ia-stricter-'));
    cluster = await startCluster(seed, ['--template', await stricterNginx(scratch)]);
    await waitFor(
      'every tenant served over HTTPS with its certificate',
      async () => {
        for (let i = 0; i < TENANTS; i++) {
          const served = await servedCertificate(i);
          if (!served.ours || served.fingerprint !== fingerprints[i]) return false;
        }
        return true;
      },
      20_000,
      50,
    );
  }, 40_000);

  afterAll(async () => {
    await cluster?.close();
    await Promise.all(backends.map((b) => b.close()));
    if (scratch) await rm(scratch, { recursive: true, force: true });
  });

  it('costs its tenant only: the others’ renewals are served and /healthz stays 200', async () => {
    const bad = await longChain(host(BAD));
    await cluster.apply(tlsSecret('site-tls', bad.certPem, bad.keyPem, ns(BAD)));
    // tenant 0 renews its certificate after: a frozen certificate table would never serve it
    const renewed = await secretFor(0);
    await cluster.apply(renewed.object);
    await waitFor(
      'tenant 0’s renewed certificate served',
      async () => (await servedCertificate(0)).fingerprint === renewed.fingerprint,
      15_000,
      50,
    );
    expect(await healthz()).toBe(200);
    await waitFor(
      'a Warning Event on tenant 2’s Ingress naming nginx’s refusal',
      async () => (await eventsOf(BAD)).some((m) => m.includes('nginx refused the certificates entry')),
      10_000,
      100,
    );
    const event = (await eventsOf(BAD)).find((m) => m.includes('nginx refused the certificates entry'))!;
    expect(event).toContain(`Secret ${ns(BAD)}/site-tls is left out until it changes`);
    // tenant 2 is still served, with the default certificate, never the one nginx cannot use
    const served = await servedCertificate(BAD);
    expect(served.ours).toBe(true);
    expect(served.fingerprint).not.toBe(new X509Certificate(bad.certPem).fingerprint256);
    expect((await servedCertificate(1)).fingerprint).toBe(fingerprints[1]);
    expect(await healthz()).toBe(200);
  }, 40_000);

  it('also when it comes with a reload: a new tenant’s Ingress and Secret at once', async () => {
    const late = TENANTS;
    const backend = await startBackend(ns(late));
    backends.push(backend);
    const bad = await longChain(host(late));
    await cluster.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns(late) } });
    for (const object of serviceWithEndpoints('web', [{ port: backend.port }], ns(late))) await cluster.apply(object);
    await cluster.apply(tlsSecret('site-tls', bad.certPem, bad.keyPem, ns(late)));
    // a new server in nginx.conf: its certificate goes out with the reload's push
    await cluster.apply(tenantIngress(late));
    await waitFor(
      'a Warning Event on the new tenant’s Ingress naming nginx’s refusal',
      async () => (await eventsOf(late)).some((m) => m.includes('nginx refused the certificates entry')),
      15_000,
      100,
    );
    await waitFor('the new tenant served', async () => (await servedCertificate(late)).ours, 10_000, 50);
    expect((await servedCertificate(late)).fingerprint).not.toBe(new X509Certificate(bad.certPem).fingerprint256);
    expect(await healthz()).toBe(200);
  }, 40_000);

  it('is let go when the Secret changes', async () => {
    const fixed = await secretFor(BAD);
    await cluster.apply(fixed.object);
    await waitFor(
      'tenant 2 served with its fixed certificate',
      async () => (await servedCertificate(BAD)).fingerprint === fixed.fingerprint,
      15_000,
      50,
    );
    expect(await healthz()).toBe(200);
  }, 30_000);
});
