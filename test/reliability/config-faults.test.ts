/**
 * Faults on the way from model to nginx, with the request loop running: a config nginx -t
 * refuses, nginx -t failing by itself (a wrapper binary), a template that stops compiling or
 * rendering, a full disk under the config folder (a tmpfs) when writing nginx.conf and when
 * writing a certificate; and, last, a TLS certificate renewed in its Secret. Nothing bad is ever
 * swapped in, nginx keeps serving, and once the fault is gone the live config is the one the API
 * state implies.
 */
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueCertificate } from '../../src/tls/issue.js';
import { waitFor } from '../support/cluster.js';
import { REFUSAL } from '../support/refusal-hook.js';
import { ingress, tlsSecret } from '../support/manifests.js';
import { Harness, type FaultRecord } from './harness.js';

let h: Harness;
const live = () => readFile(h.conf, 'utf8');
const firstLine = (s: string | null) => String(s).split('\n')[0];

beforeAll(async () => {
  h = await Harness.start({ name: 'config-faults', tmpfsMb: 64, wrapNginx: true, copyTemplate: true });
}, 120_000);
afterAll(async () => h?.close(), 60_000);

/**
 * A fault a known bug keeps from converging: note whether the next API change recovers, so later tests start converged.
 */
async function recoverAfter(record: FaultRecord): Promise<void> {
  if (record.survived) return;
  await h.change('client', 'reload');
  const next = await h.waitConverged(15_000);
  h.notes.push(
    `${record.kind}: not converged once the fault was gone; ` +
      (typeof next === 'number'
        ? `the next API change converged in ${next} ms`
        : `even the next API change did not converge: ${next}`),
  );
}

/** waitReloadFailed waits for one more failed reload and returns nginx's error, or a failure. */
async function reloadFailure(before: number): Promise<{ error: string } | { failure: string }> {
  try {
    await waitFor('a failed reload', () => h.nginxContext().reloadsFailed > before, 10_000);
    return { error: h.nginxContext().lastReloadError ?? '' };
  } catch (error) {
    return { failure: `no reload failed: ${(error as Error).message}` };
  }
}

