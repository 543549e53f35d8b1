/**
 * Bad tenant: what one tenant's refused Ingress costs everyone else. At N Ingresses, a good
 * tenant changes its Ingress; the time until nginx accepts a config with that change is measured
 * (each round: incremental build, render, files written, a real `nginx -t`, as the controller's
 * sync and nginx actor do; the reload after it is the same in every case and left out), and the
 * time until the quarantine settles (a held Ingress is tried once more, and refused again):
 *   - clean: no bad Ingress (one round);
 *   - named: a bad Ingress (a certificate OpenSSL refuses) arrives with the change; nginx names
 *     its file, blame() its Ingress: two rounds;
 *   - bisected: the same, but nginx's words are not used, and the bad Ingress is one of 8 changed
 *     at once: the quarantine halves the suspects, one round per step.
 * In the controller, every round also waits for the sync queue's rate token (--sync-rate-limit).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BuildMemo, buildModel } from '../src/model/build.js';
import { defaultBuildOptions } from '../src/model/build-types.js';
import { Quarantine, type Blamer, type Verdicts } from '../src/sync/quarantine.js';
import type { Ingress, Secret, Snapshot } from '../src/model/snapshot.js';
import { nginxBinary, testConfig } from '../src/nginx/binary.js';
import { writeCertificates, writeFileAtomic } from '../src/nginx/files.js';
import { blame } from '../src/sync/blame.js';
import { loadTemplate } from '../src/render/load.js';
import { render, type NginxTemplate } from '../src/render/render.js';
import { issueCertificate } from '../src/tls/issue.js';
import { weakCertificate } from '../test/support/weak-certificate.js';
import { generateCluster } from './fixtures.js';

interface Round {
  readonly ms: number;
  readonly rounds: number;
  /** until nginx first took a config with the good tenant's change in it */
  readonly servedMs: number;
  readonly servedRound: number;
  readonly held: string[];
  /** of that, in nginx -t */
  readonly nginxMs: number;
}

/**
 * settle runs syncs until nginx -t accepts one and the quarantine waits for no verdict (no
 * bisection step, no retry of a held Ingress), from the config `applied`; it notes when the
 * good tenant's changed Ingress (`good`) was first in a config nginx took.
 */
async function settle(
  dir: string,
  template: NginxTemplate,
  memo: BuildMemo,
  written: Map<string, string>,
  quarantine: Quarantine,
  snapshot: Snapshot,
  applied: string,
  good: Ingress,
): Promise<Round> {
  const started = performance.now();
  let verdicts: Verdicts = { applied, refused: null };
  let current = applied;
  let nginxMs = 0;
  let served: { ms: number; round: number } | null = null;
  for (let rounds = 1; rounds <= 30; rounds++) {
    quarantine.judge(verdicts);
    const prepared = quarantine.prepare(snapshot);
    const { model } = buildModel(prepared.snapshot, defaultBuildOptions, memo);
    const text = render(model, template);
    quarantine.handedOver({ text, model, ingresses: prepared.snapshot.ingresses, secrets: prepared.snapshot.secrets });
    // As the sync does: files it wrote before (same text) are not written again.
    await writeCertificates(dir, model.certificates, written);
    const conf = join(dir, 'nginx.conf');
    await writeFileAtomic(conf, text);
    const tested = performance.now();
    const verdict = await testConfig(nginxBinary(), dir, conf);
    nginxMs += performance.now() - tested;
    if (verdict.ok && served === null && prepared.snapshot.ingresses.includes(good))
      served = { ms: performance.now() - started, round: rounds };
    if (verdict.ok && !quarantine.awaitingVerdict && served) {
      return {
        ms: performance.now() - started,
        rounds,
        servedMs: served.ms,
        servedRound: served.round,
        held: quarantine.heldKeys(),
        nginxMs,
      };
    }
    if (!verdict.ok)
      console.log(`bench bad-tenant detail: round ${rounds} refused: ${verdict.output.split('\n')[0]?.slice(0, 300)}`);
    if (verdict.ok) current = text;
    verdicts = verdict.ok
      ? { applied: text, refused: null }
      : { applied: current, refused: { config: text, output: verdict.output } };
  }
  throw new Error('did not settle in 30 rounds');
}

