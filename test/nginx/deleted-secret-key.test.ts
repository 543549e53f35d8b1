/**
 * Finding 3 (low): a deleted TLS Secret's key file stayed on disk until some unrelated sync.
 * The sync that follows the deletion kept it (the live nginx.conf still named it), and nothing
 * looked again once the config without it went live. Now staging sweeps then: here through the
 * real controller (its watch, sync and nginx actors) and a real nginx.
 */
import { lstat, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { issueCertificate } from '../../src/tls/issue.js';
import { ingress, ingressClass, serviceWithEndpoints, tlsSecret } from '../support/manifests.js';
import { startBackend, type Backend } from '../support/net.js';
import { queueIdle, startCluster, waitFor, type Cluster } from '../support/cluster.js';

let cluster: Cluster;
let backend: Backend;
let secret: object;
const KEY_FILE = 'certificates/default_gone-tls.pem';

beforeAll(async () => {
  backend = await startBackend('app');
  const made = await issueCertificate({ commonName: 'gone.example.com', dnsNames: ['gone.example.com'] });
  secret = tlsSecret('gone-tls', made.certPem, made.keyPem);
  cluster = await startCluster(
    [
      ingressClass(),
      ...serviceWithEndpoints('app', [{ port: backend.port }]),
      secret,
      ingress(
        'gone',
        { 'gone.example.com': [{ path: '/', service: 'app' }] },
        { tls: [{ hosts: ['gone.example.com'], secretName: 'gone-tls' }] },
      ),
      // Key files exist only when certificates are rendered into nginx.conf; the Lua balancer keeps them in memory.
    ],
    ['--dynamic-backends=false'],
  );
}, 30_000);

afterAll(async () => {
  await cluster?.close();
  await backend?.close();
});

const conf = () => readFile(join(cluster.config.configDir, 'nginx.conf'), 'utf8');
const exists = (file: string) =>
  lstat(join(cluster.config.configDir, file)).then(
    () => true,
    () => false,
  );
const syncs = () => (cluster.actor('syncQueue')!.context as { syncsStarted: number }).syncsStarted;

it('finding 3 (low): a deleted TLS Secret’s key file is gone ' +
  'once the config without it is live, with no further sync', async () => {
  await waitFor(
    'the key file named and written',
    async () => (await conf()).includes(KEY_FILE) && (await exists(KEY_FILE)),
    15_000,
  );
  await waitFor('the sync queue to be idle', () => queueIdle(cluster.actor('syncQueue')?.value), 10_000);
  const before = syncs();
  await cluster.remove(secret);
  await waitFor('a config without the key file live', async () => !(await conf()).includes(KEY_FILE), 15_000);
  await waitFor('the sync queue to be idle', () => queueIdle(cluster.actor('syncQueue')?.value), 10_000);
  const after = syncs();
  // Give a sweep that only a later sync would do every chance: none comes, and none is needed.
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  expect(syncs()).toBe(after);
  expect(after).toBeGreaterThan(before);
  expect(await exists(KEY_FILE)).toBe(false);
}, 60_000);
