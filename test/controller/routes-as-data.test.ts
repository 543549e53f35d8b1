/**
 * Issue 29, routes as data, through the real controller and nginx with `--routes-as-data=true`: Ingress changes one at
 * a time — a new host, a new path on a host, a backend change, a deleted Ingress, a TLS host added, an annotation
 * value another Ingress already has — are each served without a reload (pushed to the shared server's table); a
 * change that needs a new profile reloads once; a host with server-level settings keeps its own server; nginx.conf
 * names no shared host. Each change is checked by what nginx answers, not by what the controller says it did.
 */
import { chmod, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isLive, processes } from '../../src/nginx/proc.js';
import { issueCertificate, type KeyPair } from '../../src/tls/issue.js';
import { nginxSettled, startCluster, waitFor, type Cluster } from '../support/cluster.js';
import { ingress, ingressClass, serviceWithEndpoints, tlsSecret } from '../support/manifests.js';
import { get, startBackend, type Backend } from '../support/net.js';
import { openStream, openWebSocket, startStreamer, type Streamer } from '../support/streams.js';

let cluster: Cluster;
let pods: Backend[];
let ca: KeyPair;
let streamer: Streamer;

const nginx = () => cluster.actor('nginx')!.context;
const reloads = () => Number(nginx().reloadsOk);
const conf = () => readFile(join(cluster.config.configDir, 'nginx.conf'), 'utf8');
const answer = async (host: string, path = '/', https = false) => {
  const reply = await get({
    host,
    path,
    port: https ? cluster.httpsPort : cluster.httpPort,
    ...(https ? { https: true, ca: ca.certPem } : {}),
  });
  return reply.status === 200 ? reply.backend : reply.status;
};
const settled = () => waitFor('nginx settled', () => nginxSettled(cluster.actor('nginx')));

const BODY_8M = { 'nginx.ingress.kubernetes.io/proxy-body-size': '8m' };

/** Changes within existing profiles, each with how nginx shows it is served; run in order (the last undoes the first). */
const changes: [string, () => Promise<unknown>, () => Promise<boolean>][] = [
  [
    'a new host',
    () => cluster.apply(ingress('three', { 'three.example.com': [{ path: '/', service: 'web-c' }] })),
    async () => (await answer('three.example.com')) === 'c',
  ],
  [
    'a new path on an existing host',
    () =>
      cluster.apply(
        ingress('one', {
          'one.example.com': [
            { path: '/', service: 'web-a' },
            { path: '/b', service: 'web-b' },
          ],
        }),
      ),
    async () => (await answer('one.example.com', '/b/1')) === 'b',
  ],
  [
    'a backend change',
    () => cluster.apply(ingress('three', { 'three.example.com': [{ path: '/', service: 'web-a' }] })),
    async () => (await answer('three.example.com')) === 'a',
  ],
  [
    'an annotation value another Ingress already has',
    () =>
      cluster.apply(
        ingress('three', { 'three.example.com': [{ path: '/', service: 'web-a' }] }, { annotations: BODY_8M }),
      ),
    async () => (await answer('three.example.com')) === 'a' && !(await conf()).includes('three.example.com'),
  ],
  [
    'a deleted Ingress',
    () => cluster.remove(ingress('three', {})),
    async () => (await answer('three.example.com')) === 404,
  ],
];

