/**
 * The admission benchmark: with N Ingresses in the snapshot, how long the judge takes to answer
 * for one candidate (create of a new host, create on a taken host and path, update of an existing
 * Ingress, create with an invalid annotation), p50 and p99, against a fresh build of the same
 * snapshot (what the judgement would cost without the judge's memo); then the same reviews as
 * AdmissionReviews over HTTPS to the webhook server (keep-alive, as kube-apiserver's client), from
 * the POST to the parsed answer. Target: 100 ms at 10,000.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { Agent, request } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createWebhookServer, WEBHOOK_PATH } from '../src/http/webhook.js';
import { createLogger } from '../src/log.js';
import { AdmissionJudge, type AdmissionOperation } from '../src/model/admission.js';
import { buildModel } from '../src/model/build.js';
import { defaultBuildOptions } from '../src/model/build-types.js';
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
  const https = await overHttps(judge, snapshot, options, n, rounds);
  console.log(`  over HTTPS (AdmissionReview in, answer parsed): ${fmt(https)}`);
}

/** overHttps posts `rounds` reviews to a webhook server judging with `judge` and gives each round trip in ms. */
async function overHttps(
  judge: AdmissionJudge,
  snapshot: ReturnType<typeof generateCluster>,
  options: { build: typeof defaultBuildOptions },
  n: number,
  rounds: number,
): Promise<number[]> {
  const dir = await mkdtemp(join(tmpdir(), 'bench-admission-'));
  const pair = await issueCertificate({ commonName: 'webhook', ipAddresses: ['127.0.0.1'] });
  await writeFile(join(dir, 'tls.crt'), pair.certPem);
  await writeFile(join(dir, 'tls.key'), pair.keyPem, { mode: 0o600 });
  const server = createWebhookServer({
    certFile: join(dir, 'tls.crt'),
    keyFile: join(dir, 'tls.key'),
    log: createLogger({ level: 'silent' }),
    judge: (operation, ingress) => judge.judge(snapshot, options, operation, ingress),
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const agent = new Agent({ keepAlive: true, ca: pair.certPem });
  const post = (body: string) =>
    new Promise<string>((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port,
          path: WEBHOOK_PATH,
          method: 'POST',
          agent,
          headers: { 'content-type': 'application/json' },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  const times: number[] = [];
  try {
    for (let r = rounds + 1; r <= 2 * rounds; r++) {
      const { operation, ingress } = candidate(r % 4, r, n);
      const body = JSON.stringify({
        apiVersion: 'admission.k8s.io/v1',
        kind: 'AdmissionReview',
        request: {
          uid: `bench-${r}`,
          kind: { group: 'networking.k8s.io', version: 'v1', kind: 'Ingress' },
          operation,
          namespace: ingress.metadata?.namespace,
          name: ingress.metadata?.name,
          object: ingress,
        },
      });
      const t = performance.now();
      const answer = JSON.parse(await post(body)) as { response: { uid: string } };
      times.push(performance.now() - t);
      if (answer.response.uid !== `bench-${r}`) throw new Error('the answer is not for this review');
    }
  } finally {
    agent.destroy();
    server.closeAllConnections();
    server.close();
    await rm(dir, { recursive: true, force: true });
  }
  return times;
}
