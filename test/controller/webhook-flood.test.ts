/**
 * The admission webhook flooded, in the whole controller: parallel connections post large AdmissionReviews (seconds of
 * judging each) while a probe asks /healthz as the kubelet does (every 250 ms, a 1 s timeout). Every probe is answered
 * 200 in time; each review is answered with its verdict or, past the bound on reviews in flight, at once with 429 and
 * Retry-After; a review larger than the API server sends is 413; and a plain review afterwards is judged against the
 * live cache. The judge runs on a worker thread compiled by `npm run build` (this test needs it). Timings, CPU and
 * memory are bench/admission-flood.ts's (`npm run bench -- admission-flood`).
 */
import { get as httpGet } from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { MAX_BODY_BYTES, MAX_REVIEWS_IN_FLIGHT, WARNINGS_CHARS } from '../../src/http/webhook.js';
import { judgeWorkerFile } from '../../src/http/worker-judge.js';
import type { KeyPair } from '../../src/tls/issue.js';
import { postAdmission, postReview, webhookFlags, writeServingCertificate } from '../support/admission-review.js';
import { startCluster, waitFor } from '../support/cluster.js';
import { ingress, ingressClass } from '../support/manifests.js';
import { freePort } from '../support/net.js';

let dir: string;
let pair: KeyPair;

beforeAll(async () => {
  if (!judgeWorkerFile()) throw new Error("the judge's worker is not compiled: run npm run build first");
  dir = await mkdtemp(join(tmpdir(), 'controller-webhook-flood-'));
  pair = await writeServingCertificate(dir);
});

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

interface Probe {
  readonly status: number | 'timeout' | 'error';
}

/** probe asks /healthz as the kubelet does: an answer after 1 s is a failed probe. */
function probe(port: number): Promise<Probe> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      req.destroy();
      resolve({ status: 'timeout' });
    }, 1_000);
    const req = httpGet({ host: '127.0.0.1', port, path: '/healthz', agent: false }, (res) => {
      res.resume();
      res.on('end', () => {
        clearTimeout(timer);
        resolve({ status: res.statusCode ?? 0 });
      });
    });
    req.on('error', () => {
      clearTimeout(timer);
      resolve({ status: 'error' });
    });
  });
}

const CONNECTIONS = 8;
const ROUNDS = 3;
/** paths per flooding review: about 4 MiB, seconds of judging each */
const PATHS = 25_000;
const FLOODER = fileURLToPath(new URL('../support/webhook-flooder.ts', import.meta.url));

/** Flooded is one flooding review's answer, as the flooder prints it. */
interface Flooded {
  readonly uid: string;
  readonly status: number;
  readonly retryAfter: string | null;
  readonly body: string;
}

it('keeps /healthz answering within its probe timeout while the webhook is flooded with large reviews', async () => {
  const port = await freePort();
  const first = ingress('first', { 'a.example.com': [{ path: '/', service: 'app' }] });
  const cluster = await startCluster([ingressClass(), first], webhookFlags(port, dir));
  try {
    await waitFor('the first Ingress cached', () => cluster.controller.cache.snapshot().ingresses.length === 1, 10_000);
    await waitFor('/healthz 200', async () => (await probe(cluster.healthzPort)).status === 200, 30_000, 100);

    // more than 9 MB is more than the API server sends: refused before it is judged
    expect(9 * 1000 * 1000).toBeGreaterThan(MAX_BODY_BYTES);
    const oversize = await postAdmission(port, pair.certPem, Buffer.alloc(9 * 1000 * 1000, 0x20));
    expect(oversize.status).toBe(413);
    expect(oversize.body).toContain('more than the API server sends');

    const probes: Probe[] = [];
    let flooding = true;
    const probing = (async () => {
      while (flooding) {
        const started = Date.now();
        probes.push(await probe(cluster.healthzPort));
        await new Promise((r) => setTimeout(r, Math.max(0, 250 - (Date.now() - started))));
      }
    })();

    // the flood comes from a process of its own, as from the API server or a pod
    const flooder = await execa(
      process.execPath,
      [FLOODER, String(port), join(dir, 'tls.crt'), String(CONNECTIONS), String(ROUNDS), String(PATHS)],
      { reject: false },
    );
    flooding = false;
    await probing;
    expect(flooder.exitCode, flooder.stderr).toBe(0);
    const answers = JSON.parse(flooder.stdout) as Flooded[];

    // the kubelet would have seen every probe succeed
    expect(probes.length).toBeGreaterThan(4);
    expect(probes.filter((p) => p.status !== 200)).toEqual([]);

    // each review: its verdict, or at once a 429 the API server retries and then treats per failurePolicy
    expect(answers).toHaveLength(CONNECTIONS * ROUNDS);
    for (const answer of answers) {
      expect([200, 429]).toContain(answer.status);
      if (answer.status === 200) {
        const response = (
          JSON.parse(answer.body) as { response: { uid: string; allowed: boolean; warnings?: string[] } }
        ).response;
        expect(response.uid).toBe(answer.uid);
        expect(response.allowed).toBe(true);
        // 25,000 paths to a Service that is not there: the warnings the API server passes on, and how many more
        expect((response.warnings ?? []).slice(0, -1).join('').length).toBeLessThanOrEqual(WARNINGS_CHARS);
        expect(response.warnings?.at(-1)).toMatch(/^and \d+ more warnings$/);
      } else {
        expect(answer.retryAfter).toBe('1');
        expect(answer.body).toContain(`${MAX_REVIEWS_IN_FLIGHT} reviews are being read or judged already`);
      }
    }
    expect(answers.some((answer) => answer.status === 200)).toBe(true);
    expect(answers.some((answer) => answer.status === 429)).toBe(true);

    // afterwards, a plain review is judged against the live cache
    const onA = ingress('second', { 'a.example.com': [{ path: '/', service: 'app' }] });
    expect((await postReview(port, pair.certPem, onA)).status?.message).toContain(
      'is already defined in ingress default/first',
    );
  } finally {
    await cluster.close();
  }
}, 180_000);
