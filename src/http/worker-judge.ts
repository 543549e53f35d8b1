/**
 * WorkerJudge judges admission reviews on a worker thread (src/http/judge-worker.ts): a large review's parse and build
 * take seconds (a 9 MiB one took 1.8–3.8 s), which on the event loop would hold /healthz past its probe timeout and
 * stall the sync. The worker mirrors the cache (only what changed is copied to it, before each review and every few
 * seconds) and judges one review at a time; the webhook bounds how many wait (MAX_REVIEWS_IN_FLIGHT).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { Logger } from '../log.js';
import type { JudgeOptions } from '../model/admission.js';
import type { KubeObject, Snapshot } from '../model/snapshot.js';
import { PROJECT_ROOT } from '../project-root.js';
import { changesSince, type SnapshotField, type ToWorker } from './judge-mirror.js';
import type { JudgeWorkerData } from './judge-worker.js';
import type { Judged, ReviewJudge } from './webhook.js';

/** WARM_EVERY_MS: how often the worker's mirror and memo catch up with the cache while no review comes. */
export const WARM_EVERY_MS = 5_000;

/**
 * JUDGE_TIMEOUT_MS: a judgement longer than the longest timeoutSeconds a webhook may have (30) is answered by no one;
 * its worker is ended (the reviews waiting on it get 500) and a new one mirrors the cache afresh.
 */
export const JUDGE_TIMEOUT_MS = 30_000;

/**
 * judgeWorkerFile is the worker's compiled file: beside this module in dist/, or, running from src/ (the tests), the
 * one `npm run build` made; null when there is none.
 */
export function judgeWorkerFile(): string | null {
  const beside = fileURLToPath(new URL('./judge-worker.js', import.meta.url));
  if (existsSync(beside)) return beside;
  const built = join(PROJECT_ROOT, 'dist', 'src', 'http', 'judge-worker.js');
  return existsSync(built) ? built : null;
}

interface Waiting {
  readonly resolve: (judged: Judged) => void;
  readonly timer: NodeJS.Timeout;
}

/** WorkerJudge is a ReviewJudge whose parsing and judging run on a worker thread, against a mirror of `source()`. */
export class WorkerJudge implements ReviewJudge {
  private worker: Worker | null = null;
  private readonly sent = new Map<SnapshotField, readonly KubeObject[]>();
  private readonly waiting = new Map<number, Waiting>();
  private nextId = 0;
  private warmed: Snapshot['ingresses'] | null = null;
  private readonly warmTimer: NodeJS.Timeout;

  constructor(
    private readonly file: string,
    private readonly source: () => Snapshot,
    private readonly options: JudgeOptions,
    private readonly log: Logger,
    warmEveryMs = WARM_EVERY_MS,
  ) {
    this.warmTimer = setInterval(() => this.warm(), warmEveryMs);
    this.warmTimer.unref();
    this.started();
  }

  review(body: Uint8Array): Promise<Judged> {
    const worker = this.started();
    this.sync(worker, this.source());
    const id = ++this.nextId;
    return new Promise<Judged>((resolve) => {
      const timer = setTimeout(
        () => this.restart(`the judgement took over ${JUDGE_TIMEOUT_MS / 1000} s; the judge was restarted`),
        JUDGE_TIMEOUT_MS,
      );
      this.waiting.set(id, { resolve, timer });
      worker.postMessage({ type: 'review', id, body } satisfies ToWorker);
    });
  }

  /** close ends the worker; reviews still waiting get 500. */
  async close(): Promise<void> {
    clearInterval(this.warmTimer);
    const worker = this.worker;
    this.gone('the webhook is closing');
    await worker?.terminate();
  }

  /** warm brings the worker's mirror and memo up to the cache, so the next review costs one candidate. */
  private warm(): void {
    const snapshot = this.source();
    if (snapshot.ingresses === this.warmed || snapshot.ingresses.length === 0) return;
    const worker = this.started();
    this.sync(worker, snapshot);
    worker.postMessage({ type: 'warm' } satisfies ToWorker);
    this.warmed = snapshot.ingresses;
  }

  private sync(worker: Worker, snapshot: Snapshot): void {
    const changes = changesSince(this.sent, snapshot);
    if (changes.length > 0) worker.postMessage({ type: 'objects', changes } satisfies ToWorker);
  }

  private started(): Worker {
    if (this.worker) return this.worker;
    const workerData: JudgeWorkerData = { judgeWorker: true, options: this.options };
    const worker = new Worker(this.file, { workerData });
    // The webhook's server keeps the process alive while it listens; the worker alone must not.
    worker.unref();
    worker.on('message', ({ id, judged }: { id: number; judged: Judged }) => {
      const waiting = this.waiting.get(id);
      if (!waiting) return;
      clearTimeout(waiting.timer);
      this.waiting.delete(id);
      waiting.resolve(judged);
    });
    worker.on('error', (error) => this.log.error({ err: error }, "the admission judge's worker failed"));
    worker.on('exit', (code) => {
      if (this.worker === worker) this.gone(`the judge stopped (exit ${code}); it is started again`);
    });
    this.worker = worker;
    // A new worker mirrors nothing yet: everything is sent again.
    this.sent.clear();
    this.warmed = null;
    return worker;
  }

  /** gone forgets the worker and answers every review waiting on it with 500. */
  private gone(message: string): void {
    this.worker = null;
    for (const waiting of this.waiting.values()) {
      clearTimeout(waiting.timer);
      waiting.resolve({ ok: false, status: 500, message });
    }
    this.waiting.clear();
  }

  private restart(message: string): void {
    const worker = this.worker;
    this.log.warn({ reason: message }, "the admission judge's worker is restarted");
    this.gone(message);
    void worker?.terminate();
  }
}
