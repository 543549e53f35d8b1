/**
 * The admission webhook in the whole controller (`--validating-webhook`): it judges against the
 * caches the watchers fill, so an Ingress written a moment ago counts; a port in use stops the
 * start with exit 1 naming the flag.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { kubeconfigFor } from '../../src/dev/api-server/server.js';
import { parseControllerFlags } from '../../src/cli/controller-flags.js';
import { ListenError } from '../../src/http/listen.js';
import { createLogger } from '../../src/log.js';
import { startController } from '../../src/main.js';
import type { Ingress } from '../../src/model/snapshot.js';
import type { KeyPair } from '../../src/tls/issue.js';
import { postReview, webhookFlags, writeServingCertificate } from '../support/admission-review.js';
import { startCluster, waitFor } from '../support/cluster.js';
import { ingress, ingressClass } from '../support/manifests.js';
import { freePort } from '../support/net.js';

let dir: string;
let pair: KeyPair;
const flags = (port: number) => webhookFlags(port, dir);

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'controller-webhook-'));
  pair = await writeServingCertificate(dir);
});

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

const review = (port: number, candidate: Ingress) => postReview(port, pair.certPem, candidate);

it('judges against the live caches: an Ingress created a moment ago holds its host and path', async () => {
  const port = await freePort();
  const first = ingress('first', { 'a.example.com': [{ path: '/', service: 'app' }] });
  const cluster = await startCluster([ingressClass(), first], flags(port));
  try {
    await waitFor('the first Ingress cached', () => cluster.controller.cache.snapshot().ingresses.length === 1, 10_000);
    const onA = ingress('second', { 'a.example.com': [{ path: '/', service: 'app' }] });
    expect((await review(port, onA)).status?.message).toBe(
      'default/second: spec.rules[0].http.paths[0].path: host "a.example.com" and path "/" is already defined in ' +
        'ingress default/first',
    );
    const onB = ingress('third', { 'b.example.com': [{ path: '/', service: 'app' }] });
    expect((await review(port, onB)).allowed).toBe(true);
    await cluster.apply(ingress('early', { 'b.example.com': [{ path: '/', service: 'app' }] }));
    await waitFor('the new Ingress cached', () => cluster.controller.cache.snapshot().ingresses.length === 2, 10_000);
    expect((await review(port, onB)).status?.message).toContain('is already defined in ingress default/early');
  } finally {
    await cluster.close();
  }
}, 60_000);

it('a --validating-webhook port in use stops the start with a ListenError naming the flag', async () => {
  const port = await freePort();
  const squatter: Server = createServer();
  await new Promise<void>((resolve) => squatter.listen(port, '127.0.0.1', resolve));
  try {
    const parsed = parseControllerFlags([
      '--kubeconfig',
      join(dir, 'unused-kubeconfig'),
      '--config-dir',
      join(dir, 'nginx'),
      '--healthz-port',
      String(await freePort()),
      ...flags(port),
    ]);
    if (!('config' in parsed)) throw new Error('no config');
    // No API server is needed: the webhook is bound before anything talks to one.
    await writeFile(join(dir, 'unused-kubeconfig'), kubeconfigFor('https://127.0.0.1:1', pair.certPem, 'token'));
    const started = startController(parsed.config, createLogger({ level: 'silent' }));
    await expect(started).rejects.toThrow(ListenError);
    await expect(started).rejects.toThrow(
      `--validating-webhook ${port}: 127.0.0.1:${port}: the port is already in use`,
    );
  } finally {
    await new Promise((resolve) => squatter.close(resolve));
  }
}, 30_000);