describe('between the model and nginx', () => {
  it('never swaps in a config nginx -t refuses, and applies the state once it is good again', async () => {
    const before = await live();
    const failed = h.nginxContext().reloadsFailed;
    const fault = h.begin('nginx -t refuses the config');
    // Every valid ConfigMap value renders a config nginx takes: the refusal is the copied template's hook.
    await h.cluster.patch({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'ingress-config' },
      data: REFUSAL.on,
    });
    const first = await reloadFailure(failed);
    // A good change meanwhile is refused too: the whole config carries the bad format.
    await h.change('client', 'reload');
    const second = await reloadFailure(failed + 1);
    let failure = 'failure' in first ? first.failure : 'failure' in second ? second.failure : undefined;
    if (!failure && !REFUSAL.error.test('error' in first ? first.error : ''))
      failure = `unexpected nginx -t error: ${'error' in first ? first.error : ''}`;
    if ((await live()) !== before) failure = 'a config nginx -t refused replaced the live one';
    await h.cluster.patch({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'ingress-config' },
      data: REFUSAL.off,
    });
    const record = await fault.end(15_000, failure ? { failure } : {});
    h.expectSurvived([record]);
  });

  it('retries a reload after nginx -t itself failed', async () => {
    const before = await live();
    const failed = h.nginxContext().reloadsFailed;
    await h.nginxTestFault(true);
    const fault = h.begin('nginx -t fails (transient)');
    await h.change('client', 'reload');
    const seen = await reloadFailure(failed);
    let failure = 'failure' in seen ? seen.failure : undefined;
    if ((await live()) !== before) failure = 'the live config changed although nginx -t failed';
    await h.nginxTestFault(false);
    const record = await fault.end(10_000, {
      ...(failure ? { failure } : {}),
      detail:
        'nginx said: ' +
        `${'error' in seen ? firstLine(seen.error.split('\n').slice(1).join('\n') || seen.error) : '-'}`,
    });
    await recoverAfter(record);
    h.expectSurvived([record]);
  });

  for (const variant of [
    { kind: 'template does not compile', edit: (s: string) => `${s}\n{{/reliability-broken}}\n` },
    { kind: 'template does not render', edit: (s: string) => `${s}\n{{reliability_no_such_field}}\n` },
  ]) {
    it(`keeps the last good template when the ${variant.kind.replace('template ', 'template file ')}`, async () => {
      const good = await readFile(h.templateFile, 'utf8');
      const fault = h.begin(`broken template: ${variant.kind.replace('template ', '')}`);
      await writeFile(h.templateFile, variant.edit(good));
      let failure: string | undefined;
      try {
        await waitFor('the template refused', () => h.cluster.actor('template')?.value === 'invalid', 10_000);
      } catch (error) {
        failure = `the broken template was not refused: ${(error as Error).message}`;
      }
      // Changes still go out, rendered with the last good template (which h.template still is).
      await h.change('client', 'reload');
      const during = await h.waitConverged(10_000);
      if (typeof during === 'string')
        failure ??= `a change while the template was broken was not applied with the last good one: ${during}`;
      await writeFile(h.templateFile, good);
      await waitFor('the template ready again', () => h.cluster.actor('template')?.value === 'ready', 10_000).catch(
        () => undefined,
      );
      const record = await fault.end(10_000, failure ? { failure } : {});
      h.expectSurvived([record]);
    });
  }

  it('keeps the live config whole when the disk is full, and converges once there is room', async (ctx) => {
    const tmpfs = h.tmpfs;
    if (!tmpfs) return ctx.skip();
    const before = await live();
    const failed = h.nginxContext().reloadsFailed;
    const ballast = await tmpfs.fill();
    const fault = h.begin('disk full writing nginx.conf');
    await h.change('client', 'reload');
    const seen = await reloadFailure(failed);
    let failure = 'failure' in seen ? seen.failure : undefined;
    if ('error' in seen && !/ENOSPC/.test(seen.error)) failure = `unexpected reload error: ${seen.error}`;
    if ((await live()) !== before) failure = 'the live nginx.conf changed while the disk was full';
    const litter = (await readdir(h.cluster.config.configDir)).filter(
      (name) => name.endsWith('.tmp') || name === 'nginx.conf.next',
    );
    if (litter.length > 0) failure = `a failed write left ${litter.join(', ')} behind, keeping the space it took`;
    await tmpfs.free();
    const record = await fault.end(10_000, {
      ...(failure ? { failure } : {}),
      detail: `${ballast} bytes of ballast; ${'error' in seen ? firstLine(seen.error) : ''}`,
    });
    await recoverAfter(record);
    h.expectSurvived([record]);
  });

  it('retries a reload whose certificate write hit a full disk', async (ctx) => {
    const tmpfs = h.tmpfs;
    if (!tmpfs) return ctx.skip();
    const leaf = await issueCertificate({ commonName: 'tls2.example.com', dnsNames: ['tls2.example.com'] });
    // The nginx actor writes the files (it owns the folder): the reload fails, not the sync.
    const reloadsFailed = () => h.nginxContext().reloadsFailed;
    const failed = reloadsFailed();
    const ballast = await tmpfs.fill();
    const fault = h.begin('disk full writing a certificate');
    await h.cluster.apply(tlsSecret('tls2', leaf.certPem, leaf.keyPem));
    await h.cluster.apply(
      ingress(
        'tls2',
        { 'tls2.example.com': [{ path: '/', service: 'b' }] },
        {
          tls: [{ hosts: ['tls2.example.com'], secretName: 'tls2' }],
          // a setting no path had: a new location profile, so a reload (a TLS host alone is pushed, routes as data)
          annotations: { 'nginx.ingress.kubernetes.io/proxy-read-timeout': '1999' },
        },
      ),
    );
    h.tlsHosts.set('tls2.example.com', 'tls2');
    let failure: string | undefined;
    await waitFor('a failed reload', () => reloadsFailed() > failed, 10_000).catch(
      (error: Error) => (failure = `no reload failed: ${error.message}`),
    );
    const error = String(h.nginxContext().lastReloadError);
    if (!failure && !/ENOSPC/.test(error)) failure = `unexpected reload error: ${error}`;
    await tmpfs.free();
    const record = await fault.end(15_000, {
      ...(failure ? { failure } : {}),
      detail: `${ballast} bytes of ballast; ${firstLine(error)}`,
    });
    h.expectSurvived([record]);
  });

  it('serves a renewed TLS certificate (no fault: a Secret rotation)', async () => {
    const leaf = await issueCertificate({ commonName: 'secure.example.com', dnsNames: ['secure.example.com'] });
    await h.cluster.apply(tlsSecret('secure-tls', leaf.certPem, leaf.keyPem));
    const result = await h.waitConverged(10_000);
    expect(typeof result === 'string' ? result : null).toBeNull();
    if (typeof result === 'string') {
      await h.change('client', 'reload');
      await h.waitConverged(10_000);
    }
  });
});
