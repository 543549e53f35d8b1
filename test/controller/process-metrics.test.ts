/**
 * The nginx, certificate, orphan and admission metrics of a whole controller (test API server, real nginx, a real
 * backend on 127.0.0.2), in both modes: with the Lua balancer and with `--dynamic-backends=false`, whose nginx.conf
 * has no control server (stub_status has a server of its own in both). /metrics is parsed as Prometheus would.
 */
import { X509Certificate } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { createServer as createTcpServer, type Server as TcpServer, type AddressInfo } from 'node:net';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signalGroup } from '../../src/nginx/master.js';
import { issueCertificate, type KeyPair } from '../../src/tls/issue.js';
import { scrape, type Scrape } from '../http/prometheus.js';
import { postReview } from '../support/admission-review.js';
import { nginxSettled, startCluster, waitFor, type Cluster } from '../support/cluster.js';
import { ingress, ingressClass, serviceWithEndpoints, tlsSecret } from '../support/manifests.js';
import { freePort, get } from '../support/net.js';

const P = 'nginx_ingress_controller_nginx_process';
const HOST = 'web.example.com';

describe.each([
  { mode: 'the Lua balancer', flags: [] as string[], webhook: true },
  { mode: '--dynamic-backends=false', flags: ['--dynamic-backends=false'], webhook: false },
])('with $mode', ({ flags, webhook }) => {
  let cluster: Cluster;
  let pod: Server;
  let dir: string;
  let site: KeyPair;
  let webhookPort = 0;
  let started = 0;
  const metrics = () => scrape(cluster.healthzPort);
  const request = (path = '/') => get({ host: HOST, path, port: cluster.httpPort });
  const samples = (m: Scrape, name: string) => m.family(name).metrics;

  beforeAll(async () => {
    started = Date.now() / 1000;
    dir = await mkdtemp(join(tmpdir(), 'ia-process-metrics-'));
    // The pod: a real HTTP server on 127.0.0.2.
    pod = createServer((_, res) => res.end('pod'));
    await new Promise<void>((resolve) => pod.listen(0, '127.0.0.2', resolve));
    const podPort = (pod.address() as AddressInfo).port;
    site = await issueCertificate({ commonName: HOST, dnsNames: [HOST], days: 42 });
    const extra: string[] = [];
    if (webhook) {
      webhookPort = await freePort();
      const pair = await issueCertificate({ commonName: 'webhook', ipAddresses: ['127.0.0.1'] });
      await writeFile(join(dir, 'tls.crt'), pair.certPem);
      await writeFile(join(dir, 'tls.key'), pair.keyPem, { mode: 0o600 });
      await writeFile(join(dir, 'ca.crt'), pair.certPem);
      extra.push(
        '--validating-webhook',
        `127.0.0.1:${webhookPort}`,
        '--validating-webhook-certificate',
        join(dir, 'tls.crt'),
        '--validating-webhook-key',
        join(dir, 'tls.key'),
      );
    }
    cluster = await startCluster(
      [
        ingressClass(),
        ...serviceWithEndpoints('web', [{ ip: '127.0.0.2', port: podPort }]),
        tlsSecret('web-tls', site.certPem, site.keyPem),
        // Plain HTTP is served as well, so that the traffic below needs no TLS.
        ingress(
          'web',
          { [HOST]: [{ path: '/', service: 'web' }] },
          {
            tls: [{ hosts: [HOST], secretName: 'web-tls' }],
            annotations: { 'nginx.ingress.kubernetes.io/ssl-redirect': 'false' },
          },
        ),
        // A Service whose only pod is not ready, and one that is not there.
        ...serviceWithEndpoints('idle', [{ ip: '127.0.0.3', port: podPort, ready: false }]),
        ingress('idle', { 'idle.example.com': [{ path: '/', service: 'idle' }] }),
        ingress('lost', { 'lost.example.com': [{ path: '/', service: 'nope' }] }),
      ],
      [...flags, ...extra],
    );
    await waitFor('the pod served', async () => (await request()).body === 'pod', 15_000);
    // New workers answer before the boot config's old ones have closed their listeners; until the reload is
    // confirmed a request may still meet the boot config (no servers yet) and get its 404.
    await waitFor('nginx settled', () => nginxSettled(cluster.actor('nginx')), 10_000);
  }, 30_000);

  afterAll(async () => {
    await cluster?.close();
    await new Promise((resolve) => pod?.close(resolve));
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('stub_status: requests and connections move with the traffic sent', async () => {
    const before = await metrics();
    const sent = 5;
    for (let i = 0; i < sent; i++) expect((await request()).body).toBe('pod');
    const after = await metrics();
    const requests = after.value(`${P}_requests_total`) - before.value(`${P}_requests_total`);
    // Each scrape reads stub_status once, a request too; nothing else reaches nginx meanwhile but a push or two.
    expect(requests).toBeGreaterThanOrEqual(sent + 1);
    expect(requests).toBeLessThan(sent + 10);
    expect(after.family(`${P}_requests_total`).type).toBe('COUNTER');
    // Every request came on a connection of its own.
    const accepted = (m: Scrape) => m.value(`${P}_connections_total`, { state: 'accepted' });
    expect(accepted(after) - accepted(before)).toBeGreaterThanOrEqual(sent + 1);
    expect(after.value(`${P}_connections_total`, { state: 'handled' })).toBe(accepted(after));
    // The stub_status request itself is active (and writing) while nginx answers it.
    expect(after.value(`${P}_connections`, { state: 'active' })).toBeGreaterThanOrEqual(1);
    expect(after.value(`${P}_connections`, { state: 'writing' })).toBeGreaterThanOrEqual(1);
    expect(samples(after, `${P}_connections`).map((s) => s.labels?.state)).toEqual([
      'active',
      'reading',
      'writing',
      'waiting',
    ]);
    // Every series carries the controller's labels.
    expect(samples(after, `${P}_requests_total`)[0]!.labels).toMatchObject({
      controller_class: 'k8s.io/ingress-nginx',
    });
  });

  it('the stub_status is on a private unix socket, not on nginx public ports', async () => {
    expect((await request('/nginx_status')).body).toBe('pod');
    expect((await get({ host: 'unknown.example.com', path: '/nginx_status', port: cluster.httpPort })).status).toBe(
      404,
    );
    const conf = await readFile(join(cluster.config.configDir, 'nginx.conf'), 'utf8');
    expect(conf).toContain(`listen "unix:${join(cluster.config.configDir, 'nginx-status.sock')}";`);
    expect(conf.includes('require("ingress_actors.control")')).toBe(flags.length === 0);
  });

  it('/proc: the master and its workers, their memory, start time and CPU', async () => {
    // worker_processes auto: one per CPU, once the workers of earlier configs have gone.
    await waitFor(
      'settled',
      async () => (await metrics()).value(`${P}_num_procs`) === 1 + availableParallelism(),
      15_000,
    );
    const m = await metrics();
    const resident = m.value(`${P}_resident_memory_bytes`);
    expect(resident).toBeGreaterThan(1_000_000);
    expect(m.value(`${P}_virtual_memory_bytes`)).toBeGreaterThan(resident);
    // The master started after the test did (with the /proc clock's 10 ms ticks).
    const start = m.value(`${P}_oldest_start_time_seconds`);
    expect(start).toBeGreaterThanOrEqual(Math.floor(started) - 1);
    expect(start).toBeLessThanOrEqual(Date.now() / 1000);
    const pid = Number(await readFile(join(cluster.config.configDir, 'nginx.pid'), 'utf8'));
    const ticks = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1]!.split(' ');
    expect(m.value(`${P}_cpu_seconds_total`)).toBeGreaterThanOrEqual((Number(ticks[11]) + Number(ticks[12])) / 100);
    expect(m.family(`${P}_cpu_seconds_total`).type).toBe('COUNTER');
    for (const name of ['read_bytes_total', 'write_bytes_total'])
      expect(m.value(`${P}_${name}`)).toBeGreaterThanOrEqual(0);
    const later = await metrics();
    expect(later.value(`${P}_cpu_seconds_total`)).toBeGreaterThanOrEqual(m.value(`${P}_cpu_seconds_total`));
  });

  it('config_hash is the running config: steady without a change, another number after one', async () => {
    const hash = async () => (await metrics()).value('nginx_ingress_controller_config_hash');
    await waitFor('nginx settled', () => nginxSettled(cluster.actor('nginx')), 10_000);
    const first = await hash();
    expect(Number.isSafeInteger(first) && first > 0).toBe(true);
    expect(await hash()).toBe(first);
    await cluster.patch({
      apiVersion: 'networking.k8s.io/v1',
      kind: 'Ingress',
      metadata: { name: 'web', annotations: { 'nginx.ingress.kubernetes.io/proxy-read-timeout': '77' } },
    });
    await waitFor('a new hash', async () => ![first, 0].includes(await hash()), 15_000);
    expect(await readFile(join(cluster.config.configDir, 'nginx.conf'), 'utf8')).toContain('77s');
  });

  it("ssl_expire_time_seconds is the served certificate's notAfter; ssl_certificate_info names it", async () => {
    const m = await metrics();
    const leaf = new X509Certificate(site.certPem);
    const labels = {
      namespace: 'default',
      class: 'k8s.io/ingress-nginx',
      host: HOST,
      secret_name: 'web-tls',
      identifier: `-${BigInt(`0x${leaf.serialNumber}`)}`,
    };
    expect(m.value('nginx_ingress_controller_ssl_expire_time_seconds', labels)).toBe(
      Math.floor(leaf.validToDate.getTime() / 1000),
    );
    expect(samples(m, 'nginx_ingress_controller_ssl_expire_time_seconds')).toHaveLength(1);
    expect(
      m.value('nginx_ingress_controller_ssl_certificate_info', {
        ...labels,
        issuer_common_name: HOST,
        issuer_organization: '',
        serial_number: BigInt(`0x${leaf.serialNumber}`).toString(),
        public_key_algorithm: 'ECDSA',
      }),
    ).toBe(1);
  });

  it('orphan_ingress: no-endpoint and no-service, and back to 0 once the pod is ready', async () => {
    const orphan = (m: Scrape, name: string, type: string) =>
      m.value('nginx_ingress_controller_orphan_ingress', { namespace: 'default', ingress: name, type });
    const m = await metrics();
    expect(orphan(m, 'idle', 'no-endpoint')).toBe(1);
    expect(orphan(m, 'idle', 'no-service')).toBe(0);
    expect(orphan(m, 'lost', 'no-service')).toBe(1);
    expect(orphan(m, 'web', 'no-service')).toBe(0);
    expect(orphan(m, 'web', 'no-endpoint')).toBe(0);
    const podPort = (pod.address() as AddressInfo).port;
    await cluster.apply(serviceWithEndpoints('idle', [{ ip: '127.0.0.2', port: podPort }])[1]!);
    await waitFor(
      'idle is no longer orphaned',
      async () => orphan(await metrics(), 'idle', 'no-endpoint') === 0,
      15_000,
    );
    // The metric follows the build; nginx serves it once the config is applied (a reload without the Lua balancer).
    await waitFor(
      'idle served',
      async () => (await get({ host: 'idle.example.com', path: '/', port: cluster.httpPort })).body === 'pod',
      15_000,
    );
  });

  it.runIf(webhook)('admission: a check that passed and one that failed', async () => {
    const ca = await readFile(join(dir, 'ca.crt'), 'utf8');
    const good = ingress('fresh', { 'fresh.example.com': [{ path: '/', service: 'web' }] });
    expect((await postReview(webhookPort, ca, good)).allowed).toBe(true);
    const taken = ingress('thief', { [HOST]: [{ path: '/', service: 'web' }] });
    expect((await postReview(webhookPort, ca, taken)).allowed).toBe(false);
    const m = await metrics();
    expect(m.value('nginx_ingress_controller_check_success', { namespace: 'default', ingress: 'fresh' })).toBe(1);
    expect(m.value('nginx_ingress_controller_check_errors', { namespace: 'default', ingress: 'thief' })).toBe(1);
    expect(m.family('nginx_ingress_controller_check_errors').metrics).toHaveLength(1);
    // The three Ingresses of the cluster and the candidate.
    expect(m.value('nginx_ingress_controller_admission_tested_ingresses')).toBe(4);
    const tested = m.value('nginx_ingress_controller_admission_tested_duration');
    expect(tested).toBeGreaterThan(0);
    expect(m.value('nginx_ingress_controller_admission_roundtrip_duration')).toBeGreaterThanOrEqual(tested);
  });

  it.runIf(!webhook)('without the webhook there are no admission metrics', async () => {
    const names = (await metrics()).families.map((f) => f.name);
    expect(names.filter((n) => /admission|check_/.test(n))).toEqual([]);
  });

  it.runIf(webhook)(
    'while nginx is down the nginx metrics are absent and /metrics still answers',
    async () => {
      const cpu = (await metrics()).value(`${P}_cpu_seconds_total`);
      const pid = Number(await readFile(join(cluster.config.configDir, 'nginx.pid'), 'utf8'));
      signalGroup(pid, 'SIGKILL');
      // Take the port, so that the next master cannot listen until we let go.
      const squatter: TcpServer = await new Promise((resolve) => {
        const attempt = () => {
          const s = createTcpServer();
          s.once('error', () => setTimeout(attempt, 2));
          s.listen(cluster.httpPort, '0.0.0.0', () => resolve(s));
        };
        attempt();
      });
      try {
        await waitFor('nginx gone', () => cluster.actor('nginx')?.context.pid === null, 10_000, 10);
        const down = await metrics();
        for (const name of ['connections', 'requests_total', 'num_procs', 'cpu_seconds_total'])
          expect(samples(down, `${P}_${name}`)).toEqual([]);
        expect(down.value('nginx_ingress_controller_config_last_reload_successful')).toBe(1);
      } finally {
        await new Promise((resolve) => squatter.close(resolve));
      }
      await waitFor('nginx back', async () => (await metrics()).value(`${P}_num_procs`) >= 2, 15_000, 50);
      // The CPU counter carries on from what the dead master's group used.
      expect((await metrics()).value(`${P}_cpu_seconds_total`)).toBeGreaterThanOrEqual(cpu);
    },
    40_000,
  );
});
