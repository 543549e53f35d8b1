/**
 * Finding 2 of "No tenant can stall, block or bypass another": a config nginx refuses costs the
 * tenant whose Ingress caused it, not everyone. Ten tenants, each with its own namespace, host
 * and backend; the tenth applies, in turn, every value that once made nginx refuse the whole
 * config (or that a validator now refuses first). After each one, the nine others change their
 * Ingress and see the change served, and the bad Ingress carries a problem that names it (a bad
 * annotation value is ignored: the Ingress is served with the default, the value never in nginx.conf).
 *
 * In both modes: certificates and endpoints rendered into nginx.conf (`--dynamic-backends=false`: nginx -t
 * judges the certificate, and the Ingress is left out), and pushed to the Lua balancer (default flags: the
 * model refuses the key OpenSSL would refuse at the handshake, and the host is served with the default
 * certificate, as with any invalid TLS Secret).
 */
import { X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, waitFor, type Cluster } from '../support/cluster.js';
import { ingress, ingressClass, serviceWithEndpoints, tlsSecret } from '../support/manifests.js';
import { get, startBackend, type Backend } from '../support/net.js';
import { mlDsaCertificate, weakCertificate } from '../support/weak-certificate.js';

const TENANTS = 10;
const BAD = TENANTS - 1;
const ns = (i: number) => `tenant-${i}`;
const host = (i: number) => `t${i}.example`;

let cluster: Cluster;
let backends: Backend[] = [];
let round = 0;

/** tenantIngress is tenant i's Ingress, serving `/r<round>` (so each round is a visible change). */
function tenantIngress(
  i: number,
  extra: {
    annotations?: Record<string, string>;
    path?: string;
    pathType?: 'Prefix' | 'ImplementationSpecific';
    tls?: boolean;
  } = {},
) {
  return ingress(
    'site',
    { [host(i)]: [{ path: extra.path ?? `/r${round}`, pathType: extra.pathType ?? 'Prefix', service: 'web' }] },
    {
      namespace: ns(i),
      ...(extra.annotations ? { annotations: extra.annotations } : {}),
      ...(extra.tls ? { tls: [{ hosts: [host(i)], secretName: 'site-tls' }] } : {}),
    },
  );
}

const served = async (i: number, path: string) =>
  (await get({ host: host(i), path, port: cluster.httpPort })).backend === ns(i);

/** goodTenantsMove changes the nine good tenants' Ingresses and waits for every change to be served. */
async function goodTenantsMove(): Promise<void> {
  round++;
  for (let i = 0; i < BAD; i++) await cluster.apply(tenantIngress(i));
  await waitFor(
    `round ${round}: the good tenants' changes served`,
    async () => {
      for (let i = 0; i < BAD; i++) if (!(await served(i, `/r${round}`))) return false;
      return true;
    },
    15_000,
    50,
  );
}

/** problemsOf are the Warning Events on the bad tenant's Ingress, as the controller recorded them. */
async function badTenantEvents(): Promise<string[]> {
  const list = (await cluster.client.list('v1', 'Event', ns(BAD))) as {
    items: { message?: string; involvedObject?: { name?: string } }[];
  };
  return list.items.filter((e) => e.involvedObject?.name === 'site').map((e) => e.message ?? '');
}

const REGEX = { 'nginx.ingress.kubernetes.io/use-regex': 'true' };
const HOSTILE: Record<string, () => Promise<object[]>> = {
  'a certificate OpenSSL refuses to load (1024-bit RSA)': async () => [
    await weakCertificate(host(BAD)).then((pair) => tlsSecret('site-tls', pair.certPem, pair.keyPem, ns(BAD))),
    tenantIngress(BAD, { tls: true }),
  ],
  "a certificate nginx's OpenSSL cannot read (ML-DSA-44, which Node 24 reads)": async () => [
    await mlDsaCertificate(host(BAD)).then((pair) => tlsSecret('site-tls', pair.certPem, pair.keyPem, ns(BAD))),
    tenantIngress(BAD, { tls: true }),
  ],
  'regex path /api/[\\w-.]+': async () => [
    tenantIngress(BAD, { annotations: REGEX, path: '/api/[\\w-.]+', pathType: 'ImplementationSpecific' }),
  ],
  'regex path /[\\d-z]': async () => [
    tenantIngress(BAD, { annotations: REGEX, path: '/[\\d-z]', pathType: 'ImplementationSpecific' }),
  ],
  'regex path /[]a': async () => [
    tenantIngress(BAD, { annotations: REGEX, path: '/[]a', pathType: 'ImplementationSpecific' }),
  ],
  'regex path /a{99999}': async () => [
    tenantIngress(BAD, { annotations: REGEX, path: '/a{99999}', pathType: 'ImplementationSpecific' }),
  ],
  'client-body-buffer-size: 1g': async () => [
    tenantIngress(BAD, { annotations: { 'nginx.ingress.kubernetes.io/client-body-buffer-size': '1g' } }),
  ],
  'proxy-buffer-size: 0': async () => [
    tenantIngress(BAD, { annotations: { 'nginx.ingress.kubernetes.io/proxy-buffer-size': '0' } }),
  ],
  'limit-connections: 65536': async () => [
    tenantIngress(BAD, { annotations: { 'nginx.ingress.kubernetes.io/limit-connections': '65536' } }),
  ],
  'proxy-body-size: 99999999999999999999g': async () => [
    tenantIngress(BAD, { annotations: { 'nginx.ingress.kubernetes.io/proxy-body-size': '99999999999999999999g' } }),
  ],
};

