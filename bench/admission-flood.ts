/**
 * The admission flood benchmark: a child process posts large AdmissionReviews (25,000 paths, about 4 MiB, seconds of
 * judging each) from 8 parallel connections, 3 each, to the webhook server while a probe asks a health endpoint on the
 * same event loop every 250 ms with the kubelet's 1 s timeout. Side by side: the judge on the event loop with no bound
 * on reviews in flight (as before), and the WorkerJudge with MAX_REVIEWS_IN_FLIGHT (as the controller runs it). It
 * prints probes failed, the event loop's longest delay and its p99, how busy the main thread was (ELU), the process's
 * CPU time, the peak RSS over the start, and the answers by status; then the ratios. Needs `npm run build` (the
 * worker is compiled; `npm run bench -- admission-flood` builds first).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, get } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { execa } from 'execa';
import { createWebhookServer, type Judge, type ReviewJudge } from '../src/http/webhook.js';
import { judgeWorkerFile, WorkerJudge } from '../src/http/worker-judge.js';
import { createLogger } from '../src/log.js';
import { AdmissionJudge } from '../src/model/admission.js';
import { defaultBuildOptions } from '../src/model/build-types.js';
import { PROJECT_ROOT } from '../src/project-root.js';
import { issueCertificate } from '../src/tls/issue.js';
import { writeServingCertificate } from '../test/support/admission-review.js';
import { generateCluster } from './fixtures.js';

const CONNECTIONS = 8;
const ROUNDS = 3;
const PATHS = 25_000;

interface FloodResult {
  readonly seconds: number;
  readonly probes: number;
  readonly failed: number;
  readonly slowestProbeMs: number;
  readonly loopMaxMs: number;
  readonly loopP99Ms: number;
  readonly elu: number;
  readonly cpuSeconds: number;
  readonly peakRssMb: number;
  readonly statuses: Record<string, number>;
}

/** probe asks the health server; an answer after 1 s counts as a failed probe (its time is still recorded). */
function probe(port: number): Promise<{ ok: boolean; ms: number }> {
  const started = performance.now();
  return new Promise((resolve) => {
    const req = get({ host: '127.0.0.1', port, path: '/healthz', agent: false }, (res) => {
      res.resume();
      res.on('end', () => {
        const ms = performance.now() - started;
        resolve({ ok: res.statusCode === 200 && ms <= 1_000, ms });
      });
    });
    req.on('error', () => resolve({ ok: false, ms: performance.now() - started }));
  });
}

async function flood(
  judge: Judge | ReviewJudge,
  maxInFlight: number,
  files: { dir: string; ca: string },
): Promise<FloodResult> {
  const server = createWebhookServer({
    certFile: join(files.dir, 'tls.crt'),
    keyFile: join(files.dir, 'tls.key'),
    log: createLogger({ level: 'silent' }),
    judge,
    maxInFlight,
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const health = createServer((_req, res) => res.end('ok\n'));
  await new Promise<void>((resolve) => health.listen(0, '127.0.0.1', resolve));
  const healthPort = (health.address() as AddressInfo).port;

  global.gc?.();
  const baseRss = process.memoryUsage.rss();
  let peakRss = baseRss;
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage.rss())), 50);
  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();
  const elu = performance.eventLoopUtilization();
  const cpu = process.cpuUsage();
  const started = performance.now();
  const probes: { ok: boolean; ms: number }[] = [];
  let flooding = true;
  const probing = (async () => {
    while (flooding) {
      const t = performance.now();
      probes.push(await probe(healthPort));
      await new Promise((r) => setTimeout(r, Math.max(0, 250 - (performance.now() - t))));
    }
  })();
  const flooder = join(PROJECT_ROOT, 'test', 'support', 'webhook-flooder.ts');
  const child = await execa(
    process.execPath,
    [flooder, String(port), files.ca, String(CONNECTIONS), String(ROUNDS), String(PATHS)],
    { reject: false },
  );
  flooding = false;
  await probing;
  const seconds = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  const busy = performance.eventLoopUtilization(elu);
  loop.disable();
  clearInterval(sampler);
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  await new Promise((resolve) => health.close(resolve));
  const answers = child.exitCode === 0 ? (JSON.parse(child.stdout) as { status: number }[]) : [];
  const statuses: Record<string, number> = {};
  for (const { status } of answers) statuses[status] = (statuses[status] ?? 0) + 1;
  if (child.exitCode !== 0) statuses[`flooder failed: ${child.stderr.slice(0, 200)}`] = 1;
  return {
    seconds,
    probes: probes.length,
    failed: probes.filter((p) => !p.ok).length,
    slowestProbeMs: Math.max(...probes.map((p) => p.ms)),
    loopMaxMs: loop.max / 1e6,
    loopP99Ms: loop.percentile(99) / 1e6,
    elu: busy.utilization,
    cpuSeconds: (used.user + used.system) / 1e6,
    peakRssMb: (peakRss - baseRss) / 1024 / 1024,
    statuses,
  };
}

function print(name: string, r: FloodResult): void {
  console.log(
    `  ${name}: ${r.seconds.toFixed(1)} s; probes failed ${r.failed}/${r.probes} (slowest ${r.slowestProbeMs.toFixed(0)} ms); ` +
      `event loop delay max ${r.loopMaxMs.toFixed(0)} ms, p99 ${r.loopP99Ms.toFixed(0)} ms; main thread busy ` +
      `${(r.elu * 100).toFixed(0)} %; CPU ${r.cpuSeconds.toFixed(1)} s; peak RSS +${r.peakRssMb.toFixed(0)} MB; ` +
      `answers ${JSON.stringify(r.statuses)}`,
  );
}

/** runAdmissionFlood floods the webhook judged on the event loop, then off it, at `n` Ingresses in the snapshot. */
export async function runAdmissionFlood(n = 1_000): Promise<void> {
  const file = judgeWorkerFile();
  if (!file) throw new Error("the judge's worker is not compiled: npm run build");
  const dir = await mkdtemp(join(tmpdir(), 'bench-admission-flood-'));
  await writeServingCertificate(dir);
  const files = { dir, ca: join(dir, 'tls.crt') };
  const wildcard = await issueCertificate({ commonName: '*.bench.local', dnsNames: ['*.bench.local'] });
  const snapshot = generateCluster(n, wildcard);
  const options = { build: defaultBuildOptions };
  try {
    console.log(
      `admission flood, n=${n}: ${CONNECTIONS} connections x ${ROUNDS} reviews of ${PATHS} paths (~4 MiB) each, ` +
        'a 1 s probe every 250 ms',
    );
    const inline = new AdmissionJudge();
    inline.warm(snapshot, options);
    const before = await flood(
      (operation, ingress) => inline.judge(snapshot, options, operation, ingress),
      Number.POSITIVE_INFINITY,
      files,
    );
    print('on the event loop, unbounded (before)', before);
    const worker = new WorkerJudge(file, () => snapshot, options, createLogger({ level: 'silent' }));
    const after = await flood(worker, 4, files).finally(() => worker.close());
    print('worker thread, 4 in flight (after)', after);
    const ratio = (a: number, b: number) => (b === 0 ? 'inf' : (a / b).toFixed(1));
    console.log(
      `  ratios before/after: event loop delay max ${ratio(before.loopMaxMs, after.loopMaxMs)}x, failed probes ` +
        `${before.failed} vs ${after.failed}, peak RSS ${ratio(before.peakRssMb, after.peakRssMb)}x, CPU ` +
        `${ratio(before.cpuSeconds, after.cpuSeconds)}x`,
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
