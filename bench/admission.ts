/**
 * The admission benchmark: with N Ingresses in the snapshot, how long the judge takes to answer
 * for one candidate (create of a new host, create on a taken host and path, update of an existing
 * Ingress, create with an invalid annotation), p50 and p99, against a fresh build of the same
 * snapshot (what the judgement would cost without the judge's memo). Target: 100 ms at 10,000.
 */
import { AdmissionJudge, type AdmissionOperation } from '../src/model/admission.js';
import { buildModel, defaultBuildOptions } from '../src/model/build.js';
import type { Ingress } from '../src/model/snapshot.js';
import { issueCertificate } from '../src/tls/issue.js';
import { generateCluster } from './fixtures.js';

const pct = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;

const route = (host: string, path: string, service: string) => ({
  host,
  http: { paths: [{ path, pathType: 'Prefix', backend: { service: { name: service, port: { number: 80 } } } }] },
});

/** candidates are the kinds of review the benchmark sends, in turn; `r` makes each one a new object. */
function candidate(kind: number, r: number, n: number): { operation: AdmissionOperation; ingress: Ingress } {
  const i = (r * 7919) % n;
  const namespace = `team-${i % 50}`;
  const spec = (host: string, path: string) => ({ ingressClassName: 'nginx', rules: [route(host, path, `app-${i}`)] });
  switch (kind) {
    case 0:
      return {
        operation: 'CREATE',
        ingress: { metadata: { namespace, name: `new-${r}` }, spec: spec(`new-${r}.bench.local`, '/') },
      };
    case 1:
      return {
        operation: 'CREATE',
        ingress: { metadata: { namespace, name: `dup-${r}` }, spec: spec(`app-${i}.bench.local`, '/') },
      };
    case 2:
      return {
        operation: 'UPDATE',
        ingress: {
          metadata: {
            namespace,
            name: `app-${i}`,
            creationTimestamp: new Date(1_700_000_000_000 + i * 1000).toISOString(),
          },
          spec: spec(`app-${i}.bench.local`, `/changed-${r}`),
        },
      };
    default:
      return {
        operation: 'CREATE',
        ingress: {
          metadata: {
            namespace,
            name: `bad-${r}`,
            annotations: { 'nginx.ingress.kubernetes.io/proxy-read-timeout': 'forever' },
          },
          spec: spec(`bad-${r}.bench.local`, '/'),
        },
      };
  }
}

/** runAdmission prints the judge's latency at `n` Ingresses, by kind of review and overall. */
export async function runAdmission(n = 10_000, rounds = 400): Promise<void> {
  const wildcard = await issueCertificate({ commonName: '*.bench.local', dnsNames: ['*.bench.local'] });
  const snapshot = generateCluster(n, wildcard);
  const options = { build: defaultBuildOptions };
  const judge = new AdmissionJudge();
  let t = performance.now();
  judge.judge(snapshot, options, 'CREATE', candidate(0, 0, n).ingress);
  const firstMs = performance.now() - t;
  const fresh: number[] = [];
  for (let r = 0; r < 3; r++) {
    t = performance.now();
    buildModel(snapshot, defaultBuildOptions);
    fresh.push(performance.now() - t);
  }
  const names = [
    'create, new host',
    'create, host and path taken (denied)',
    'update',
    'create, invalid annotation (denied)',
  ];
  const byKind: number[][] = names.map(() => []);
  const all: number[] = [];
  const wrong: string[] = [];
  for (let r = 1; r <= rounds; r++) {
    const kind = r % names.length;
    const { operation, ingress } = candidate(kind, r, n);
    t = performance.now();
    const verdict = judge.judge(snapshot, options, operation, ingress);
    const ms = performance.now() - t;
    byKind[kind]!.push(ms);
    all.push(ms);
    if (verdict.allowed !== (kind === 0 || kind === 2)) wrong.push(`${names[kind]}: ${verdict.message || 'allowed'}`);
  }
  const fmt = (xs: number[]) => `p50 ${pct(xs, 50).toFixed(1)} ms, p99 ${pct(xs, 99).toFixed(1)} ms`;
  console.log(`admission, n=${n}: ${rounds} reviews: ${fmt(all)} (target: within 100 ms)`);
  for (const [k, name] of names.entries()) console.log(`  ${name}: ${fmt(byKind[k]!)}`);
  console.log(
    `  first judgement (the judge's memo empty): ${firstMs.toFixed(0)} ms; a fresh build of the snapshot: ` +
      `median ${pct(fresh, 50).toFixed(0)} ms`,
  );
  if (wrong.length > 0) console.log(`  WRONG VERDICTS (${wrong.length}): ${wrong.slice(0, 3).join(' | ')}`);
}