beforeAll(async () => {
  pods = await Promise.all(['a', 'b', 'c'].map((name) => startBackend(name)));
  streamer = await startStreamer();
  ca = await issueCertificate({ commonName: 'ia-test-ca', isCa: true });
  const first = await issueCertificate({
    commonName: 'first.example.com',
    dnsNames: ['first.example.com'],
    issuer: ca,
  });
  cluster = await startCluster(
    [
      ingressClass(),
      // a TLS host from the start: the profile of TLS hosts' paths (HSTS, ssl-redirect) is in the first nginx.conf
      tlsSecret('first-tls', first.certPem, first.keyPem),
      ingress(
        'first-tls',
        { 'first.example.com': [{ path: '/', service: 'web-a' }] },
        { tls: [{ hosts: ['first.example.com'], secretName: 'first-tls' }] },
      ),
      ...pods.flatMap((pod, i) => serviceWithEndpoints(`web-${'abc'[i]}`, [{ port: pod.port }])),
      ingress('one', { 'one.example.com': [{ path: '/', service: 'web-a' }] }),
      ...serviceWithEndpoints('stream', [{ port: streamer.port }]),
      ingress('stream', { 'stream.example.com': [{ path: '/', service: 'stream' }] }),
      ingress('two', { 'two.example.com': [{ path: '/api', service: 'web-b' }] }, { annotations: BODY_8M }),
      ingress(
        'own',
        { 'own.example.com': [{ path: '/', service: 'web-c' }] },
        { annotations: { 'nginx.ingress.kubernetes.io/canary': 'false' } },
      ),
    ],
    ['--routes-as-data=true'],
  );
  // nginx workers (nobody, under a root master) buffer large bodies in the config folder's tmp/: let them through
  await chmod(cluster.dir, 0o711);
  await waitFor('one served', async () => (await answer('one.example.com')) === 'a');
  await settled();
}, 60_000);

afterAll(async () => {
  await cluster?.close();
  await Promise.all((pods ?? []).map((p) => p.close()));
  await streamer?.close();
});