const WEAK = 'a certificate OpenSSL refuses to load (1024-bit RSA)';
const ML_DSA = "a certificate nginx's OpenSSL cannot read (ML-DSA-44, which Node 24 reads)";
/** the refused key each certificate case's problem names */
const REFUSED_KEY: Record<string, string> = { [WEAK]: 'a 1024-bit RSA key', [ML_DSA]: 'an ML-DSA-44 key' };
/** The annotation values nginx would refuse: each is ignored (its default applies) and the Ingress served. */
const IGNORED_VALUES: ReadonlySet<string> = new Set(Object.keys(HOSTILE).filter((name) => /^[a-z-]+: /.test(name)));

/** The flags of each mode: the Lua balancer is on by default. */
const FLAGS: Record<'rendered' | 'lua', string[]> = { rendered: ['--dynamic-backends=false'], lua: [] };

/**
 * weakKeyRefused checks the Lua mode's answer to a key nginx's OpenSSL does not serve (`refused` names it): a
 * validator's problem naming the Secret and field, and the host served over HTTPS with the default certificate, never
 * the refused one.
 */
async function weakKeyRefused(weakPem: string, path: string, refused: string): Promise<void> {
  await waitFor(
    'the key refused by a validator',
    async () => (await badTenantEvents()).some((m) => m.includes(`tls.key is ${refused}`)),
    10_000,
    100,
  );
  const events = await badTenantEvents();
  expect(events.join('\n')).toContain(
    `spec.tls[0].secretName: Secret ${ns(BAD)}/site-tls: data.tls.key is ${refused}, which nginx's OpenSSL does not serve`,
  );
  const reply = await get({ host: host(BAD), path, port: cluster.httpsPort, https: true });
  expect(reply.backend).toBe(ns(BAD));
  expect(reply.peerCertificate?.fingerprint256).not.toBe(new X509Certificate(weakPem).fingerprint256);
}

describe.each(['rendered', 'lua'] as const)('with certificates and endpoints %s', (mode) => {
  beforeAll(async () => {
    round = 0;
    backends = [];
    const seed: object[] = [ingressClass()];
    for (let i = 0; i < TENANTS; i++) {
      const backend = await startBackend(ns(i));
      backends.push(backend);
      seed.push(
        { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns(i) } },
        ...serviceWithEndpoints('web', [{ port: backend.port }], ns(i)),
        tenantIngress(i),
      );
    }
    cluster = await startCluster(seed, FLAGS[mode]);
    await waitFor(
      'every tenant served',
      async () => {
        for (let i = 0; i < TENANTS; i++) if (!(await served(i, '/r0'))) return false;
        return true;
      },
      20_000,
      50,
    );
  }, 40_000);

  afterAll(async () => {
    await cluster?.close();
    await Promise.all(backends.map((b) => b.close()));
  });

  it.each(Object.keys(HOSTILE))(
    'finding 2: while tenant 9 applies %s, the nine others keep being served',
    async (name) => {
      // the bad Ingress serves the path of the round it was applied in
      const badPath = `/r${round}`;
      const objects = await HOSTILE[name]!();
      for (const object of objects) await cluster.apply(object);
      await goodTenantsMove();
      const refused = REFUSED_KEY[name];
      if (mode === 'lua' && refused) {
        await weakKeyRefused(
          Buffer.from((objects[0] as { data: { 'tls.crt': string } }).data['tls.crt'], 'base64').toString(),
          badPath,
          refused,
        );
      } else {
        // The bad Ingress is not served as written (a bad annotation value is ignored: served with its default, the
        // value never reaching nginx), and its Event says why.
        expect(await served(BAD, badPath)).toBe(IGNORED_VALUES.has(name));
        if (IGNORED_VALUES.has(name))
          expect(await readFile(join(cluster.config.configDir, 'nginx.conf'), 'utf8')).not.toMatch(
            /client_body_buffer_size "1g"|proxy_buffer_size "0"|limit_conn \S+ 65536|9{20}g/,
          );
        await waitFor('an Event on the bad Ingress', async () => (await badTenantEvents()).length > 0, 10_000, 100);
      }
      // Back to a good Ingress: the tenant is served again, without the Secret that nginx refused.
      await cluster.apply(tenantIngress(BAD, { path: '/fixed' }));
      await waitFor('the bad tenant, fixed, served again', () => served(BAD, '/fixed'), 10_000, 50);
    },
    60_000,
  );
});
