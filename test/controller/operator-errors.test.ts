/**
 * Issue 15: failures an operator can act on end the controller at once with exit 1 and a reason
 * naming the flag to change, and the config folder has one writer (the nginx actor).
 */
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../src/project-root.js';
import { ingressClass } from '../support/manifests.js';
import { freePort } from '../support/net.js';
import { startCluster } from '../support/cluster.js';

it('finding 3a: a controller started with --nginx-binary /nonexistent ' +
  'exits 1 naming --nginx-binary and the PATH', async () => {
  const cluster = await startCluster([ingressClass()], ['--nginx-binary', '/nonexistent']);
  try {
    expect(await cluster.controller.exitCode).toBe(1);
    const reason = await cluster.controller.reason;
    const fix = 'give its path with --nginx-binary .* or put nginx on the PATH';
    expect(reason).toMatch(
      new RegExp(String.raw`^boot: nginx binary "/nonexistent" ` + String.raw`was not found \(ENOENT\): ${fix}$`),
    );
  } finally {
    await cluster.close();
  }
}, 30_000);

it('finding 3b: a controller whose HTTP port another process holds exits 1 naming the port and --http-port, instead ' +
  'of restarting nginx', async () => {
  const port = await freePort();
  const squatter: Server = createServer();
  await new Promise<void>((resolve) => squatter.listen(port, '127.0.0.1', resolve));
  const cluster = await startCluster([ingressClass()], ['--http-port', String(port)]);
  try {
    expect(await cluster.controller.exitCode).toBe(1);
    expect(await cluster.controller.reason).toMatch(
      new RegExp(
        `^nginx: nginx cannot listen on \\S+:${port}: port ${port} \\(--http-port\\) is in use by another process`,
      ),
    );
    expect(cluster.actor('nginx')?.context.restarts ?? 0).toBe(0);
  } finally {
    await cluster.close();
    await new Promise((resolve) => squatter.close(resolve));
  }
}, 30_000);

it(
  'finding 1: nothing but the nginx actor writes the ' + 'config folder (the sync actor no longer writes files)',
  async () => {
    const sync = await readFile(join(PROJECT_ROOT, 'src/sync/run.ts'), 'utf8');
    expect(sync).not.toMatch(/nginx\/(files|apply|private-files)\.js/);
    const nginx = await readFile(join(PROJECT_ROOT, 'src/actors/nginx.ts'), 'utf8');
    expect(nginx).toMatch(/ConfigFolder/);
  },
);
