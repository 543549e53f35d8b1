/**
 * The incremental sync benchmark: with N Ingresses loaded through the test API server, one
 * changes; the time from the API write to the new config handed to the nginx actor, against a
 * full build + render of the same objects (a fresh build: no memo, a newly compiled template).
 */
import { buildModel } from '../src/model/build.js';
import { defaultBuildOptions } from '../src/model/build-types.js';
import { loadTemplate } from '../src/render/load.js';
import { render } from '../src/render/render.js';
import { issueCertificate } from '../src/tls/issue.js';
import { freshTemplate, generateCluster, snapshotManifests } from './fixtures.js';
import { startCluster, waitFor } from '../test/support/cluster.js';

const pct = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;

/**
 * runIncremental: with N Ingresses loaded and the sync queue quiet, one changes; the median time
 * from the API write to the new config handed to the nginx actor, against a fresh build + render
 * of the same objects (no memo, a newly compiled template).
 */
export async function runIncremental(n = 10_000): Promise<void> {
  const wildcard = await issueCertificate({ commonName: '*.bench.local', dnsNames: ['*.bench.local'] });
  const snapshot = generateCluster(n, wildcard);
  const seed = snapshotManifests(snapshot);
  const cluster = await startCluster(seed, ['--sync-rate-limit', '100']);
  try {
    const syncs = () => (cluster.actor('syncQueue')!.context as { syncsCompleted: number }).syncsCompleted;
    await waitFor('the first sync', () => syncs() >= 1, 300_000, 50);
    const template = await loadTemplate();
    const full: number[] = [];
    for (let r = 0; r < 3; r++) {
      const fresh = freshTemplate(template);
      const t = performance.now();
      render(buildModel(cluster.controller.cache.snapshot(), defaultBuildOptions).model, fresh);
      full.push(performance.now() - t);
    }
    const one: number[] = [];
    for (let r = 1; r <= 9; r++) {
      // One change to a cluster at rest: the queue quiet, as after any pause of maxHoldoffMs.
      await waitFor(
        'the queue quiet',
        () => JSON.stringify(cluster.actor('syncQueue')!.value) === '{"idle":"quiet"}',
        60_000,
        10,
      );
      const before = syncs();
      const t = performance.now();
      const status = await cluster.rawPatch('/apis/networking.k8s.io/v1/namespaces/team-0/ingresses/app-0', {
        spec: {
          rules: [
            {
              host: 'app-0.bench.local',
              http: {
                paths: [
                  {
                    path: `/changed-${r}`,
                    pathType: 'Prefix',
                    backend: { service: { name: 'app-0', port: { number: 80 } } },
                  },
                ],
              },
            },
          ],
        },
      });
      if (status !== 200) throw new Error(`patch answered ${status}`);
      await waitFor('the sync of the change', () => syncs() > before, 60_000, 2);
      one.push(performance.now() - t);
    }
    // A renewed certificate: one TLS Secret replaced (cert-manager's renewal writes a new object).
    const secret: number[] = [];
    for (let r = 1; r <= 9; r++) {
      await waitFor(
        'the queue quiet',
        () => JSON.stringify(cluster.actor('syncQueue')!.value) === '{"idle":"quiet"}',
        60_000,
        10,
      );
      const before = syncs();
      const t = performance.now();
      const status = await cluster.rawPatch('/api/v1/namespaces/team-0/secrets/app-0-tls', {
        metadata: { annotations: { 'bench/renewed': String(r) } },
      });
      if (status !== 200) throw new Error(`patch answered ${status}`);
      await waitFor('the sync of the change', () => syncs() > before, 60_000, 2);
      secret.push(performance.now() - t);
    }
    const [fullMs, oneMs, secretMs] = [pct(full, 50), pct(one, 50), pct(secret, 50)];
    console.log(
      `bench incremental: n=${n} one_change_to_reload_requested_ms=${oneMs.toFixed(0)} full_build_render_ms=` +
        `${fullMs.toFixed(0)} ` +
        `speedup=${(fullMs / oneMs).toFixed(2)} (target 10) one_secret_change_ms=${secretMs.toFixed(0)} ` +
        `secret_speedup=${(fullMs / secretMs).toFixed(2)} tls_hosts=${snapshot.secrets.length}`,
    );
  } finally {
    await cluster.close();
  }
}
