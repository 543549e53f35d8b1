/**
 * The README's first command: the demo starts the API server, backends, the controller and
 * nginx; kubectl works against it with the kubeconfig it writes; Ctrl-C stops it with exit 0.
 */
import { execa } from 'execa';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { freePort, get } from '../support/net.js';
import { waitFor } from '../support/cluster.js';

const ROOT = new URL('../../', import.meta.url).pathname;
const CLI = join(ROOT, 'bin/ingress-actors');

it('serves the examples, follows kubectl apply, and stops cleanly on Ctrl-C', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'ia-demo-'));
  const [httpPort, httpsPort] = [await freePort(), await freePort()];
  const demo = execa(CLI, ['demo', '--dir', dir, '--http-port', String(httpPort), '--https-port', String(httpsPort), '--log-level', 'warn'], { reject: false, cwd: ROOT });
  let printed = '';
  await new Promise<void>((resolve, reject) => {
    demo.stdout?.on('data', (chunk: Buffer) => {
      printed += chunk.toString();
      if (printed.includes('Ctrl-C stops it.')) resolve();
    });
    void demo.then((r) => reject(new Error(`demo exited early: ${r.stderr}`)));
  });
  expect(printed).toContain(`curl -H 'Host: hello.demo.local' http://127.0.0.1:${httpPort}/`);
  await waitFor('hello served', async () => (await get({ host: 'hello.demo.local', path: '/', port: httpPort })).body.includes('default/hello (backend on 127.0.0.1:8081)'), 5000);
  const secure = await get({ host: 'secure.demo.local', path: '/', port: httpsPort, https: true });
  expect(secure.body).toContain('default/secure');
  expect(secure.peerCertificate?.subject.CN).toBe('secure.demo.local');

  const kubectl = (...args: string[]) => execa('kubectl', ['--kubeconfig', join(dir, 'kubeconfig'), ...args], { cwd: ROOT });
  expect((await kubectl('get', 'ingress', '-A')).stdout).toMatch(/hello\s+nginx\s+hello\.demo\.local/);
  await kubectl('apply', '--validate=false', '-f', 'demo/moved-api.yaml');
  await waitFor('the moved path served', async () => (await get({ host: 'api.demo.local', path: '/v3/x', port: httpPort })).body.includes('default/api-v2'), 5000);

  demo.kill('SIGINT');
  const result = await demo;
  expect(result.exitCode).toBe(0);
  await rm(dir, { recursive: true, force: true });
}, 60_000);
