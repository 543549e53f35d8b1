import { execa } from 'execa';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { freePort, get } from '../support/net.js';

const CLI = new URL('../../bin/ingress-actors', import.meta.url).pathname;

it('the demo serves the examples through a real nginx and stops cleanly on Ctrl-C', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'ia-demo-'));
  const [httpPort, httpsPort] = [await freePort(), await freePort()];
  const demo = execa(CLI, ['demo', '--dir', dir, '--http-port', String(httpPort), '--https-port', String(httpsPort)], { reject: false });
  let printed = '';
  await new Promise<void>((resolve, reject) => {
    demo.stdout?.on('data', (chunk: Buffer) => {
      printed += chunk.toString();
      if (printed.includes('Ctrl-C stops it.')) resolve();
    });
    void demo.then((r) => reject(new Error(`demo exited early: ${r.stderr}`)));
  });
  expect(printed).toContain(`curl -H 'Host: hello.demo.local' http://127.0.0.1:${httpPort}/`);
  const hello = await get({ host: 'hello.demo.local', path: '/', port: httpPort });
  expect(hello.body).toContain('default/hello (backend on 127.0.0.1:8081) answered GET /');
  const secure = await get({ host: 'secure.demo.local', path: '/', port: httpsPort, https: true });
  expect(secure.body).toContain('default/secure');
  expect(secure.peerCertificate?.subject.CN).toBe('secure.demo.local');
  demo.kill('SIGINT');
  const result = await demo;
  expect(result.exitCode).toBe(0);
  await rm(dir, { recursive: true, force: true });
}, 30_000);