describe('changes within existing profiles are pushed, not reloaded', () => {
  it('serves the hosts from the shared server: nginx.conf names none of them', async () => {
    expect(await answer('one.example.com')).toBe('a');
    expect(await answer('two.example.com', '/api/x')).toBe('b');
    expect(await answer('two.example.com', '/')).toBe(404);
    expect(await answer('unknown.example.com')).toBe(404);
    const text = await conf();
    expect(text).not.toContain('one.example.com');
    expect(text).not.toContain('two.example.com');
    expect(text).toMatch(/location @ia_p_[0-9a-f]{32} \{/);
  });

  it("checks a body's Content-Length against its own profile's client_max_body_size, not the router's", async () => {
    const post = (host: string, path: string, bytes: number) =>
      get({ host, path, port: cluster.httpPort, method: 'POST', body: 'x'.repeat(bytes) });
    expect((await post('one.example.com', '/', 2 * 1024 * 1024)).status).toBe(413);
    const small = await post('one.example.com', '/', 512 * 1024);
    expect(small.backend, `${small.status} ${small.body.slice(0, 300)}`).toBe('a');
    expect((await post('two.example.com', '/api', 2 * 1024 * 1024)).backend).toBe('b');
    expect((await post('two.example.com', '/api', 9 * 1024 * 1024)).status).toBe(413);
  });

  it("serves the plain profile in the router's location only without a body: the same request as through the profile", async () => {
    // nginx.conf's router location holds the plain profile (only the balanced proxy_pass), and passes it to the router
    const text = await conf();
    const inline = /route\(true, "\\064ia_p_([0-9a-f]{32})"\)/.exec(text)?.[1];
    expect(inline, 'the router location names its profile').toBeDefined();
    expect(text).toContain(`location @ia_p_${inline} {`);
    const send = (method: string, body?: string, headers: Record<string, string> = {}) =>
      get({ host: 'one.example.com', path: '/x?y=1', port: cluster.httpPort, method, body, headers });
    // a GET is served in the router's location, a POST with a body through the profile: the backend sees the same
    const seen = (reply: Awaited<ReturnType<typeof send>>) => {
      const { headers, path, host } = JSON.parse(reply.body) as {
        headers: Record<string, string>;
        path: string;
        host: string;
      };
      const { 'x-request-id': _id, 'content-length': _length, 'transfer-encoding': _chunked, ...rest } = headers;
      return { path, host, headers: rest };
    };
    const [plain, posted] = [await send('GET'), await send('POST', 'x')];
    expect([plain.backend, posted.backend]).toEqual(['a', 'a']);
    expect(seen(plain)).toEqual(seen(posted));
    // a chunked body (no Content-Length for the router to check) is read under the profile's limit (the http level's
    // 1m), not the router location's (none): it goes through the profile, as any body does
    const chunked = { 'transfer-encoding': 'chunked' };
    expect((await send('POST', 'x'.repeat(2 * 1024 * 1024), chunked)).status).toBe(413);
    expect((await send('POST', 'x'.repeat(1024), chunked)).backend).toBe('a');
  });

  it.each(changes)('%s: served with no reload', async (_what, change, served) => {
    await settled();
    const before = reloads();
    await change();
    await waitFor('the change served', served, 15_000);
    await settled();
    expect(reloads()).toBe(before);
  });

  it('a TLS host added: its certificate and route are pushed, no reload', async () => {
    await settled();
    const before = reloads();
    const cert = await issueCertificate({
      commonName: 'secure.example.com',
      dnsNames: ['secure.example.com'],
      issuer: ca,
    });
    await cluster.apply(tlsSecret('secure-tls', cert.certPem, cert.keyPem));
    await cluster.apply(
      ingress(
        'secure',
        { 'secure.example.com': [{ path: '/', service: 'web-b' }] },
        { tls: [{ hosts: ['secure.example.com'], secretName: 'secure-tls' }] },
      ),
    );
    await waitFor(
      'served over HTTPS with its certificate',
      async () => (await answer('secure.example.com', '/', true)) === 'b',
      15_000,
    );
    // ssl-redirect (ingress-nginx's default for a TLS host): plain HTTP is redirected
    expect(await answer('secure.example.com')).toBe(308);
    await settled();
    expect(reloads()).toBe(before);
  });
});

describe('long-lived responses', () => {
  it('pushed changes cut no streaming response or WebSocket and start no worker generation', async () => {
    await settled();
    const master = Number(nginx().pid);
    const workers = () =>
      processes()
        .filter((p) => p.ppid === master && isLive(p))
        .map((p) => p.pid)
        .sort();
    const before = workers();
    const streams = await Promise.all([
      ...Array.from({ length: 5 }, () => openStream(cluster.httpPort, 'stream.example.com')),
      ...Array.from({ length: 5 }, () => openWebSocket(cluster.httpPort, 'stream.example.com')),
    ]);
    try {
      for (const [, change, served] of changes) {
        await change();
        await waitFor('the change served', served, 15_000);
      }
      const seen = streams.map((s) => s.chunks);
      await waitFor('every stream still flowing', () => streams.every((s, i) => s.chunks > seen[i]! + 2), 5_000);
      expect(streams.map((s) => s.ended)).toEqual(streams.map(() => false));
      await settled();
      expect(workers()).toEqual(before);
    } finally {
      for (const s of streams) s.close();
    }
  });
});

describe('what still reloads', () => {
  it('a new profile reloads once', async () => {
    await settled();
    const before = reloads();
    await cluster.apply(
      ingress(
        'four',
        { 'four.example.com': [{ path: '/', service: 'web-c' }] },
        { annotations: { 'nginx.ingress.kubernetes.io/proxy-read-timeout': '77' } },
      ),
    );
    await waitFor('four served', async () => (await answer('four.example.com')) === 'c', 15_000);
    await settled();
    expect(reloads()).toBe(before + 1);
    expect(await conf()).toContain('proxy_read_timeout "77s"');
  });

  it('a host that gains a canary moves to a server of its own (a reload), and is served there', async () => {
    expect(await answer('own.example.com')).toBe('c');
    expect(await conf()).not.toContain('own.example.com');
    await settled();
    const before = reloads();
    await cluster.apply(
      ingress(
        'own-canary',
        { 'own.example.com': [{ path: '/', service: 'web-a' }] },
        {
          annotations: {
            'nginx.ingress.kubernetes.io/canary': 'true',
            'nginx.ingress.kubernetes.io/canary-by-header': 'x-canary',
          },
        },
      ),
    );
    await waitFor(
      'the canary served',
      async () =>
        (await get({ host: 'own.example.com', path: '/', port: cluster.httpPort, headers: { 'x-canary': 'always' } }))
          .backend === 'a',
      15_000,
    );
    await settled();
    expect(await conf()).toContain('server_name "own.example.com"');
    expect(reloads()).toBeGreaterThan(before);
    expect(await answer('own.example.com')).toBe('c');
  });
});