/** changed is the snapshot with Ingress i given a new path (a new object, as the cache makes one). */
function withChanges(snapshot: Snapshot, indices: readonly number[], round: number): Ingress[] {
  const picked = new Set(indices);
  return snapshot.ingresses.map((ingress, i) => {
    if (!picked.has(i)) return ingress;
    const rule = ingress.spec?.rules?.[0];
    const paths = [
      ...(rule?.http?.paths ?? []),
      { path: `/r${round}`, pathType: 'Prefix', backend: rule?.http?.paths?.[0]?.backend ?? {} },
    ];
    return { ...ingress, spec: { ...ingress.spec, rules: [{ ...rule, http: { paths } }] } } as Ingress;
  });
}

/** runBadTenant measures the three cases at each N, side by side. */
export async function runBadTenant(sizes = [100, 10_000]): Promise<void> {
  const template = await loadTemplate();
  const wildcard = await issueCertificate({ commonName: '*.bench.local', dnsNames: ['*.bench.local'] });
  const weak = await weakCertificate('app-1.bench.local');
  const weakSecret = {
    type: 'kubernetes.io/tls',
    metadata: { namespace: 'team-1', name: 'weak' },
    data: {
      'tls.crt': Buffer.from(weak.certPem).toString('base64'),
      'tls.key': Buffer.from(weak.keyPem).toString('base64'),
    },
  } as unknown as Secret;
  for (const n of sizes) {
    const base = generateCluster(n, wildcard);
    const named: Blamer = (output, handed) => blame(output, handed.text, handed.model);
    const nowhere: Blamer = () => null;
    const results: Record<string, Round> = {};
    for (const [name, blamer, changedAtOnce] of [
      ['clean', named, 1],
      ['named', named, 1],
      ['bisected', nowhere, 8],
    ] as const) {
      const dir = await mkdtemp(join(tmpdir(), 'ia-bench-bad-'));
      const memo = new BuildMemo();
      const quarantine = new Quarantine(blamer);
      // What nginx serves before: the whole cluster, all good.
      const first = buildModel(base, defaultBuildOptions, memo);
      const appliedText = render(first.model, template);
      // Its files are on disk already, as they are in a running controller.
      const written = new Map<string, string>();
      await writeCertificates(dir, first.model.certificates, written);
      quarantine.handedOver({
        text: appliedText,
        model: first.model,
        ingresses: base.ingresses,
        secrets: base.secrets,
      });
      // The good tenant (app-2) changes; in the bad cases app-1 takes the weak certificate meanwhile.
      const changed = [2, ...Array.from({ length: changedAtOnce - 1 }, (_, k) => 3 + k)];
      let ingresses = withChanges(base, changed, 1);
      const secrets = [...base.secrets];
      if (name !== 'clean') {
        ingresses = ingresses.map((ingress, i) =>
          i === 1
            ? ({
                ...ingress,
                spec: { ...ingress.spec, tls: [{ hosts: ['app-1.bench.local'], secretName: 'weak' }] },
              } as Ingress)
            : ingress,
        );
        secrets.push(weakSecret);
      }
      results[name] = await settle(
        dir,
        template,
        memo,
        written,
        quarantine,
        { ...base, ingresses, secrets },
        appliedText,
        ingresses[2]!,
      );
      await rm(dir, { recursive: true, force: true });
      const held = results[name]!.held;
      if ((name === 'clean') !== (held.length === 0) || (name !== 'clean' && held.join() !== 'team-1/app-1')) {
        throw new Error(`bench bad-tenant: n=${n} ${name} held ${JSON.stringify(held)}`);
      }
    }
    const clean = results.clean!;
    for (const [name, r] of Object.entries(results)) {
      console.log(
        `bench bad-tenant: n=${n} ${name} good_change_served_ms=${r.servedMs.toFixed(0)} (round ${r.servedRound}) ` +
          `ratio_to_clean=${(r.servedMs / clean.servedMs).toFixed(2)}; ` +
          `settled_ms=${r.ms.toFixed(0)} rounds=${r.rounds} ` +
          `(nginx -t ${r.nginxMs.toFixed(0)} ms)${r.held.length ? ` held=${r.held.join(',')}` : ''}`,
      );
    }
  }
}
