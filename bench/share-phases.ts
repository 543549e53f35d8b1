/**
 * The sync's phases in process, with routes as data (issue 29): N Ingresses of the annotated mix built once, then one
 * Ingress changed at a time (a path, a backend's port, an annotation within an existing profile, a new host, a
 * deleted one), each sync timed phase by phase as src/sync/run.ts runs them: build, split, share, render. No API
 * server, no nginx: what the controller's own work costs per change.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BuildMemo, buildModel } from '../src/model/build.js';
import { defaultBuildOptions } from '../src/model/build-types.js';
import type { Ingress, KubeObject, Snapshot } from '../src/model/snapshot.js';
import { nginxBinary } from '../src/nginx/binary.js';
import { checkLua } from '../src/nginx/lua.js';
import { loadTemplate } from '../src/render/load.js';
import { RenderedText } from '../src/render/render.js';
import { DynamicSplit } from '../src/sync/dynamic-split.js';
import { SharedServer } from '../src/sync/shared-server.js';
import { issueCertificate } from '../src/tls/issue.js';
import { generateCluster } from './fixtures.js';

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const ms = (x: number) => Math.round(x * 10) / 10;

/** a change of the Ingresses (in place), and of the Secrets for a TLS host (in place too) */
type Change = (ingresses: Ingress[], r: number, secrets: KubeObject[]) => void;

const withSpec = (ingress: Ingress, spec: (s: Record<string, unknown>) => Record<string, unknown>): Ingress =>
  ({ ...ingress, spec: spec(structuredClone(ingress.spec) as Record<string, unknown>) }) as Ingress;
type Rules = { host: string; http: { paths: { path: string }[] } }[];

/** the changes a platform team makes, each to one Ingress (r makes each round's value new) */
const CHANGES: Record<string, Change> = {
  'new path on a host': (list, r) => {
    list[1] = withSpec(list[1]!, (s) => {
      (s.rules as Rules)[0]!.http.paths[1]!.path = `/changed-${r}`;
      return s;
    });
  },
  'annotation within a profile': (list, r) => {
    // proxy-body-size 8m ↔ 64m: both profiles exist in the mix (entries 4 and 5)
    const i = 4 + 16 * (r % Math.min(50, Math.floor(list.length / 16)));
    const ingress = list[i]!;
    const body = r % 2 === 0 ? '64m' : '8m';
    list[i] = {
      ...ingress,
      metadata: {
        ...ingress.metadata,
        annotations: { ...ingress.metadata?.annotations, 'nginx.ingress.kubernetes.io/proxy-body-size': body },
      },
    } as Ingress;
  },
  'new host': (list, r) => {
    const base = list[2]!;
    list.push(
      withSpec({ ...base, metadata: { ...base.metadata, name: `new-${r}` } } as Ingress, (s) => {
        (s.rules as Rules)[0]!.host = `new-${r}.bench.local`;
        return s;
      }),
    );
  },
  'deleted Ingress': (list, r) => {
    list.splice(100 + r, 1);
  },
  'TLS host (Secret and Ingress)': (list, r, secrets) => {
    // the first Ingress has TLS (every 10th): its Secret copied under a new name, and a new host using it
    const base = list[0]!;
    const secretName = `tls-new-${r}`;
    const namespace = base.metadata?.namespace ?? 'default';
    const secret = secrets.find((s) => s.metadata?.namespace === namespace)!;
    secrets.push({ ...secret, metadata: { ...secret.metadata, name: secretName } });
    const host = `tls-new-${r}.bench.local`;
    list.push(
      withSpec({ ...base, metadata: { ...base.metadata, name: `tls-new-${r}` } } as Ingress, (s) => {
        (s.rules as Rules)[0]!.host = host;
        s.tls = [{ hosts: [host], secretName }];
        return s;
      }),
    );
  },
};

/** startProfile starts V8's sampling profiler in this process; `stop` gives the profile (a .cpuprofile's JSON). */
async function startProfile() {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 100 });
  await session.post('Profiler.start');
  return {
    stop: async () => {
      const { profile } = await session.post('Profiler.stop');
      session.disconnect();
      return profile;
    },
  };
}

/** runSharePhases: the median of each phase per change kind, at N Ingresses of the annotated mix. */
export async function runSharePhases(
  n = Number(process.env.BENCH_N ?? 10_000),
  rounds = Number(process.env.BENCH_ROUNDS ?? 7),
): Promise<void> {
  const scratch = await mkdtemp(join(tmpdir(), 'ia-share-phases-'));
  try {
    const lua = await checkLua(nginxBinary(), scratch);
    if (!lua.ok) throw new Error(`the Lua module is needed: ${lua.why}`);
    const options = { ...defaultBuildOptions, dynamic: { ...lua.settings, requestMetrics: true, routesAsData: true } };
    const wildcard = await issueCertificate({ commonName: '*.bench.local', dnsNames: ['*.bench.local'] });
    let snapshot: Snapshot = generateCluster(n, wildcard, { annotated: true });
    const template = await loadTemplate();
    const memo = new BuildMemo();
    const split = new DynamicSplit();
    const shared = new SharedServer();
    const text = new RenderedText();
    const sync = () => {
      const t0 = performance.now();
      const { model } = buildModel(snapshot, options, memo);
      const t1 = performance.now();
      const parts = split.split(model);
      const t2 = performance.now();
      const sharing = shared.share(parts.model, template.sources, memo.view?.baseConfig)!;
      const t3 = performance.now();
      text.render(sharing.model, template);
      const t4 = performance.now();
      return { build: t1 - t0, split: t2 - t1, share: t3 - t2, render: t4 - t3 };
    };
    const first = sync();
    console.log(
      `share phases at ${n} Ingresses (annotated mix): first sync build ${ms(first.build)} ms, share ${ms(first.share)} ms, render ${ms(first.render)} ms`,
    );
    for (let w = 0; w < 3; w++) sync();
    // BENCH_PROFILE=<file>: a CPU profile of the changes alone (not the first sync), for a closer look
    const profiler = process.env.BENCH_PROFILE ? await startProfile() : null;
    for (const [kind, change] of Object.entries(CHANGES)) {
      const phases: Record<string, number[]> = { build: [], split: [], share: [], render: [], total: [] };
      for (let r = 0; r < rounds; r++) {
        const ingresses = [...snapshot.ingresses];
        const secrets = [...snapshot.secrets];
        change(ingresses, r, secrets);
        snapshot = {
          ...snapshot,
          ingresses,
          secrets: secrets.length === snapshot.secrets.length ? snapshot.secrets : secrets,
        };
        const p = sync();
        for (const [k, v] of Object.entries(p)) phases[k]!.push(v);
        phases.total!.push(p.build + p.split + p.share + p.render);
      }
      console.log(
        `  ${kind.padEnd(28)} ${Object.entries(phases)
          .map(([k, v]) => `${k} ${ms(median(v))}`)
          .join('  ')} (ms, median of ${rounds})`,
      );
    }
    if (profiler) await writeFile(process.env.BENCH_PROFILE!, JSON.stringify(await profiler.stop()));
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}
